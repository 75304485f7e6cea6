"""The job end to end through the command line, on the bundled example."""

import shutil

import duckdb
import polars as pl
import pytest
import yaml
from catalogs import RULES
from cli_output import error_lines
from deltalake import DeltaTable
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.cli import main
from dirtiness.store.delta import DeltaStore

EXPECTED_STMTS = {
    ("public", "flip_activities", "modified", "changed"),
    ("public", "flipper_stats", "added", "changed"),
    ("reporting", "legacy_flippers", "deleted", "changed"),
    ("public", "flippers", None, "dependency"),
    ("api", "top_flippers", None, "dependency"),
    ("sinks", "flippers_sink", None, "dependency"),
    ("reporting", "weekly_report", None, "schema"),
}


def test_run_succeeds_and_summarizes(example_run, expected):
    assert example_run.code == 0
    summary = example_run.summary
    assert summary["counts"] == expected["counts"]
    assert summary["plan"] == expected["plan"]
    assert summary["strategy"] == "blue-green" and summary["needing_attention"] == []
    assert summary["rounds"] == len(summary["round_log"]) == expected["rounds"]
    assert sum(summary["facts"].values()) == expected["base_facts"]
    assert {k: summary["facts"][k] for k in expected["facts"]} == expected["facts"]
    assert set(summary["seconds"]) >= {"load", "facts", "fixpoint", "plan", "write", "publish", "total"}


def test_a_small_catalog_computes_with_the_small_data_settings_then_restores_the_sessions(spark, example_run):
    assert example_run.summary["small_catalog"] is True  # 22 objects, at most spark.small_catalog_objects
    # the shared session has its own settings back: the suite's partitions, the job's adaptive execution,
    # and no code generation setting of its own
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    assert spark.conf.get("spark.sql.codegen.wholeStage", None) is None
    assert spark.conf.get("spark.sql.codegen.factoryMode", None) is None


def test_tables_are_real_delta_read_by_every_engine(spark, example_run, expected):
    out = example_run.out
    by_polars = pl.read_delta(str(out / "dirty_stmts"))
    assert {(r["schema"], r["name"], r["change"], r["rule"]) for r in by_polars.to_dicts()} == EXPECTED_STMTS
    assert set(by_polars["run_id"]) == {"example"}
    dataset = DeltaTable(str(out / "dirty_schemas")).to_pyarrow_dataset()  # noqa: F841 - read by DuckDB below
    assert sorted(duckdb.sql("select schema from dataset order by 1").fetchall()) == [("api",), ("public",),
                                                                                     ("reporting",)]
    clusters = DeltaStore(spark, str(out)).read("dirty_clusters").collect()
    assert [(r.cluster, r.rule, r.cause) for r in clusters] == [
        ("quickstart", "index_cluster", "ChangedStmt(materialize.public.flip_activities)")]
    runs = pl.read_delta(str(out / "runs")).to_dicts()
    assert [(r["run_id"], r["status"], r["dirty_stmts"]) for r in runs] == [
        ("example", "succeeded", expected["counts"]["dirty_stmts"])]
    assert DeltaTable(str(out / "facts" / "depends_on")).to_pyarrow_table().num_rows == 12  # new project only


