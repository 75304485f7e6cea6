"""The deploy record: which runs the target database had applied, and what each touched.

A run's plan is computed from one deployed state (its old snapshot, by
fingerprint). ``apply`` keeps a row per applied run in the database itself
(``<record_schema>.deployments``): the run, the fingerprints of the states it
went from and to, and the schemas and clusters its operations touched. Before
it runs anything, apply reads the record: a plan whose starting state is not
what the database last had applied (another run was applied since) is
refused, unless every run applied since touched schemas and clusters this
plan does not (mz-deploy checks conflicts at promote at the same grain). The
refusal is one line naming the other run and what both touch.

Beside the runs, the record keeps the deployed state itself
(``<record_schema>.deployed_objects``): every schema and object the database
held right after the last apply, with the project's hash of each and the
definition the database printed (``inputs.live``). It is what a snapshot read
from the database maps its hashes through, and what drift is measured
against. After a selective deploy it holds the selected changes only: the
excluded ones keep their deployed hashes, so the next run still sees them.
A plan computed from the database (``run --old-from-database``) starts from
the state's fingerprint as read then (``live_fingerprint``).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from ..wording import counted

TABLE = "deployments"
COLUMNS = ("run_id", "old_fingerprint", "new_fingerprint", "schemas", "clusters", "applied_at", "live_fingerprint",
           "changes")
STATE = "deployed_objects"
STATE_COLUMNS = ("run_id", "schema", "name", "kind", "hash", "definition_hash", "dependencies", "indexes",
                 "definition", "cluster")


@dataclass(frozen=True)
class Deployment:
    run_id: str
    old_fingerprint: str | None
    new_fingerprint: str | None
    schemas: frozenset[str]       # "database.schema" (stored as a JSON array)
    clusters: frozenset[str]
    applied_at: dt.datetime | None = None
    live_fingerprint: str | None = None  # the deployed state as read from the database right after the apply
    changes: tuple[str, ...] = ()        # the changes it deployed: "database.schema.name (modified)"


def touched(operations) -> tuple[frozenset[str], frozenset[str]]:
    """The schemas (``database.schema``) and clusters a plan's operations work in."""
    schemas = {f"{o.database}.{o.schema}" for o in operations if o.object_type != "cluster" and o.schema}
    clusters = {o.name for o in operations if o.object_type == "cluster" and o.name}
    return frozenset(schemas), frozenset(clusters)


@dataclass(frozen=True)
class LiveNow:
    """The target database just before a plan runs, against its recorded state."""

    fingerprint: str              # of its snapshot as ``run --old-from-database`` would read it now
    drift: tuple[dict, ...]       # inputs.live.drift rows: changed since the last apply recorded its state


def refusal(mine: Deployment, history: list[Deployment], now: LiveNow | None = None) -> str | None:
    """None when ``mine`` may be applied after ``history`` (oldest first) to the database as it is ``now``;
    else why not, in one line."""
    others = [d for d in history if d.run_id != mine.run_id]
    if len(others) < len(history):
        return None  # this run is recorded: applied before, running it again only resumes
    if now is not None and mine.old_fingerprint == now.fingerprint:
        return None  # planned from the database exactly as it is (run --old-from-database)
    stale = _stale(mine, others)
    if stale or now is None:
        return stale
    under = [r for r in now.drift if f"{r['database']}.{r['schema']}" in mine.schemas]
    both = sorted({f"{r['database']}.{r['schema']}" for r in under})
    if both:
        first = under[0]
        what = f"{first['schema']}.{first['name']} {first['aspect']}" if first["name"] else \
            f"schema {first['schema']}"
        last = f" since run {others[-1].run_id} was applied" if others else ""
        return (f"run {mine.run_id} is stale: the database was changed by hand{last} "
                f"({counted(len(now.drift), 'difference')} from the deploy record, first {what}), and the plan "
                f"touches schema"
                f"{'s' if len(both) > 1 else ''} {', '.join(both)}; nothing applied: plan again from the database "
                f"(run --old-from-database)")
    return None


