"""``spark-submit jobs/compute_dirty.py`` runs the same job in its own driver process."""

import json
import os
import shutil
import subprocess
import sys

import polars as pl
import pytest
from test_snapshot import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.config import PROJECT_ROOT


@pytest.mark.processes
def test_spark_submit_runs_the_job(tmp_path):
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable)) or shutil.which("spark-submit")
    assert submit, "spark-submit is installed with pyspark"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out, summary = tmp_path / "out", tmp_path / "summary.json"
    result = subprocess.run(
        [submit, "--master", "local[2]", str(PROJECT_ROOT / "jobs" / "compute_dirty.py"),
         "--old", EXAMPLE_OLD, "--new", EXAMPLE_NEW, "--out", str(out), "--run-id", "submitted",
         "--forced-schema", "materialize.internal", "--summary-json", str(summary)],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    # spark-submit's PythonRunner merges the driver's stderr into its stdout
    printed = result.stdout + result.stderr
    assert "run submitted: succeeded" in printed
    assert "round 1 (stratum 0)" in printed  # the per-round log line
    counts = json.loads(summary.read_text())["counts"]
    # forcing materialize.internal adds winning_bids and its schema to the example's 7 objects and 3 schemas
    assert {k: v for k, v in counts.items() if k != "ddl_plan"} == {"dirty_stmts": 8, "dirty_clusters": 1,
                                                                   "dirty_schemas": 4}
    schemas = pl.read_delta(str(out / "dirty_schemas")).filter(pl.col("schema") == "internal").to_dicts()
    assert [(s["rule"], s["cause"]) for s in schemas] == [("forced", "ForcedSchema(materialize, internal)")]


@pytest.mark.processes
def test_spark_submit_bad_input_exits_2(tmp_path):
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable)) or shutil.which("spark-submit")
    result = subprocess.run(
        [submit, str(PROJECT_ROOT / "jobs" / "compute_dirty.py"), "--old", str(tmp_path / "nope.yaml"),
         "--new", EXAMPLE_NEW, "--out", str(tmp_path / "out")],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "nope.yaml: no such file or folder (--old)" in result.stdout + result.stderr
