"""What a plan must redeploy so that it never drops something an object that stays still reads.

The dirty set says what changed and what that reaches through the rules. A
plan removes more than that from the database: blue-green swaps whole
schemas and clusters away and drops them; in-place drops objects. Anything
still reading a removed object would fail the drop, or be removed with it by
``CASCADE`` and never come back. So each strategy grows the dirty set to a
closure, on Spark, semi-naively (each round joins only what the previous
round added, cuts the lineage and counts once):

blue-green
  - ``redeployed``: dirty views and materialized views; every object (but
    sinks) of the new project in a swapped schema; every object of the new
    project that is removed; every object still deployed that reads a
    removed one;
  - ``swapped``: the schema of every redeployed object, except a replacement
    materialized view the dialect replaces in place (it keeps its identity,
    so nothing reading it notices);
  - ``removed``: every deployed object in a swapped schema or on a swapped
    cluster, and every deleted one.

in-place
  - ``dropped``: dirty views, materialized views and sinks, and dirty
    stateful objects that changed or were deleted (as before); every
    deployed object that reads a dropped one.

"Deployed" is what the old snapshot lists plus what the new project lists
without having added it: a deploy record often omits what its tool does not
manage, and such objects exist all the same. Readers are taken from both
snapshots' dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.iteration import Batch, Growing, local_batch
from ..model import KEY
from .operations import DEPLOYABLE, RECREATABLE, PlanInputs

SCHEMA = ["database", "schema"]
DEP = [f"dep_{k}" for k in KEY]


@dataclass
class Catalog:
    """The two snapshots as the planner sees them."""

    new: DataFrame       # key, kind, cluster, replacement, sql, change (null unless changed)
    deployed: DataFrame  # key, kind, cluster: what the database holds before the plan
    readers: DataFrame   # key of a reader, dep_* of what it reads: old and new dependencies
    known_schemas: DataFrame  # database, schema: schemas the old snapshot shows to exist
    missing_clusters: DataFrame  # name: clusters the new project uses and nothing deployed runs on

    @classmethod
    def of(cls, inputs: PlanInputs) -> "Catalog":
        change = inputs.dirty_stmts.where(F.col("change").isNotNull()).select(*KEY, "change")
        new = (inputs.new.objects.select(*KEY, "kind", "cluster", "replacement", "sql")
               .join(change, list(KEY), "left"))
        old = inputs.old.objects.select(*KEY, "kind", "cluster")
        presumed = (new.where(F.col("change").isNull() | (F.col("change") != "added"))
                    .select(*KEY, "kind", "cluster").join(old, list(KEY), "left_anti"))
        readers = (inputs.old.dependencies.select(*KEY, *DEP)
                   .unionByName(inputs.new.dependencies.select(*KEY, *DEP)).distinct())
        deployed = old.unionByName(presumed).localCheckpoint()
        return cls(new=new.localCheckpoint(), deployed=deployed, readers=readers.localCheckpoint(),
                   known_schemas=old.select(*SCHEMA).distinct().localCheckpoint(),
                   missing_clusters=_missing_clusters(inputs, deployed).localCheckpoint())

    def emptied_schemas(self, dropped: DataFrame) -> DataFrame:
        """Schemas of deployed objects the new project no longer has, once the plan drops ``dropped`` (key):
        dropped too, so the database ends like a fresh deploy. Not those still holding something."""
        kept = self.deployed.join(dropped.select(*KEY), list(KEY), "left_anti").select(*SCHEMA)
        return (self.deployed.select(*SCHEMA).distinct()
                .join(self.new.select(*SCHEMA), SCHEMA, "left_anti").join(kept, SCHEMA, "left_anti"))

    def readers_of(self, removed: DataFrame) -> DataFrame:
        """Deployed objects reading any of ``removed`` (key), with the first such object as ``read``."""
        hit = removed.select(*(F.col(k).alias(f"dep_{k}") for k in KEY))
        return (self.readers.join(hit, DEP).join(self.deployed.select(*KEY), list(KEY), "left_semi")
                .groupBy(*KEY).agg(F.min(F.concat_ws(".", *DEP)).alias("read")))


def _missing_clusters(inputs: PlanInputs, deployed: DataFrame) -> DataFrame:
    """Clusters of the new project's objects and indexes that no deployed object or index runs on: the
    plan creates them under their own names (nothing on them needs staging), which fails rather than
    reconfigure one that exists outside the project."""
    used = (inputs.new.objects.select("cluster")
            .unionByName(inputs.new.indexes.select("cluster")).where(F.col("cluster").isNotNull()))
    known = deployed.select("cluster").unionByName(inputs.old.indexes.select("cluster"))
    return used.distinct().join(known, "cluster", "left_anti").select(F.col("cluster").alias("name"))


@dataclass
class BlueGreen:
    staged: DataFrame    # key, reason: created again in a staging schema (every kind but sinks)
    replaced: DataFrame  # key, reason: replaced in place, keeping identity (Materialize)
    swapped: DataFrame   # database, schema
    removed: DataFrame   # key: deployed objects the plan swaps away or drops
    gone: DataFrame      # key, reason: removed objects the new project does not have (dropped in cleanup)
    rounds: int


def blue_green(inputs: PlanInputs, catalog: Catalog) -> BlueGreen:
    spark, holding = catalog.new.sparkSession, inputs.holding
    new, deployed = catalog.new, catalog.deployed
    capable = (new.where((F.col("kind") == "materialized-view") & F.col("replacement"))
               .join(deployed.where(F.col("kind") == "materialized-view"), list(KEY), "left_semi").select(*KEY)
               if inputs.dialect.in_place_replacement else new.limit(0).select(*KEY)).localCheckpoint()
    kept = new.where(F.col("kind") != "sink").select(*KEY)  # sinks: created again or repointed after the swap
    dirty = inputs.dirty_stmts.select(*KEY)
    on_swapped_clusters = deployed.join(inputs.dirty_clusters.select("cluster"), "cluster").select(*KEY)
    # a replacement on a swapped cluster is replaced by one on the staging cluster (unless its schema swaps)
    seeds = (new.join(dirty, list(KEY), "left_semi").where(F.col("kind").isin(*DEPLOYABLE))
             .select(*KEY, F.lit("dirty").alias("reason"))
             .unionByName(capable.join(on_swapped_clusters, list(KEY), "left_semi")
                          .select(*KEY, F.lit("on a swapped cluster").alias("reason")))
             .groupBy(*KEY).agg(F.min("reason").alias("reason")))
    on_swapped_clusters = on_swapped_clusters.join(capable, list(KEY), "left_anti")
    deleted = (deployed.join(new, list(KEY), "left_anti").join(dirty, list(KEY), "left_semi")
               .select(*KEY, F.lit("dirty").alias("reason")))
    # the four closures, grown together: one materialization and one action a round
    start = holding.hold_parts(reduce(DataFrame.unionByName, [
        _found("redeployed", seeds), _found("gone", deleted),
        _found("removed", on_swapped_clusters.unionByName(deleted.select(*KEY)).distinct())]), "found")
    redeployed, gone = _growing(start, "redeployed", spark, REASONED), _growing(start, "gone", spark, REASONED)
    removed, swapped = _growing(start, "removed", spark, KEYED), Growing(SCHEMAS)
    frontier = removed.full(spark)  # removed and not yet read from
    rounds = 0
    while True:
        rounds += 1
        recent = redeployed.recent.frame if redeployed.recent else spark.createDataFrame([], REASONED)
        fresh_schemas = (recent.join(capable, list(KEY), "left_anti").select(*SCHEMA).distinct()
                         .join(swapped.full(spark), SCHEMA, "left_anti"))
        fresh_removed = (deployed.join(fresh_schemas, SCHEMA, "left_semi").select(*KEY)
                         .join(removed.full(spark), list(KEY), "left_anti"))
        frontier = frontier.unionByName(fresh_removed)
        readers = catalog.readers_of(frontier)
        found = (new.join(fresh_schemas, SCHEMA, "left_semi").join(kept, list(KEY), "left_semi")
                 .select(*KEY, _reason("in schema ", F.concat_ws(".", *SCHEMA), ", which the plan swaps"))
                 .unionByName(kept.join(frontier, list(KEY), "left_semi")
                              .select(*KEY, F.lit("removed with its schema or cluster").alias("reason")))
                 .unionByName(readers.join(kept, list(KEY), "left_semi")
                              .select(*KEY, _reason("reads ", F.col("read"), ", which the plan removes"))))
        fresh_redeployed = (found.groupBy(*KEY).agg(F.min("reason").alias("reason"))
                            .join(redeployed.full(spark), list(KEY), "left_anti"))
        carried = (readers.join(new, list(KEY), "left_anti").join(removed.full(spark), list(KEY), "left_anti")
                   .join(fresh_removed, list(KEY), "left_anti")
                   .select(*KEY, _reason("reads ", F.col("read"), ", which the plan removes")))
        parts = holding.hold_parts(reduce(DataFrame.unionByName, [
            fresh_schemas.select(F.lit("swapped").alias("found"), *SCHEMA, _null("name"), _null("reason")),
            _found("removed", fresh_removed), _found("redeployed", fresh_redeployed), _found("gone", carried)]),
            "found")
        swapped.advance(parts["swapped"].project(SCHEMA) if "swapped" in parts else None)
        removed.advance(_union([parts[p].project(list(KEY)) for p in ("removed", "gone") if p in parts]))
        redeployed.advance(parts.get("redeployed"))
        gone.advance(parts.get("gone"))
        if "redeployed" not in parts and "gone" not in parts:
            break
        frontier = gone.recent.frame.select(*KEY) if gone.recent else spark.createDataFrame([], KEYED)
    swapped_schemas = swapped.full(spark).localCheckpoint()
    everything = redeployed.full(spark)
    in_place = capable.join(swapped_schemas.join(new, SCHEMA).select(*KEY), list(KEY), "left_anti")
    return BlueGreen(staged=everything.join(in_place, list(KEY), "left_anti").localCheckpoint(),
                     replaced=everything.join(in_place, list(KEY), "left_semi").localCheckpoint(),
                     swapped=swapped_schemas, removed=removed.full(spark).distinct().localCheckpoint(),
                     gone=gone.full(spark).localCheckpoint(), rounds=rounds)


KEYED = T.StructType([T.StructField(k, T.StringType()) for k in KEY])
REASONED = T.StructType([*KEYED.fields, T.StructField("reason", T.StringType())])
SCHEMAS = T.StructType([T.StructField(k, T.StringType()) for k in SCHEMA])


def _found(part: str, frame: DataFrame) -> DataFrame:
    """A closure's part of a round: ``found``, the key and a reason (null when the closure has none)."""
    reason = F.col("reason") if "reason" in frame.columns else _null("reason")
    return frame.select(F.lit(part).alias("found"), *KEY, reason.alias("reason"))


