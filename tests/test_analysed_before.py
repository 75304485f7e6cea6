"""Runs into one ``--out`` parse only the statements no succeeded earlier run analysed, and render only the plan
statements none rendered, never read a state that a run did not finish or that cannot be read, and answer as a
run that parsed and rendered everything; each compares its units with those of the run it starts from, and one
whose units did not change answers as that run did (mode ``incremental``), rows for rows."""

from __future__ import annotations

import json
import logging
import shutil

import polars as pl
import pyarrow as pa
import pytest
import yaml
from deltalake import DeltaTable

from catalogs import EXAMPLE_NEW, EXAMPLE_OLD
from spark_jobs import descriptions_of_jobs, jobs_started

from dirtiness.cli import main
from dirtiness.config import load_config
from dirtiness.inputs.analysed_before import ANALYSED, SQL_ANALYSIS, analysed_with, statement_keys
from dirtiness.inputs.references import SqlSettings
from dirtiness.model import UNITS
from dirtiness.pipeline import earlier_of
from dirtiness.plan.operations import deploy_suffix
from dirtiness.plan.rendered_again import RENDER_INPUTS
from dirtiness.plan.rendered_before import PLACEHOLDER, RENDERED_STATEMENTS
from dirtiness.readback.explain import explain, format_text
from dirtiness.readback.report.page import write_report
from dirtiness.readback.run_tables import RunTables
from dirtiness.settings import RunParams, resolve
from dirtiness.store.base_run import BaseRun
from dirtiness.store.delta import DeltaStore, arrow_schema_of

# what a statement's analysis becomes (its object's dependencies and cluster), the dirty sets made of it, and the
# plan, whose statements are rendered from it
TABLES = ("facts/depends_on", "facts/stmt_uses_cluster", "facts/changed_stmt", "dirty_stmts", "dirty_clusters",
          "dirty_schemas", "ddl_plan", "decisions")
EDITED = "winning_bids"  # the statement the second project changes


def _edited(folder) -> str:
    """The example with one statement edited, and a view added whose name holds the staging suffix of run ``b``
    (which that run renders as it is, not through the placeholder)."""
    document = yaml.safe_load(open(EXAMPLE_NEW))
    (entry,) = [o for o in document["objects"] if o["name"] == EDITED]
    entry["sql"] = entry["sql"].replace("SELECT", "SELECT /* edited */", 1)
    entry["hash"] += "-edited"
    name = "winners" + deploy_suffix("b")
    document["objects"].append({
        "database": entry["database"], "schema": entry["schema"], "name": name, "kind": "view", "hash": "h-new",
        "depends_on": [[entry["database"], entry["schema"], EDITED]],
        "sql": f"CREATE VIEW {name} AS SELECT * FROM {entry['schema']}.{EDITED}"})
    path = folder / "new.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def _restated(folder, new: str) -> str:
    """The edited project with the edited statement edited again, in its text and hash only: a restated unit."""
    document = yaml.safe_load(open(new))
    (entry,) = [o for o in document["objects"] if o["name"] == EDITED]
    entry["sql"] = entry["sql"].replace("SELECT", "SELECT /* edited again */", 1)
    entry["hash"] += "-again"
    path = folder / "newer.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def _statements(*paths: str) -> set[tuple]:
    """Distinct statements of the documents: what a run analyses once each."""
    return {(o["kind"], o["database"], o["schema"], o["name"], o["sql"])
            for path in paths for o in yaml.safe_load(open(path))["objects"] if o.get("sql")}


def _plant_unfinished(spark, out: str, new: str) -> None:
    """Rows under a run that never finished: the edited statement said to read a relation nothing defines. A run
    that took them would fail its dependency check."""
    document = yaml.safe_load(open(new))
    (entry,) = [o for o in document["objects"] if o["name"] == EDITED]
    frame = spark.createDataFrame([("new", entry["database"], entry["schema"], entry["name"], entry["kind"],
                                    entry["sql"])], "side string, database string, schema string, name string, "
                                                    "kind string, sql string")
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=new, out=out), load_config())
    (key,) = [r[0] for r in statement_keys(frame, settings.sql).select("statement_key").collect()]
    rows = [{"statement_key": key, "found": "statement"},
            {"statement_key": key, "found": "reads", "dep_database": "nowhere", "dep_schema": "at", "dep_name": "all"}]
    DeltaStore(spark, out).replace_run(SQL_ANALYSIS, pa.Table.from_pylist(rows, arrow_schema_of(ANALYSED)),
                                       "unfinished")


