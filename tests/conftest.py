"""One SparkSession per test process (startup costs 7-10 s), and the suite in tiers.

Tier 1, pure Python (parsing, checking, settings, SQL rewriting, read-back of
hand-made tables, report layout), needs no Spark session; ``pytest -m "not spark"``
runs it alone in seconds. Tier 2 shares the process's session, its run of the
bundled example (``example_run``) and of the seed scenarios (``seeds``). Tier 3
starts its own processes or servers (spark-submit, Spark Connect, PostgreSQL,
Chromium).

``make test`` runs two workers (``pytest -n 2 --dist loadfile
--no-loadscope-reorder``): each has its own session; a module's tests stay in
one worker (its module-scoped runs are computed once), modules that share a
session-scoped run go to the same worker (``SHARED_RUNS``), and the modules with
the slowest tier are handed out first.
"""

import gc
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from dirtiness.config import PROJECT_ROOT, load_config  # noqa: E402
from dirtiness.session import build_session  # noqa: E402

EXAMPLE = PROJECT_ROOT / "examples"
# The workers' own sessions, which make all the in-process runs, compile with both JIT tiers (the command line
# wins over JAVA_TOOL_OPTIONS below), the optimising tier only for methods ten times hotter than its default
# (a third of a warm run's time on the thread serving Python is Spark's closure cleaner parsing operators'
# class files over and over). Alone, runs 4-8 of the example in one session took 7.7-8.8 JVM CPU-seconds each
# against 11.0 with the quick tier only. With the default thresholds the compiler threads cost the suite's other
# JVMs as much as they saved (8 min 06 s, as with the quick tier); with these, 7 min 50 s, 8 min 01 s and
# 8 min 16 s against 8 min 19 s and 8 min 20 s with the quick tier only (2026-11-27, this machine).
WORKER_JVM_OPTIONS = ("-XX:TieredStopAtLevel=4 -XX:Tier4InvocationThreshold=50000 -XX:Tier4CompileThreshold=60000 "
                      "-XX:Tier4BackEdgeThreshold=400000")
# One session serves ~20 job runs: a larger heap than one production run needs (the status store is
# kept small by conf/job.yaml already).
# Small memory pages: Spark sizes a page from the heap (64 MiB from 4g and more), and every broadcast
# hash table takes at least one, however few its rows; the suite's hundreds of tiny broadcasts held
# gigabytes. Not for the job: at 1M objects its sorts ran many times slower with 2 MiB pages.
TEST_SPARK = {"spark.sql.shuffle.partitions": 2, "spark.default.parallelism": 2, "spark.driver.memory": "6g",
              "spark.ui.dagGraph.retainedRootRDDs": 50, "spark.buffer.pageSize": "2m",
              "spark.driver.extraJavaOptions": WORKER_JVM_OPTIONS}


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    # A test that reached Spark without this fixture would have started the JVM with the job's own
    # settings (a 4g heap, not the suite's): it must ask for ``spark`` so that it runs in the Spark tier.
    assert SparkSession.getActiveSession() is None, "a test started Spark without the spark fixture"
    config = load_config()
    config["spark"]["conf"].update(TEST_SPARK)
    session = build_session(config)
    # What is alive now (the collected test modules, Spark's and the other libraries' modules) lives as long
    # as the worker: frozen, Python's collector no longer walks it, and the collection after each Spark test
    # (``collect_garbage``) walks only what tests made since (measured: the suite's teardowns 43 -> 15 s).
    gc.collect()
    gc.freeze()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def config():
    return load_config()


@pytest.fixture(scope="session")
def seeds(spark, tmp_path_factory):
    """The explain scenarios written by one real run (run id ``seeds``): (output root, scenarios)."""
    from seeds import run_seeds

    return run_seeds(spark, tmp_path_factory.mktemp("seeds"))


OWN_PROCESSES = ("postgres", "browser")  # fixtures that start servers or browsers

