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

from dirtiness.config import CONF, PROJECT_ROOT, load_config
from dirtiness.computed import Hooks
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
    result: object                 # the job's RunResult: facts, tables, the checked plan
    prefixes: dict[str, str]
    fixpoints: dict = field(default_factory=dict)  # "dirty" / "plan" -> (base relations, Evaluation), by the hooks
    plan_context: object = None    # what the plan's checks read beside its rows, by the hooks

    @property
    def tables(self):
        return self.result.tables

    @property
    def checked(self):
        return self.result.settings.checked

    @property
    def checked_plan(self):
        return self.result.settings.plan_checked


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
        seen: dict = {}
        hooks = Hooks(on_fixpoint=lambda label, base, evaluation: seen.setdefault("fixpoints", {}).update(
            {label: (base, evaluation)}), on_plan_checks=lambda context: seen.update(plan_context=context))
        result = compute(settings, spark, hooks)
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
    return Batch(outcomes, result, {s.name: _prefix(i) for i, s in enumerate(scenarios)}, seen.get("fixpoints", {}),
                 seen.get("plan_context"))


M = "materialize"
EXAMPLE_OLD = str(PROJECT_ROOT / "examples" / "old.yaml")  # the bundled example's two sides
EXAMPLE_NEW = str(PROJECT_ROOT / "examples" / "new.yaml")


def seed_scenarios() -> list:
    """The seed scenarios (issue 2): one per rule of the default program, and a quiet one."""
    s = []
    # 1. One changed table in a schema of three objects: all three are dirty.
    t1, t2, v1 = obj("db.app.table1", "table"), obj("db.app.table2", "table"), obj("db.app.view1")
    s.append(Scenario("schema_atomic", [t1, t2, v1], [changed(t1), t2, v1]))

    # 2. An MV on `staging` with an index on `quickstart`; another object on `quickstart` changes.
    wb = obj(f"{M}.internal.winning_bids", "materialized-view", cluster="staging",
             indexes=[("winning_bids_idx", "quickstart")])
    other = obj(f"{M}.public.other", "materialized-view", cluster="quickstart")
    s.append(Scenario("index_cluster", [wb, other], [wb, changed(other)]))

    # 3. flippers changes; flip_activities and winning_bids have indexes on quickstart.
    fa = obj(f"{M}.public.flip_activities", indexes=[("fa_idx", "quickstart")])
    fl = obj(f"{M}.public.flippers", "materialized-view")
    wb3 = obj(f"{M}.internal.winning_bids", "materialized-view", indexes=[("wb_idx", "quickstart")])
    s.append(Scenario("no_cascade", [fa, fl, wb3], [fa, changed(fl), wb3]))

    # 4. winning_bids <- flip_activities <- flippers; winning_bids changes.
    wb4 = obj(f"{M}.internal.winning_bids", "materialized-view", indexes=[("wb_idx", "quickstart")])
    fa4 = obj(f"{M}.public.flip_activities", deps=[f"{M}.internal.winning_bids"], indexes=[("fa_idx", "quickstart")])
    fl4 = obj(f"{M}.public.flippers", "materialized-view", deps=[f"{M}.public.flip_activities"])
    s.append(Scenario("chain", [wb4, fa4, fl4], [changed(wb4), fa4, fl4]))

    # 5a. A changed sink dirties no cluster and no schema.
    src = obj("db.core.src", "materialized-view", cluster="compute")
    sink = obj("db.out.sink", "sink", cluster="sinks", deps=["db.core.src"])
    keep = obj("db.out.keep", "view")
    s.append(Scenario("sink", [src, sink, keep], [src, changed(sink), keep]))

    # 5b. A dirty replacement MV does not dirty its dependents but does dirty its schema.
    api = obj("db.api.stable", "materialized-view", replacement=True)
    api2 = obj("db.api.sibling", "view")
    user = obj("db.reports.user", deps=["db.api.stable"])
    s.append(Scenario("replacement", [api, api2, user], [changed(api), api2, user]))

    # 5c. A forced schema dirties its objects and their dependents but no cluster.
    f1 = obj("db.forced.a", "materialized-view", cluster="c1", indexes=[("a_idx", "c2")])
    f2 = obj("db.down.b", deps=["db.forced.a"])
    f3 = obj("db.alone.c", cluster="c1")
    s.append(Scenario("forced", [f1, f2, f3], [f1, f2, f3], forced=["db.forced"]))

    # 5d. Added and deleted objects; a deleted sink does not dirty its schema.
    keep1, keep2 = obj("db.adds.keep"), obj("db.dels.keep")
    gone, gone_sink, sink_keep = obj("db.dels.gone"), obj("db.sinks.gone", "sink"), obj("db.sinks.keep", "sink")
    new = obj("db.adds.new", deps=["db.adds.keep"])
    s.append(Scenario("added_deleted", [keep1, keep2, gone, gone_sink, sink_keep], [keep1, keep2, new, sink_keep]))

    # Nothing changed: nothing is dirty.
    s.append(Scenario("unchanged", [t1, v1], [t1, v1]))
    return s
