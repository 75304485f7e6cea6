"""A real Spark standalone cluster on this machine: a master and two workers, executors in their own JVMs.

``spark-submit`` sends the job to it; the rows must be the local run's.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from local_servers import assert_same_rows, free_port, wait_for

from dirtiness.config import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """``spark://127.0.0.1:PORT`` with two workers of one core each; everything stopped afterwards."""
    spark_class = shutil.which("spark-class", path=os.path.dirname(sys.executable))
    folder = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_WORKER_DIR": str(folder / "work")}
    port = free_port()
    processes = []

    def start(name: str, *argv: str) -> tuple[subprocess.Popen, object]:
        log = folder / f"{name}.log"
        with open(log, "w") as output:
            process = subprocess.Popen([spark_class, *argv], env=env, stdout=output, stderr=subprocess.STDOUT)
        processes.append(process)
        return process, log

    try:
        master, log = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", str(port), "--webui-port", str(free_port()))
        wait_for(port, master, log)
        url = f"spark://127.0.0.1:{port}"
        for n in (1, 2):
            start(f"worker{n}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                  "--memory", "2g", "--webui-port", str(free_port()))
        deadline = time.monotonic() + 120
        while (folder / "master.log").read_text().count("Registering worker") < 2:
            assert time.monotonic() < deadline, (folder / "master.log").read_text()[-2000:]
            time.sleep(0.5)
        yield url, folder
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


@pytest.mark.processes
def test_spark_submit_to_a_standalone_cluster_gives_the_local_rows(standalone, example_run, tmp_path):
    url, folder = standalone
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    out = tmp_path / "out"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    run = subprocess.run(
        [submit, "--master", url, "--total-executor-cores", "2", "--executor-cores", "1", "--executor-memory", "1g",
         str(PROJECT_ROOT / "jobs" / "compute_dirty.py"), "--old", str(EXAMPLE / "old.yaml"),
         "--new", str(EXAMPLE / "new.yaml"), "--out", str(out), "--run-id", "example",
         "--summary-json", str(tmp_path / "summary.json")],
        env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    printed = run.stdout + run.stderr  # spark-submit's PythonRunner merges the driver's stderr into its stdout
    assert "run example: succeeded" in printed and "round 1 (stratum 0)" in printed  # summary, per-round log
    assert json.loads((tmp_path / "summary.json").read_text())["counts"] == example_run.summary["counts"]
    executors = list((folder / "work").glob("app-*/*"))
    assert len(executors) == 2, executors  # one executor JVM on each worker
    assert_same_rows(example_run.out, out)
