"""Unattended runs: bad input answered in one line, nothing half-published, safe retries."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import polars as pl
import pytest
import yaml
from cli_output import error_lines
from spark_jobs import descriptions_of_jobs, jobs_started
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness import session
from dirtiness.cli import main
from dirtiness.errors import PublishError
from dirtiness.config import load_config
from dirtiness.pipeline import Hooks, compute, run
from dirtiness.publish import publish
from dirtiness.settings import RunParams, resolve
from dirtiness.store.delta import DeltaStore

TABLES = ("dirty_stmts", "dirty_clusters", "dirty_schemas", "ddl_plan")


def obj(name, kind="view", **extra):
    database, schema, short = name.split(".")
    return {"database": database, "schema": schema, "name": short, "kind": kind, "hash": "h1", **extra}


def write_yaml(path, document):
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return str(path)


def published(out) -> list[dict]:
    """Rows of ``runs`` that say succeeded."""
    if not os.path.exists(os.path.join(out, "runs")):
        return []
    return [r for r in pl.read_delta(os.path.join(out, "runs")).to_dicts() if r["status"] == "succeeded"]


def table_rows(out, table, run_id):
    frame = pl.read_delta(os.path.join(out, table)).filter(pl.col("run_id") == run_id).drop("run_id")
    return sorted(tuple(r.values()) for r in frame.to_dicts())


GOOD = [obj("d.s.a"), obj("d.s.b", depends_on=["d.s.a"])]


@pytest.mark.parametrize("new, message", [
    ("objects:\n  - {database: d, schema: s\n  - oops: [\n", "new.yaml: line 3: malformed YAML/JSON"),
    ('{"objects": [{"database": "d",, }]}', "new.yaml: line 1: malformed YAML/JSON"),
    ({"objects": [{"database": "d", "schema": "s", "kind": "view"}]}, "object #1: missing required field 'name'"),
    ({"objects": [obj("d.s.a", hash=["x"])]}, "d.s.a: field 'hash' must be a string or null, not list"),
    ({"objects": [obj("d.s.a", replacement="yes")]}, "d.s.a: field 'replacement' must be true or false, not 'yes'"),
    ({"objects": [obj("d.s.a", kind="tabel")]}, "d.s.a: unknown kind 'tabel'"),
    ({"objects": [{**obj("d.s.a"), "schema": " "}]}, "field 'schema' is empty"),
    ({"objects": [obj("d.s.a"), obj("d.s.a")]}, "d.s.a: duplicate object"),
    ({"objects": [obj("d.s.a", depends_on=["d.ghost"])]}, "d.s.a: dependency 'd.ghost' is not a three-part reference"),
    ({"objects": [obj("d.s.a", depends_on=[["d", "s", "x", "y"]])]}, "is not a three-part reference"),
    ({"items": []}, "new.yaml: not a snapshot: expected a document with an 'objects' list"),
    ({"objects": [obj(f"d.s.o{i}", kind="nope") for i in range(7)]}, "7 invalid objects"),
    ({"objects": [obj("d.s.a", indexes=[{"name": "i", "cluster": "c"}]),
                  obj("d.s.b", indexes=[{"name": "i", "cluster": "c"}])]},
     "d.s.b: index 'i' is also an index of d.s.a (index names are unique within a schema)"),
    ({"objects": [obj("d.s.a", indexes=[{"name": "i", "cluster": "c", "key": "a"}])]},
     "d.s.a: index i: 'key' must be a non-empty list of SQL expressions"),
    ({"objects": [obj("d.s.a", indexes=[{"name": "i", "cluster": "c", "clustr": "c"}])]},
     "new.yaml:6: unknown field 'clustr' of an index (d.s.a); did you mean 'cluster'?"),
])
def test_bad_document_exits_2_before_spark_starts(tmp_path, capsys, new, message):
    """A document is validated while settings resolve: no session is needed to reject it."""
    check_exit_2(tmp_path, capsys, new, message)


@pytest.mark.parametrize("new, message", [
    ({"objects": [obj("d.s.a", depends_on=["d.s.ghost"])]},
     "new.yaml (new project): 1 dependencies on objects not in the snapshot: d.s.a: depends on d.s.ghost, "
     "which is not in the snapshot"),
    ({"objects": [obj("d.s.a", sql="CREATE VIEW a AS SELECT * FROM ghost")]},  # inferred from the SQL
     "1 dependencies on objects not in the snapshot: d.s.a: depends on d.s.ghost"),
    ({"objects": [obj("d.s.a", sql="CREATE VIEW a AS SELECT FROM WHERE x")]},
     "1 statements that cannot be used: d.s.a: line 1, column 30: Expected table name but got 'WHERE'"),
    ({"objects": [obj("d.s.a", sql="CREATE VIEW a AS\nSELECT 1 AS x,\n  'open")]},
     "d.s.a: line 3, column 7: cannot tokenize near"),
    ({"objects": [obj("d.s.a", sql="CREATE VIEW b AS SELECT 1")]}, "d.s.a: the statement creates d.s.b, not d.s.a"),
    ({"objects": [obj("d.s.b"), obj("d.s.c"),
                  obj("d.s.a", sql="CREATE VIEW a AS SELECT * FROM b", depends_on=["d.s.c"])]},
     "2 dependencies that do not match the SQL: d.s.a: depends_on lists d.s.c, which its SQL does not read; "
     "d.s.a: its SQL reads d.s.b, which depends_on does not list"),
    ({"objects": [obj("d.s.a", kind="materialized-view", cluster="c1",
                      sql="CREATE MATERIALIZED VIEW a IN CLUSTER c2 AS SELECT 1 AS x")]},
     "1 clusters that disagree with the statement's IN CLUSTER: d.s.a: cluster is c1 but its SQL says IN CLUSTER c2"),
])
def test_bad_project_exits_2_naming_file_object_problem(spark, tmp_path, capsys, new, message):
    """Problems found on Spark (dependencies, SQL): exit 2, one line, nothing published."""
    check_exit_2(tmp_path, capsys, new, message)


def check_exit_2(tmp_path, capsys, new, message):
    old = write_yaml(tmp_path / "old.yaml", {"objects": GOOD})
    out = tmp_path / "out"
    assert main(["run", "--old", old, "--new", write_yaml(tmp_path / "new.yaml", new), "--out", str(out)]) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and message in err[0], err
    assert "Traceback" not in err
    assert published(out) == []
    assert not any((out / t).exists() for t in TABLES)


def test_all_problems_of_one_kind_in_one_line(tmp_path, capsys):
    new = {"objects": [obj(f"d.s.o{i}", kind="nope") for i in range(7)]}
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    assert main(["run", "--old", old, "--new", write_yaml(tmp_path / "new.yaml", new), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "d.s.o0: unknown kind 'nope'" in err and "d.s.o4" in err and "(and 2 more)" in err


def test_a_misspelt_field_is_one_line_with_its_first_line_and_a_hint(tmp_path, capsys):
    """Each unknown field once, however many objects carry it: where it first is, and the field it may mean."""
    new = {"objects": [obj("d.s.a"), obj("d.s.b", depend_on=["d.s.a"]), obj("d.s.c", depend_on=["d.s.b"]),
                       obj("d.s.d", colour="blue")]}
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    path = write_yaml(tmp_path / "new.yaml", yaml.safe_dump(new, sort_keys=False))
    lines = open(path).read().splitlines()
    first, colour = (next(n for n, line in enumerate(lines, 1) if word in line) for word in ("depend_on", "colour"))
    assert main(["run", "--old", old, "--new", path, "--out", str(tmp_path / "out")]) == 2
    err = error_lines(capsys.readouterr().err)
    assert err == [f"dirtiness: {path}:{first}: unknown field 'depend_on' of an object (2 objects, first d.s.b); "
                   f"did you mean 'depends_on'?",
                   f"dirtiness: {path}:{colour}: unknown field 'colour' of an object (d.s.d)"], err


def test_what_is_no_catalog_is_refused_before_spark_starts(tmp_path, capsys):
    """An output root, an empty folder, a binary file given as a project: one line each, no session."""
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    root = tmp_path / "root"
    (root / "runs" / "_delta_log").mkdir(parents=True)
    (root / "dirty_stmts").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    for given, said in ((root, "the output root of `dirtiness run` (it holds a runs table), not a project"),
                        (tmp_path / "empty", "not a catalog: no objects/ table in this folder"),
                        (tmp_path / "blob.bin", "not a catalog: byte 128 is not UTF-8 text")):
        assert main(["run", "--old", old, "--new", str(given), "--out", str(tmp_path / "out")]) == 2
        err = error_lines(capsys.readouterr().err)
        assert len(err) == 1 and err[0].startswith(f"dirtiness: {given}: {said}"), err
        assert "a dbt manifest (.json or .json.gz)" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("strategy", ["blue-green", "in-place"])
def test_a_deleted_table_is_refused_before_spark_starts(tmp_path, capsys, strategy):
    """What the inputs alone decide needs no Spark: a deleted table or source is dropped by either strategy."""
    old = write_yaml(tmp_path / "old.yaml", {"objects": [obj("d.a.t", kind="table"), obj("d.a.v"),
                                                          obj("d.b.src", kind="source")]})
    new = write_yaml(tmp_path / "new.yaml", {"objects": [obj("d.a.v")]})
    out = tmp_path / "out"
    assert main(["run", "--old", old, "--new", new, "--out", str(out), "--strategy", strategy]) == 3
    assert error_lines(capsys.readouterr().err) == [
        f"dirtiness: the plan drops stateful objects, refused without --allow-destructive: d.a.t (table), "
        f"d.b.src (source) (deleted from the new project {new}; nothing was computed)"]
    assert not out.exists()


def write_tables(folder, objects, dependencies=None, indexes=None):
    if indexes is not None:
        os.makedirs(folder / "indexes")
        pl.DataFrame(indexes, schema=["database", "schema", "name", "index_name", "cluster"],
                     orient="row").write_parquet(folder / "indexes" / "part.parquet")
    os.makedirs(folder / "objects")
    columns = ["database", "schema", "name", "kind", "hash", "replacement"]
    pl.DataFrame([{c: o.get(c) for c in columns} for o in objects], schema={c: pl.String for c in columns}) \
        .write_csv(folder / "objects" / "part.csv")
    if dependencies is not None:
        os.makedirs(folder / "dependencies")
        pl.DataFrame(dependencies, schema=["database", "schema", "name", "dep_database", "dep_schema", "dep_name"],
                     orient="row").write_parquet(folder / "dependencies" / "part.parquet")
    return str(folder)


@pytest.mark.parametrize("objects, dependencies, message", [
    ([obj("d.s.a", replacement="maybe")], None, "1 objects whose replacement is not true or false: d.s.a"),
    ([obj("d.s.a", kind="tabel"), obj("d.s.b", kind="x")], None, "2 objects of unknown kind: d.s.a: tabel; d.s.b: x"),
    ([obj("d.s.a"), obj("d.s.a")], None, "1 duplicate objects: d.s.a"),
    ([obj("d.s.a")], [("d", "s", "a", "d", "s", "ghost")],
     "(new project): 1 dependencies on objects not in the snapshot: d.s.a: depends on d.s.ghost"),
    ([{"database": "d", "schema": "s", "name": None, "kind": "view"}], None, "objects with an empty name part"),
    ([obj("d.s.a"), obj("d.s.b")], "INDEXES",
     "1 index names used twice in a schema (index names are unique within a schema): d.s.i"),
])
def test_bad_table_form_exits_2(spark, tmp_path, capsys, objects, dependencies, message):
    indexes = [("d", "s", "a", "i", "c"), ("d", "s", "b", "i", "c")] if dependencies == "INDEXES" else None
    new = write_tables(tmp_path / "new", objects, None if indexes else dependencies, indexes)
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    assert main(["run", "--old", old, "--new", new, "--out", str(tmp_path / "out")]) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and message in err[0], err
    assert published(str(tmp_path / "out")) == []


def test_table_form_missing_column(spark, tmp_path, capsys):
    os.makedirs(tmp_path / "new" / "objects")
    (tmp_path / "new" / "objects" / "part.csv").write_text("database,schema,name\nd,s,a\n")
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    assert main(["run", "--old", old, "--new", str(tmp_path / "new"), "--out", str(tmp_path / "out")]) == 2
    assert "new/objects: missing column kind" in capsys.readouterr().err


def test_forced_schema_must_exist_and_external_databases_are_allowed(spark, tmp_path, capsys):
    old = write_yaml(tmp_path / "old.yaml", {"objects": []})
    source = obj("d.raw.src", kind="source", sql="CREATE SOURCE src FROM WEBHOOK BODY FORMAT TEXT CHECK ('open")
    mismatch = obj("d.s.b", sql="CREATE VIEW b AS SELECT * FROM a", depends_on=["d.raw.src"])
    new = write_yaml(tmp_path / "new.yaml", {"objects": [obj("d.s.a", depends_on=["shared.s.x"]), source, mismatch]})
    out = str(tmp_path / "out")
    assert main(["run", "--old", old, "--new", new, "--out", out]) == 2
    assert "1 statements that cannot be used: d.raw.src: line 1, column 60: cannot tokenize near" in \
        capsys.readouterr().err
    sql = {"verbatim_kinds": ["source"], "dependency_mismatch": "warn"}
    argv = ["run", "--old", old, "--new", new, "--out", out, "--config",
            write_yaml(tmp_path / "verbatim.yaml", {"sql": sql})]
    assert main(argv) == 2
    assert "depends on shared.s.x, which is not in the snapshot" in capsys.readouterr().err
    config = write_yaml(tmp_path / "external.yaml", {"external_databases": ["shared"], "sql": sql})
    argv = ["run", "--old", old, "--new", new, "--out", out, "--config", config]
    assert main([*argv, "--forced-schema", "d.nope"]) == 2
    assert "--forced-schema d.nope: no such schema in the new project" in capsys.readouterr().err
    # an empty old project is the first deploy: everything is added
    assert main([*argv, "--run-id", "first"]) == 0
    printed = capsys.readouterr()
    assert ("2 dependencies that do not match the SQL: d.s.b: depends_on lists d.raw.src, which its SQL does not "
            "read; d.s.b: its SQL reads d.s.a, which depends_on does not list (warning: the plan orders by both)"
            in printed.err)
    assert "statements carried verbatim (not qualified or rewritten): " in printed.out and "d.raw.src (source)" in printed.out
    assert table_rows(out, "dirty_stmts", "first")[0][:4] == ("d", "raw", "src", "source")
    columns = pl.read_delta(os.path.join(out, "ddl_plan")).drop("run_id").columns
    plan = {r["name"]: r for r in (dict(zip(columns, t)) for t in table_rows(out, "ddl_plan", "first"))
            if r["object_type"] == "object"}
    assert plan["src"]["statement"] == source["sql"] and plan["src"]["verbatim"] is True
    assert plan["b"]["step"] > max(plan["a"]["step"], plan["src"]["step"])  # after what depends_on and the SQL say


def fail_at(stage, seen):
    def hook(name):
        seen.append(name)
        if name == stage:
            raise RuntimeError(f"injected failure at {stage}")
    return hook


def test_a_failure_while_computing_writes_only_the_failed_row(spark, tmp_path):
    out = str(tmp_path / "out")
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out=out, run_id="broken"), load_config())
    seen = []
    context = spark.sparkContext
    context.setJobDescription("the caller's")
    first = jobs_started(spark)
    with pytest.raises(RuntimeError, match="injected failure at plan"):
        run(spark, settings, Hooks(on_stage=fail_at("plan", seen)))
    assert seen == ["load", "sql", "facts", "fixpoint", "plan"]
    # its Spark jobs are named by the stage that ran them; the thread's own names are back afterwards
    names = descriptions_of_jobs(spark, first, jobs_started(spark))
    assert {"dirtiness broken: facts", "dirtiness broken: fixpoint"} <= set(names) <= \
        {f"dirtiness broken: {stage}" for stage in seen}, names
    assert (context.getLocalProperty("spark.job.description"), context.getLocalProperty("callSite.long")) == \
        ("the caller's", None)
    context.setJobDescription(None)
    assert sorted(os.listdir(out)) == ["runs"]
    [row] = pl.read_delta(os.path.join(out, "runs")).to_dicts()
    assert (row["status"], row["message"]) == ("failed", "injected failure at plan")


def test_a_run_that_fails_drops_the_caches_it_made(spark, tmp_path, monkeypatch):
    """A large catalog's run caches its plan's decisions and rows in columns (``Holding.columnar``); a cache,
    unlike a checkpoint, stays in the session until dropped, so a run that fails after making one drops it."""
    from pyspark import StorageLevel

    from dirtiness import pipeline

    cache = spark.range(3).persist(StorageLevel.DISK_ONLY)
    cache.count()

    def fail_after_caching(self, clock, old, new, earlier):
        self.cached.append(cache)
        raise RuntimeError("failed after caching")

    monkeypatch.setattr(pipeline._Run, "stages", fail_after_caching)
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out=str(tmp_path / "out"), run_id="cached"),
                       load_config())
    with pytest.raises(RuntimeError, match="failed after caching"):
        compute(settings, spark)
    assert not cache.storageLevel.useDisk and not cache.is_cached


def test_retry_after_a_failure_at_every_write(spark, tmp_path):
    """One computed run, published with a failure injected before each write, then published whole."""
    out = str(tmp_path / "out")
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out=out, run_id="retry"), load_config())
    result = compute(settings, spark)
    store = DeltaStore(spark, out)
    seen = []
    writes = ["write", "write:facts/changed_stmt", "write:dirty_stmts", "write:ddl_plan", "write:run_rounds",
              "publish", "write:run_stages"]
    try:
        for stage in writes:
            with pytest.raises(RuntimeError, match=f"injected failure at {stage}"):
                publish(result, store, Hooks(on_stage=fail_at(stage, seen)))
            assert published(out) == [], stage
            [row] = pl.read_delta(os.path.join(out, "runs")).to_dicts()
            assert (row["status"], row["message"]) == ("failed", f"injected failure at {stage}")
        full = store.replace_run  # a write that fails inside the store (a full disk): one line naming the table

        def disk_full(table, rows, run_id):
            if table == "ddl_plan":
                raise OSError(28, "No space left on device")
            return full(table, rows, run_id)

        store.replace_run = disk_full
        with pytest.raises(PublishError, match=rf"^writing table ddl_plan under {re.escape(out)} failed: "
                                               rf"\[Errno 28\] No space left on device$"):
            publish(result, store)
        store.replace_run = full
        assert published(out) == []
        summary = publish(result, store)
    finally:
        result.release()
    assert set(writes) <= set(seen)
    runs = pl.read_delta(os.path.join(out, "runs")).to_dicts()
    assert [(r["run_id"], r["status"]) for r in runs] == [("retry", "succeeded")]
    for table in TABLES:
        rows = table_rows(out, table, "retry")
        assert len(rows) == len(set(rows)) == summary["counts"][table], table


def test_concurrent_runs_into_one_root_give_the_same_rows(spark, tmp_path):
    """Two runs of the same input at once: both published, and identical (deterministic output)."""
    out = str(tmp_path / "out")
    errors = []

    def go(run_id):
        try:
            run(spark, resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out=out, run_id=run_id), load_config()))
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=go, args=(f"c{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r["run_id"] for r in published(out)) == ["c0", "c1"]
    for table in (*TABLES, "facts/depends_on"):
        one, two = table_rows(out, table, "c0"), table_rows(out, table, "c1")
        if table == "ddl_plan":  # staging names carry the deploy suffix, derived from the run id
            one, two = ([tuple(str(v).split("_dpl")[0] for v in r) for r in rows] for rows in (one, two))
        assert one == two and one, table
    assert len(table_rows(out, "dirty_stmts", "c0")) == 7


def test_if_changed_skips_unchanged_inputs(example_run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(example_run.out, out)  # the example's run, with the default settings
    runs = pl.read_delta(str(out / "runs")).to_dicts()
    assert runs[0]["new_fingerprint"].startswith("sha256:") and runs[0]["strategy"] == "blue-green"
    argv = ["run", "--old", EXAMPLE_OLD, "--new", EXAMPLE_NEW, "--out", str(out), "--if-changed"]
    page = tmp_path / "report.html"
    with monkeypatch.context() as patched:  # the runs table is read before any Spark session starts
        patched.setattr(session, "build_session", lambda *a, **k: pytest.fail("a skipped run started Spark"))
        assert main([*argv, "--run-id", "second", "--report", str(page)]) == 0
        assert "run second: skipped: inputs, rules and configuration are unchanged since run example" in \
            capsys.readouterr().out
        assert "dirtiness run <span class=\"mono\">example</span>" in page.read_text()  # the run that stands
        # what a scheduler asks before it spark-submits: the same decision, a JSON line, the skipped summary
        asked = ["changed", *argv[1:-1], "--run-id", "fourth", "--summary-json", str(tmp_path / "fourth.json")]
        assert main(asked) == 0 and main([*asked[:-2], "--strategy", "in-place"]) == 0
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert said == [{"run_id": "fourth", "changed": False, "same_as": "example"},
                    {"run_id": "fourth", "changed": True, "same_as": None}]
    skipped = json.loads((tmp_path / "fourth.json").read_text())
    assert (skipped["status"], skipped["same_as"], skipped["run_id"]) == ("skipped", "example", "fourth")
    assert main([*argv, "--run-id", "third", "--strategy", "in-place"]) == 0  # other settings: computed
    assert sorted(r["run_id"] for r in published(str(out))) == ["example", "third"]


@pytest.mark.processes
def test_sigkill_mid_run_then_retry(spark, tmp_path):  # the retry runs in this process
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "dirtiness.cli", "run", "--old", EXAMPLE_OLD, "--new", EXAMPLE_NEW,
            "--out", str(out), "--run-id", "killed", "--strategy", "none"]  # no plan: the kill comes sooner
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not (out / "dirty_stmts" / "_delta_log").exists() and time.time() < deadline and process.poll() is None:
        time.sleep(0.02)  # the write stage has begun: facts are being committed
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert published(str(out)) == []  # the killed attempt is visible only as "running"
    assert main(argv[3:]) == 0
    runs = pl.read_delta(str(out / "runs")).filter(pl.col("run_id") == "killed").to_dicts()
    assert [r["status"] for r in runs] == ["succeeded"]
    rows = table_rows(str(out), "dirty_stmts", "killed")
    assert len(rows) == len(set(rows)) == 7
