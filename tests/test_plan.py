"""The phased DDL plan: both strategies on batched scenarios, steps, cycles, quoting, policy."""

import pytest
from pyspark.sql import functions as F

from catalogs import Scenario, changed, obj, run_scenarios
from dirtiness.config import load_config
from dirtiness.errors import PolicyError
from dirtiness.plan.blue_green import needing_attention
from dirtiness.plan.invariants import InvariantError, check_invariants
from dirtiness.plan.planner import build_plan, refuse_destructive
from dirtiness.plan.statements import Dialect, quote
from dirtiness.plan.steps import CycleError, dependency_steps
from test_scenarios import seed_scenarios

HOSTILE = 'x"; DROP TABLE t; --'


def plan_scenarios():
    s = []
    a, b, c = obj("db.s.a"), obj("db.s.b", deps=["db.s.a"]), obj("db.s.c", deps=["db.s.b"])
    s.append(Scenario("line", [a, b, c], [changed(a), changed(b), changed(c)]))
    top, left, right = obj("db.s.top"), obj("db.s.left", deps=["db.s.top"]), obj("db.s.right", deps=["db.s.top"])
    bottom = obj("db.s.bottom", deps=["db.s.left", "db.s.right"])
    s.append(Scenario("diamond", [top, left, right, bottom],
                      [changed(top), changed(left), changed(right), changed(bottom)]))
    # x is not planned (it reads a replacement MV, so it stays clean): it must impose no order on a and b.
    ra = obj("db.api.a", "materialized-view", replacement=True)
    x, rb = obj("db.mid.x", deps=["db.api.a"]), obj("db.top.b", deps=["db.mid.x"])
    s.append(Scenario("unplanned_middle", [ra, x, rb], [changed(ra), x, changed(rb)]))
    hostile = obj(("db", "s", HOSTILE), "view", sql="CREATE VIEW ...")
    s.append(Scenario("hostile", [hostile], [changed(hostile)]))
    mv = obj("db.core.mv", "materialized-view", cluster="compute", sql="CREATE MATERIALIZED VIEW mv ...")
    sink = obj("db.out.sink", "sink", cluster="sinks", deps=["db.core.mv"], sql="CREATE SINK sink ...")
    s.append(Scenario("sink_behind_mv", [mv, sink], [changed(mv), sink]))
    table = obj("db.raw.events", "table", sql="CREATE TABLE events ...")
    view = obj("db.raw.recent", deps=["db.raw.events"])
    s.append(Scenario("changed_table", [table, view], [changed(table), view]))
    return s + seed_scenarios()


@pytest.fixture(scope="module")
def batch(spark):
    return run_scenarios(spark, plan_scenarios(), "dirty")


@pytest.fixture(scope="module")
def dialect():
    return Dialect.from_config(load_config())


@pytest.fixture(scope="module")
def plans(batch, dialect):
    out = {}
    for strategy in ("blue-green", "in-place"):
        inputs = batch.plan_inputs(dialect)
        plan = build_plan(inputs, strategy).localCheckpoint()
        check_invariants(plan, inputs, batch.base.facts["ChangedStmt"], strategy)
        out[strategy] = (plan, [r.asDict() for r in plan.orderBy("seq").collect()])
    return out


def rows_of(plans, batch, strategy, scenario):
    prefix = batch.prefixes[scenario]
    return [{**r, "database": r["database"][len(prefix):] if r["database"] else None,
             "name": r["name"][len(prefix):] if r["object_type"] == "cluster" else r["name"]}
            for r in plans[strategy][1]
            if (r["database"] or "").startswith(prefix) or (r["object_type"] == "cluster" and r["name"].startswith(prefix))]


def steps(rows, phase):
    return {r["name"]: r["step"] for r in rows if r["phase"] == phase and r["object_type"] == "object"}