def _plant_unfinished_renders(spark, out: str) -> None:
    """Every statement run ``a`` rendered, broken, under a run that never finished (and whose id sorts first, so
    that a run that read them would take them)."""
    kept = pl.read_delta(f"{out}/{RENDERED_STATEMENTS}").drop("run_id")
    broken = kept.with_columns(pl.lit("BROKEN").alias("statement")).to_arrow()
    DeltaStore(spark, out).replace_run(RENDERED_STATEMENTS, broken, "0-unfinished")


def _corrupt(out) -> None:
    for table in (SQL_ANALYSIS, RENDERED_STATEMENTS, UNITS):
        for part in (out / table).glob("**/*.parquet"):
            part.write_bytes(b"not parquet")


@pytest.fixture(scope="module")
def chain(spark, tmp_path_factory):
    """Run ``a`` (the example), then the same old project and one statement edited (``_edited``): run ``b`` into
    the same root, beside a planted unfinished run's rows; run ``c`` (also with run id ``b``) into a copy of the
    root whose analysis and rendered statements files are corrupt. Then runs ``d`` and ``e`` of the same inputs
    into the first root, and ``e`` again into two copies taken after ``d``: one from whose dirty sets a row was
    deleted, one where a statement of its plan was edited. Last, the edited statement edited again
    (``_restated``): run ``f`` into the first root, ``f --full`` into the second, and ``f`` into a copy of the
    first taken after ``e``, from whose facts ``e``'s ``ChangedStmt`` rows were deleted."""
    folder = tmp_path_factory.mktemp("analysed-before")
    (folder / "conf.yaml").write_text(yaml.safe_dump({"sql": {"reuse_from_objects": 0}}))
    new = _edited(folder)
    first, copy, second, edited = folder / "out", folder / "copy", folder / "second", folder / "edited"
    tampered = folder / "tampered"
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logging.getLogger("dirtiness").addHandler(handler)
    try:
        def run(run_id: str, out, new_path: str, *flags: str) -> dict:
            code = main(["run", "--old", EXAMPLE_OLD, "--new", new_path, "--out", str(out), "--run-id", run_id,
                         "--config", str(folder / "conf.yaml"), "--summary-json", str(folder / f"{run_id}.json"),
                         *flags])
            assert code == 0, run_id
            return json.loads((folder / f"{run_id}.json").read_text())

        summaries = {"a": run("a", first, EXAMPLE_NEW)}
        shutil.copytree(first, copy)
        _corrupt(copy)
        _plant_unfinished(spark, str(first), new)
        _plant_unfinished_renders(spark, str(first))
        summaries["b"] = run("b", first, new)
        summaries["c"] = run("b", copy, new)  # the same run id: the same staging suffix
        summaries["d"] = run("d", first, new)  # no unit changed, but the inputs hold b's staging suffix
        shutil.copytree(first, second)
        DeltaTable(str(second / "dirty_stmts")).delete(f"run_id = 'd' AND name = '{EDITED}'")
        shutil.copytree(first, edited)
        DeltaTable(str(edited / "ddl_plan")).update(updates={"statement": "'SELECT 1'"},
                                                    predicate="run_id = 'd' AND seq = 1")
        summaries["e"] = run("e", first, new)  # no unit changed since d: d's answer, with e's suffix
        summaries["e-full"] = run("e", second, new)  # d's state does not add up: computed in full
        summaries["e-edited"] = run("e", edited, new)  # nor where a row of its plan is not what its checks saw
        newer = _restated(folder, new)
        shutil.copytree(first, tampered)
        DeltaTable(str(tampered / "facts/changed_stmt")).delete("run_id = 'e'")
        summaries["f"] = run("f", first, newer)  # e's answer, the edited statement's plan rows rendered again
        summaries["f-full"] = run("f", second, newer, "--full")
        summaries["f-tampered"] = run("f", tampered, newer)  # e's facts are not this run's: computed in full
    finally:
        logging.getLogger("dirtiness").removeHandler(handler)
    return {"folder": folder, "new": new, "first": first, "copy": copy, "second": second, "summaries": summaries,
            "said": said, "tampered": tampered}


def _renders(out, run_id: str) -> int:
    """The plan statements run ``run_id`` rendered from its objects' SQL (the rest of its plan is templates)."""
    plan = pl.read_delta(str(out / "ddl_plan")).filter(pl.col("run_id") == run_id)
    return plan.filter(pl.col("statement").str.contains(" AS ")).select("statement").unique().height


