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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

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
        return cls(new=new.localCheckpoint(), deployed=old.unionByName(presumed).localCheckpoint(),
                   readers=readers.localCheckpoint(),
                   known_schemas=old.select(*SCHEMA).distinct().localCheckpoint())

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


@dataclass
class BlueGreen:
    staged: DataFrame    # key, reason: created again in a staging schema (every kind but sinks)
    replaced: DataFrame  # key, reason: replaced in place, keeping identity (Materialize)
    swapped: DataFrame   # database, schema
    removed: DataFrame   # key: deployed objects the plan swaps away or drops
    gone: DataFrame      # key, reason: removed objects the new project does not have (dropped in cleanup)
    rounds: int


def blue_green(inputs: PlanInputs, catalog: Catalog) -> BlueGreen:
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
    redeployed = recent = seeds.localCheckpoint()
    gone = carried = deleted.localCheckpoint()
    removed = on_swapped_clusters.unionByName(deleted.select(*KEY)).distinct().localCheckpoint()
    frontier = removed
    swapped = inputs.dirty_schemas.limit(0).select(*SCHEMA)
    rounds = 0
    while True:
        rounds += 1
        fresh_schemas = (recent.join(capable, list(KEY), "left_anti").select(*SCHEMA).distinct()
                         .join(swapped, SCHEMA, "left_anti"))
        fresh_removed = (deployed.join(fresh_schemas, SCHEMA, "left_semi").select(*KEY)
                         .join(removed, list(KEY), "left_anti"))
        frontier = frontier.unionByName(fresh_removed)  # removed since the last round
        readers = catalog.readers_of(frontier)
        found = (new.join(fresh_schemas, SCHEMA, "left_semi").join(kept, list(KEY), "left_semi")
                 .select(*KEY, _reason("in schema ", F.concat_ws(".", *SCHEMA), ", which the plan swaps"))
                 .unionByName(kept.join(frontier, list(KEY), "left_semi")
                              .select(*KEY, F.lit("removed with its schema or cluster").alias("reason")))
                 .unionByName(readers.join(kept, list(KEY), "left_semi")
                              .select(*KEY, _reason("reads ", F.col("read"), ", which the plan removes"))))
        recent = found.groupBy(*KEY).agg(F.min("reason").alias("reason")).join(redeployed, list(KEY), "left_anti")
        carried = (readers.join(new, list(KEY), "left_anti").join(removed, list(KEY), "left_anti")
                   .join(fresh_removed, list(KEY), "left_anti")
                   .select(*KEY, _reason("reads ", F.col("read"), ", which the plan removes")))
        # everything this round found, in one frame: one checkpoint and one count per round
        fresh = reduce(DataFrame.unionByName, [
            fresh_schemas.select(F.lit("swapped").alias("found"), *SCHEMA, _null("name"), _null("reason")),
            fresh_removed.select(F.lit("removed").alias("found"), *KEY, _null("reason")),
            recent.select(F.lit("redeployed").alias("found"), *KEY, "reason"),
            carried.select(F.lit("gone").alias("found"), *KEY, "reason")]).localCheckpoint()
        counts = {r["found"]: r["count"] for r in fresh.groupBy("found").count().collect()}

        def part(name: str) -> DataFrame:
            return fresh.where(F.col("found") == name).drop("found")
        swapped = swapped.unionByName(part("swapped").select(*SCHEMA))
        removed = removed.unionByName(part("removed").select(*KEY)).unionByName(part("gone").select(*KEY))
        recent, carried = part("redeployed"), part("gone")
        if not counts.get("redeployed") and not counts.get("gone"):
            break
        redeployed = redeployed.unionByName(recent)
        gone = gone.unionByName(carried)
        frontier = carried.select(*KEY)
    swapped = swapped.localCheckpoint()
    in_place = capable.join(swapped.join(new, SCHEMA).select(*KEY), list(KEY), "left_anti")
    return BlueGreen(staged=redeployed.join(in_place, list(KEY), "left_anti").localCheckpoint(),
                     replaced=redeployed.join(in_place, list(KEY), "left_semi").localCheckpoint(),
                     swapped=swapped, removed=removed.distinct().localCheckpoint(), gone=gone.localCheckpoint(),
                     rounds=rounds)


def _null(name: str):
    return F.lit(None).cast("string").alias(name)


def _reason(before: str, what, after: str):
    return F.concat(F.lit(before), what, F.lit(after)).alias("reason")


def in_place(inputs: PlanInputs, catalog: Catalog) -> tuple[DataFrame, int]:
    """``(dropped, rounds)``: key, kind, reason of every deployed object the plan drops."""
    deployed = catalog.deployed
    dirty = inputs.dirty_stmts.select(*KEY, "change")
    seeds = (dirty.join(deployed, list(KEY))
             .where(F.col("kind").isin(*RECREATABLE) | F.col("change").isin("modified", "deleted"))
             .select(*KEY, F.lit("dirty").alias("reason")))
    dropped = recent = seeds.localCheckpoint()
    rounds = 0
    while True:
        rounds += 1
        recent = (catalog.readers_of(recent).select(*KEY, _reason("reads ", F.col("read"), ", which the plan drops"))
                  .join(dropped, list(KEY), "left_anti").localCheckpoint())
        if recent.count() == 0:
            break
        dropped = dropped.unionByName(recent)
    return dropped.join(deployed.select(*KEY, "kind"), list(KEY)).localCheckpoint(), rounds
