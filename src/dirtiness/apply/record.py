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
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

TABLE = "deployments"
COLUMNS = ("run_id", "old_fingerprint", "new_fingerprint", "schemas", "clusters", "applied_at")


@dataclass(frozen=True)
class Deployment:
    run_id: str
    old_fingerprint: str | None
    new_fingerprint: str | None
    schemas: frozenset[str]       # "database.schema" (stored as a JSON array)
    clusters: frozenset[str]
    applied_at: dt.datetime | None = None


def touched(operations) -> tuple[frozenset[str], frozenset[str]]:
    """The schemas (``database.schema``) and clusters a plan's operations work in."""
    schemas = {f"{o.database}.{o.schema}" for o in operations if o.object_type != "cluster" and o.schema}
    clusters = {o.name for o in operations if o.object_type == "cluster" and o.name}
    return frozenset(schemas), frozenset(clusters)


def refusal(mine: Deployment, history: list[Deployment]) -> str | None:
    """None when ``mine`` may be applied after ``history`` (oldest first); else why not, in one line."""
    others = [d for d in history if d.run_id != mine.run_id]
    if len(others) < len(history):
        return None  # this run is recorded: applied before, running it again only resumes
    start = max((i for i, d in enumerate(others) if d.new_fingerprint == mine.old_fingerprint), default=None)
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


def create_statements(schema: str) -> list[str]:
    table = f"{_quote(schema)}.{TABLE}"
    return [f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}",
            f"CREATE TABLE IF NOT EXISTS {table} (run_id text NOT NULL, old_fingerprint text, new_fingerprint text, "
            f"schemas text, clusters text, applied_at timestamptz NOT NULL)"]


def select_statement(schema: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM {_quote(schema)}.{TABLE} ORDER BY applied_at, run_id"


def insert_statement(schema: str) -> str:
    return f"INSERT INTO {_quote(schema)}.{TABLE} ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"


def from_row(row) -> Deployment:
    run_id, old, new, schemas, clusters, applied_at = row
    return Deployment(run_id, old, new, _set(schemas), _set(clusters), applied_at)


def to_row(deployment: Deployment) -> tuple:
    return (deployment.run_id, deployment.old_fingerprint, deployment.new_fingerprint,
            json.dumps(sorted(deployment.schemas)), json.dumps(sorted(deployment.clusters)), deployment.applied_at)


def _set(text: str | None) -> frozenset[str]:
    return frozenset(json.loads(text)) if text else frozenset()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