def _growing(parts: dict[str, Batch], name: str, spark: SparkSession, schema: T.StructType) -> Growing:
    grown = Growing(schema)
    if name in parts:
        grown.advance(parts[name].project(schema.fieldNames()))
    return grown


def _union(batches: list[Batch]) -> Batch | None:
    """Two parts of one round as one batch: rows stay rows, blocks stay blocks (one checkpoint holds both)."""
    if not batches:
        return None
    if all(b.local for b in batches):
        return local_batch(batches[0].frame.sparkSession, [r for b in batches for r in b.rows], batches[0].frame.schema)
    return Batch(reduce(DataFrame.unionByName, [b.frame for b in batches]), sum(b.count for b in batches))


def _null(name: str):
    return F.lit(None).cast("string").alias(name)


def _reason(before: str, what, after: str):
    return F.concat(F.lit(before), what, F.lit(after)).alias("reason")


def in_place(inputs: PlanInputs, catalog: Catalog) -> tuple[DataFrame, int]:
    """``(dropped, rounds)``: key, kind, reason of every deployed object the plan drops."""
    spark, deployed = catalog.deployed.sparkSession, catalog.deployed
    dirty = inputs.dirty_stmts.select(*KEY, "change")
    seeds = (dirty.join(deployed, list(KEY))
             .where(F.col("kind").isin(*RECREATABLE) | F.col("change").isin("modified", "deleted"))
             .select(*KEY, F.lit("dirty").alias("reason")))
    dropped = Growing(REASONED)
    dropped.advance(inputs.holding.hold(seeds))
    rounds = 0
    while dropped.recent is not None:
        rounds += 1
        readers = (catalog.readers_of(dropped.recent.frame)
                   .select(*KEY, _reason("reads ", F.col("read"), ", which the plan drops"))
                   .join(dropped.full(spark), list(KEY), "left_anti"))
        dropped.advance(inputs.holding.hold(readers, dropped.recent.local))
    return dropped.full(spark).join(deployed.select(*KEY, "kind"), list(KEY)).localCheckpoint(), rounds
