"""What a run records about itself, beside its results: the tables ``explain`` and ``report`` read.

- ``runs``: one row per run, its status last (``running``, then
  ``succeeded``, ``failed`` or ``refused``), with what it read and found.
- ``run_relations``: every relation of both rule programs, base or derived,
  the table holding its tuples (``facts/<relation>``, an output table,
  ``plan_decisions``, or none when a relation is not written) and how many
  tuples it has. It is how ``explain`` follows a cause such as
  ``DirtyCluster(quickstart)`` or ``Swapped(db, core)`` to the table that
  explains it, whatever the configuration says today.
- ``run_rounds``: tuples derived per relation per round of each program.
- ``run_stages``: wall-clock seconds per stage of the run.
- ``desired_objects``: the new project's objects with their hashes, as the
  run deploys them (after a selective run, the deployed project plus the
  selected changes); ``apply`` records them as the deployed state.
- ``drift``: a run from the database's (``--old-from-database``)
  differences between the database and its deploy record.
- ``selected_changes``: a selective run's (``--only``/``--exclude``) changes,
  each chosen or left as deployed, and why.

Every record is a handful of rows written from Arrow (no Spark job), each
table's columns declared here by name.
"""

from __future__ import annotations

import pyarrow as pa

from ..datalog.check import CheckedProgram
from ..datalog.engine import RoundLog
from ..model import facts_table

RUNS = pa.schema([
    ("run_id", pa.string()), ("status", pa.string()),
    ("started_at", pa.timestamp("us", tz="UTC")), ("finished_at", pa.timestamp("us", tz="UTC")),
    ("old_snapshot", pa.string()), ("new_snapshot", pa.string()), ("rules", pa.string()),
    ("rounds", pa.int32()), ("dirty_stmts", pa.int64()), ("dirty_clusters", pa.int64()),
    ("dirty_schemas", pa.int64()), ("seconds", pa.float64()), ("message", pa.string()),
    ("strategy", pa.string()), ("forced_schemas", pa.string()),
    ("old_fingerprint", pa.string()), ("new_fingerprint", pa.string()), ("rules_fingerprint", pa.string()),
    ("config_fingerprint", pa.string()), ("ddl_operations", pa.int64()), ("dialect", pa.string()),
    ("plan_rules", pa.string()), ("plan_rounds", pa.int32()),
    ("statements_parsed", pa.int64()), ("statements_reused", pa.int64()),  # null: below sql.reuse_from_objects
    ("statements_rendered", pa.int64()), ("renders_reused", pa.int64()),  # the plan's; null likewise
    ("version", pa.string()),         # of dirtiness: a run starts only from a run of the same version
    ("started_from", pa.string()),    # the run whose units this one's were compared with (store.base_run)
    ("units_changed", pa.int64()),    # units added, deleted or edited since (changeset.units); null: no such run
    ("mode", pa.string()),            # incremental (its outputs taken from started_from) | full; null: not finished
    ("units_digest", pa.string()),    # of all its units (changeset.units.units_digests): a later run compares its own
    ("shapes_digest", pa.string()),   # of them by shape (changeset.units.units_digests): alike after restatements
])
RUN_RELATIONS = pa.schema([
    ("relation", pa.string()),
    ("role", pa.string()),     # base | derived
    ("table", pa.string()),    # under the output root; null: not written
    ("tuples", pa.int64()),
    ("program", pa.string()),  # rules (the dirty rules) | plan (the strategy's rules)
])
ROUNDS_TABLE = "run_rounds"  # the rounds of both rule programs, a row per relation and round
RUN_ROUNDS = pa.schema([
    ("round", pa.int32()), ("stratum", pa.int32()), ("relation", pa.string()), ("derived", pa.int64()),
    ("seconds", pa.float64()), ("program", pa.string()),
])
RUN_STAGES = pa.schema([("position", pa.int32()), ("stage", pa.string()), ("seconds", pa.float64())])
SELECTED_CHANGE_ROWS = pa.schema([  # a selective run's changes (inputs.selection): chosen or not, and why
    ("database", pa.string()), ("schema", pa.string()), ("name", pa.string()), ("change", pa.string()),
    ("selected", pa.bool_()), ("because", pa.string()),
])
DRIFT = "drift"  # run --old-from-database: where the database differs from its deploy record (inputs.live)
DRIFT_ROWS = pa.schema([
    ("database", pa.string()), ("schema", pa.string()), ("name", pa.string()),  # a schema's rows: name null
    ("aspect", pa.string()),    # schema | object | kind | definition | dependencies | indexes
    ("recorded", pa.string()), ("live", pa.string()),  # each side's value (null: absent there)
])
PLAN_DECISIONS = "plan_decisions"
# What a run's plan checks found (``plan.checks``: the first details and the count of each) and a digest of every
# table a run that takes this plan takes (``store.taken``)
PLAN_CHECKS = "plan_checks"
PLAN_CHECK_ROWS = pa.schema([("problem", pa.string()), ("n", pa.int32()), ("detail", pa.string()),
                             ("total", pa.int64())])
DECISIONS = "decisions"  # one row per object, schema and cluster (plan.decision_table)


def records(schema: pa.Schema, rows: list[dict]) -> pa.Table:
    """Rows given by column name as a table of ``schema`` (a column a row leaves out is null)."""
    return pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)


def relation_rows(checked: CheckedProgram, plan_checked: CheckedProgram | None, outputs: dict[str, str],
                  facts: dict[str, int], rounds: list[RoundLog], plan_rounds: list[RoundLog]) -> list[dict]:
    """One row per relation of the dirty rules (base first, then derived in stratum order), then the plan
    rules' own relations (its base relations that are the dirty sets are the dirty rules' rows)."""
    rows = [{"relation": name, "role": "base", "table": facts_table(name), "tuples": facts.get(name),
             "program": "rules"} for name in checked.base]
    rows += [{"relation": name, "role": "derived", "table": outputs.get(name), "tuples": count, "program": "rules"}
             for name, count in _derived(checked, rounds).items()]
    if plan_checked is None:  # strategy none
        return rows
    known = {row["relation"] for row in rows}
    rows += [{"relation": name, "role": "base", "table": None, "tuples": None, "program": "plan"}
             for name in plan_checked.base if name not in known]
    rows += [{"relation": name, "role": "derived", "table": PLAN_DECISIONS, "tuples": count, "program": "plan"}
             for name, count in _derived(plan_checked, plan_rounds).items()]
    return rows


def _derived(checked: CheckedProgram, rounds: list[RoundLog]) -> dict[str, int]:
    derived = {name: 0 for stratum in checked.strata for name in stratum}
    for entry in rounds:
        for name, count in entry.new.items():
            derived[name] += count
    return derived


def round_rows(rounds: list[RoundLog], program: str) -> list[dict]:
    return [{"round": r.round, "stratum": r.stratum, "relation": relation, "derived": count,
             "seconds": round(r.seconds, 3), "program": program}
            for r in rounds for relation, count in r.new.items()]


def stage_rows(seconds: dict[str, float]) -> list[dict]:
    return [{"position": i, "stage": stage, "seconds": value} for i, (stage, value) in enumerate(seconds.items())]
