"""What the tests that start their own Spark servers share: loopback ports, waiting for a server, and
comparing a run's rows with the classic run's."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import polars as pl

TABLES = {"dirty_stmts": ["database", "schema", "name"], "dirty_clusters": ["cluster"],
          "dirty_schemas": ["database", "schema"], "ddl_plan": ["seq"]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(port: int, process: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    """Until something listens on the loopback ``port``; fails with the log's end if ``process`` dies first."""
    deadline = time.monotonic() + seconds
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.5)


@contextlib.contextmanager
def serving(command: list[str], port: int, log: Path, **popen) -> Iterator[str]:
    """A Spark Connect server started by ``command`` on the loopback ``port``: its address while it runs."""
    with open(log, "w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, **popen)
    try:
        wait_for(port, server, log)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=60)


def run_remote(remote: str, out, run_id: str, old, new, *flags: str) -> str:
    """``dirtiness run`` through the Spark Connect server at ``remote`` (``SPARK_REMOTE``); its summary."""
    run = subprocess.run(
        [sys.executable, "-m", "dirtiness.cli", "run", "--old", str(old), "--new", str(new), "--out", str(out),
         "--run-id", run_id, *flags],
        env={**os.environ, "SPARK_REMOTE": remote}, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"run {run_id}: succeeded" in run.stdout
    return run.stdout


def assert_same_rows(expected_out: Path, out: Path) -> None:
    """Every dirty table and the plan hold the same rows (``run_id`` aside) under both output roots."""
    for table, key in TABLES.items():
        expected = pl.read_delta(str(expected_out / table)).drop("run_id").sort(key)
        found = pl.read_delta(str(out / table)).drop("run_id").sort(key)
        assert found.height > 0 and found.equals(expected), table
