"""The deployed project read from the database (`snapshot --from-database`, `run --old-from-database`) and drift.

Pure tests of the hash mapping and the drift rules on hand-made catalogs;
then the PostgreSQL example deployed by `apply`, read back, planned from
the database (the same plan as from the deployed project's file), applied,
changed by hand in several ways (every change found, nothing else), and a
plan from the file refused while the hand changes touch it.
"""

from __future__ import annotations

import os
import shutil

import polars as pl
import pytest
import yaml
from cli_output import error_lines
from postgres import catalog, deploy, without_oids

from dirtiness.apply.record import Deployment, LiveNow, refusal
from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.inputs.live import LiveCatalog, LiveObject, Recorded, drift, drift_line, recorded_state, \
    snapshot_document

EXAMPLE = PROJECT_ROOT / "examples" / "postgres"
PG_CONFIG = str(EXAMPLE / "dirtiness.yaml")


def live(*objects: LiveObject, schemas=("a", "b")) -> LiveCatalog:
    return LiveCatalog("db", tuple(schemas), {(o.schema, o.name): o for o in objects})


T = LiveObject("a", "t", "table", "id integer, PRIMARY KEY (id)")
V = LiveObject("a", "v", "view", "SELECT t.id FROM a.t", (("a", "t"),))
M = LiveObject("b", "m", "materialized-view", "SELECT v.id FROM a.v", (("a", "v"),), (("m_id", "id", None),))


def test_hashes_come_from_the_record_while_the_definition_is_the_recorded_one():
    record = recorded_state(live(T, V, M), {("a", "t"): "h-t", ("a", "v"): "h-v"})
    assert [(r.schema, r.name, r.hash) for r in record] == [
        ("a", None, None), ("b", None, None), ("a", "t", "h-t"), ("a", "v", "h-v"), ("b", "m", None)]
    changed_v = LiveObject("a", "v", "view", "SELECT t.id FROM a.t WHERE t.id > 0", (("a", "t"),))
    hand = LiveObject("b", "hand", "view", "SELECT 1")
    document = snapshot_document(live(T, changed_v, M, hand), record)
    hashes = {o["name"]: o["hash"] for o in document["objects"]}
    assert hashes["t"] == "h-t"                    # as deployed: the project's hash
    assert hashes["v"] == f"live:{changed_v.definition_hash}"  # changed since: no project has this hash
    assert hashes["m"] is None                     # deployed, not tracked by the project
    assert hashes["hand"] is None                  # not deployed by apply
    unrecorded = snapshot_document(live(T), None)  # no record at all: every object by its definition
    assert unrecorded["objects"][0]["hash"] == f"live:{T.definition_hash}"
    by_name = {o["name"]: o for o in document["objects"]}
    assert by_name["m"]["indexes"] == [{"name": "m_id", "key": ["id"]}]
    assert by_name["v"]["depends_on"] == [["db", "a", "t"]]
    assert by_name["v"]["sql"] == "CREATE VIEW v AS SELECT t.id FROM a.t WHERE t.id > 0"


def test_drift_finds_every_kind_of_difference_and_nothing_else():
    record = recorded_state(live(T, V, M), {})
    assert drift(live(T, V, M), record) == []
    now = live(LiveObject("a", "t", "table", "id integer, note text, PRIMARY KEY (id)"),  # a column added
               LiveObject("a", "v", "materialized-view", "SELECT t.id FROM a.t", (("a", "t"),)),  # kind
               LiveObject("b", "m", "materialized-view", "SELECT v.id FROM a.v", (("a", "v"),), ()),  # index gone
               LiveObject("b", "hand", "view", "SELECT 1"),  # made by hand
               schemas=("a", "b", "scratch"))
    rows = drift(now, record)
    assert [(r["schema"], r["name"], r["aspect"], r["recorded"], r["live"]) for r in rows] == [
        ("scratch", None, "schema", None, "present"),
        ("a", "t", "definition", T.definition, now.objects[("a", "t")].definition),
        ("a", "v", "kind", "view", "materialized-view"),
        ("b", "hand", "object", None, "view"),
        ("b", "m", "indexes", "m_id (id)", None)]
    assert drift_line(rows, shown=2) == ("database db differs from its deploy record in 5 places: scratch schema "
                                         "(absent -> present); a.t definition (and 3 more)")
    gone = drift(live(T, schemas=("a",)), record)
    assert {(r["schema"], r["name"], r["aspect"]) for r in gone} == {("b", None, "schema"), ("a", "v", "object"),
                                                                    ("b", "m", "object")}


