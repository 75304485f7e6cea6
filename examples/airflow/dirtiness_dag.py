"""Airflow DAG: every hour, what to redeploy after a change to the SQL project, and the plan handed on.

    check      branch: `python -m dirtiness changed` asks, without a JVM, whether anything changed
               since the latest succeeded run; if not, it writes the skipped run's summary and
               compute is skipped (no spark-submit for an unchanged hour)
    compute    SparkSubmitOperator: jobs/compute_dirty.py --run-id {{ run_id }} --if-changed
               --summary-json ...   (a retry or a re-run of the DAG run replaces its rows)
    summary    the run's summary (counts, rounds, seconds), returned to XCom
    has_plan   short circuit: when nothing is new since the latest succeeded run, everything
               downstream is skipped
    read_plan  this run's phased DDL plan from the ``ddl_plan`` Delta table, in order; its
               operations per phase returned to XCom (hand them to review, or to `dirtiness apply`)

Where things are comes from the environment of the Airflow workers (or from the DAG run's
params, when triggered with a configuration):

    DIRTINESS_OLD, DIRTINESS_NEW  snapshots: the deployed project and the desired one
    DIRTINESS_OUT                 the output root (Delta tables)
    DIRTINESS_SUMMARIES           a folder for the summaries (default: DIRTINESS_OUT + ".summaries")
    DIRTINESS_JOB                 jobs/compute_dirty.py (default: the checkout this DAG is in)
    DIRTINESS_PYTHON              a Python with the dirtiness package installed (driver and workers)
    DIRTINESS_RETRIES             retries of each task (default 2, two minutes apart)

The Spark connection (``dirtiness_spark``, e.g. ``AIRFLOW_CONN_DIRTINESS_SPARK=
'{"conn_type": "spark", "host": "local[2]"}'``) gives the master; ``spark-submit`` must be on
the worker's PATH. The driver runs on the Airflow worker (client mode): the summary is written
there. The plan is read with ``deltalake``, which the Airflow environment needs installed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, task

CHECKOUT = Path(__file__).resolve().parents[2]
OUT = os.environ.get("DIRTINESS_OUT", "/data/dirtiness/out")
SUMMARY = "{{ params.summaries }}/{{ run_id }}.json"


def job_arguments(old: str, new: str, out: str, run_id: str, summary: str) -> list[str]:
    """The flags the check and the job share: the check must ask about the run the job would make."""
    return ["--old", old, "--new", new, "--out", out, "--run-id", run_id, "--summary-json", summary]


with DAG(
    dag_id="dirtiness",
    description="dirty objects, clusters and schemas of a SQL project change, and the plan that redeploys them",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # runs write the same output root; one at a time keeps --if-changed meaningful
    params={
        "old": Param(os.environ.get("DIRTINESS_OLD", "/data/project/deployed"), type="string"),
        "new": Param(os.environ.get("DIRTINESS_NEW", "/data/project/desired"), type="string"),
        "out": Param(OUT, type="string"),
        "summaries": Param(os.environ.get("DIRTINESS_SUMMARIES", OUT + ".summaries"), type="string"),
    },
    default_args={"retries": int(os.environ.get("DIRTINESS_RETRIES", "2")), "retry_delay": pendulum.duration(minutes=2)},
    tags=["dirtiness"],
) as dag:
    python = os.environ.get("DIRTINESS_PYTHON", "python3")

    @task.branch
    def check(run_id=None, params=None) -> str:
        """``compute`` when something changed since the latest succeeded run, else straight to ``summary``."""
        summary_file = os.path.join(params["summaries"], f"{run_id}.json")
        asked = subprocess.run([python, "-m", "dirtiness", "changed",
                                *job_arguments(params["old"], params["new"], params["out"], run_id, summary_file)],
                               capture_output=True, text=True)
        print(asked.stderr, end="")
        if asked.returncode != 0:  # bad input: the job's own one-line error, before any spark-submit
            raise RuntimeError((asked.stderr.strip().splitlines() or ["dirtiness changed failed"])[-1])
        return "compute" if json.loads(asked.stdout.strip().splitlines()[-1])["changed"] else "summary"

    compute = SparkSubmitOperator(
        task_id="compute",
        conn_id="dirtiness_spark",
        application=os.environ.get("DIRTINESS_JOB", str(CHECKOUT / "jobs" / "compute_dirty.py")),
        name="dirtiness-{{ ds_nodash }}",
        driver_memory="4g",  # spark-submit starts the driver's JVM: conf/job.yaml's memory cannot reach it
        conf={"spark.pyspark.python": python, "spark.pyspark.driver.python": python},
        # the DAG run's id: a retry of this task, or a re-run of the DAG run, replaces the run's rows
        application_args=[*job_arguments("{{ params.old }}", "{{ params.new }}", "{{ params.out }}", "{{ run_id }}",
                                         SUMMARY), "--if-changed"],
    )

    @task(trigger_rule="none_failed_min_one_success")  # after compute, or straight after check
    def summary(run_id=None, params=None) -> dict:
        """The job's summary, to XCom: what changed, how many rounds, the plan's size."""
        with open(os.path.join(params["summaries"], f"{run_id}.json"), encoding="utf-8") as handle:
            return json.load(handle)

    @task.short_circuit
    def has_plan(found: dict) -> bool:
        """False (skip what follows) when the inputs were found unchanged since another run (by ``check``,
        or by the job's own --if-changed).

        A re-run of a DAG run whose job already succeeded is found unchanged since itself: its plan
        stands, so the downstream tasks still run.
        """
        return found["status"] != "skipped" or found.get("same_as") == found["run_id"]

    @task
    def read_plan(run_id=None, params=None) -> dict:
        """This run's plan, in order, from Delta; only from a run whose ``runs`` row says succeeded."""
        import pyarrow as pa
        from deltalake import DeltaTable, QueryBuilder

        def rows(table: str, sql: str) -> list[dict]:
            query = QueryBuilder().register(table, DeltaTable(os.path.join(params["out"], table)))
            return pa.table(query.execute(sql).read_all()).to_pylist()

        literal = run_id.replace("'", "''")
        status = rows("runs", f"SELECT status FROM runs WHERE run_id = '{literal}'")
        if [r["status"] for r in status] != ["succeeded"]:
            raise RuntimeError(f"run {run_id} has not succeeded: {status}")
        plan = rows("ddl_plan", f"SELECT seq, phase, step, statement FROM ddl_plan WHERE run_id = '{literal}' "
                                "ORDER BY seq")
        phases: dict[str, int] = {}
        for operation in plan:
            phases[operation["phase"]] = phases.get(operation["phase"], 0) + 1
            print(f"{operation['seq']:>6}  {operation['phase']:<10} {operation['step']:>3}  {operation['statement']}")
        return {"run_id": run_id, "operations": len(plan), "phases": phases}

    found = summary()
    check() >> [compute, found]
    compute >> found
    has_plan(found) >> read_plan()
