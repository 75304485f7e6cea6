"""The wheel, installed in a fresh virtualenv outside the source tree, spark-submitted to a real Spark
standalone cluster on this machine (a master, a worker, executors in their own JVMs): the rows must be the
local run's. One JVM run proves both: the package as users install it, on a cluster as they run it.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time

import pytest
from local_servers import assert_same_rows, free_port, wait_for

from dirtiness.config import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory) -> str:
    """The Python of a fresh virtualenv with the project's wheel installed (and nothing of the checkout)."""
    folder = tmp_path_factory.mktemp("wheel")
    dist, venv = folder / "dist", folder / "venv"
    # with the suite's own setuptools (a test dependency): an isolated build would install one first
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "-w", str(dist), str(PROJECT_ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel, = glob.glob(str(dist / "dirtiness-*.whl"))
    # without pip of its own (seconds to install): the suite's pip installs the wheel into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                                "--no-index", wheel], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # The dependencies (pyspark and the rest, hundreds of MB) come from the suite's own environment through
    # a path file; the suite's editable install of this project is not on that path, only the wheel is.
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (venv / os.path.relpath(site, venv) / "suite_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """``spark://127.0.0.1:PORT`` with one worker of two cores; everything stopped afterwards."""
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
        start("worker", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
              "--memory", "2g", "--webui-port", str(free_port()))
        deadline = time.monotonic() + 120
        while "Registering worker" not in (folder / "master.log").read_text():
            assert time.monotonic() < deadline, (folder / "master.log").read_text()[-2000:]
            time.sleep(0.5)
        yield url, folder
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


@pytest.mark.processes
def test_the_wheel_spark_submitted_to_a_standalone_cluster_gives_the_local_rows(standalone, wheel_python,
                                                                                example_run, tmp_path):
    url, folder = standalone
    work = tmp_path / "elsewhere"  # not the checkout: nothing of it on the path
    work.mkdir()
    where = subprocess.run([wheel_python, "-c", "import dirtiness.config as c; print(c.__file__); "
                            "print(c.DEFAULT_CONFIG)"], capture_output=True, text=True, cwd=work, check=True)
    venv = os.path.dirname(os.path.dirname(wheel_python))
    assert all(p.startswith(venv) for p in where.stdout.split()), where.stdout  # the wheel's code and configuration
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    out = tmp_path / "out"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": wheel_python,
           "PYSPARK_DRIVER_PYTHON": wheel_python}
    events = tmp_path / "events"
    events.mkdir()
    # a setting the user submits wins over conf/job.yaml's; the event log shows what the driver ran with
    submitted = {"spark.sql.shuffle.partitions": "3", "spark.eventLog.enabled": "true",
                 "spark.eventLog.dir": events.as_uri(), "spark.eventLog.compress": "false"}
    run = subprocess.run(
        [submit, "--master", url, "--total-executor-cores", "2", "--executor-cores", "1", "--executor-memory", "1g",
         *(f"--conf={key}={value}" for key, value in submitted.items()),
         str(PROJECT_ROOT / "jobs" / "compute_dirty.py"), "--old", str(EXAMPLE / "old.yaml"),
         "--new", str(EXAMPLE / "new.yaml"), "--out", str(out), "--run-id", "example",
         "--summary-json", str(tmp_path / "summary.json")],
        cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    printed = run.stdout + run.stderr  # spark-submit's PythonRunner merges the driver's stderr into its stdout
    assert "run example: succeeded" in printed and "round 1 (stratum 0)" in printed  # summary, per-round log
    assert json.loads((tmp_path / "summary.json").read_text())["counts"] == example_run.summary["counts"]
    executors = list((folder / "work").glob("app-*/*"))
    assert len(executors) == 2, executors  # two executor JVMs, each with its own folder
    assert_same_rows(example_run.out, out)
    log, = events.glob("*/events_*")  # Spark 4: a folder per application, its events in numbered files
    properties = next(event for event in map(json.loads, log.read_text().splitlines())
                      if event["Event"] == "SparkListenerEnvironmentUpdate")["Spark Properties"]
    assert properties["spark.sql.shuffle.partitions"] == "3"  # submitted, not job.yaml's 4
    assert properties["spark.ui.retainedJobs"] == "100"  # job.yaml's, which the submission does not set
    # spark-submit started the driver before job.yaml was read: its options are not claimed to be ours
    assert "UseParallelGC" not in properties.get("spark.driver.extraJavaOptions", "")

    # the wheel's console script, from elsewhere: the same flags make the same fingerprints (its packaged
    # configuration and rules), so the run just made is found unchanged, without a JVM
    asked = subprocess.run([os.path.join(venv, "bin", "dirtiness"), "changed", "--old", str(EXAMPLE / "old.yaml"),
                            "--new", str(EXAMPLE / "new.yaml"), "--out", str(out)],
                           cwd=work, capture_output=True, text=True, timeout=120)
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert json.loads(asked.stdout)["same_as"] == "example"
    # a bundled rule program by its name, from anywhere: the wheel's own (here on a gzipped dbt manifest)
    manifest = str(PROJECT_ROOT / "tests" / "data" / "dbt" / "jaffle_shop_manifest_dbt_1.12.json.gz")
    for rules in ("dbt_state_modified", "index_aware.dl"):
        asked = subprocess.run([os.path.join(venv, "bin", "dirtiness"), "changed", "--old", manifest, "--new",
                                manifest, "--out", str(tmp_path / "dbt"), "--rules", rules],
                               cwd=work, capture_output=True, text=True, timeout=120)
        assert asked.returncode == 0 and json.loads(asked.stdout)["changed"], asked.stderr[-2000:]