def _stale(mine: Deployment, others: list[Deployment]) -> str | None:
    """Why ``mine`` is stale against the runs applied since the state it was planned from (None: it is not)."""
    start = max((i for i, d in enumerate(others) if mine.old_fingerprint in (d.new_fingerprint, d.live_fingerprint)),
                default=None)
    since = others if start is None else others[start + 1:]
    for other in since:
        schemas, clusters = sorted(other.schemas & mine.schemas), sorted(other.clusters & mine.clusters)
        if schemas or clusters:
            both = "; ".join(part for part in (
                f"schema{'s' if len(schemas) > 1 else ''} {', '.join(schemas)}" if schemas else "",
                f"cluster{'s' if len(clusters) > 1 else ''} {', '.join(clusters)}" if clusters else "") if part)
            return (f"run {mine.run_id} is stale: it was planned from a deployed state the database no longer has "
                    f"(run {other.run_id} was applied since{_when(other)}), and both touch {both}; nothing "
                    f"applied: plan again from what run {other.run_id} deployed")
    return None


def _when(deployment: Deployment) -> str:
    if deployment.applied_at is None:
        return ""
    return " at " + deployment.applied_at.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def create_statements(schema: str, state_too: bool = True) -> list[str]:
    """The record's tables, created if missing; ``state_too``: also the deployed state's (PostgreSQL), and the
    columns a record written by an earlier version lacks."""
    table, state = f"{_quote(schema)}.{TABLE}", f"{_quote(schema)}.{STATE}"
    statements = [f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}",
                  f"CREATE TABLE IF NOT EXISTS {table} (run_id text NOT NULL, old_fingerprint text, "
                  f"new_fingerprint text, schemas text, clusters text, applied_at timestamptz NOT NULL, "
                  f"live_fingerprint text, changes text)"]
    if not state_too:
        return statements
    return statements + [
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS live_fingerprint text",  # records of earlier versions
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS changes text",
            f"CREATE TABLE IF NOT EXISTS {state} (run_id text NOT NULL, schema text NOT NULL, name text, "
            f"kind text NOT NULL, hash text, definition_hash text, dependencies text, indexes text, definition text, "
            f"cluster text)"]


def state_select(schema: str) -> str:
    return f"SELECT {', '.join(STATE_COLUMNS)} FROM {_quote(schema)}.{STATE} ORDER BY schema, name NULLS FIRST"


def state_replace(schema: str) -> tuple[str, str]:
    """The statements that replace the recorded state: a delete, then an insert per row."""
    state = f"{_quote(schema)}.{STATE}"
    return (f"DELETE FROM {state}",
            f"INSERT INTO {state} ({', '.join(STATE_COLUMNS)}) VALUES ({', '.join(['%s'] * len(STATE_COLUMNS))})")


def state_to_row(run_id: str, recorded) -> tuple:
    from ..inputs.live import to_json

    return (run_id, recorded.schema, recorded.name, recorded.kind, recorded.hash, recorded.definition_hash,
            to_json(recorded.dependencies), to_json(recorded.indexes), recorded.definition, recorded.cluster)


def state_from_row(row):
    from ..inputs.live import Recorded, from_json

    _run_id, schema, name, kind, hash_, definition_hash, dependencies, indexes, definition, cluster = row
    return Recorded(schema, name, kind, hash_, definition_hash, from_json(dependencies), from_json(indexes),
                    definition, cluster)


def select_statement(schema: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM {_quote(schema)}.{TABLE} ORDER BY applied_at, run_id"


def insert_statement(schema: str) -> str:
    return f"INSERT INTO {_quote(schema)}.{TABLE} ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"


def from_row(row) -> Deployment:
    run_id, old, new, schemas, clusters, applied_at, live, changes = row
    return Deployment(run_id, old, new, _set(schemas), _set(clusters), applied_at, live,
                      tuple(json.loads(changes)) if changes else ())


def to_row(deployment: Deployment) -> tuple:
    return (deployment.run_id, deployment.old_fingerprint, deployment.new_fingerprint,
            json.dumps(sorted(deployment.schemas)), json.dumps(sorted(deployment.clusters)), deployment.applied_at,
            deployment.live_fingerprint, json.dumps(list(deployment.changes)))


def _set(text: str | None) -> frozenset[str]:
    return frozenset(json.loads(text)) if text else frozenset()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