def test_a_plan_from_the_database_as_it_is_runs_and_hand_changes_under_a_plan_refuse_it():
    mine = Deployment("p", "s-live", "s2", frozenset({"db.a"}), frozenset())
    history = [Deployment("first", "s0", "s1", frozenset({"db.a"}), frozenset(), live_fingerprint="s-live0")]
    hand = ({"database": "db", "schema": "a", "name": "v", "aspect": "definition", "recorded": "x", "live": "y"},)
    assert refusal(mine, history, LiveNow("s-live", hand)) is None  # planned from exactly this database
    from_file = Deployment("p", "s1", "s2", frozenset({"db.a"}), frozenset())
    assert refusal(from_file, history, LiveNow("s-live1", ())) is None
    assert refusal(from_file, history, LiveNow("s-live1", hand)) == (
        "run p is stale: the database was changed by hand since run first was applied (1 difference from the "
        "deploy record, first a.v definition), and the plan touches schema db.a; nothing applied: plan again from "
        "the database (run --old-from-database)")
    elsewhere = Deployment("p", "s1", "s2", frozenset({"db.b"}), frozenset())
    assert refusal(elsewhere, history, LiveNow("s-live1", hand)) is None  # the hand change is not under it
    from_live = Deployment("p", "s-live0", "s2", frozenset({"db.a"}), frozenset())
    assert refusal(from_live, history + [Deployment("q", "s-live0", "s3", frozenset({"db.a"}), frozenset())],
                   LiveNow("s-other", ())).startswith("run p is stale: it was planned from a deployed state")


# --- on PostgreSQL -------------------------------------------------------------

HAND_CHANGES = [  # what a person does to the deployed example, and the drift each must show
    ("CREATE VIEW public.handmade AS SELECT 1 AS x", ("public", "handmade", "object")),
    ("CREATE SCHEMA scratch", ("scratch", None, "schema")),
    ("CREATE OR REPLACE VIEW reporting.weekly_report AS SELECT flipper_id, flips FROM api.top_flippers "
     "WHERE flips > 2", ("reporting", "weekly_report", "definition")),
    ("ALTER TABLE auction.bids ADD COLUMN note text", ("auction", "bids", "definition")),
    ("CREATE INDEX flippers_by_flips ON public.flippers (flips)", ("public", "flippers", "indexes")),
    ("DROP VIEW public.flipper_stats", ("public", "flipper_stats", "object")),
]


def run(*args: str) -> int:
    return main(["run", *args, "--config", PG_CONFIG])


@pytest.fixture(scope="module")
def deployed(spark, postgres, tmp_path_factory):
    """The example's old project deployed by `apply` (so recorded), then its change planned from the database."""
    out, dsn = tmp_path_factory.mktemp("live") / "out", postgres.fresh_database("flipper")
    os.environ["DIRTINESS_DSN"] = dsn
    try:
        assert run("--old", str(EXAMPLE / "empty.yaml"), "--new", str(EXAMPLE / "old.yaml"), "--out", str(out),
                   "--run-id", "first") == 0
        assert main(["apply", "--out", str(out), "--run-id", "first", "--config", PG_CONFIG]) == 0
        for run_id, old in (("from-file", ["--old", str(EXAMPLE / "old.yaml")]),
                            ("from-database", ["--old-from-database"])):
            assert run(*old, "--new", str(EXAMPLE / "new.yaml"), "--out", str(out), "--run-id", run_id,
                       "--deploy-id", "dpl") == 0
    finally:
        del os.environ["DIRTINESS_DSN"]
    return {"out": out, "dsn": dsn}


