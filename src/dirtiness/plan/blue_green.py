"""The blue-green strategy (Materialize-style): ``stage``, ``swap``, ``post-swap``, ``cleanup``.

What is redeployed comes from ``redeploy.blue_green``: the dirty views and
materialized views grown to a closure, so that nothing that stays reads what
the swap and the cleanup remove.

- stage: step 0 creates a staging copy (name + suffix) of each swapped
  schema, of the schema of each replacement, and of each dirty cluster, and
  creates (``IF NOT EXISTS``) every schema of the new project the old one
  does not show, so a swap or a ``CREATE`` finds it. Then every staged
  object is created in its staging schema, dependencies first (step 1 +
  depth): its own SQL rewritten to that schema, reading the staged copies
  of the objects staged with it and production for the rest, on the staging
  cluster when its cluster is swapped; its indexes one step later. A
  replacement materialized view the dialect replaces in place is created as
  ``CREATE REPLACEMENT ... FOR`` production; stateful objects the new
  project adds outside the swapped schemas are created in production.
  Indexes of objects that stay but live on a swapped cluster are created
  on the staging cluster (step 1).
- swap: dirty sinks to be created again are dropped (step 0); then every
  swapped schema and cluster is swapped with its staging copy and every
  replacement applied (step 1, one transaction where the dialect allows).
- post-swap: dirty sinks created (added, changed, on a swapped cluster or
  in a swapped schema) or repointed at their upstream, dependencies first.
- cleanup: the swapped-out schemas dropped one per step (in PostgreSQL,
  concurrent ``DROP SCHEMA ... CASCADE`` of schemas whose objects read each
  other deadlock), the staging clusters at step 0; then the deleted objects
  outside them (and what reads them), dependents first; then the schemas
  the new project no longer has (without CASCADE: a schema still holding
  something is not dropped, the statement fails).

A stateful object (table, source) created again in a staging schema loses
its data: that row is destructive. Dirty objects none of this touches
(a changed table outside a swapped schema) are reported as needing attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..model import KEY
from . import redeploy
from .operations import DEPLOYABLE, STATEFUL, PlanInputs, cluster_creations, operations
from .redeploy import DEP, SCHEMA, Catalog
from .statements import (
    kind_keyword,
    qualified,
    quoted,
    schema_name,
    with_object_statements,
)
from .steps import dependency_edges, with_steps

NOT_UPSTREAM = ("connection", "secret")  # a sink's dependencies it does not read rows from


def blue_green_plan(inputs: PlanInputs) -> DataFrame:
    plan = _Plan.of(inputs)
    return reduce(DataFrame.unionByName, [*_stage(plan), *_swap(plan), *_post_swap(plan), *_cleanup(plan)])


@dataclass
class _Plan:
    """What every phase is built from."""

    inputs: PlanInputs
    catalog: Catalog
    closure: redeploy.BlueGreen
    clusters: DataFrame        # name: the swapped (dirty) clusters
    creating: DataFrame        # what stage creates, with action, target (schema), replacing
    sinks: DataFrame | None    # sinks to create again or repoint (None: the dialect has no sinks)
    stepped: dict[str, DataFrame]  # stage, cleanup (and post-swap) objects with their steps

    @classmethod
    def of(cls, inputs: PlanInputs) -> "_Plan":
        catalog = Catalog.of(inputs)
        closure = redeploy.blue_green(inputs, catalog)
        new = catalog.new
        clusters = (inputs.dirty_clusters.select(F.col("cluster").alias("name"))
                    .join(catalog.missing_clusters, "name", "left_anti"))  # a missing cluster is created instead
        if not inputs.dialect.clusters:
            clusters = clusters.limit(0)
        staging = _staging(inputs)
        staged = closure.staged.join(new, list(KEY))
        added_elsewhere = (new.where((F.col("change") == "added") & ~F.col("kind").isin(*DEPLOYABLE, "sink"))
                           .join(closure.swapped, SCHEMA, "left_anti").join(staged, list(KEY), "left_anti")
                           .withColumn("reason", F.lit("dirty")))
        creating = reduce(DataFrame.unionByName, [
            staged.select(*new.columns, "reason", F.lit("CREATE").alias("action"), staging.alias("target"),
                          F.lit(False).alias("replacing")),
            closure.replaced.join(new, list(KEY)).select(
                *new.columns, "reason", F.lit("CREATE REPLACEMENT").alias("action"), staging.alias("target"),
                F.lit(True).alias("replacing")),
            added_elsewhere.select(*new.columns, "reason", F.lit("CREATE").alias("action"),
                                   F.col("schema").alias("target"), F.lit(False).alias("replacing")),
        ])
        sinks = _sinks(inputs, catalog, closure, clusters) if "sink" in inputs.dialect.kinds else None
        deleted = (closure.gone.join(catalog.deployed, list(KEY)).where(F.col("kind") != "sink")
                   .join(closure.swapped, SCHEMA, "left_anti"))
        new_edges = dependency_edges(inputs.new.dependencies)
        groups = {"stage": (creating, new_edges),
                  "cleanup": (deleted, dependency_edges(catalog.readers, dependents_first=True))}
        if sinks is not None:
            groups["post-swap"] = (sinks.where(F.col("kind").isNotNull()), new_edges)
        return cls(inputs, catalog, closure, clusters, creating, sinks, with_steps(groups, inputs.holding))  # one loop for all

    @property
    def staging_schemas(self) -> DataFrame:
        """Swapped schemas, and the schemas of replacements (staged beside production, not swapped)."""
        return self.closure.swapped.unionByName(self.closure.replaced.select(*SCHEMA)).distinct()


def _staging(inputs: PlanInputs) -> F.Column:
    return F.concat(F.col("schema"), F.lit(inputs.suffix))


def _staging_cluster(inputs: PlanInputs, column: str = "name") -> F.Column:
    return F.concat(F.col(column), F.lit(inputs.suffix))


def _stage(plan: _Plan) -> list[DataFrame]:
    inputs, closure, d = plan.inputs, plan.closure, plan.inputs.dialect
    staging = _staging(inputs)
    moved = (inputs.new.dependencies.select(*KEY, *DEP)
             .join(closure.staged.select(*(F.col(k).alias(f"dep_{k}") for k in KEY)), DEP)
             .withColumn("dep_target", F.concat(F.col("dep_schema"), F.lit(inputs.suffix))))
    swapped = plan.clusters.select(F.col("name").alias("cluster"), F.lit(True).alias("cluster_swapped"))
    created = with_object_statements(
        plan.stepped["stage"].join(swapped, "cluster", "left").withColumn(
            "staged_cluster", F.when(F.col("cluster_swapped"), _staging_cluster(inputs, "cluster"))),
        moved, d, inputs.verbatim_kinds)
    objects = operations(
        created, "stage", 1, F.col("action"), "object", step=F.col("step") + 1, target_schema=F.col("target"),
        statement=F.col("statement"),
        destructive=F.col("kind").isin(*STATEFUL) & (F.col("action") == "CREATE") & (F.col("target") != F.col("schema"))
        & (F.col("change").isNull() | (F.col("change") != "added")))
    # step 0: staging copies, and the schemas a swap or a CREATE in production will need
    receiving = (plan.creating.where(F.col("target") == F.col("schema")).select(*SCHEMA)
                 .unionByName(closure.swapped))
    if plan.sinks is not None:
        receiving = receiving.unionByName(
            plan.sinks.where(F.col("kind").isNotNull() & F.col("recreate")).select(*SCHEMA))
    unknown = receiving.distinct().join(plan.catalog.known_schemas, SCHEMA, "left_anti")
    parts = [
        operations(plan.staging_schemas, "stage", 1, "CREATE", "schema", step=F.lit(0), target_schema=staging,
                   statement=d.render("create_schema", schema=schema_name(d, "database", staging))),
        operations(unknown, "stage", 1, "CREATE", "schema", step=F.lit(0), target_schema=F.col("schema"),
                   statement=d.render("create_schema", schema=schema_name(d, "database", "schema"))),
        objects,
    ]
    if d.clusters:
        parts.append(operations(
            plan.clusters, "stage", 1, "CREATE", "cluster", step=F.lit(0),
            statement=d.render("create_cluster", cluster=quoted(_staging_cluster(inputs)), like=quoted("name"))))
        parts.append(cluster_creations(plan.catalog.missing_clusters, d, "stage", 1))
        parts.append(_indexes(plan))
    return parts


def _swap(plan: _Plan) -> list[DataFrame]:
    inputs, closure, d = plan.inputs, plan.closure, plan.inputs.dialect
    staging = _staging(inputs)
    parts = [operations(
        closure.swapped, "swap", 2, "SWAP", "schema", step=F.lit(1), target_schema=staging,
        statement=d.render("swap_schema", schema=schema_name(d, "database", "schema"),
                           staging=quoted(staging), parking=quoted(F.concat(staging, F.lit("_swap")))))]
    if d.clusters:
        parts.append(operations(
            plan.clusters, "swap", 2, "SWAP", "cluster", step=F.lit(1),
            statement=d.render("swap_cluster", cluster=quoted("name"), staging=quoted(_staging_cluster(inputs)))))
    if d.in_place_replacement:
        parts.append(operations(
            closure.replaced, "swap", 2, "APPLY REPLACEMENT", "object", step=F.lit(1), target_schema=F.col("schema"),
            kind=F.lit("materialized-view"),
            statement=d.render("apply_replacement", object=qualified(*KEY),
                               replacement=qualified("database", staging, "name"))))
    if plan.sinks is not None:  # sinks to create again go before their schema or cluster moves
        parts.append(operations(
            plan.sinks.where(F.col("recreate") & F.col("in_production")), "swap", 2, "DROP", "object",
            step=F.lit(0), kind=F.col("old_kind"),
            statement=d.render("drop_object", kind=kind_keyword("old_kind"), object=qualified(*KEY))))
    return parts


def _post_swap(plan: _Plan) -> list[DataFrame]:
    if plan.sinks is None:
        return []
    d = plan.inputs.dialect
    sinks = with_object_statements(
        plan.stepped["post-swap"].withColumn("target", F.col("schema")).withColumn("staged_cluster", F.lit(None))
        .withColumn("replacing", F.lit(False)), None, d, plan.inputs.verbatim_kinds)
    return [operations(
        sinks, "post-swap", 3, F.when(F.col("recreate"), "CREATE").otherwise("REPOINT"), "object",
        step=F.col("step"),
        statement=F.when(F.col("recreate"), F.col("statement")).otherwise(
            d.render("repoint_sink", sink=qualified(*KEY), upstream=qualified("up_database", "up_schema", "up_name"))))]


def _cleanup(plan: _Plan) -> list[DataFrame]:
    """One schema at a time (concurrent DROP SCHEMA ... CASCADE deadlock in PostgreSQL when their objects read
    each other), then the deleted objects, dependents first, then the schemas they emptied."""
    inputs, d = plan.inputs, plan.inputs.dialect
    ranked = plan.staging_schemas.withColumn(
        "step", F.row_number().over(Window.partitionBy("database").orderBy("schema")) - 1)
    parts = [operations(
        ranked, "cleanup", 4, "DROP", "schema", step=F.col("step"), target_schema=_staging(inputs),
        statement=d.render("drop_schema", schema=schema_name(d, "database", _staging(inputs))))]
    if d.clusters:
        parts.append(operations(
            plan.clusters, "cleanup", 4, "DROP", "cluster", step=F.lit(0),
            statement=d.render("drop_cluster", cluster=quoted(_staging_cluster(inputs)))))
    first = plan.staging_schemas.groupBy("database").agg(F.count(F.lit(1)).alias("first"))
    dropped = (plan.stepped["cleanup"].join(first, "database", "left")
               .withColumn("step", F.coalesce("first", F.lit(0)) + F.col("step")).localCheckpoint())
    parts.append(operations(
        dropped, "cleanup", 4, "DROP", "object", step=F.col("step"), destructive=F.col("kind").isin(*STATEFUL),
        statement=d.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY))))
    last = dropped.groupBy("database").agg((F.max("step") + 1).alias("last"))
    emptied = (plan.catalog.emptied_schemas(plan.closure.gone).join(first, "database", "left")
               .join(last, "database", "left").withColumn("step", F.coalesce("last", "first", F.lit(0))))
    parts.append(operations(
        emptied, "cleanup", 4, "DROP", "schema", step=F.col("step"), target_schema=F.col("schema"),
        statement=d.render("drop_empty_schema", schema=schema_name(d, "database", "schema"))))
    return parts


def _indexes(plan: _Plan) -> DataFrame:
    """Indexes of created objects (one step after them), and of objects that stay on a swapped cluster (step 1)."""
    d, suffix = plan.inputs.dialect, F.lit(plan.inputs.suffix)
    indexes = plan.inputs.new.indexes.select(*KEY, "index_name", F.col("cluster").alias("index_cluster"))
    swapped = plan.clusters.select(F.col("name").alias("index_cluster"), F.lit(True).alias("swapped"))
    index_cluster = F.when(F.col("swapped"), F.concat(F.col("index_cluster"), suffix)).otherwise(F.col("index_cluster"))
    created = plan.stepped["stage"]
    staying = (indexes.join(plan.closure.staged.select(*KEY), list(KEY), "left_anti")
               .join(created.where(F.col("target") == F.col("schema")).select(*KEY), list(KEY), "left_anti")
               .join(swapped, "index_cluster"))
    with_created = (indexes.join(created.where(F.col("action") == "CREATE").select(*KEY, "target", "step"), list(KEY))
                    .join(swapped, "index_cluster", "left"))

    def create(frame: DataFrame, step, target: str) -> DataFrame:
        return operations(frame, "stage", 1, "CREATE", "index", step=step, name=F.col("index_name"),
                          target_schema=F.col(target), kind=F.lit(None).cast("string"),
                          statement=d.render("create_index", index=quoted("index_name"), cluster=quoted(index_cluster),
                                             object=qualified("database", target, "name")))
    return create(staying, F.lit(1), "schema").unionByName(create(with_created, F.col("step") + 2, "target"))


def needing_attention(inputs: PlanInputs, plan: DataFrame) -> DataFrame:
    """Dirty objects the plan does not touch (a changed table outside the swapped schemas, say)."""
    kinds = inputs.new.objects.select(*KEY, "kind").unionByName(
        inputs.old.objects.select(*KEY, "kind").join(inputs.new.objects.select(*KEY), list(KEY), "left_anti"))
    touched = plan.where(F.col("object_type") == "object").select(*KEY)
    swapped = plan.where((F.col("object_type") == "schema") & (F.col("action") == "SWAP")).select(*SCHEMA)
    return (inputs.dirty_stmts.select(*KEY, "change").join(kinds, list(KEY))
            .join(touched, list(KEY), "left_anti").join(swapped, SCHEMA, "left_anti"))


def _sinks(inputs: PlanInputs, catalog: Catalog, closure: redeploy.BlueGreen, clusters: DataFrame) -> DataFrame:
    """Sinks to redeploy, with what to do: ``recreate`` (drop if in production, then create) or repoint.

    Dirty sinks, sinks in a swapped schema, and sinks reading a removed
    object. A sink is created again when added, changed, in a swapped
    schema, on a swapped cluster, or without an upstream object; otherwise it
    is repointed at its first upstream object (by name).
    """
    deployed = catalog.deployed.select(*KEY, F.col("kind").alias("old_kind"))
    new = inputs.new.objects.select(*KEY, "kind", "cluster", "sql")
    dirty = inputs.dirty_stmts.select(*KEY, "change", F.lit(True).alias("dirty"))
    reads = catalog.readers_of(closure.removed)
    candidates = (dirty.select(*KEY)
                  .unionByName(new.where(F.col("kind") == "sink").join(closure.swapped, SCHEMA, "left_semi")
                               .select(*KEY))
                  .unionByName(reads.select(*KEY)).distinct())
    sinks = (candidates.join(dirty, list(KEY), "left").join(new, list(KEY), "left")
             .join(deployed, list(KEY), "left").join(reads, list(KEY), "left")
             .where((F.col("kind") == "sink") | (F.col("kind").isNull() & (F.col("old_kind") == "sink")))
             .join(closure.swapped.withColumn("schema_swapped", F.lit(True)), SCHEMA, "left"))
    kinds = inputs.new.objects.select(*(F.col(k).alias(f"up_{k}") for k in KEY), F.col("kind").alias("up_kind"))
    upstream = (inputs.new.dependencies
                .join(kinds, [F.col(f"dep_{k}") == F.col(f"up_{k}") for k in KEY])
                .where(~F.col("up_kind").isin(*NOT_UPSTREAM))
                .groupBy(*KEY).agg(F.min(F.struct("up_database", "up_schema", "up_name")).alias("up"))
                .select(*KEY, "up.*"))
    swapped_cluster = clusters.select(F.col("name").alias("cluster"), F.lit(True).alias("cluster_swapped"))
    return (sinks.join(upstream, list(KEY), "left").join(swapped_cluster, "cluster", "left")
            .withColumn("in_production", F.col("old_kind").isNotNull())
            .withColumn("recreate", F.col("change").isNotNull() | F.col("cluster_swapped").isNotNull()
                        | F.col("schema_swapped").isNotNull() | F.col("up_name").isNull())
            .withColumn("reason", F.when(F.col("dirty"), "dirty")
                        .when(F.col("schema_swapped"), F.concat(F.lit("in schema "), F.concat_ws(".", *SCHEMA),
                                                                F.lit(", which the plan swaps")))
                        .otherwise(F.concat(F.lit("reads "), F.col("read"), F.lit(", which the plan removes"))))
            .localCheckpoint())