def test_a_later_run_parses_only_what_no_earlier_run_analysed(chain):
    summaries = chain["summaries"]
    first = _statements(EXAMPLE_OLD, EXAMPLE_NEW)
    assert summaries["a"]["statements"] == {"parsed": len(first), "reused": 0,
                                            "rendered": _renders(chain["first"], "a"), "render_reused": 0}
    both = _statements(EXAMPLE_OLD, chain["new"])
    b, new = summaries["b"]["statements"], len(both - first)  # the edited statement and the added view's
    assert (b["parsed"], b["reused"]) == (new, len(both) - new)  # the unfinished run's rows unread
    kept = pl.read_delta(str(chain["first"] / SQL_ANALYSIS))
    assert kept.filter(pl.col("run_id") == "b").filter(pl.col("found") == "statement").height == new == 2
    runs = {r["run_id"]: r for r in pl.read_delta(str(chain["first"] / "runs")).to_dicts()}
    assert (runs["b"]["statements_parsed"], runs["b"]["statements_reused"]) == (new, len(both) - new)
    # the edited statement's object is rendered again, and what reads it (its references moved); the others not
    assert 1 <= b["rendered"] < b["rendered"] + b["render_reused"] == _renders(chain["first"], "b")
    assert (runs["b"]["statements_rendered"], runs["b"]["renders_reused"]) == (b["rendered"], b["render_reused"])
    rendered = pl.read_delta(str(chain["first"] / RENDERED_STATEMENTS)).filter(pl.col("run_id").is_in(["a", "b"]))
    # what b rendered is kept, but for the added view's statement, whose name holds b's suffix
    assert rendered.filter(pl.col("run_id") == "b").height == b["rendered"] - 1
    plan = pl.read_delta(str(chain["first"] / "ddl_plan")).filter(pl.col("run_id") == "b")
    added = plan.filter(pl.col("statement").str.contains("winners"))["statement"].to_list()
    assert added and not any("winners" in t for t in rendered["statement"].to_list())
    # what is kept names no run's staging: the placeholder stands for it
    suffixes = [deploy_suffix(r) for r in ("a", "b")]
    assert not any(x in t for t in rendered["statement"].to_list() for x in suffixes)
    assert all(PLACEHOLDER in t for t in rendered["statement"].to_list())  # blue-green stages every one


def test_an_analysis_that_cannot_be_read_is_parsed_again_with_a_line_saying_so(chain):
    assert chain["summaries"]["c"]["statements"] == {"parsed": len(_statements(EXAMPLE_OLD, chain["new"])),
                                                     "reused": 0, "rendered": _renders(chain["copy"], "b"),
                                                     "render_reused": 0}
    for table in (SQL_ANALYSIS, RENDERED_STATEMENTS):
        assert any("could not be read" in line and table in line for line in chain["said"]), (table, chain["said"])


def test_reused_and_parsed_runs_give_the_same_rows(chain):
    def rows(out, table: str) -> list[str]:
        return sorted(map(str, pl.read_delta(str(out / table)).filter(pl.col("run_id") == "b").rows()))
    for table in TABLES:
        reused, parsed = rows(chain["first"], table), rows(chain["copy"], table)
        assert reused, table
        assert reused == parsed, table


def test_full_reads_nothing_earlier_runs_left(chain, spark):
    store = DeltaStore(spark, str(chain["first"]))
    params = {"old": EXAMPLE_OLD, "new": chain["new"], "out": str(chain["first"])}
    assert earlier_of(store, resolve(RunParams(**params), load_config())).analysis() is not None
    full = earlier_of(store, resolve(RunParams(**params, full=True), load_config()))
    assert full.analysis() is None and full.units() == (BaseRun(why="--full"), None)
    # the chain's runs had sql.reuse_from_objects 0, which changes what a run costs only: under the bundled
    # configuration f is still the run to start from; under one that changes a result, none is
    for config in (load_config(str(chain["folder"] / "conf.yaml")), load_config()):
        started_from, units = earlier_of(store, resolve(RunParams(**params), config)).units()
        assert started_from == BaseRun("f") and units.count() == chain["summaries"]["f"]["units"]["total"]
    config = load_config()
    config["sql"]["dependency_mismatch"] = "warn"
    started_from, units = earlier_of(store, resolve(RunParams(**params), config)).units()
    assert units is None and started_from.why == ("no succeeded run with these rules, configuration and version "
                                                  "of dirtiness: the latest, f, was computed with another "
                                                  "configuration")


