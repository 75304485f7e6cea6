"""The blue-green strategy (Materialize-style): ``stage``, ``swap``, ``post-swap``, ``cleanup``.

What is staged, replaced, swapped, dropped and created is decided by the
rules of ``conf/rules/plan_blue_green.dl`` (``Planning.decisions``); this
module writes their operations:

- stage: step 0 creates a staging copy (name + suffix) of each staging
  schema (swapped schemas and the schemas of replacements) and of each
  swapped cluster, the schemas and clusters the rules create, then every
  staged object in its staging schema, dependencies first (step 1 + depth):
  its own SQL rewritten to that schema, reading the staged copies of the
  objects staged with it and production for the rest, on the staging
  cluster when its cluster is swapped; its indexes one step later. A
  replacement applied in place is created as ``CREATE REPLACEMENT ... FOR``
  production; stateful objects added outside the swapped schemas are
  created in production. Indexes of objects that stay but live on a
  swapped cluster are created on the staging cluster (step 1).
- swap: sinks to create again are dropped (step 0); then every swapped
  schema and cluster is swapped with its staging copy and every replacement
  applied (step 1, one transaction where the dialect allows).
- post-swap: sinks created again or repointed at their upstream,
  dependencies first.
- cleanup: the staging schemas dropped one per step (in PostgreSQL,
  concurrent ``DROP SCHEMA ... CASCADE`` of schemas whose objects read each
  other deadlock), the staging clusters at step 0; then the deleted objects
  outside them (and what reads them), dependents first; then the schemas
  the new project no longer has (without CASCADE: a schema still holding
  something is not dropped, the statement fails).

A stateful object (table, source) created again in a staging schema loses
its data: that row is destructive.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..model import KEY
from ..changeset.catalog import NOT_UPSTREAM
from .operations import DEP, STATEFUL, Planning, cluster_creations, operations
from .statements import MOVED, kind_keyword, qualified, quoted, schema_name, to_render

# The objects each phase orders, and by what: what they read first, or (dropping) what reads them first.
GROUPS = {"stage": (("Staged", "ReplacedInPlace", "CreatedInProduction"), "depends_on"),
          "cleanup": (("DroppedInCleanup",), "reads_reversed"),
          "post-swap": (("SinkRedeployed",), "depends_on")}


def blue_green_plan(p: Planning) -> tuple[DataFrame, DataFrame]:
    """The operations, and what the staged statements read under another schema (``statements.MOVED``)."""
    creating = _creating(p)
    operations_ = reduce(DataFrame.unionByName, [*_stage(p, creating), *_swap(p), *_post_swap(p), *_cleanup(p)])
    return operations_, _moved(p)


def _moved(p: Planning) -> DataFrame:
    """Each staged object's reads of other staged objects: it reads their staged copies."""
    staged = p.decided("Staged", False)
    return (p.dependencies.select(*KEY, *DEP)
            .join(staged.select(*(F.col(k).alias(f"dep_{k}") for k in KEY)), DEP)
            .withColumn("dep_target", F.concat(F.col("dep_schema"), F.lit(p.suffix))).select(*MOVED))


def _redeployed_reason(p: Planning, frame: DataFrame) -> DataFrame:
    """A staged or replaced object's reason: why it is redeployed."""
    return frame.join(p.decided("Redeployed"), list(KEY))


def _creating(p: Planning) -> DataFrame:
    """What stage creates: key, the new project's columns, reason, action, target (schema), replacing."""
    new = p.new
    parts = [
        (_redeployed_reason(p, p.decided("Staged", False)), "CREATE", p.staging(), False),
        (_redeployed_reason(p, p.decided("ReplacedInPlace", False)), "CREATE REPLACEMENT", p.staging(), True),
        (p.decided("CreatedInProduction"), "CREATE", F.col("schema"), False),
    ]
    return reduce(DataFrame.unionByName, [
        frame.join(new, list(KEY)).select(*new.columns, "reason", F.lit(action).alias("action"),
                                          target.alias("target"), F.lit(replacing).alias("replacing"))
        for frame, action, target, replacing in parts])


def _swapped_clusters(p: Planning) -> DataFrame:
    return p.decided("SwappedCluster", False).select(F.col("cluster").alias("name"))


def _stage(p: Planning, creating: DataFrame) -> list[DataFrame]:
    d = p.dialect
    swapped = _swapped_clusters(p).select(F.col("name").alias("cluster"), F.lit(True).alias("cluster_swapped"))
    created = p.stepped("stage", creating).join(swapped, "cluster", "left")
    objects = operations(
        created, "stage", 1, F.col("action"), "object", step=F.col("step") + 1, target_schema=F.col("target"),
        destructive=F.col("kind").isin(*STATEFUL) & (F.col("action") == "CREATE") & (F.col("target") != F.col("schema"))
        & (F.col("change").isNull() | (F.col("change") != "added")),
        render=to_render(created, "target", F.when(F.col("cluster_swapped"), p.staging("cluster")), F.col("replacing")))
    parts = [
        operations(p.decided("StagingSchema", False), "stage", 1, "CREATE", "schema", step=F.lit(0),
                   target_schema=p.staging(),
                   statement=d.render("create_schema", schema=schema_name(d, "database", p.staging()))),
        operations(p.decided("CreatedSchema", False), "stage", 1, "CREATE", "schema", step=F.lit(0),
                   target_schema=F.col("schema"),
                   statement=d.render("create_schema", schema=schema_name(d, "database", "schema"))),
        objects,
    ]
    if d.clusters:
        clusters, statement = p.cluster_statement(_swapped_clusters(p), quoted(p.staging("name")))
        parts.append(operations(clusters, "stage", 1, "CREATE", "cluster", step=F.lit(0), statement=statement))
        parts.append(cluster_creations(p.decided("CreatedCluster", False).select(F.col("cluster").alias("name")),
                                       p, "stage", 1))
        parts.append(_indexes(p, created))
    return parts


def _swap(p: Planning) -> list[DataFrame]:
    d = p.dialect
    staging = p.staging()
    parts = [operations(
        p.decided("Swapped", False), "swap", 2, "SWAP", "schema", step=F.lit(1), target_schema=staging,
        statement=d.render("swap_schema", schema=schema_name(d, "database", "schema"),
                           staging=quoted(staging), parking=quoted(F.concat(staging, F.lit("_swap")))))]
    if d.clusters:
        parts.append(operations(
            _swapped_clusters(p), "swap", 2, "SWAP", "cluster", step=F.lit(1),
            statement=d.render("swap_cluster", cluster=quoted("name"), staging=quoted(p.staging("name")))))
    if d.in_place_replacement:
        parts.append(operations(
            _redeployed_reason(p, p.decided("ReplacedInPlace", False)), "swap", 2, "APPLY REPLACEMENT", "object",
            step=F.lit(1), target_schema=F.col("schema"), kind=F.lit("materialized-view"),
            statement=d.render("apply_replacement", object=qualified(*KEY),
                               replacement=qualified("database", staging, "name"))))
    if "sink" in d.kinds:  # sinks to create again go before their schema or cluster moves
        dropped = (p.decided("SinkDropped").join(
            p.decided("SinkRedeployed").select(*KEY, F.col("reason").alias("sink_reason")), list(KEY), "left")
            .join(p.deployed.select(*KEY, F.col("kind").alias("old_kind")), list(KEY))
            .withColumn("reason", F.coalesce("sink_reason", "reason")))
        parts.append(operations(
            dropped, "swap", 2, "DROP", "object", step=F.lit(0), kind=F.col("old_kind"),
            statement=d.render("drop_object", kind=kind_keyword("old_kind"), object=qualified(*KEY))))
    return parts


def _post_swap(p: Planning) -> list[DataFrame]:
    """Sinks created again (``SinkRecreated``) or repointed at their first upstream object (by name)."""
    d = p.dialect
    if "sink" not in d.kinds:
        return []
    kinds = p.new.select(*(F.col(k).alias(f"up_{k}") for k in KEY), F.col("kind").alias("up_kind"))
    upstream = (p.dependencies.join(kinds, [F.col(f"dep_{k}") == F.col(f"up_{k}") for k in KEY])
                .where(~F.col("up_kind").isin(*NOT_UPSTREAM))
                .groupBy(*KEY).agg(F.min(F.struct("up_database", "up_schema", "up_name")).alias("up"))
                .select(*KEY, "up.*"))
    recreated = p.decided("SinkRecreated", False).withColumn("recreate", F.lit(True))
    sinks = (p.decided("SinkRedeployed").join(p.new, list(KEY)).join(recreated, list(KEY), "left")
             .join(upstream, list(KEY), "left")
             .withColumn("recreate", F.coalesce("recreate", F.lit(False))))
    stepped = p.stepped("post-swap", sinks)
    return [operations(
        stepped, "post-swap", 3, F.when(F.col("recreate"), "CREATE").otherwise("REPOINT"), "object",
        step=F.col("step"),
        statement=F.when(~F.col("recreate"), d.render(
            "repoint_sink", sink=qualified(*KEY), upstream=qualified("up_database", "up_schema", "up_name"))),
        render=to_render(stepped, when=F.col("recreate")))]


def _cleanup(p: Planning) -> list[DataFrame]:
    """One schema at a time (concurrent DROP SCHEMA ... CASCADE deadlock in PostgreSQL when their objects read
    each other), then the deleted objects, dependents first, then the schemas they emptied."""
    d = p.dialect
    staging_schemas = p.decided("StagingSchema", False)
    ranked = staging_schemas.withColumn(
        "step", F.row_number().over(Window.partitionBy("database").orderBy("schema")) - 1)
    # a swapped-out copy that holds a deleted table or source: its drop is what loses their data
    losing = (p.decided("Gone", False).join(p.deployed.where(F.col("kind").isin(*STATEFUL)), list(KEY))
              .join(p.decided("Swapped", False), ["database", "schema"]).select("database", "schema").distinct()
              .withColumn("loses_data", F.lit(True)))
    ranked = ranked.join(losing, ["database", "schema"], "left")
    parts = [operations(
        ranked, "cleanup", 4, "DROP", "schema", step=F.col("step"), target_schema=p.staging(),
        destructive=F.coalesce(F.col("loses_data"), F.lit(False)),
        statement=d.render("drop_schema", schema=schema_name(d, "database", p.staging())))]
    if d.clusters:
        parts.append(operations(
            _swapped_clusters(p), "cleanup", 4, "DROP", "cluster", step=F.lit(0),
            statement=d.render("drop_cluster", cluster=quoted(p.staging("name")))))
    first = staging_schemas.groupBy("database").agg(F.count(F.lit(1)).alias("first"))
    deleted = (p.decided("DroppedInCleanup", False).join(p.decided("Gone"), list(KEY))
               .join(p.deployed.select(*KEY, "kind"), list(KEY)))
    dropped = (p.stepped("cleanup", deleted).join(first, "database", "left")
               .withColumn("step", F.coalesce("first", F.lit(0)) + F.col("step")))
    parts.append(operations(
        dropped, "cleanup", 4, "DROP", "object", step=F.col("step"), destructive=F.col("kind").isin(*STATEFUL),
        statement=d.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY))))
    last = dropped.groupBy("database").agg((F.max("step") + 1).alias("last"))
    emptied = (p.decided("EmptiedSchema", False).join(first, "database", "left")
               .join(last, "database", "left").withColumn("step", F.coalesce("last", "first", F.lit(0))))
    parts.append(operations(
        emptied, "cleanup", 4, "DROP", "schema", step=F.col("step"), target_schema=F.col("schema"),
        statement=d.render("drop_empty_schema", schema=schema_name(d, "database", "schema"))))
    return parts


def _indexes(p: Planning, created: DataFrame) -> DataFrame:  # created: the stage's objects with their steps
    """Indexes of created objects (one step after them), and of objects that stay on a swapped cluster (step 1)."""
    d, suffix = p.dialect, F.lit(p.suffix)
    indexes = p.indexes.select(*KEY, "index_name", F.col("cluster").alias("index_cluster"), "key")
    swapped = _swapped_clusters(p).select(F.col("name").alias("index_cluster"), F.lit(True).alias("swapped"))
    index_cluster = F.when(F.col("swapped"), F.concat(F.col("index_cluster"), suffix)).otherwise(F.col("index_cluster"))
    staying = (indexes.join(p.decided("Staged", False), list(KEY), "left_anti")
               .join(created.where(F.col("target") == F.col("schema")).select(*KEY), list(KEY), "left_anti")
               .join(swapped, "index_cluster"))
    with_created = (indexes.join(created.where(F.col("action") == "CREATE").select(*KEY, "target", "step"), list(KEY))
                    .join(swapped, "index_cluster", "left"))

    def create(frame: DataFrame, step, target: str) -> DataFrame:
        return operations(frame, "stage", 1, "CREATE", "index", step=step, name=F.col("index_name"),
                          target_schema=F.col(target), kind=F.lit(None).cast("string"),
                          statement=d.index_statement(index=quoted("index_name"), cluster=quoted(index_cluster),
                                                      object=qualified("database", target, "name")))
    return create(staying, F.lit(1), "schema").unionByName(create(with_created, F.col("step") + 2, "target"))
