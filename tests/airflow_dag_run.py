"""Run by the Airflow environment's Python: one DAG run, as `airflow dags test` makes it, with the run's
time pinned, so that running it again reuses the DAG run's id. Writes what happened as JSON.

    python airflow_dag_run.py DAG_FILE LOGICAL_DATE RUN_AFTER RESULT.json
"""

import json
import sys
from datetime import datetime

from airflow.models.xcom import XComModel
from airflow.utils.cli import get_bagged_dag
from airflow.utils.session import create_session
from sqlalchemy import select

dag_file, logical_date, run_after, result = sys.argv[1:5]
dag = get_bagged_dag(None, "dirtiness", dag_file)
run = dag.test(logical_date=datetime.fromisoformat(logical_date), run_after=datetime.fromisoformat(run_after))
with create_session() as session:
    tasks = {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}
    xcom = {x.task_id: XComModel.deserialize_value(x) for x in session.scalars(
        select(XComModel).where(XComModel.run_id == run.run_id, XComModel.key == "return_value"))}
with open(result, "w") as handle:
    json.dump({"run_id": run.run_id, "state": str(run.state), "tasks": {k: str(v) for k, v in tasks.items()},
               "xcom": xcom}, handle, default=str)