def test_a_run_compares_its_units_with_those_of_the_run_it_starts_from(chain):
    """A unit is an object of one side; ``b`` edited one statement and added a view since ``a``. The copy's
    units cannot be read: its run compares with none, and says why."""
    a, b, c = (chain["summaries"][r]["units"] for r in "abc")
    objects = sum(len(yaml.safe_load(open(p))["objects"]) for p in (EXAMPLE_OLD, EXAMPLE_NEW))
    assert a == {"total": objects, "started_from": None, "why": "no earlier run"}
    assert b == {"total": objects + 1, "started_from": "a",
                 "changes": {"old": {"added": 0, "deleted": 0, "edited": 0},
                             "new": {"added": 1, "deleted": 0, "edited": 1}}, "restated": 0}
    assert c["started_from"] is None and c["why"].startswith(f"{UNITS} under {chain['copy']} could not be read (")
    assert any(line.startswith(f"units: compared with no earlier run under {chain['copy']} ({UNITS} under")
               for line in chain["said"])
    runs = {r["run_id"]: r for r in pl.read_delta(str(chain["first"] / "runs")).to_dicts()}
    assert (runs["a"]["started_from"], runs["a"]["units_changed"]) == (None, None)
    assert (runs["b"]["started_from"], runs["b"]["units_changed"]) == ("a", 2)
    assert runs["a"]["version"] == runs["b"]["version"] is not None
    units = pl.read_delta(str(chain["first"] / UNITS))
    assert units.filter(pl.col("run_id") == "b").height == objects + 1
    edited = units.filter((pl.col("name") == EDITED) & (pl.col("side") == "new") & pl.col("run_id").is_in(["a", "b"]))
    assert edited.select("content").n_unique() == 2  # a and b: the statement edited
    # explain says what changed in an object since the run its run started from
    tables = RunTables.open(str(chain["first"]), "b")
    database, schema = edited.row(0, named=True)["database"], edited.row(0, named=True)["schema"]
    explained = explain(tables, "object", (database, schema, EDITED))
    assert explained.since == {"run": "a", "mode": "full", "units_changed": 2, "old": None, "new": "edited"}
    assert "  since run a (the run this one started from): new side edited" in format_text(explained).splitlines()
    assert explain(tables, "object", ("materialize", "auction", "bids")).since == {
        "run": "a", "mode": "full", "units_changed": 2, "old": None, "new": None}
    page = chain["folder"] / "b.html"  # and the report, among how the run was computed
    write_report(tables, str(page), None)
    assert 'started from</th><td>run <span class="mono">a</span>: 2 units changed since' in page.read_text()


def test_a_run_whose_units_did_not_change_answers_as_the_run_it_starts_from(chain):
    """``e`` takes ``d``'s answer (its staging suffix replaced by its own) and gives every row a full run of the
    same inputs gives; ``d`` did not take ``b``'s, whose suffix its inputs hold; the copy's ``e`` did not take
    ``d``'s, one of whose rows is missing. Each says why, in its summary and its log."""
    summaries, said = chain["summaries"], chain["said"]
    no_change = {side: {"added": 0, "deleted": 0, "edited": 0} for side in ("old", "new")}
    assert summaries["d"]["units"]["changes"] == summaries["e"]["units"]["changes"] == no_change
    assert (summaries["e"]["mode"], summaries["e"]["full_because"], summaries["e"]["units"]["started_from"]) == (
        "incremental", None, "d")
    # e takes what d's checks found, as the rows it read are those they vouched for: the same rows as e-full's
    assert [summaries[r]["plan_checks"] for r in ("d", "e", "e-full")] == ["computed", "taken", "computed"]
    assert (summaries["d"]["mode"], summaries["d"]["full_because"]) == (
        "full", f"the inputs hold {deploy_suffix('b')}, the staging suffix of run b, which its plan cannot be told "
                "apart from")
    assert (summaries["e-full"]["mode"], summaries["e-full"]["full_because"]) == (
        "full", f"run d has {summaries['d']['counts']['dirty_stmts'] - 1} rows in dirty_stmts, where its runs row "
                f"says {summaries['d']['counts']['dirty_stmts']}")
    assert (summaries["e-edited"]["mode"], summaries["e-edited"]["full_because"]) == (
        "full", "the rows of ddl_plan of run d are not those its checks recorded")
    assert summaries["b"]["full_because"] == "2 units changed (new: 1 added, 1 edited) since run a"
    assert "mode: incremental: no unit changed since run d, whose dirty sets and plan this run takes" in said
    assert "fixpoint" not in summaries["e"]["seconds"] and "plan" not in summaries["e"]["seconds"]
    assert "fixpoint" in summaries["e-full"]["seconds"]

    def rows(out, table: str) -> list[str]:
        frame = pl.read_delta(str(out / table)).filter(pl.col("run_id") == "e")
        return sorted(map(str, frame.drop([c for c in ("seconds",) if c in frame.columns]).rows()))
    for table in (*TABLES, "plan_decisions", "plan_checks", "run_relations", "run_rounds", UNITS, "desired_objects"):
        taken, computed = rows(chain["first"], table), rows(chain["second"], table)
        assert taken, table
        assert taken == computed, table
    assert any(deploy_suffix("e") in row for row in rows(chain["first"], "ddl_plan"))
    runs = {r["run_id"]: r for r in pl.read_delta(str(chain["first"] / "runs")).to_dicts()}
    assert [runs[r]["mode"] for r in "abde"] == ["full", "full", "full", "incremental"]
    # e found nothing changed by the digest of all its units, the one d recorded: d's units were never read
    assert runs["d"]["units_digest"] == runs["e"]["units_digest"] != runs["a"]["units_digest"] is not None
    assert (runs["e"]["started_from"], runs["e"]["units_changed"], runs["e"]["rounds"]) == (
        "d", 0, runs["d"]["rounds"])
    tables = RunTables.open(str(chain["first"]), "e")  # explain and the report say where its answer came from
    explained = format_text(explain(tables, "object", ("materialize", "auction", "bids")))
    assert ("  since run d (the run this one started from; its answer taken from it: no unit changed): unchanged"
            in explained.splitlines())
    page = chain["folder"] / "e.html"
    write_report(tables, str(page), None)
    assert ('mode</th><td>incremental (no unit changed: the dirty sets and the plan of run <span class="mono">d</span>'
            in page.read_text())


