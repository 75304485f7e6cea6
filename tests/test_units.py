"""Units (``changeset.units``): a digest of each object of each side, what changed since the run a run starts
from, and which run that is (``store.base_run``); and what a run takes from it when no unit changed, its plan's
checks included (``store.taken``)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dirtiness.changeset.units import (
    changed_units_line,
    cluster_units,
    counts_of,
    left_none,
    restated_only,
    split_digests,
    unit_changes,
    unit_contents,
    units_digests,
)
from dirtiness.errors import InputError, PolicyError
from dirtiness.inputs.snapshot import DEPENDENCIES, INDEXES, OBJECTS
from dirtiness.plan.checks import InvariantError
from dirtiness.store.base_run import BaseRun, base_run
from dirtiness.store.taken import digests_differ, row_digests, taken_report, with_suffix

WANTED = {"rules_fingerprint": "r1", "config_fingerprint": "c1", "version": "1.0"}


def _run(run_id: str, hour: int, **differs) -> dict:
    return {"run_id": run_id, "status": "succeeded", "finished_at": dt.datetime(2026, 11, 29, hour), **WANTED,
            **differs}


def test_the_run_to_start_from_is_the_latest_succeeded_one_computed_alike():
    read = []

    def succeeded(rows):
        return lambda: read.append(1) or rows

    latest = _run("c", 3)
    assert base_run(latest, succeeded([]), WANTED) == BaseRun("c") and not read  # the others never read
    older = [_run("a", 1), _run("b", 2), _run("x", 4, status="failed"), latest := _run("c", 3, version="2.0")]
    assert base_run(latest, succeeded(older), WANTED) == BaseRun("b")
    assert base_run(None, succeeded(older), WANTED) == BaseRun(why="no succeeded run")
    # a retry of a run never starts from itself
    assert base_run(_run("b", 2), succeeded(older), WANTED, this_run="b") == BaseRun("a")
    assert base_run(_run("a", 1), succeeded([_run("a", 1)]), WANTED, this_run="a") == BaseRun(
        why="no succeeded run but a itself")
    other = [_run("a", 1, rules_fingerprint="r0"), latest := _run("c", 3, rules_fingerprint="r0", version="2.0")]
    assert base_run(latest, succeeded(other), WANTED).why == (
        "no succeeded run with these rules, configuration and version of dirtiness: the latest, c, was computed "
        "with another rule program and another version of dirtiness")


def test_changes_are_counted_and_said_per_side():
    counts = counts_of({"new:edited": 2, "old:added": 1})
    assert counts == {"old": {"added": 1, "deleted": 0, "edited": 0}, "new": {"added": 0, "deleted": 0, "edited": 2}}
    assert changed_units_line(counts) == "3 units changed (old: 1 added; new: 2 edited)"
    assert changed_units_line(counts_of({})) == "no unit changed"
    assert counts_of({"cluster:edited": 1, "new:edited": 1})["new"]["edited"] == 2  # the new project's clusters
    # a run whose every unit is added, none deleted or edited, was compared with a run that left none
    assert left_none(counts_of({"new:added": 3}), 3) and not left_none(counts_of({"new:added": 3}), 4)
    assert not left_none(counts_of({"new:added": 3, "old:deleted": 1}), 3) and not left_none(counts_of({}), 0)


def test_a_units_digest_changes_with_what_its_facts_come_from_and_nothing_else(spark):
    """One job for every case: a unit's digest ignores the order of its dependencies and indexes, and changes
    with its kind, statement, cluster, replacement flag, a dependency, an index or its id in its tool; a cluster
    definition is a unit too. Its shape is all of that but the statement's hash and text, and whether the object
    changed, where a changed object of the new side has one; a new-side unit whose content changed and whose
    shape did not is restated. The digest of all of a run's units changes with any of them; their digest by shape
    only with a unit that was not restated."""
    base = {"kind": "view", "hash": "h", "cluster": None, "replacement": False, "sql": "SELECT 1", "tool_id": None}
    deps = [("b", "s", "x"), ("b", "s", "y")]
    indexes = [("i1", "c1", None), ("i2", "c2", "a")]
    cases = {  # name -> (object fields, dependencies, indexes)
        "same": (base, deps, indexes), "reordered": (base, deps[::-1], indexes[::-1]),
        "kind": ({**base, "kind": "materialized-view"}, deps, indexes), "hash": ({**base, "hash": "h2"}, deps, indexes),
        "sql": ({**base, "sql": "SELECT 2"}, deps, indexes), "cluster": ({**base, "cluster": "c"}, deps, indexes),
        "replacement": ({**base, "replacement": True}, deps, indexes), "dependency": (base, deps[:1], indexes),
        "index": (base, deps, [("i1", "c9", None), indexes[1]]), "no index": (base, deps, []),
        "tool_id": ({**base, "tool_id": "model.p.x"}, deps, indexes),
        "no sql": ({**base, "sql": None}, deps, indexes), "created": (base, deps, indexes),
        "unchanged": (base, deps, indexes),
    }
    objects = spark.createDataFrame([("d", "s", name, *(o[f] for f in OBJECTS.names[3:]))
                                     for name, (o, _, _) in cases.items()], OBJECTS)
    dependencies = spark.createDataFrame([("d", "s", name, *d) for name, (_, ds, _) in cases.items() for d in ds],
                                         DEPENDENCIES)
    index_rows = spark.createDataFrame([("d", "s", name, *i) for name, (_, _, ix) in cases.items() for i in ix],
                                       INDEXES)
    clusters = cluster_units(spark, {"c1": "CREATE CLUSTER c1 (SIZE = 'small')", "c2": "CREATE CLUSTER c2 (SIZE = 'big')"})
    changed = spark.createDataFrame([("d", "s", name, "added" if name == "created" else "modified")
                                     for name in cases if name != "unchanged"],
                                    "database string, schema string, name string, change string")
    units = unit_contents("new", objects, dependencies, index_rows, changed).unionByName(clusters)
    # one deleted, three added (one of them renamed), two edited (a cluster definition one), one restated
    earlier = units.where("name NOT IN ('kind', 'hash')").selectExpr(
        "side", "database", "schema", "CASE name WHEN 'sql' THEN 'added' ELSE name END AS name",
        "CASE WHEN name IN ('cluster', 'c2', 'tool_id') THEN unhex('00') ELSE content END AS content",
        "CASE WHEN name IN ('cluster', 'c2') THEN unhex('00') ELSE shape END AS shape")
    digests = [units_digests(frame).frame.selectExpr("'digest' AS what", f"'{name}' AS name", "NULL AS content",
                                                     "digests AS change")
               for name, frame in (("units", units), ("reordered", units.orderBy(F.desc("content"))),
                                   ("earlier", earlier), ("one less", units.where("name != 'same'")))]

    def edited(name: str, column: str, value: str) -> DataFrame:
        return units.withColumn(column, F.when(F.col("name") == name, F.expr(value)).otherwise(F.col(column)))

    by_shape = {"units": units, "reordered": units.orderBy(F.desc("content")),
                "restated": edited("same", "content", "unhex('01')"),  # its content changed, its shape not
                "unshaped edited": edited("unchanged", "content", "unhex('01')"),  # no shape: its content counts
                "reshaped": edited("same", "shape", "unhex('01')"), "shape lost": edited("same", "shape", "NULL"),
                "one less": units.where("name != 'same'")}
    digests += [units_digests(frame).frame.selectExpr("'shapes' AS what", f"'{name}' AS name", "NULL AS content",
                                                      "digests AS change") for name, frame in by_shape.items()]
    rows = reduce(DataFrame.unionByName, [units.selectExpr("'unit' AS what", "name", "content", "NULL AS change"),
                                          units.selectExpr("'shape' AS what", "name", "shape AS content",
                                                           "NULL AS change"),
                                          unit_changes(units, earlier).frame.selectExpr(
                                              "'change' AS what", "side AS name", "NULL AS content",
                                              "change_of AS change"), *digests]).collect()
    # all of a run's units in one digest: the same whatever their order, another for any unit changed or gone
    digest = {r["name"]: split_digests(r["change"])[0] for r in rows if r["what"] == "digest"}
    assert digest["units"] == digest["reordered"] and digest["units"].startswith(f"{len(cases) + 2}:")
    assert len(set(digest.values())) == 3 and digest["one less"].startswith(f"{len(cases) + 1}:")
    # by shape: a restated unit leaves it as it was, any other change makes another
    shapes = {r["name"]: split_digests(r["change"])[1] for r in rows if r["what"] == "shapes"}
    assert shapes["units"] == shapes["reordered"] == shapes["restated"] != digest["units"]
    assert len({shapes[name] for name in by_shape if name not in ("reordered", "restated")}) == len(by_shape) - 2
    content = {r["name"]: r["content"] for r in rows if r["what"] == "unit"}
    assert content["same"] == content["reordered"]
    # every case but the reordered one and those that differ in their change only has its own digest
    alike = ("reordered", "created", "unchanged")
    assert len({content[name] for name in [*cases, "c1", "c2"] if name not in alike}) == len(cases) - 1
    assert content["created"] == content["unchanged"] == content["same"]
    shape = {r["name"]: r["content"] for r in rows if r["what"] == "shape"}
    assert {name for name in cases if shape[name] == shape["same"]} == {"same", "reordered", "hash", "sql"}
    assert len({shape[name] for name in cases if name != "unchanged"}) == len(cases) - 4
    assert shape["unchanged"] is None and shape["c1"] is None  # neither changed nor the new side's: no shape
    assert all(isinstance(c, (bytes, bytearray)) and len(c) == 16 for c in content.values())  # 128 bits
    changes = Counter(r["change"] for r in rows if r["what"] == "change")  # what a hold split by it counts
    # added since: kind, hash, sql (the earlier run named it 'added'); deleted: 'added'; edited: cluster, and the
    # definition of cluster c2, a unit of the new project; restated: tool_id (its content changed, its shape not)
    assert changes == {"new:added": 3, "new:deleted": 1, "new:edited": 1, "cluster:edited": 1, "new:restated": 1}
    assert counts_of(changes)["new"] == {"added": 3, "deleted": 1, "edited": 3}
    assert restated_only(changes) == 0 and restated_only({"new:restated": 2}) == 2 and restated_only({}) == 0


def test_a_tables_digest_is_its_rows_whatever_their_order_and_the_runs_staging_suffix(spark):
    """What a run that takes a plan compares with what the plan's checks recorded: the same rows under another
    run's suffix digest alike; a row edited, added or dropped does not."""
    rows = [(1, "stage", "CREATE SCHEMA s_dpl1", True), (2, "swap", None, False), (3, "cleanup", "DROP s", None)]
    schema = "seq int, phase string, statement string, destructive boolean"
    frame = spark.createDataFrame(rows, schema)
    variants = {
        "same": spark.createDataFrame(rows[::-1], schema).select("statement", "seq", "destructive", "phase"),
        "suffixed": with_suffix(frame, "_dpl1", "_dpl2"),
        "edited": spark.createDataFrame([rows[0], (2, "swap", "x", False), rows[2]], schema),
        "added": spark.createDataFrame([*rows, (4, "cleanup", None, None)], schema),
        "dropped": spark.createDataFrame(rows[:2], schema),
        "empty": spark.createDataFrame([], schema),
    }
    digests = {r["problem"]: r["total"] for r in row_digests({"plan": frame}, "_dpl1").union(row_digests(
        {name: variant for name, variant in variants.items() if name != "suffixed"}, "_dpl1")).union(
        row_digests({"suffixed": variants["suffixed"]}, "_dpl2")).collect()}
    plan = digests.pop("digest:plan")
    assert {name[len("digest:"):] for name, total in digests.items() if total == plan} == {"same", "suffixed"}
    assert digests["digest:empty"] == 0


