"""examples/airflow/dirtiness_dag.py in a real Airflow: its own virtualenv (`make test` makes
`.venv-airflow`), a SQLite metadata database, spark-submit to a local master.

One DAG run computes and hands its plan on; the same DAG run again (same run id) leaves one
succeeded DAG run and one succeeded job run; a DAG run for the same date with a new run id (what
`airflow dags test` makes) finds nothing new and skips the task that reads the plan. Only the first
spark-submits: the check before it finds the other two unchanged without a JVM. The DAG runs are made,
and their task states read from Airflow's database, by tests/airflow_dag_run.py: the last two in one
process, as each Airflow process takes seconds to start.
"""

import json
import os
import subprocess
import sys

import polars as pl
import pytest

from dirtiness.config import PROJECT_ROOT

AIRFLOW_BIN = PROJECT_ROOT / ".venv-airflow" / "bin"
DAG_FILE = PROJECT_ROOT / "examples" / "airflow" / "dirtiness_dag.py"
RUNNER = PROJECT_ROOT / "tests" / "airflow_dag_run.py"
LOGICAL_DATE, RUN_AFTER, LATER = "2026-11-23T08:00:00+00:00", "2026-11-23T08:05:00+00:00", "2026-11-23T09:10:00+00:00"
RUN_ID = f"manual__{RUN_AFTER}"


@pytest.fixture(scope="module")
def airflow(tmp_path_factory):
    """A function running a command of the Airflow environment (AIRFLOW_HOME in a temporary folder)."""
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.fail(f"{AIRFLOW_BIN}/airflow is missing: `make test` installs it (examples/airflow/requirements.txt)")
    home = tmp_path_factory.mktemp("airflow")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK", "SPARK_"))},
        "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(DAG_FILE.parent),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_DIRTINESS_SPARK": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        # spark-submit and the job's Python come from the dirtiness environment
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        "DIRTINESS_PYTHON": sys.executable,
        "DIRTINESS_OLD": str(PROJECT_ROOT / "examples" / "old.yaml"),
        "DIRTINESS_NEW": str(PROJECT_ROOT / "examples" / "new.yaml"),
        "DIRTINESS_OUT": str(home / "out"), "DIRTINESS_RETRIES": "0",
    }

    def run(*command: str) -> str:
        done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        return done.stdout

    run.home = home  # the first DAG run migrates the metadata database (tests/airflow_dag_run.py)
    return run


def dag_runs(airflow, name: str, *runs_after: str) -> list[dict]:
    """DAG runs of the date, one per ``runs_after``, in one Airflow process: each one's id, state, task states,
    XComs, then every run of the DAG (``runs``)."""
    result = airflow.home / f"{name}.json"
    output = airflow(str(AIRFLOW_BIN / "python"), str(RUNNER), str(DAG_FILE), LOGICAL_DATE, str(result), *runs_after)
    return [{**r, "output": output[-4000:]} for r in json.loads(result.read_text())]  # the tasks' logs


@pytest.mark.processes
def test_the_dag_computes_hands_the_plan_on_and_a_rerun_leaves_one_run(airflow, expected):
    [first] = dag_runs(airflow, "first", RUN_AFTER)
    assert (first["run_id"], first["state"]) == (RUN_ID, "success"), first["output"]
    assert first["tasks"] == dict.fromkeys(("check", "compute", "summary", "has_plan", "read_plan"), "success"), \
        first["tasks"]
    summary, plan = first["xcom"]["summary"], first["xcom"]["read_plan"]
    assert (summary["run_id"], summary["status"]) == (RUN_ID, "succeeded")  # --run-id {{ run_id }}
    assert summary["counts"]["ddl_plan"] == plan["operations"] == expected["counts"]["ddl_plan"]
    assert plan["phases"] == summary["plan"] == expected["plan"]

    # the same DAG run once more: the job finds its own run unchanged; then a new DAG run (a new run id, as
    # `airflow dags test` makes one) for the same date replaces it: nothing changed since the succeeded run,
    # so the plan's reader is skipped
    again, latest = dag_runs(airflow, "again", RUN_AFTER, LATER)
    assert (again["run_id"], again["state"]) == (RUN_ID, "success"), again["output"]
    assert (again["xcom"]["summary"]["status"], again["xcom"]["summary"]["same_as"]) == ("skipped", RUN_ID)
    assert again["tasks"]["compute"] == "skipped"  # no spark-submit: `dirtiness changed` wrote the summary
    assert again["tasks"]["read_plan"] == "success" and again["xcom"]["read_plan"] == plan  # its plan stands
    assert [(r["run_id"], r["state"]) for r in again["runs"]] == [(RUN_ID, "success")]
    runs = pl.read_delta(str(airflow.home / "out" / "runs")).select("run_id", "status").rows()
    assert runs == [(RUN_ID, "succeeded")]

    assert latest["state"] == "success" and latest["run_id"] != RUN_ID, latest["output"]
    assert [r["run_id"] for r in latest["runs"]] == [latest["run_id"]]
    assert latest["tasks"] == {
        "check": "success", "compute": "skipped", "summary": "success", "has_plan": "success", "read_plan": "skipped"}
    skipped = json.loads((airflow.home / "out.summaries" / f"{latest['run_id']}.json").read_text())
    assert (skipped["status"], skipped["same_as"]) == ("skipped", RUN_ID)
    assert pl.read_delta(str(airflow.home / "out" / "runs")).height == 1  # a skipped run writes nothing