@pytest.mark.parametrize("changed", [{"dialect": "postgres"}, {"system_schemas": ("mz_catalog",)}])
def test_what_an_analysis_depends_on_is_in_its_key(changed):
    base = SqlSettings(dialect="materialize", system_schemas=("mz_internal",))
    assert analysed_with(SqlSettings(**{**base.__dict__, **changed})) != analysed_with(base)
    assert "sqlglot" in analysed_with(base)


def test_a_render_of_the_generic_inputs_is_the_render_of_the_runs_own(spark):
    """``rendered_before.keyed``: rendering a row's generic inputs and putting the run's suffix back gives what
    rendering its own inputs gives; a row where that could fail is not generic (rendered as it is)."""
    from pyspark.sql import types as T

    from dirtiness.plan.rendered_before import GENERIC, RENDER_KEY, keyed
    from dirtiness.plan.statements import REFERENCES
    from dirtiness.sql.statement import render_row

    suffix = deploy_suffix("r7")
    schema = T.StructType([T.StructField(c, T.StringType()) for c in (
        "sql", "kind", "database", "schema", "name", "render_target", "object_cluster", "staged_cluster")]
        + [T.StructField("replacing", T.BooleanType()), T.StructField("references", REFERENCES)])
    reads = "SELECT * FROM db.s.up JOIN db.t.other USING (id)"
    rows = [  # (label, row, generic)
        ("staged", ("CREATE VIEW v AS " + reads, "view", "db", "s", "v", "s" + suffix, None, None, False,
                    [("db", "s", "up", "s" + suffix)]), True),
        ("in place", ("CREATE VIEW v AS " + reads, "view", "db", "s", "v", "s", None, None, False, None), True),
        ("replacing", ("CREATE MATERIALIZED VIEW m IN CLUSTER c AS " + reads, "materialized-view", "db", "s",
                       "m", "s" + suffix, "c", "c" + suffix, True, [("db", "t", "other", "t" + suffix)]), True),
        ("quoted names", ('CREATE VIEW "we""ird" AS SELECT 1 AS x', "view", "db", 'odd"s', 'we"ird',
                          'odd"s' + suffix, None, None, False, []), True),
        ("a schema named like the suffix", ("CREATE VIEW v AS SELECT 1 AS x", "view", "db", "x" + suffix, "v",
                                            "x" + suffix, None, None, False, None), False),
        ("the suffix twice", ("CREATE VIEW v AS SELECT 1 AS x", "view", "db", "s", "v", "s" + suffix + suffix,
                              None, None, False, None), False),
        ("the placeholder in the statement", (f"CREATE VIEW v AS SELECT '{PLACEHOLDER}' AS x", "view", "db", "s",
                                              "v", "s" + suffix, None, None, False, None), False),
    ]
    frame = spark.createDataFrame([r for _, r, _ in rows], schema)
    found = [r.asDict(recursive=True) for r in keyed(frame, suffix, "materialize", ()).collect()]  # in order
    assert len({r[RENDER_KEY] for r in found}) == len(rows)

    def rendered(r: dict) -> tuple:
        refs = [(x["dep_database"], x["dep_schema"], x["dep_name"], x["dep_target"]) for x in r["references"] or ()]
        return render_row(r["sql"], r["kind"], (r["database"], r["schema"], r["name"]), r["render_target"], refs,
                          r["object_cluster"], r["staged_cluster"], bool(r["replacing"]), "materialize")
    for (label, row, generic), got in zip(rows, found):
        own = dict(zip(schema.names, row))
        own["references"] = [dict(zip(("dep_database", "dep_schema", "dep_name", "dep_target"), x))
                             for x in row[-1] or ()]
        assert got[GENERIC] is generic, label
        if generic:
            ends = [got["render_target"], got["staged_cluster"], *(x["dep_target"] for x in got["references"] or ())]
            assert not any(suffix in (e or "") for e in ends), label
            assert any(PLACEHOLDER in (e or "") for e in ends) == (suffix in str(row)), label
            back = tuple(x.replace(PLACEHOLDER, suffix) if isinstance(x, str) else x for x in rendered(got))
            assert back == rendered(own) and back[0] is not None, label


