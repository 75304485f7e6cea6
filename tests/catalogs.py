"""Building catalogs for tests: objects from short specs, and many scenarios in one Spark run.

Scenarios are batched by namespacing: scenario ``k`` gets its databases and
clusters prefixed with ``k`` so that no rule can join across scenarios; the
union of all scenarios runs once through the job's ``compute`` and is split
back by prefix.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import yaml

from dirtiness.config import CONF, load_config
from dirtiness.pipeline import compute
from dirtiness.settings import RunParams, resolve

RULES = {name: str(CONF / "rules" / f"{name}.dl") for name in ("dirty", "index_aware")}
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
    """All scenarios evaluated as one catalog by the job's own ``compute``."""

    outcomes: dict[str, Outcome]
    result: object                 # the job's RunResult: facts, evaluation, tables, the checked plan
    prefixes: dict[str, str]

    @property
    def tables(self):
        return self.result.tables

    @property
    def checked(self):
        return self.result.settings.checked


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
                  local_rows: int | None = None, strategy: str = "blue-green", small_catalog: bool = True,
                  lazy_checkpoints: bool = True, deploy_suffix: str | None = None) -> Batch:
    """Evaluate all scenarios in one run of the job's ``compute`` (snapshots written as files, as a user would);
    ``local_rows``: the engine's small-data threshold (default: the configured one); ``small_catalog=False``:
    the session settings of a large catalog (adaptive execution, several partitions); ``lazy_checkpoints=False``:
    blocks filled eagerly, as under Sail; ``deploy_suffix``: the staging suffix's template (``stg``: ``_stg``).
    The plan is built and its invariants checked, so every scenario is also a plan that must pass them."""
    old_doc, new_doc, forced = batch_documents(scenarios)
    scratch = tempfile.TemporaryDirectory(prefix="dirtiness-scenarios-")  # gone once the rows are read
    folder = scratch.name
    for side, document in (("old", old_doc), ("new", new_doc)):
        with open(os.path.join(folder, f"{side}.yaml"), "w") as handle:
            yaml.safe_dump(document, handle)
    config = load_config()
    config["outputs"] = outputs or OUTPUTS
    if local_rows is not None:
        config["local_rows"] = local_rows
    if not small_catalog:
        config["spark"]["small_catalog_objects"] = 0
    config["lazy_checkpoints"] = lazy_checkpoints
    if deploy_suffix:
        config["plan"]["deploy_suffix"] = deploy_suffix
    settings = resolve(RunParams(old=os.path.join(folder, "old.yaml"), new=os.path.join(folder, "new.yaml"),
                                 out=os.path.join(folder, "out"), forced_schemas=forced, run_id="scenarios",
                                 rules=RULES.get(rules, rules), strategy=strategy, allow_destructive=True), config)
    with scratch:
        result = compute(settings, spark)
        rows = {table: [r.asDict() for r in held.frame.collect()] for table, held in result.tables.items()}
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
    return Batch(outcomes, result, {s.name: _prefix(i) for i, s in enumerate(scenarios)})