def test_the_snapshot_read_from_the_database_is_the_deployed_project(deployed, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DIRTINESS_DSN", deployed["dsn"])
    assert main(["snapshot", "--from-database", "--out", str(tmp_path / "live.yaml")]) == 0
    assert "warning" not in capsys.readouterr().err  # nothing drifted
    read = yaml.safe_load((tmp_path / "live.yaml").read_text())["objects"]
    project = yaml.safe_load((EXAMPLE / "old.yaml").read_text())["objects"]
    key = lambda o: (o["database"], o["schema"], o["name"])  # noqa: E731
    assert {key(o): (o["kind"], o["hash"]) for o in read} == {key(o): (o["kind"], o["hash"]) for o in project}
    deps = lambda o: sorted(tuple(d.split(".")) if isinstance(d, str) else tuple(d)  # noqa: E731
                            for d in o.get("depends_on", []))
    declared = {key(o): deps(o) for o in project if "depends_on" in o}
    assert declared and {key(o): deps(o) for o in read if key(o) in declared} == declared
    assert deployed["dsn"] not in (tmp_path / "live.yaml").read_text()


def test_a_plan_from_the_database_is_the_plan_from_the_deployed_file_and_applies(deployed, postgres):
    out = str(deployed["out"])
    plans = pl.read_delta(os.path.join(out, "ddl_plan"))
    statements = {run_id: plans.filter(pl.col("run_id") == run_id).sort("seq")["statement"].to_list()
                  for run_id in ("from-file", "from-database")}
    assert statements["from-database"] == statements["from-file"] and len(statements["from-file"]) == 14
    runs = {r["run_id"]: r for r in pl.read_delta(os.path.join(out, "runs")).to_dicts()}
    assert runs["from-database"]["old_snapshot"] == "database flipper"
    assert pl.read_delta(os.path.join(out, "drift")).filter(pl.col("run_id") == "from-database").height == 0
    assert main(["apply", "--out", out, "--run-id", "from-database", "--dsn", deployed["dsn"],
                 "--config", PG_CONFIG]) == 0
    fresh = postgres.fresh_database("fresh_flipper")
    deploy(fresh, yaml.safe_load((EXAMPLE / "new.yaml").read_text()))
    assert without_oids(catalog(deployed["dsn"])) == without_oids(catalog(fresh))


def test_hand_changes_are_drift_and_a_plan_they_touch_is_refused(deployed, postgres, tmp_path, capsys, caplog):
    """After the change is applied (the test above), hand changes; then the drift, and a stale plan refused."""
    out = str(deployed["out"])
    assert main(["apply", "--out", out, "--run-id", "from-database", "--dsn", deployed["dsn"],
                 "--config", PG_CONFIG]) == 0  # applied already (or now, when run alone): the state recorded
    with postgres.connect("flipper") as connection:
        for statement, _ in HAND_CHANGES:
            connection.execute(statement)
    capsys.readouterr()
    os.environ["DIRTINESS_DSN"] = deployed["dsn"]
    try:
        assert run("--old-from-database", "--new", str(EXAMPLE / "new.yaml"), "--out", out, "--run-id",
                   "drifted") == 0
    finally:
        del os.environ["DIRTINESS_DSN"]
    warned = [r.getMessage() for r in caplog.records if "differs from its deploy record" in r.getMessage()]
    assert warned == ["warning: database flipper differs from its deploy record in 6 places: scratch schema "
                      "(absent -> present); auction.bids definition; public.flipper_stats object (view -> absent); "
                      "public.flippers indexes; public.handmade object (absent -> view) (and 1 more) (the run plans "
                      "from what the database holds)"]
    assert "drift: 6 differences between the database and its deploy record" in capsys.readouterr().out
    rows = pl.read_delta(os.path.join(out, "drift")).filter(pl.col("run_id") == "drifted").to_dicts()
    assert sorted((r["schema"], r["name"], r["aspect"]) for r in rows) == sorted(c for _, c in HAND_CHANGES)
    (report,) = [r for r in rows if r["name"] == "weekly_report"]
    assert "WHERE top_flippers.flips > 2" in report["live"] and "WHERE" not in report["recorded"], report
    assert deployed["dsn"] not in str(rows)
    plan = pl.read_delta(os.path.join(out, "ddl_plan")).filter(pl.col("run_id") == "drifted").to_dicts()
    redeployed = {(r["schema"], r["name"]) for r in plan if r["object_type"] == "object"}
    assert ("reporting", "weekly_report") in redeployed and ("public", "flipper_stats") in redeployed
    # a plan from the file of what the last apply deployed (public redeployed): the hand changes are under it
    assert run("--old", str(EXAMPLE / "new.yaml"), "--new", str(EXAMPLE / "new.yaml"), "--out", out,
               "--run-id", "stale", "--forced-schema", "flipper.public") == 0
    before = catalog(deployed["dsn"])
    capsys.readouterr()
    assert main(["apply", "--out", out, "--run-id", "stale", "--dsn", deployed["dsn"], "--config", PG_CONFIG]) == 3
    (line,) = error_lines(capsys.readouterr().err)
    assert line == ("dirtiness: run stale is stale: the database was changed by hand since run from-database was "
                    "applied (6 differences from the deploy record, first public.flipper_stats object), and the "
                    "plan touches schemas flipper.public, flipper.reporting; nothing applied: plan again from the "
                    "database "
                    "(run --old-from-database)"), line
    assert catalog(deployed["dsn"]) == before
    # the plan from the database as it is now runs, and the database is the new project again
    assert main(["apply", "--out", out, "--run-id", "drifted", "--dsn", deployed["dsn"], "--config", PG_CONFIG]) == 0
    fresh = postgres.fresh_database("fresh_flipper")
    deploy(fresh, yaml.safe_load((EXAMPLE / "new.yaml").read_text()))
    after, want = without_oids(catalog(deployed["dsn"])), without_oids(catalog(fresh))
    # the hand-made view went with the swapped-out schema; blue-green rebuilds no table: bids keeps the hand-made
    # column, and the run said so (a dirty table it does not redeploy)
    bids = ("auction", "bids")
    assert after["relations"].pop(bids)["columns"].endswith("note text") and want["relations"].pop(bids)
    assert after["relations"] == want["relations"]
    decided = pl.read_delta(os.path.join(out, "decisions")).filter(
        (pl.col("run_id") == "drifted") & (pl.col("name") == "bids")).to_dicts()
    assert [(r["decision"], "table" in (r["reason"] or "")) for r in decided] == [("kept", True)], decided
    assert [s for s in after["schemas"] if s != "scratch"] == want["schemas"]  # a schema no plan touches stays


def test_after_a_selective_deploy_the_next_run_from_the_database_sees_the_rest(deployed, postgres, monkeypatch,
                                                                              tmp_path):
    """The record of a selective deploy holds the selected changes only (its state has the deployed hashes of
    the others), so the next run from the database finds exactly the changes left out, and deploys them."""
    out = str(tmp_path / "out")  # the runs so far, without the log of what apply ran on the other database
    shutil.copytree(deployed["out"], out, ignore=shutil.ignore_patterns("apply_log"))
    dsn = postgres.fresh_database("flipper")  # the example again, from scratch
    monkeypatch.setenv("DIRTINESS_DSN", dsn)
    assert main(["apply", "--out", out, "--run-id", "first", "--config", PG_CONFIG]) == 0
    assert run("--old", str(EXAMPLE / "old.yaml"), "--new", str(EXAMPLE / "new.yaml"), "--out", out,
               "--run-id", "only-reporting", "--only", "flipper.reporting") == 0
    assert main(["apply", "--out", out, "--run-id", "only-reporting", "--config", PG_CONFIG]) == 0
    with postgres.connect("flipper") as connection:
        recorded = connection.execute("SELECT run_id, changes FROM dirtiness.deployments ORDER BY applied_at").fetchall()
    assert recorded == [("first", '["flipper.api.top_flippers (added)", "flipper.auction.auctions (added)", '
                                  '"flipper.auction.bids (added)", "flipper.internal.winning_bids (added)", '
                                  '"flipper.public.flip_activities (added)", "flipper.public.flippers (added)", '
                                  '"flipper.reporting.legacy_flippers (added)", "flipper.reporting.weekly_report '
                                  '(added)"]'),
                        ("only-reporting", '["flipper.reporting.legacy_flippers (deleted)"]')]
    assert run("--old-from-database", "--new", str(EXAMPLE / "new.yaml"), "--out", out, "--run-id", "the-rest") == 0
    changes = pl.read_delta(os.path.join(out, "facts", "changed_stmt")).filter(pl.col("run_id") == "the-rest")
    assert sorted((r["name"], r["change"]) for r in changes.to_dicts()) == [
        ("flip_activities", "modified"), ("flipper_stats", "added")]
    assert main(["apply", "--out", out, "--run-id", "the-rest", "--config", PG_CONFIG]) == 0
    fresh = postgres.fresh_database("fresh_flipper")
    deploy(fresh, yaml.safe_load((EXAMPLE / "new.yaml").read_text()))
    assert without_oids(catalog(dsn)) == without_oids(catalog(fresh))


def test_materializes_catalog_rows_become_the_same_snapshot_form():
    """The rows Materialize's catalog queries return (inputs.live_materialize; its queries never ran against a
    live Materialize here) as a snapshot the job reads: kinds, clusters, definitions, dependencies, indexes."""
    from dirtiness.inputs.live_materialize import catalog_from_rows
    from dirtiness.inputs.snapshot import parse_document

    objects = [("u1", "auction", "kafka_conn", "connection", False, None, None),
               ("u2", "auction", "auction_source", "source", False, None, "ingest"),
               ("u3", "auction", "bids", "table", True, None, None),
               ("u4", "public", "flippers", "materialized-view", False,
                'SELECT "buyer" FROM "materialize"."auction"."bids"', "quickstart"),
               ("u5", "public", "Odd Name", "view", False, 'SELECT "buyer" FROM "materialize"."public"."flippers"',
                None)]
    catalog = catalog_from_rows("materialize", ["public", "auction"], objects,
                                [("u2", "u1"), ("u3", "u2"), ("u4", "u3"), ("u5", "u4"), ("u5", "s9")],
                                [("u4", "flippers_idx", "serving", "buyer")])
    document = snapshot_document(catalog, None)
    parse_document(document, "database materialize")  # the job reads it
    by_name = {o["name"]: o for o in document["objects"]}
    assert {n: (o["kind"], o.get("cluster")) for n, o in by_name.items()} == {
        "kafka_conn": ("connection", None), "auction_source": ("source", "ingest"),
        "bids": ("table-from-source", None), "flippers": ("materialized-view", "quickstart"),
        "Odd Name": ("view", None)}
    assert by_name["flippers"]["sql"] == ('CREATE MATERIALIZED VIEW flippers IN CLUSTER quickstart AS SELECT "buyer" '
                                          'FROM "materialize"."auction"."bids"')
    assert by_name["Odd Name"]["sql"].startswith('CREATE VIEW "Odd Name" AS SELECT')
    assert by_name["auction_source"]["sql"] is None and by_name["bids"]["sql"] is None
    assert by_name["Odd Name"]["depends_on"] == [["materialize", "public", "flippers"]]  # s9: not a user object
    assert by_name["flippers"]["indexes"] == [{"name": "flippers_idx", "key": ["buyer"], "cluster": "serving"}]
    moved = catalog_from_rows("materialize", ["public", "auction"],
                              [(*objects[3][:6], "compute")] + objects[:3] + objects[4:], [], [])
    aspects = {(r["name"], r["aspect"]) for r in drift(moved, recorded_state(catalog, {}))}
    assert ("flippers", "cluster") in aspects and ("flippers", "definition") not in aspects
