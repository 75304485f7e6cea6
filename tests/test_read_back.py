"""Reading runs back without Spark: hand-made Delta tables for the cases a healthy run never produces."""

import datetime as dt
import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.model import BY_NAME
from dirtiness.readback.fact_text import Fact, parse_fact, parse_name, show_name
from dirtiness.readback.run_tables import RunTables
from dirtiness.store.run_log import RUNS, records

WHEN = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


def write(out, table, rows: list[dict], schema: pa.Schema) -> None:
    schema = pa.schema([pa.field("run_id", pa.string()), *schema])
    write_deltalake(os.path.join(out, table), pa.Table.from_pylist(rows, schema=schema), mode="append")


def runs_row(run_id, status, message=None, finished=WHEN):
    row = {name: None for name in RUNS.names}
    return {**row, "run_id": run_id, "status": status, "started_at": WHEN, "finished_at": finished,
            "old_snapshot": "old.yaml", "new_snapshot": "new.yaml", "rules": "rules.dl", "message": message,
            "strategy": "blue-green"}


def dirty_schema(*keys):
    return pa.schema([*(pa.field(k, pa.string()) for k in keys), pa.field("rule", pa.string()),
                      pa.field("cause", pa.string()), pa.field("round", pa.int32())])


def handmade(out, stmts: list[dict], relations: list[tuple], objects: list[tuple], changed=()) -> None:
    """One succeeded run ``r1`` and a failed run ``r2``; facts empty except the listed objects."""
    write(out, "runs", [runs_row("r1", "succeeded"), runs_row("r2", "failed", "boom: the new snapshot vanished",
                                                              WHEN + dt.timedelta(hours=1))],
          pa.schema([f for f in RUNS if f.name != "run_id"]))
    write(out, "run_relations", [{"run_id": "r1", "relation": r, "role": role, "table": t, "tuples": 1}
                                 for r, role, t in relations],
          pa.schema([("relation", pa.string()), ("role", pa.string()), ("table", pa.string()), ("tuples", pa.int64())]))
    write(out, "dirty_stmts", [{"run_id": "r1", **row} for row in stmts], dirty_schema("database", "schema", "name"))
    write(out, "dirty_schemas", [], dirty_schema("database", "schema"))
    write(out, "dirty_clusters", [], dirty_schema("cluster"))
    for relation in BY_NAME.values():
        listed = {"ObjectInSchema": objects, "ChangedStmt": changed}.get(relation.name, [])
        rows = [{"run_id": "r1", "database": d, "schema": s, "name": n, **({"change": "modified"} if
                 relation.name == "ChangedStmt" else {})} for d, s, n in listed]
        write(out, f"facts/{relation.table}", rows, pa.schema([(f, pa.string()) for f in relation.fields]))


def stmt(name, rule, cause, round_no):
    return {"database": "d", "schema": "s", "name": name, "rule": rule, "cause": cause, "round": round_no}


def test_fact_text_round_trips():
    for text in ("DirtyStmt(materialize.public.flippers)", "DirtySchema(materialize, reporting)",
                 'X("a.b"."c""d".e, "x, y")', "Nothing()"):
        assert str(parse_fact(text)) == text
    assert parse_fact('X("a.b"."c""d".e, "x, y")') == Fact("X", (("a.b", 'c"d', "e"), ("x, y",)))
    assert parse_name(' "My.DB".public.X ') == ("My.DB", "public", "X")
    assert show_name(("My.DB", "public", "X")) == '"My.DB".public."X"'
    for bad in ("DirtyStmt", "DirtyStmt(a", 'X("open)'):
        with pytest.raises(ValueError):
            parse_fact(bad)
    with pytest.raises(ValueError):
        parse_name("a..b")