def test_rerun_with_the_same_run_id_replaces_its_rows(example_run, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(example_run.out, out)  # the shared run stays as it is
    assert main(["run", "--old", EXAMPLE_OLD, "--new", EXAMPLE_NEW, "--out", str(out), "--run-id", "example",
                 "--rules", RULES["index_aware"]]) == 0
    printed = capsys.readouterr().out
    assert "run example: succeeded" in printed and "dirty_stmts" in printed
    stmts = pl.read_delta(str(out / "dirty_stmts"))
    assert stmts.height == stmts.unique(["run_id", "database", "schema", "name"]).height
    # index-aware: winning_bids (index on the dirty quickstart cluster) is dirty now, its schema is not
    assert "winning_bids" in set(stmts["name"])
    assert "internal" not in set(pl.read_delta(str(out / "dirty_schemas"))["schema"])
    assert pl.read_delta(str(out / "runs")).height == 1


@pytest.mark.parametrize("args, message", [
    (["--old", "missing.yaml"], "missing.yaml: no such file or folder (--old)"),
    (["--forced-schema", "materialize"], "--forced-schema 'materialize': expected DATABASE.SCHEMA"),
    (["--rules", "RULES_BAD"], "bad.dl:2: unknown relation Nope"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.dl"
    bad.write_text("DirtyStmt(O) :- ChangedStmt(O)\nDirtyCluster(C) :- Nope(C)\n")
    argv = ["run", "--old", EXAMPLE_OLD, "--new", EXAMPLE_NEW, "--out", str(tmp_path / "out")]
    argv += [str(bad) if a == "RULES_BAD" else a for a in args]
    assert main(argv) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "out").exists()


def test_usage_error_exits_2(capsys):
    assert main(["run", "--old", EXAMPLE_OLD]) == 2
    assert "usage: the following arguments are required: --new, --out" in capsys.readouterr().err


def _write(path, objects):
    path.write_text(yaml.safe_dump({"objects": objects}))
    return str(path)


def test_destructive_plan_exits_3_and_publishes_nothing(spark, tmp_path, capsys):
    table = {"database": "d", "schema": "raw", "name": "events", "kind": "table", "hash": "h1"}
    view = {"database": "d", "schema": "raw", "name": "recent", "kind": "view", "hash": "h1",
            "depends_on": ["d.raw.events"]}
    # and a changed secret that a connection reads, which feeds a source and two tables from it: in place,
    # all four are dropped and created again, which loses the tables' data (a refusal, not an internal error)
    secret = {"database": "e", "schema": "s", "name": "pw", "kind": "secret", "hash": "h1"}
    chain = [secret, {"database": "e", "schema": "s", "name": "conn", "kind": "connection", "depends_on": ["e.s.pw"]},
             {"database": "e", "schema": "s", "name": "src", "kind": "source", "depends_on": ["e.s.conn"]},
             *({"database": "e", "schema": "s", "name": t, "kind": "table-from-source", "depends_on": ["e.s.src"]}
               for t in ("auctions", "bids"))]
    old = _write(tmp_path / "old.yaml", [table, view, *chain])
    new = _write(tmp_path / "new.yaml", [{**table, "hash": "h2"}, view, {**secret, "hash": "h2"}, *chain[1:]])
    argv = ["run", "--old", old, "--new", new, "--out", str(tmp_path / "out"), "--strategy", "in-place"]
    page = tmp_path / "refused.html"
    assert main([*argv, "--report", str(page)]) == 3
    html = page.read_text()  # the page of a refused run says why
    assert '<span class="status refused">refused</span>' in html and "d.raw.events" in html
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "refused without --allow-destructive: " in err[0]
    for name in ("d.raw.events (table)", "e.s.src (source)", "e.s.auctions (table-from-source)",
                 "e.s.bids (table-from-source)"):
        assert name in err[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs"]  # nothing but the reason
    refused = pl.read_delta(str(tmp_path / "out" / "runs")).to_dicts()
    assert [r["status"] for r in refused] == ["refused"] and "d.raw.events" in refused[0]["message"]
    assert main([*argv, "--allow-destructive", "--run-id", "allowed"]) == 0
    plan = pl.read_delta(str(tmp_path / "out" / "ddl_plan")).sort("seq")
    assert sorted(plan.filter(pl.col("destructive"))["name"].to_list()) == ["auctions", "bids", "events", "src"]
    created = {r["name"] for r in plan.filter(pl.col("action") == "CREATE").to_dicts()}
    assert created >= {"pw", "conn", "src", "auctions", "bids"}  # allowed: dropped and created again


def test_dependency_cycle_exits_2_naming_the_objects(spark, tmp_path, capsys):
    a = {"database": "d", "schema": "s", "name": "a", "kind": "view", "hash": "h1", "depends_on": ["d.s.b"]}
    b = {"database": "d", "schema": "s", "name": "b", "kind": "view", "hash": "h1", "depends_on": ["d.s.a"]}
    old = _write(tmp_path / "old.yaml", [a, b])
    new = _write(tmp_path / "new.yaml", [{**a, "hash": "h2"}, b])
    assert main(["run", "--old", old, "--new", new, "--out", str(tmp_path / "out")]) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "dependency cycle: d.s.a -> d.s.b -> d.s.a" in err[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs"]
    assert pl.read_delta(str(tmp_path / "out" / "runs"))["status"].to_list() == ["failed"]