def test_a_run_whose_only_changes_are_statements_renders_their_rows_again_and_answers_as_a_full_run(chain):
    """``f`` edits a statement already edited since the deployed project, in its text and hash only: it takes
    ``e``'s dirty sets, decisions and plan, renders the rows of that statement again and checks the plan, and
    writes every row ``f --full`` writes; where ``e``'s facts are not ``f``'s (tampered with), ``f`` is full."""
    summaries, said = chain["summaries"], chain["said"]
    f = summaries["f"]
    assert (f["mode"], f["full_because"], f["units"]["started_from"], f["units"]["restated"]) == (
        "incremental", None, "e", 1)
    assert f["units"]["changes"]["new"] == {"added": 0, "deleted": 0, "edited": 1}
    assert f["plan_checks"] == "statements" and "fixpoint" not in f["seconds"] and "plan" not in f["seconds"]
    assert ("mode: incremental: 1 unit restated since run e (only their statements edited), whose dirty sets and "
            "plan this run takes, their plan rows rendered again") in said
    assert (summaries["f-full"]["mode"], summaries["f-full"]["full_because"]) == ("full", "--full")
    assert summaries["f-tampered"]["full_because"] == (
        "1 unit changed (new: 1 edited) since run e, only in their statements, but the facts of ChangedStmt differ "
        "from that run's")

    def rows(out, table: str) -> list[str]:
        frame = pl.read_delta(str(out / table)).filter(pl.col("run_id") == "f")
        return sorted(map(str, frame.drop([c for c in ("seconds",) if c in frame.columns]).rows()))
    for table in (*TABLES, "plan_decisions", "plan_checks", "run_relations", "run_rounds", UNITS, "desired_objects",
                  RENDER_INPUTS):
        taken, computed = rows(chain["first"], table), rows(chain["second"], table)
        assert taken, table
        assert taken == computed, table
    plan = pl.read_delta(str(chain["first"] / "ddl_plan"))
    again = plan.filter(pl.col("statement").str.contains("edited again"))
    assert again["run_id"].to_list() == ["f"] and deploy_suffix("f") in again["statement"][0]
    tables = RunTables.open(str(chain["first"]), "f")
    explained = format_text(explain(tables, "object", ("materialize", "internal", EDITED)))
    assert ("  since run e (the run this one started from; its answer taken from it, its restated statements "
            "rendered again): new side edited") in explained.splitlines()
    page = chain["folder"] / "f.html"
    write_report(tables, str(page), None)
    assert ('mode</th><td>incremental (1 unit restated: the dirty sets and the plan of run <span class="mono">e'
            '</span>, the plan rows of their statements rendered again)') in page.read_text()