def test_the_checks_of_a_taken_plan_are_what_its_run_found_and_are_enforced():
    recorded = [{"problem": "digest:ddl_plan", "n": None, "detail": None, "total": 7},
                {"problem": "destructive", "n": 1, "detail": "d.s_dpl1.t (table)", "total": 1},
                {"problem": "phase:1:stage", "n": None, "detail": None, "total": 3}]
    assert digests_differ(recorded, [{"problem": "digest:ddl_plan", "total": 7}]) is None
    assert digests_differ(recorded, [{"problem": "digest:ddl_plan", "total": 8}]) == "ddl_plan"
    assert digests_differ(recorded, [{"problem": "digest:decisions", "total": 0}]) == "decisions"  # none recorded
    report = taken_report(recorded, "_dpl1", "_dpl2")
    assert report.details("destructive") == (["d.s_dpl2.t (table)"], 1) and report.phases == {"stage": 3}
    assert report.rows[0] == recorded[0] and report.rows[1]["detail"] == "d.s_dpl2.t (table)"
    report.enforce(allow_destructive=True)
    with pytest.raises(PolicyError, match="d.s_dpl2.t"):  # taken, the plan still needs --allow-destructive
        report.enforce(allow_destructive=False)
    broken = [*recorded, {"problem": "invariant:every drop follows its dependents", "n": 1, "detail": "x", "total": 1}]
    with pytest.raises(InvariantError, match="every drop follows its dependents"):
        taken_report(broken, "_dpl1", "_dpl2").enforce(allow_destructive=True)
    # a plan rendered again in some statements: those checks and the digests are its own, the rest taken
    verbatim = {"problem": "verbatim", "n": 1, "detail": "4 stage d.s.v (view)", "total": 1}
    fresh = [{"problem": "digest:ddl_plan", "n": None, "detail": None, "total": 9},
             {"problem": "statements", "n": 1, "detail": "d.s.w: cannot stage it", "total": 1}]
    report = taken_report([*recorded, verbatim], "_dpl1", "_dpl2", fresh)
    assert report.details("destructive") == (["d.s_dpl2.t (table)"], 1) and report.phases == {"stage": 3}
    assert report.details("verbatim") == ([], 0)  # found before, not in the statements rendered again
    assert [r for r in report.rows if r["problem"].startswith("digest:")] == fresh[:1]
    with pytest.raises(InputError, match="the plan cannot write these statements: d.s.w: cannot stage it"):
        report.enforce(allow_destructive=True)
