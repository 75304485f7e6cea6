"""Building catalogs for tests: objects from short specs, and many scenarios in one Spark run.

Scenarios are batched by namespacing: scenario ``k`` gets its databases and
clusters prefixed with ``k`` so that no rule can join across scenarios; the
union of all scenarios is evaluated once and split back by prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dirtiness.config import PROJECT_ROOT, load_config
from dirtiness.pipeline import compute_dirty
from dirtiness.rules import load_rules
from dirtiness.snapshot import snapshot_from_document

RULES = {name: str(PROJECT_ROOT / "conf" / "rules" / f"{name}.dl") for name in ("dirty", "index_aware")}
OUTPUTS = {"DirtyStmt": "dirty_stmts", "DirtyCluster": "dirty_clusters", "DirtySchema": "dirty_schemas"}


def obj(ref, kind: str = "view", hash: str | None = "h1", cluster: str | None = None, deps=(), indexes=(),
        replacement: bool = False, sql: str | None = None) -> dict:
    """An object spec: ``obj("db.sch.name", deps=["db.sch.other"], indexes=[("idx", "cluster")])``.

    ``ref`` may also be a (database, schema, name) tuple, for names with dots.
    """
    database, schema, name = ref.split(".") if isinstance(ref, str) else ref
    entry = {"database": database, "schema": schema, "name": name, "kind": kind, "hash": hash,
             "cluster": cluster, "replacement": replacement,
             "depends_on": list(deps), "indexes": [{"name": i, "cluster": c} for i, c in indexes]}
    if sql is not None:
        entry["sql"] = sql
    return entry


def changed(entry: dict, hash: str = "h2") -> dict:
    return {**entry, "hash": hash}


@dataclass
class Scenario:
    name: str
    old: list[dict]
    new: list[dict]
    forced: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """One scenario's dirty sets, names without the batch prefix."""

    stmts: dict[str, dict]     # "db.schema.name" -> row (kind, change, rule, cause, round)
    clusters: dict[str, dict]  # cluster -> row
    schemas: dict[str, dict]   # "db.schema" -> row


def _prefix(index: int) -> str:
    return f"t{index}x"


def _namespaced(entry: dict, prefix: str) -> dict:
    out = dict(entry)
    out["database"] = prefix + entry["database"]
    out["cluster"] = prefix + entry["cluster"] if entry.get("cluster") else entry.get("cluster")
    out["depends_on"] = [prefix + d if isinstance(d, str) else [prefix + d[0], *d[1:]] for d in entry["depends_on"]]
    out["indexes"] = [{**i, "cluster": prefix + i["cluster"] if i.get("cluster") else None} for i in entry["indexes"]]
    return out


@dataclass
class Batch:
    """All scenarios evaluated as one catalog."""

    outcomes: dict[str, Outcome]
    base: object
    evaluation: object
    tables: dict
    checked: object
    old: object
    new: object
    prefixes: dict[str, str]

    def plan_inputs(self, dialect, suffix: str = "_stg"):
        from dirtiness.plan.operations import PlanInputs

        return PlanInputs(dirty_stmts=self.tables["dirty_stmts"], dirty_clusters=self.tables["dirty_clusters"],
                          dirty_schemas=self.tables["dirty_schemas"], old=self.old, new=self.new,
                          dialect=dialect, suffix=suffix)


def batch_documents(scenarios: list[Scenario]) -> tuple[dict, dict, list[str]]:
    """All scenarios as one old and one new snapshot document, and the forced schemas (``db.schema``)."""
    old, new, forced = [], [], []
    for i, s in enumerate(scenarios):
        p = _prefix(i)
        old += [_namespaced(e, p) for e in s.old]
        new += [_namespaced(e, p) for e in s.new]
        forced += [p + f for f in s.forced]
    return {"objects": old}, {"objects": new}, forced


def prefix_of(scenarios: list[Scenario], name: str) -> str:
    return _prefix(next(i for i, s in enumerate(scenarios) if s.name == name))


def run_scenarios(spark, scenarios: list[Scenario], rules: str = "dirty", outputs: dict | None = None,
                  sql=None, local_rows: int | None = None) -> Batch:
    """Evaluate all scenarios in one Spark run; ``sql`` (SqlSettings): read the objects' SQL as the job does;
    ``local_rows``: the engine's small-data threshold (default: the configured one)."""
    outputs = outputs or OUTPUTS
    old_doc, new_doc, forced_text = batch_documents(scenarios)
    old, new = old_doc["objects"], new_doc["objects"]
    forced = [tuple(f.split(".")) for f in forced_text]
    checked = load_rules(RULES.get(rules, rules), outputs)
    old_snapshot = snapshot_from_document(spark, {"objects": old}, "old.yaml")
    new_snapshot = snapshot_from_document(spark, {"objects": new}, "new.yaml")
    if sql is not None:
        from dirtiness.sql.analysis import resolve_statements

        new_snapshot = resolve_statements(new_snapshot, sql, side="new")
        old_snapshot = resolve_statements(old_snapshot, sql, side="old")
    config = load_config()
    local_rows = config["local_rows"] if local_rows is None else local_rows
    base, evaluation, tables = compute_dirty(spark, old_snapshot, new_snapshot, forced, checked, outputs, buckets=16,
                                             broadcast_rows=config["broadcast_rows"], local_rows=local_rows)
    tables = {name: frame.localCheckpoint() for name, frame in tables.items()}
    rows = {table: [r.asDict() for r in frame.collect()] for table, frame in tables.items()}
    outcomes = {}
    for i, s in enumerate(scenarios):
        p = _prefix(i)
        strip = lambda text: text.replace(p, "") if isinstance(text, str) else text  # noqa: E731

        def pick(table, key):
            found = {}
            for row in rows.get(table, []):
                first = row.get("database") or row.get("cluster") or ""
                if first.startswith(p):
                    clean = {k: strip(v) for k, v in row.items()}
                    found[key(clean)] = clean
            return found

        outcomes[s.name] = Outcome(
            stmts=pick("dirty_stmts", lambda r: f"{r['database']}.{r['schema']}.{r['name']}"),
            clusters=pick("dirty_clusters", lambda r: r["cluster"]),
            schemas=pick("dirty_schemas", lambda r: f"{r['database']}.{r['schema']}"),
        )
    return Batch(outcomes, base, evaluation, tables, checked, old_snapshot, new_snapshot,
                 {s.name: _prefix(i) for i, s in enumerate(scenarios)})