# Every JVM of the suite (spark-submit, the Spark Connect server, the cluster; the workers' sessions override
# it: WORKER_JVM_OPTIONS) compiles with the quick JIT tier only. The suite's JVMs each run hundreds of
# distinct tiny queries, and the optimising compiler's threads took the cores the other worker needed:
# test_differential and test_plan in two workers took 364 and 368 s with both tiers, 299 and 306 s with the
# quick one (the whole suite 18.4 -> 15.4 min). Not for the job: alone in one process, a second run of the
# same 40 scenarios took 52 s with both tiers and 101 s with the quick one. The code cache is enlarged: the
# quick tier's default (48 MB) filled up and the JVM then stopped compiling at all. The throughput collector,
# not G1: its pauses cost the workers less CPU than G1's concurrent threads (measured on 2026-11-27: two runs
# of 40 random scenarios in one session, alternated, 105.7 and 107.9 s against 111.1 and 110.8 s with G1; the
# modules that compute in the workers' sessions took 7-13% less time in a whole suite).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC"


def pytest_configure(config):
    """Before any JVM starts; each inherits it. With Spark's classes archived (``make classes``,
    tests/class_archive.py), each JVM maps them instead of loading them."""
    from class_archive import jvm_options

    os.environ.setdefault("JAVA_TOOL_OPTIONS", f"{TEST_JVM_OPTIONS} {jvm_options()}".strip())


def pytest_collection_modifyitems(config, items):
    """Tests with their own processes first, then Spark tests, then pure ones; each tier keeps file order.
    The slow first: two workers take modules as they free up, so the quick ones fill in at the end."""
    def tier(item) -> int:
        names = set(getattr(item, "fixturenames", ()))
        if names & set(OWN_PROCESSES) or item.get_closest_marker("processes"):
            return 2
        return 1 if "spark" in names else 0

    for item in items:
        if tier(item):
            item.add_marker(pytest.mark.spark)
    items.sort(key=lambda item: -tier(item))  # stable: file order within a tier


# Modules that read one session-scoped run, handed to the same worker so that it is computed once (the seed
# scenarios: some 17 s of a worker's time).
SHARED_RUNS = {"test_explain.py": "seeds", "test_report.py": "seeds", "test_sail.py": "seeds"}


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (``make test``), with the modules of ``SHARED_RUNS`` one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedRunScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return SHARED_RUNS.get(os.path.basename(module), module)

    return SharedRunScheduling(config, log)


@dataclass
class ExampleRun:
    code: int
    out: Path           # the output root
    summary: dict       # --summary-json
    page: Path          # --report


@pytest.fixture(scope="session")
def example_run(spark, tmp_path_factory) -> ExampleRun:
    """The bundled example, run once through the command line (run id ``example``) for every read-only check."""
    from dirtiness.cli import main

    folder = tmp_path_factory.mktemp("example")
    out, summary, page = folder / "out", folder / "summary.json", folder / "run-report.html"
    code = main(["run", "--old", str(EXAMPLE / "old.yaml"), "--new", str(EXAMPLE / "new.yaml"), "--out", str(out),
                 "--run-id", "example", "--summary-json", str(summary), "--report", str(page)])
    return ExampleRun(code, out, json.loads(summary.read_text()) if code == 0 else {}, page)


@pytest.fixture(scope="session")
def expected() -> dict:
    """What the bundled example must give (examples/expected.json, also read by the README test and the benchmark)."""
    return json.loads((EXAMPLE / "expected.json").read_text())


@pytest.fixture(scope="module", autouse=True)
def release_cached_data(request):
    """Each test module starts with an empty cache: one session serves the whole run. A module of pure
    tests made no Java objects, and skips the JVM's full collection (0.5-1 s)."""
    yield
    from pyspark.sql import SparkSession

    used_spark = any(item.get_closest_marker("spark") for item in request.session.items
                     if item.path == request.node.path)
    session = SparkSession.getActiveSession()
    if session is not None and used_spark:
        session.catalog.clearCache()
        gc.collect()  # drops Python handles, so the JVM may collect the runs' checkpointed RDDs ...
        session.sparkContext._jvm.System.gc()  # ... and Spark's cleaner then frees their blocks


@pytest.fixture(autouse=True)
def collect_garbage(request):
    """After each Spark test, Python drops its handles to the test's Java objects: py4j releases a Java
    object only when its Python proxy is collected, and DataFrames in reference cycles wait for Python's
    cyclic collector, which a test allocating little in Python rarely triggers (measured: 3-5 GB of heap
    still held at the end of a module, freed only later). A pure test holds none."""
    yield
    if request.node.get_closest_marker("spark"):
        gc.collect()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on a Unix socket in a temporary folder, for the whole test run."""
    from postgres import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()