def test_a_digest_by_shape_that_says_restated_where_a_unit_was_edited_gives_a_full_run(chain, tmp_path):
    """The digest by shape only spares the numbering: where run ``f``'s recorded one is forged to be that of a
    project in which an unchanged object's statement is edited, the run of that project compares its units with
    ``f``'s anyway, finds the edit, is full, says so, and writes the rows of a full run of the same inputs."""
    old = {(o["schema"], o["name"]): o["hash"] for o in yaml.safe_load(open(EXAMPLE_OLD))["objects"]}
    document = yaml.safe_load(open(_restated(tmp_path, chain["new"])))
    entry = next(o for o in document["objects"] if o.get("sql") and old.get((o["schema"], o["name"])) == o["hash"])
    entry["sql"], entry["hash"] = entry["sql"].replace("SELECT", "SELECT /* edited */", 1), entry["hash"] + "-x"
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(document))
    roots = {"full": tmp_path / "full", "forged": tmp_path / "forged"}
    for root in roots.values():
        shutil.copytree(chain["first"], root)

    def run(root) -> dict:
        assert main(["run", "--old", EXAMPLE_OLD, "--new", str(tmp_path / "edited.yaml"), "--out", str(root),
                     "--run-id", "g", "--config", str(chain["folder"] / "conf.yaml"),
                     "--summary-json", str(tmp_path / f"{root.name}.json"), *(["--full"] if root.name == "full"
                                                                                  else [])]) == 0
        return json.loads((tmp_path / f"{root.name}.json").read_text())
    run(roots["full"])
    [g] = pl.read_delta(str(roots["full"] / "runs")).filter(pl.col("run_id") == "g").to_dicts()
    DeltaTable(str(roots["forged"] / "runs")).update(updates={"shapes_digest": f"'{g['shapes_digest']}'"},
                                                     predicate="run_id = 'f'")
    forged = run(roots["forged"])
    assert (forged["mode"], forged["full_because"]) == ("full", "1 unit changed (new: 1 edited) since run f")
    assert "taken" in forged["seconds"]  # it went to take f's answer (the shortcut), and found the edit there
    for table in TABLES:
        rows = [sorted(map(str, pl.read_delta(str(root / table)).filter(pl.col("run_id") == "g").rows()))
                for root in roots.values()]
        assert rows[0] and rows[0] == rows[1], table


def _project(path, edits: dict[str, str]) -> str:
    """The example's new project with each named object's statement and hash edited (``edits``: name -> tag)."""
    document = yaml.safe_load(open(EXAMPLE_NEW))
    for entry in document["objects"]:
        if entry["name"] in edits:
            entry["sql"] = entry["sql"].replace("SELECT", f"SELECT /* {edits[entry['name']]} */", 1)
            entry["hash"] += f"-{edits[entry['name']]}"
    path.write_text(yaml.safe_dump(document))
    return str(path)


@pytest.mark.parametrize("strategy, held", [("in-place", "rows"), ("blue-green", "blocks"), ("none", "rows")])
def test_a_restated_run_answers_as_a_full_run_under_each_strategy(spark, tmp_path, strategy, held):
    """A restated statement whose staged copy reads other staged objects (``flippers``, modified in the base
    run's project): its rows rendered again from the kept render inputs, held as blocks (by Spark) or as rows
    (on the driver), give the rows of a full run of the same inputs (held as rows), in both roots' every table. Strategy
    none (dbt's) plans nothing: the dirty sets are taken as they are. The units' digest by shape tells the run
    its changes are restatements in the job that checks its inputs: its facts stage numbers no key."""
    conf, as_rows = tmp_path / "conf.yaml", tmp_path / "rows.yaml"
    conf.write_text(yaml.safe_dump({"local_rows": 0} if held == "blocks" else {}))
    as_rows.write_text(yaml.safe_dump({}))
    base = _project(tmp_path / "base.yaml", {"flippers": "modified"})
    restated = _project(tmp_path / "restated.yaml", {"flippers": "again", "flip_activities": "again"})
    roots = {"incremental": tmp_path / "incremental", "full": tmp_path / "full"}

    def run(root, run_id: str, new: str, *flags: str, config=conf) -> dict:
        summary = tmp_path / f"{root.name}-{run_id}.json"
        assert main(["run", "--old", EXAMPLE_OLD, "--new", new, "--out", str(root), "--run-id", run_id,
                     "--strategy", strategy, "--config", str(config), "--summary-json", str(summary), *flags]) == 0
        return json.loads(summary.read_text())
    # the base run held as rows whatever the restated run holds (local_rows changes what a run costs, not the run
    # a later one starts from): what is tested is the restated run's holding
    run(roots["incremental"], "g", base, config=as_rows)
    shutil.copytree(roots["incremental"], roots["full"])
    first = jobs_started(spark)
    h = run(roots["incremental"], "h", restated)
    # the facts stage of a run with nothing changed: the hold of the input checks and both digests (two jobs as
    # blocks); before the digest by shape, one more numbered the keys and compared the units
    facts_jobs = descriptions_of_jobs(spark, first, jobs_started(spark)).count("dirtiness h: facts")
    assert facts_jobs == {"rows": 1, "blocks": 2}[held]
    # the full twin held as rows, whatever the restated run was (the same rows either way, and fewer seconds)
    assert run(roots["full"], "h", restated, "--full", config=as_rows)["mode"] == "full"
    assert (h["mode"], h["units"]["restated"]) == ("incremental", 2)
    planned = strategy != "none"
    assert (roots["incremental"] / RENDER_INPUTS).exists() == planned
    if planned:
        kept = pl.read_delta(str(roots["incremental"] / RENDER_INPUTS)).filter(pl.col("run_id") == "h")
        moved = [json.loads(r) for r in kept["references"]]
        assert any(moved) == (strategy == "blue-green")  # staged copies read staged copies

    def rows(root, table: str) -> list[str]:
        frame = pl.read_delta(str(root / table)).filter(pl.col("run_id") == "h")
        return sorted(map(str, frame.drop([c for c in ("seconds",) if c in frame.columns]).rows()))
    plan_tables = ("ddl_plan", "decisions", "plan_decisions", "plan_checks", RENDER_INPUTS)
    for table in (*TABLES, "plan_decisions", "plan_checks", "run_relations", "run_rounds", UNITS, "desired_objects",
                  RENDER_INPUTS):
        if planned or table not in plan_tables:
            assert rows(roots["incremental"], table) == rows(roots["full"], table), table
    if planned:
        plan = pl.read_delta(str(roots["incremental"] / "ddl_plan")).filter(pl.col("run_id") == "h")
        assert sum("/* again */" in (s or "") for s in plan["statement"]) >= 1


