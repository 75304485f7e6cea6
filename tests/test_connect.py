"""`dirtiness run --remote sc://...`: the same job through a real Spark Connect server gives the same rows.

The seed scenarios through the Spark Connect protocol: test_sail.py (a Sail server).
"""

import os
import re
import shutil
import sys

import polars as pl
import pytest
import yaml
from local_servers import assert_same_rows, free_port, run_remote, serving

from dirtiness.config import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"
SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server (the pyspark distribution's own) on a loopback port, for this module."""
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    port, log = free_port(), tmp_path_factory.mktemp("connect") / "server.log"
    command = [submit, "--class", SERVER, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.driver.memory=4g", "--conf", "spark.buffer.pageSize=2m"]
    with serving(command, port, log, env={**os.environ, "PYSPARK_PYTHON": sys.executable}) as remote:
        yield remote, log


@pytest.mark.processes
def test_the_example_through_spark_connect_gives_the_classic_rows(connect_server, example_run, tmp_path):
    remote, log = connect_server
    run_remote(remote, tmp_path / "out", "example", EXAMPLE / "old.yaml", EXAMPLE / "new.yaml")
    assert_same_rows(example_run.out, tmp_path / "out")
    # the run's session was released as the command ended, not left to the server's idle timeout (an hour)
    opened = set(re.findall(r"Session with userId: \S* and sessionId: ([0-9a-f-]+) accessed", log.read_text()))
    closed = set(re.findall(r"Closing session with userId: \S* and sessionId: ([0-9a-f-]+)", log.read_text()))
    assert len(opened) == 1 and closed == opened, (opened, closed)


@pytest.mark.processes
def test_pyspark_local_connect_string_runs_a_project(tmp_path):
    """``SPARK_REMOTE="local[2]"``: PySpark starts its own Connect server in the command's process (a project of
    two objects: what is tested is the session, the example's rows are the other test's)."""
    objects = [{"database": "d", "schema": "s", "name": "a", "kind": "view", "hash": "h1"},
               {"database": "d", "schema": "s", "name": "b", "kind": "view", "hash": "h1", "depends_on": ["d.s.a"]}]
    (tmp_path / "old.yaml").write_text(yaml.safe_dump({"objects": objects}))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump({"objects": [{**objects[0], "hash": "h2"}, objects[1]]}))
    printed = run_remote("local[2]", tmp_path / "out", "local", tmp_path / "old.yaml", tmp_path / "new.yaml")
    assert "dirty: 2 dirty_stmts, 0 dirty_clusters, 1 dirty_schemas" in printed
    assert pl.read_delta(str(tmp_path / "out" / "dirty_stmts"))["name"].sort().to_list() == ["a", "b"]


def test_the_package_uses_nothing_spark_connect_lacks():
    """Spark Connect has no SparkContext, RDDs or JVM handles: the package must not reach for them."""
    lacking = ("sparkContext", ".rdd", "_jvm", "_jsc", "_jdf", "_jsparkSession")
    # jvm_names: called by build_session for a JVM it started, never for Connect; size_estimate: returns a
    # Connect frame as it is; job_names: gives no names to a Connect session
    classic_only = {"jvm_names.py", "size_estimate.py", "job_names.py"}
    found = [f"{path.relative_to(PROJECT_ROOT)}: {word}" for path in (PROJECT_ROOT / "src" / "dirtiness").rglob("*.py")
             for word in lacking if word in path.read_text() and path.name not in classic_only]
    assert found == []