def test_chain_and_diamond_steps(plans, batch):
    chain = rows_of(plans, batch, "in-place", "line")
    assert steps(chain, "setup") == {"a": 0, "b": 1, "c": 2}
    assert steps(chain, "teardown") == {"c": 0, "b": 1, "a": 2}  # dependents first
    diamond = rows_of(plans, batch, "in-place", "diamond")
    assert steps(diamond, "setup") == {"top": 0, "left": 1, "right": 1, "bottom": 2}
    staged = rows_of(plans, batch, "blue-green", "line")
    assert steps(staged, "stage") == {"a": 1, "b": 2, "c": 3}  # step 0 creates the staging schema


def test_objects_not_in_the_plan_impose_no_order(plans, batch):
    rows = rows_of(plans, batch, "in-place", "unplanned_middle")
    assert steps(rows, "setup") == {"a": 0, "b": 0}
    assert "x" not in steps(rows, "teardown")


def test_blue_green_phases_of_a_sink_behind_a_dirty_mv(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "sink_behind_mv")
    ops = [(r["phase"], r["step"], r["action"], r["object_type"], r["schema"] or r["name"]) for r in rows]
    assert ops == [
        ("stage", 0, "CREATE", "schema", "core"),
        ("stage", 0, "CREATE", "cluster", "compute"),
        ("stage", 1, "CREATE", "object", "core"),
        ("swap", 0, "SWAP", "schema", "core"),
        ("swap", 0, "SWAP", "cluster", "compute"),
        ("post-swap", 0, "REPOINT", "object", "out"),
        ("cleanup", 0, "DROP", "schema", "core"),
        ("cleanup", 0, "DROP", "cluster", "compute"),
    ]
    repoint = next(r for r in rows if r["action"] == "REPOINT")
    prefix = batch.prefixes["sink_behind_mv"]
    assert repoint["statement"] == (f'ALTER SINK "{prefix}db"."out"."sink" SET FROM "{prefix}db"."core"."mv"')
    stage = next(r for r in rows if r["phase"] == "stage" and r["object_type"] == "object")
    assert (stage["target_schema"], stage["statement"]) == ("core_stg", "CREATE MATERIALIZED VIEW mv ...")


def test_in_place_sink_behind_a_dirty_mv(plans, batch):
    rows = rows_of(plans, batch, "in-place", "sink_behind_mv")
    assert steps(rows, "teardown") == {"sink": 0, "mv": 1}
    assert steps(rows, "setup") == {"mv": 0, "sink": 1}


def test_seed_scenarios_under_both_strategies(plans, batch):
    # replacement MV: created as a replacement and applied in place; its schema is not swapped
    rows = rows_of(plans, batch, "blue-green", "replacement")
    actions = {(r["phase"], r["action"], r["object_type"], r["name"]) for r in rows}
    assert ("stage", "CREATE REPLACEMENT", "object", "stable") in actions
    assert ("swap", "APPLY REPLACEMENT", "object", "stable") in actions
    assert ("stage", "CREATE", "object", "sibling") in actions
    # the forced schema is staged and swapped; no cluster is
    forced = rows_of(plans, batch, "blue-green", "forced")
    assert {r["schema"] for r in forced if r["object_type"] == "schema" and r["phase"] == "swap"} == {"forced", "down"}
    assert not [r for r in forced if r["object_type"] == "cluster"]
    # index on a staged cluster of an object that is not redeployed is re-created on the staging cluster
    index_rows = rows_of(plans, batch, "blue-green", "index_cluster")
    index = next(r for r in index_rows if r["object_type"] == "index")
    assert (index["phase"], index["step"], index["name"]) == ("stage", 1, "winning_bids_idx")
    assert '"' + batch.prefixes["index_cluster"] + 'quickstart_stg"' in index["statement"]
    # deleted objects: in-place drops them; blue-green lets the schema swap remove them
    deleted = rows_of(plans, batch, "in-place", "added_deleted")
    assert ("teardown", "gone") in {(r["phase"], r["name"]) for r in deleted if r["action"] == "DROP"}
    assert ("setup", "new") in {(r["phase"], r["name"]) for r in deleted if r["action"] == "CREATE"}
    assert not rows_of(plans, batch, "blue-green", "unchanged")


