"""Run by the Airflow environment's Python, one process per call (Airflow takes seconds to import):

    python airflow_dag_run.py DAG_FILE LOGICAL_DATE RESULT.json RUN_AFTER [RUN_AFTER ...]
        the metadata database migrated (as `airflow db migrate` does), then one DAG run per RUN_AFTER,
        one after the other, each as `airflow dags test DAG LOGICAL_DATE` makes it (which replaces the
        date's earlier run) with the run's time pinned: the same RUN_AFTER again reuses the DAG run's id,
        another one gives a new id, as `airflow dags test` run later does. Writes, per DAG run, its run
        id, state, task states and XComs, and then every run of the DAG (what `airflow dags list-runs`
        and `airflow tasks states-for-dag-run` print)
"""

import json
import sys
from datetime import datetime

from airflow.models.dagrun import DagRun
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from sqlalchemy import select


def task_states(run, session) -> dict:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}


def every_run(session) -> list[dict]:
    runs = session.scalars(select(DagRun).where(DagRun.dag_id == "dirtiness").order_by(DagRun.id))
    return [{"run_id": r.run_id, "state": str(r.state), "tasks": task_states(r, session)} for r in runs]


def one_run(dag_file: str, logical_date: str, run_after: str) -> dict:
    from airflow.utils import db
    from airflow.utils.cli import get_bagged_dag

    db.upgradedb()  # what `airflow db migrate` does (a no-op once done), without an Airflow process of its own
    dag = get_bagged_dag(None, "dirtiness", dag_file)
    run = dag.test(logical_date=datetime.fromisoformat(logical_date), run_after=datetime.fromisoformat(run_after))
    with create_session() as session:
        xcom = {x.task_id: XComModel.deserialize_value(x) for x in session.scalars(
            select(XComModel).where(XComModel.run_id == run.run_id, XComModel.key == "return_value"))}
        return {"run_id": run.run_id, "state": str(run.state), "tasks": task_states(run, session), "xcom": xcom,
                "runs": every_run(session)}


if __name__ == "__main__":
    dag_file, logical_date, result, *runs_after = sys.argv[1:]
    found = [one_run(dag_file, logical_date, run_after) for run_after in runs_after]
    with open(result, "w") as handle:
        json.dump(found, handle, default=str)