def test_a_relation_the_run_does_not_write_ends_the_chain(tmp_path, capsys):
    out = str(tmp_path)
    handmade(out, [stmt("x", "propagating", "SchemaPropagatingStmt(d.s.x)", 2)],
             [("DirtyStmt", "derived", "dirty_stmts"), ("SchemaPropagatingStmt", "derived", None)],
             [("d", "s", "x")])
    assert main(["explain", "--out", out, "d.s.x"]) == 0
    text = capsys.readouterr().out
    assert "SchemaPropagatingStmt(d.s.x)  (not written by this run: add SchemaPropagatingStmt to `outputs`" in text


def test_a_cause_missing_from_its_table_is_an_internal_error(tmp_path, capsys):
    out = str(tmp_path)
    handmade(out, [stmt("x", "dependency", "DirtyStmt(d.s.gone)", 2)],
             [("DirtyStmt", "derived", "dirty_stmts")], [("d", "s", "x")])
    assert main(["explain", "--out", out, "d.s.x"]) == 1
    assert capsys.readouterr().err.strip() == (
        "dirtiness: internal error (BrokenChain): DirtyStmt(d.s.x) was caused by DirtyStmt(d.s.gone), "
        "which dirty_stmts does not hold for run r1")


def test_runs_without_a_relation_log_use_the_configured_outputs(tmp_path, capsys):
    out = str(tmp_path)
    handmade(out, [stmt("x", "changed", "ChangedStmt(d.s.x)", 1)], [], [("d", "s", "x")], changed=[("d", "s", "x")])
    assert main(["explain", "--out", out, "--format", "json", "d.s.x"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(link["fact"], link["table"]) for link in document["chain"]] == [
        ("DirtyStmt(d.s.x)", "dirty_stmts"), ("ChangedStmt(d.s.x)", "facts/changed_stmt")]


def test_failed_runs_and_missing_roots(tmp_path, capsys):
    out = str(tmp_path)
    handmade(out, [], [("DirtyStmt", "derived", "dirty_stmts")], [("d", "s", "x")])
    assert RunTables.open(out).run_id == "r1"  # the latest *succeeded* run, though r2 finished later
    assert main(["explain", "--out", out, "--run-id", "r2", "d.s.x"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dirtiness: run r2 under {out} is failed, not succeeded (its tables are incomplete): "
        "boom: the new snapshot vanished")
    assert main(["explain", "--out", str(tmp_path / "nowhere"), "d.s.x"]) == 2
    assert "nowhere: no such folder (expected the --out folder of `dirtiness run`)" in capsys.readouterr().err
    # the report of a failed run is a page saying so
    page = tmp_path / "failed.html"
    assert main(["report", "--out", out, "--run-id", "r2", "--html", str(page)]) == 0
    html = page.read_text()
    assert '<span class="status failed">failed</span>' in html and "boom: the new snapshot vanished" in html
    assert 'id="dirty-graph"' not in html


def test_the_latest_run_and_a_runs_rows_are_read_from_their_own_files_however_many_runs_came_before(
        tmp_path, monkeypatch):
    """Each run's record is its own file (as the job writes it); the latest succeeded run and one run's rows
    are found by opening the files the log's statistics allow: the same answer as reading every row."""
    import random

    from deltalake import DeltaTable

    from dirtiness import publish
    from dirtiness.store import delta, run_reads
    from dirtiness.store.delta import DeltaStore

    opened = []  # fragments of every dataset built from a table
    build = DeltaTable.to_pyarrow_dataset
    monkeypatch.setattr(DeltaTable, "to_pyarrow_dataset", lambda table, *a, **k: (
        lambda found: opened.append(len(list(found.get_fragments()))) or found)(build(table, *a, **k)))

    def write_runs(out, rows):
        store = DeltaStore(None, str(out))
        for row in rows:
            store.replace_run("runs", records(RUNS, [row]), row["run_id"])

    def everything(out):
        return run_reads.latest_of(DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist())

    times = [WHEN + dt.timedelta(minutes=m) for m in random.Random(7).sample(range(200), 16)]
    rows = [runs_row(f"r{i:02d}", "failed" if i % 5 == 0 else "succeeded", finished=t) for i, t in enumerate(times)]
    # the two latest in one millisecond: the later microsecond wins, whatever its run id
    last = max(times) + dt.timedelta(hours=1)
    rows += [runs_row("zz-first", "succeeded", finished=last.replace(microsecond=100)),
             runs_row("aa-later", "succeeded", finished=last.replace(microsecond=900)),
             runs_row("running", "running", finished=None)]
    out = tmp_path / "history"
    write_runs(out, rows)
    assert everything(out)["run_id"] == "aa-later"
    opened.clear()
    assert run_reads.latest_succeeded(str(out / "runs"))["run_id"] == "aa-later"
    assert opened == [run_reads.LATEST_FILES]  # 8 of 19 files
    assert RunTables.open(str(out)).run_id == "aa-later"
    opened.clear()
    assert RunTables.open(str(out), "r07").run["finished_at"] == times[7] and opened == [1]
    fingerprints = {k: None for k in publish.FINGERPRINTS}
    assert publish.unchanged_since(str(out), fingerprints)["run_id"] == "aa-later"
    opened.clear()  # the check `run --if-changed` makes again once its session is up
    assert publish.unchanged_in(DeltaStore(None, str(out)), fingerprints)["run_id"] == "aa-later"
    assert opened == [run_reads.LATEST_FILES]

    # a record without statistics (an earlier version's, another tool's) is always read: here the latest
    monkeypatch.setattr(delta, "_stats", lambda meta: {"numRecords": meta.num_rows})
    write_runs(out, [runs_row("no-stats", "succeeded", finished=last + dt.timedelta(days=1))])
    assert everything(out)["run_id"] == "no-stats"
    opened.clear()
    assert run_reads.latest_succeeded(str(out / "runs"))["run_id"] == "no-stats"
    assert opened == [run_reads.LATEST_FILES + 1]
    # fewer files with statistics than the first read takes: every succeeded run's file is read
    few = tmp_path / "few"
    write_runs(few, rows[:3])
    assert run_reads.latest_succeeded(str(few / "runs")) == everything(few)


def test_report_settings_are_checked(tmp_path, capsys):
    out = str(tmp_path)
    handmade(out, [], [("DirtyStmt", "derived", "dirty_stmts")], [("d", "s", "x")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("report:\n  max_graph_nodes: 0\n")
    page = tmp_path / "page.html"
    assert main(["report", "--out", out, "--html", str(page), "--config", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        "dirtiness: configuration: report.max_graph_nodes must be a positive integer, not 0")
    assert not page.exists()
    example = PROJECT_ROOT / "examples"
    assert main(["run", "--old", str(example / "old.yaml"), "--new", str(example / "new.yaml"), "--out", out,
                 "--report", str(page), "--config", str(bad)]) == 2  # before Spark starts
    assert "report.max_graph_nodes must be a positive integer" in capsys.readouterr().err
    assert not page.exists()


BLOCK_PYSPARK = """
import importlib.abc, sys
class NoSpark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("read-back must not import " + name)
sys.meta_path.insert(0, NoSpark())
from dirtiness.cli import entry
entry(sys.argv[1:])
"""


@pytest.mark.parametrize("command, shown", [
    (["explain", "materialize.api.top_flippers"], "ChangedStmt(materialize.public.flip_activities)"),
    (["explain", "--cluster", "quickstart", "--format", "json"], '"index_cluster"'),
    (["report", "--html", "PAGE"], "report of run example (succeeded)"),
])
def test_read_back_runs_without_pyspark(example_run, tmp_path, command, shown):
    """explain and report answer where Spark is not installed: importing pyspark fails in this process."""
    argv = [str(tmp_path / "page.html") if a == "PAGE" else a for a in command]
    done = subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, argv[0], "--out", str(example_run.out), *argv[1:]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout
