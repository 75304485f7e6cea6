"""The blue-green strategy (Materialize-style): ``stage``, ``swap``, ``post-swap``, ``cleanup``.

- stage: a staging copy (name + suffix) of each dirty schema holding an
  object to stage and of each dirty cluster (step 0); every dirty view and
  materialized view of the new project created in its staging schema, in
  dependency order (step 1 + depth), with its indexes one step later;
  indexes of objects that are not redeployed but live on a staged cluster
  re-created on the staging cluster (step 1), so the swap keeps them. A dirty
  replacement MV that exists in production is not staged: it is created as a
  replacement in its own schema (``CREATE REPLACEMENT``).
- swap (step 0): each staged schema and cluster swapped with production;
  replacements applied in place; dirty sinks that will be created again are
  dropped (their old cluster or statement goes away).
- post-swap: dirty sinks created (added, changed, or on a swapped cluster) or
  repointed at their swapped upstream (``ALTER SINK ... SET FROM``), in
  dependency order.
- cleanup (step 0): the swapped-out schemas and clusters dropped, and
  deleted views and MVs of schemas that were not swapped.

Tables, sources, secrets and connections are never staged or dropped here;
dirty ones are reported as needing attention.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..snapshot import KEY
from .operations import DEPLOYABLE, PlanInputs, operations
from .statements import kind_keyword, qualified, quoted
from .steps import dependency_edges, with_steps

NOT_UPSTREAM = ("connection", "secret")  # a sink's dependencies it does not read rows from


def blue_green_plan(inputs: PlanInputs) -> DataFrame:
    d, suffix = inputs.dialect, F.lit(inputs.suffix)
    dirty = inputs.dirty_stmts.select(*KEY, "change")
    new = inputs.new.objects.select(*KEY, "kind", "cluster", "replacement", "sql")
    in_production = inputs.old.objects.select(*KEY)
    dirty_new = dirty.join(new, list(KEY)).localCheckpoint()  # shared by most parts below

    deployable = dirty_new.where(F.col("kind").isin(*DEPLOYABLE))
    replacing = deployable.where(F.col("replacement")).join(in_production, list(KEY), "left_semi")
    staged = deployable.join(replacing, list(KEY), "left_anti")
    staged_schemas = (inputs.dirty_schemas.select("database", "schema")
                      .join(staged.select("database", "schema").distinct(), ["database", "schema"], "left_semi")
                      .localCheckpoint())
    staged_clusters = inputs.dirty_clusters.select(F.col("cluster").alias("name"))
    staging_schema = F.concat(F.col("schema"), suffix)
    staging_cluster = F.concat(F.col("name"), suffix)

    # stage
    create_schemas = operations(
        staged_schemas, "stage", 1, "CREATE", "schema", step=F.lit(0), target_schema=staging_schema,
        statement=d.render("create_schema", schema=qualified("database", staging_schema)))
    create_clusters = operations(
        staged_clusters, "stage", 1, "CREATE", "cluster", step=F.lit(0), target_schema=None,
        statement=d.render("create_cluster", cluster=quoted(staging_cluster), like=quoted("name")))
    sinks = _sink_operations(inputs, dirty, staged_clusters)
    new_edges = dependency_edges(inputs.new.dependencies)
    stepped = with_steps({
        "stage": (staged.withColumn("action", F.lit("CREATE")).withColumn("target", staging_schema)
                  .unionByName(replacing.withColumn("action", F.lit("CREATE REPLACEMENT"))
                               .withColumn("target", F.col("schema"))), new_edges),
        "post-swap": (sinks.where(F.col("kind").isNotNull()), new_edges),
    })
    stage_objects = stepped["stage"]
    create_objects = operations(stage_objects, "stage", 1, F.col("action"), "object", step=F.col("step") + 1,
                                target_schema=F.col("target"), statement=F.col("sql"))

    indexes = inputs.new.indexes.select(*KEY, "index_name", F.col("cluster").alias("index_cluster"))
    cluster_names = staged_clusters.select(F.col("name").alias("index_cluster"), F.lit(True).alias("staged"))
    on_staged_cluster = (indexes.join(deployable, list(KEY), "left_anti")
                         .join(cluster_names, "index_cluster"))
    of_staged_objects = (indexes.join(stage_objects.select(*KEY, "target", "step"), list(KEY))
                         .join(cluster_names, "index_cluster", "left"))
    index_cluster = F.when(F.col("staged"), F.concat(F.col("index_cluster"), suffix)).otherwise(F.col("index_cluster"))
    create_indexes = (
        operations(on_staged_cluster, "stage", 1, "CREATE", "index", step=F.lit(1), name=F.col("index_name"),
                   target_schema=F.col("schema"), kind=F.lit(None).cast("string"),
                   statement=d.render("create_index", index=quoted("index_name"), cluster=quoted(index_cluster),
                                      object=qualified(*KEY)))
        .unionByName(operations(
            of_staged_objects, "stage", 1, "CREATE", "index", step=F.col("step") + 2, name=F.col("index_name"),
            target_schema=F.col("target"), kind=F.lit(None).cast("string"),
            statement=d.render("create_index", index=quoted("index_name"), cluster=quoted(index_cluster),
                               object=qualified("database", "target", "name")))))

    # swap
    swap_schemas = operations(
        staged_schemas, "swap", 2, "SWAP", "schema", step=F.lit(0), target_schema=staging_schema,
        statement=d.render("swap_schema", schema=qualified("database", "schema"), staging=quoted(staging_schema)))
    swap_clusters = operations(
        staged_clusters, "swap", 2, "SWAP", "cluster", step=F.lit(0),
        statement=d.render("swap_cluster", cluster=quoted("name"), staging=quoted(staging_cluster)))
    apply_replacements = operations(
        replacing, "swap", 2, "APPLY REPLACEMENT", "object", step=F.lit(0), target_schema=F.col("schema"),
        statement=d.render("apply_replacement", object=qualified(*KEY)))

    drop_sinks = operations(
        sinks.where(F.col("recreate") & F.col("in_production")), "swap", 2, "DROP", "object", step=F.lit(0),
        kind=F.col("old_kind"), statement=d.render("drop_object", kind=kind_keyword("old_kind"), object=qualified(*KEY)))

    # post-swap
    create_sinks = operations(
        stepped["post-swap"], "post-swap", 3, F.when(F.col("recreate"), "CREATE").otherwise("REPOINT"), "object",
        step=F.col("step"),
        statement=F.when(F.col("recreate"), F.col("sql")).otherwise(
            d.render("repoint_sink", sink=qualified(*KEY),
                     upstream=qualified("up_database", "up_schema", "up_name"))))

    # cleanup
    drop_schemas = operations(
        staged_schemas, "cleanup", 4, "DROP", "schema", step=F.lit(0), target_schema=staging_schema,
        statement=d.render("drop_schema", schema=qualified("database", staging_schema)))
    drop_clusters = operations(
        staged_clusters, "cleanup", 4, "DROP", "cluster", step=F.lit(0),
        statement=d.render("drop_cluster", cluster=quoted(staging_cluster)))
    deleted = (dirty.where(F.col("change") == "deleted")
               .join(inputs.old.objects.select(*KEY, "kind"), list(KEY))
               .where(F.col("kind").isin(*DEPLOYABLE))
               .join(staged_schemas, ["database", "schema"], "left_anti"))
    drop_deleted = operations(deleted, "cleanup", 4, "DROP", "object", step=F.lit(0),
                              statement=d.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY)))

    parts = [create_schemas, create_clusters, create_objects, create_indexes, swap_schemas, swap_clusters,
             apply_replacements, drop_sinks, create_sinks, drop_schemas, drop_clusters, drop_deleted]
    return reduce(DataFrame.unionByName, parts)


def needing_attention(inputs: PlanInputs) -> DataFrame:
    """Dirty objects blue-green neither stages nor drops (tables, sources, secrets, connections)."""
    kinds = inputs.new.objects.select(*KEY, "kind").unionByName(
        inputs.old.objects.select(*KEY, "kind").join(inputs.new.objects.select(*KEY), list(KEY), "left_anti"))
    return (inputs.dirty_stmts.select(*KEY, "change").join(kinds, list(KEY))
            .where(~F.col("kind").isin(*DEPLOYABLE, "sink")))


def _sink_operations(inputs: PlanInputs, dirty: DataFrame, staged_clusters: DataFrame) -> DataFrame:
    """Dirty sinks with what to do: ``recreate`` (drop if in production, then create) or repoint.

    A sink is created again when added, changed or its cluster is swapped;
    otherwise it is repointed at its first upstream object (by name).
    """
    old = inputs.old.objects.select(*KEY, F.col("kind").alias("old_kind"))
    new = inputs.new.objects.select(*KEY, "kind", "cluster", "sql")
    sinks = (dirty.join(new, list(KEY), "left").join(old, list(KEY), "left")
             .where((F.col("kind") == "sink") | (F.col("kind").isNull() & (F.col("old_kind") == "sink"))))
    kinds = inputs.new.objects.select(*(F.col(k).alias(f"up_{k}") for k in KEY), F.col("kind").alias("up_kind"))
    upstream = (inputs.new.dependencies
                .join(kinds, [F.col(f"dep_{k}") == F.col(f"up_{k}") for k in KEY])
                .where(~F.col("up_kind").isin(*NOT_UPSTREAM))
                .groupBy(*KEY).agg(F.min(F.struct("up_database", "up_schema", "up_name")).alias("up"))
                .select(*KEY, "up.*"))
    swapped = staged_clusters.select(F.col("name").alias("cluster"), F.lit(True).alias("cluster_swapped"))
    return (sinks.join(upstream, list(KEY), "left").join(swapped, "cluster", "left")
            .withColumn("in_production", F.col("old_kind").isNotNull())
            .withColumn("recreate", F.col("change").isNotNull() | F.col("cluster_swapped").isNotNull()
                        | F.col("up_name").isNull())
            .localCheckpoint())