def test_render_inputs_are_kept_alike_from_rows_and_from_blocks(spark):
    """What a run keeps of each plan row's render inputs is the same whether its rows were held on the driver or
    as blocks (a later run may hold its own the other way), and what reads them back gives each row its
    references again."""
    from dirtiness.datalog.holding import Batch, local_batch
    from dirtiness.plan.rendered_again import render_inputs, to_render_again
    from dirtiness.plan.statements import MOVED, RENDER

    from pyspark.sql import types as T

    schema = T.StructType([*(T.StructField(c, T.StringType()) for c in ("database", "schema", "name", "kind")),
                           T.StructField("seq", T.IntegerType()), *RENDER.fields])
    rows = [("d", "s", "v", "view", 1, "CREATE VIEW v AS SELECT 1", "s_x", None, None, False),
            ("d", "s", "m", "materialized-view", 2, "CREATE MATERIALIZED VIEW m AS SELECT 1", "s_x", "c", "c_x", True),
            ("d", "s", "t", "table", 3, None, None, None, None, None)]
    moved = [("d", "s", "m", "d", "s", "v", "s_x"), ("d", "s", "m", "d", "a", "b", "a_x")]
    moved_schema = T.StructType([T.StructField(c, T.StringType()) for c in MOVED])
    local = render_inputs(local_batch(spark, rows, schema), local_batch(spark, moved, moved_schema))
    blocks = render_inputs(Batch(spark.createDataFrame(rows, schema), None),
                           Batch(spark.createDataFrame(moved, moved_schema), None))
    plan = spark.createDataFrame([(r[0], r[1], r[2], r[3], r[4]) for r in rows], "database string, schema string, "
                                 "name string, kind string, seq int")
    new = spark.createDataFrame([("d", "s", "m", "CREATE MATERIALIZED VIEW m AS SELECT 2")],
                                "database string, schema string, name string, sql string")
    again = to_render_again(plan, local.frame, new.select("database", "schema", "name"), new)
    found = blocks.frame.collect() + again.collect()  # one job: what blocks kept, then one row read back
    assert local.rows == [tuple(r) for r in found[:2]]
    assert json.loads(local.rows[1][-1]) == [{"dep_database": "d", "dep_schema": "a", "dep_name": "b",
                                              "dep_target": "a_x"},
                                             {"dep_database": "d", "dep_schema": "s", "dep_name": "v",
                                              "dep_target": "s_x"}]
    (row,) = [r.asDict(recursive=True) for r in found[2:]]
    assert (row["seq"], row["sql"], row["staged_cluster"], row["replacing"]) == (
        2, "CREATE MATERIALIZED VIEW m AS SELECT 2", "c_x", True)
    assert [x["dep_name"] for x in row["references"]] == ["b", "v"]