def test_hostile_names_stay_one_identifier(plans, batch):
    for strategy in ("blue-green", "in-place"):
        for row in rows_of(plans, batch, strategy, "hostile"):
            generated = row["statement"]
            if row["action"] == "DROP" and row["object_type"] == "object":
                assert generated.endswith('."x""; DROP TABLE t; --"')
            assert "; DROP TABLE t; --\"" not in generated.replace('""; DROP TABLE t; --"', "")
    assert quote(HOSTILE) == '"x""; DROP TABLE t; --"'


def test_destructive_operations_need_permission(plans, batch):
    rows = rows_of(plans, batch, "in-place", "changed_table")
    drop = next(r for r in rows if r["phase"] == "teardown" and r["name"] == "events")
    assert drop["destructive"] and drop["statement"].startswith("DROP TABLE IF EXISTS")
    assert not next(r for r in rows if r["phase"] == "teardown" and r["name"] == "recent")["destructive"]
    plan = plans["in-place"][0]
    with pytest.raises(PolicyError, match=r"refused without --allow-destructive: .*raw\.events \(table\)"):
        refuse_destructive(plan, allowed=False)
    refuse_destructive(plan, allowed=True)
    assert not any(r["destructive"] for r in plans["blue-green"][1])  # blue-green never drops tables


def test_blue_green_reports_dirty_tables_as_needing_attention(batch, dialect, plans):
    prefix = batch.prefixes["changed_table"]
    attention = {(r["schema"], r["name"], r["kind"], r["change"])
                 for r in needing_attention(batch.plan_inputs(dialect)).collect() if r["database"] == prefix + "db"}
    assert attention == {("raw", "events", "table", "modified")}
    staged = {r["name"] for r in rows_of(plans, batch, "blue-green", "changed_table") if r["object_type"] == "object"}
    assert staged == {"recent"}  # the view is staged; the table is left alone


def test_plans_are_deterministic(batch, dialect, plans):
    for strategy in ("blue-green", "in-place"):
        again = [r.asDict() for r in build_plan(batch.plan_inputs(dialect), strategy).orderBy("seq").collect()]
        assert again == plans[strategy][1]
        assert [r["seq"] for r in again] == list(range(1, len(again) + 1))


def test_broken_plans_fail_an_invariant(batch, dialect, plans):
    plan = plans["blue-green"][0]
    inputs = batch.plan_inputs(dialect)
    changed_facts = batch.base.facts["ChangedStmt"]
    no_swap = plan.where(~((F.col("phase") == "swap") & (F.col("object_type") == "schema")))
    with pytest.raises(InvariantError, match="every staged schema and cluster is swapped"):
        check_invariants(no_swap, inputs, changed_facts, "blue-green")
    flat = plan.withColumn("step", F.lit(0))
    with pytest.raises(InvariantError, match="every dependency between planned objects is respected"):
        check_invariants(flat, inputs, changed_facts, "blue-green")
    twice = plan.unionByName(plan.where(F.col("object_type") == "object").limit(1))
    with pytest.raises(InvariantError, match="each object appears at most once per phase"):
        check_invariants(twice, inputs, changed_facts, "blue-green")


def test_cycle_is_an_error_naming_the_objects(spark):
    nodes = spark.createDataFrame([(n,) for n in "abcde"], "node string")
    edges = spark.createDataFrame([("b", "a"), ("c", "b"), ("d", "c"), ("b", "d"), ("e", "d")], "node string, waits_for string")
    with pytest.raises(CycleError, match=r"dependency cycle: b -> a|b -> d -> c -> b"):
        dependency_steps(nodes, edges).collect()
    with pytest.raises(CycleError) as info:
        dependency_steps(nodes, edges)
    assert "a" not in str(info.value).split(": ", 1)[1].split(" -> ")  # a is not on the cycle
    assert sorted(set(str(info.value).split(": ", 1)[1].split(" -> "))) == ["b", "c", "d"]
