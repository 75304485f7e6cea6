"""What the tests that start their own Spark servers share: loopback ports, waiting for a server, and
comparing a run's rows with the classic run's."""

import socket
import subprocess
import time
from pathlib import Path

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


def assert_same_rows(expected_out: Path, out: Path) -> None:
    """Every dirty table and the plan hold the same rows (``run_id`` aside) under both output roots."""
    for table, key in TABLES.items():
        expected = pl.read_delta(str(expected_out / table)).drop("run_id").sort(key)
        found = pl.read_delta(str(out / table)).drop("run_id").sort(key)
        assert found.height > 0 and found.equals(expected), table
