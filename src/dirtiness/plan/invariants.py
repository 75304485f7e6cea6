"""Invariants every plan must satisfy before it is published; a violation is a bug (exit 1).

They are computed from the plan rows and the snapshots alone, not from the
planner's intermediate sets, so a mistake in the planner cannot hide itself.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..model import KEY
from .operations import PlanInputs

CREATING = ("stage", "post-swap", "setup")  # phases that build dependencies before dependents
DROPPING = ("teardown", "cleanup")         # phases that drop dependents before dependencies
RECREATING = ("CREATE", "CREATE REPLACEMENT", "APPLY REPLACEMENT", "REPOINT")
SCHEMA = ["database", "schema"]


class InvariantError(RuntimeError):
    """The plan breaks an invariant: named, with examples."""


def check_invariants(plan: DataFrame, inputs: PlanInputs, changed: DataFrame, strategy: str, shown: int = 3) -> None:
    removed = _removed(plan, inputs)
    checks = {
        "every changed object of the new project is dirty": _changed_not_dirty(inputs, changed),
        "each object appears at most once per phase": _repeated(plan),
        "every dependency between planned objects is respected by their steps": _out_of_order(plan, inputs),
        "nothing the plan removes is still read by an object that stays": _read_after_removal(plan, inputs, removed),
        "everything the plan removes that the new project keeps is created again": _lost(plan, inputs, removed),
        "every schema exists before an object is created in it": _schemaless(plan, inputs),
    }
    if strategy == "blue-green":
        checks["every staged schema and cluster is swapped"] = _not_swapped(plan, inputs)
    tagged = [frame.select(F.lit(name).alias("invariant"), F.col("detail")).limit(shown)
              for name, frame in checks.items()]
    found = reduce(DataFrame.unionByName, tagged).collect()
    if found:
        first = min({r["invariant"] for r in found}, key=list(checks).index)  # the first in the order above
        examples = sorted({r["detail"] for r in found if r["invariant"] == first})
        raise InvariantError(f"plan invariant violated: {first}: {'; '.join(examples)}")


def _show(*columns) -> F.Column:
    return F.concat_ws(".", *columns)


def _deployed(inputs: PlanInputs) -> DataFrame:
    """What the database holds before the plan: the old snapshot, and what the new one lists without adding it."""
    added = inputs.dirty_stmts.where(F.col("change") == "added").select(*KEY)
    return (inputs.old.objects.select(*KEY, "cluster")
            .unionByName(inputs.new.objects.join(added, list(KEY), "left_anti").select(*KEY, "cluster"))
            .dropDuplicates(list(KEY)))


def _removed(plan: DataFrame, inputs: PlanInputs) -> DataFrame:
    """Deployed objects the plan drops, or swaps away with their schema or cluster (then drops)."""
    deployed = _deployed(inputs)
    swapped_schemas = plan.where((F.col("action") == "SWAP") & (F.col("object_type") == "schema")).select(*SCHEMA)
    swapped_clusters = plan.where((F.col("action") == "SWAP") & (F.col("object_type") == "cluster")).select(
        F.col("name").alias("cluster"))
    dropped = plan.where((F.col("action") == "DROP") & (F.col("object_type") == "object")).select(*KEY)
    replaced = plan.where(F.col("action") == "APPLY REPLACEMENT").select(*KEY)  # moves to the new cluster
    return (deployed.join(swapped_schemas, SCHEMA, "left_semi").select(*KEY)
            .unionByName(deployed.join(swapped_clusters, "cluster", "left_semi").select(*KEY)
                         .join(replaced, list(KEY), "left_anti"))
            .unionByName(dropped.join(deployed, list(KEY), "left_semi")).distinct())


def _recreated(plan: DataFrame) -> DataFrame:
    return plan.where((F.col("object_type") == "object") & F.col("action").isin(*RECREATING)).select(*KEY).distinct()


def _read_after_removal(plan: DataFrame, inputs: PlanInputs, removed: DataFrame) -> DataFrame:
    """A reader must be removed with what it reads (and created again), or keep its identity while it
    changes what it reads (a replacement applied, a sink repointed)."""
    kept_identity = (plan.where((F.col("object_type") == "object")
                                & F.col("action").isin("APPLY REPLACEMENT", "REPOINT")).select(*KEY))
    edges = inputs.old.dependencies.unionByName(inputs.new.dependencies).select(
        *KEY, *(F.col(f"dep_{k}").alias(f"s_{k}") for k in KEY))
    readers = (edges.join(removed.select(*(F.col(k).alias(f"s_{k}") for k in KEY)), [f"s_{k}" for k in KEY])
               .join(_deployed(inputs).select(*KEY), list(KEY), "left_semi")
               .join(removed, list(KEY), "left_anti")
               .join(kept_identity, list(KEY), "left_anti"))
    return readers.select(F.concat(_show(*KEY), F.lit(" reads "), _show(*(f"s_{k}" for k in KEY))).alias("detail"))


def _lost(plan: DataFrame, inputs: PlanInputs, removed: DataFrame) -> DataFrame:
    kept = removed.join(inputs.new.objects.select(*KEY), list(KEY), "left_semi")
    return kept.join(_recreated(plan), list(KEY), "left_anti").select(_show(*KEY).alias("detail"))


def _schemaless(plan: DataFrame, inputs: PlanInputs) -> DataFrame:
    order = F.col("phase_order") * 1_000_000 + F.col("step")
    created = (plan.where((F.col("object_type") == "schema") & (F.col("action") == "CREATE"))
               .groupBy("database", F.col("target_schema").alias("target")).agg(F.min(order).alias("ready")))
    known = inputs.old.objects.select("database", F.col("schema").alias("target")).distinct().withColumn(
        "ready", F.lit(-1))
    ready = known.unionByName(created).groupBy("database", "target").agg(F.min("ready").alias("ready"))
    creates = plan.where((F.col("object_type").isin("object", "index")) & F.col("action").isin(
        "CREATE", "CREATE REPLACEMENT")).select(*KEY, F.coalesce("target_schema", "schema").alias("target"),
                                                order.alias("at"))
    swaps = plan.where((F.col("object_type") == "schema") & (F.col("action") == "SWAP"))
    for side in ("schema", "target_schema"):  # a swap needs both schemas
        creates = creates.unionByName(swaps.select(*KEY, F.col(side).alias("target"), order.alias("at")))
    return (creates.join(ready, ["database", "target"], "left")
            .where(F.col("ready").isNull() | (F.col("ready") >= F.col("at")))
            .select(F.concat(_show(*KEY), F.lit(" is created in "), _show("database", "target"),
                             F.lit(", which does not exist yet")).alias("detail")))


def _changed_not_dirty(inputs: PlanInputs, changed: DataFrame) -> DataFrame:
    return (changed.where(F.col("change") != "deleted").select(*KEY)
            .join(inputs.dirty_stmts.select(*KEY), list(KEY), "left_anti")
            .select(_show(*KEY).alias("detail")))


def _repeated(plan: DataFrame) -> DataFrame:
    return (plan.groupBy("phase", "object_type", "database", "schema", "name", "target_schema").count()
            .where(F.col("count") > 1)
            .select(F.concat(F.col("phase"), F.lit(": "), F.col("object_type"), F.lit(" "),
                             _show("database", "schema", "name")).alias("detail")))


def _out_of_order(plan: DataFrame, inputs: PlanInputs) -> DataFrame:
    objects = plan.where(F.col("object_type") == "object").select("phase", *KEY, "step")
    everything = inputs.old.dependencies.unionByName(inputs.new.dependencies)
    found = []
    for phases, dependencies, later in ((CREATING, inputs.new.dependencies, "reader"),
                                        (DROPPING, everything, "source")):
        reader = objects.where(F.col("phase").isin(*phases)).select(
            "phase", *(F.col(k).alias(f"r_{k}") for k in KEY), F.col("step").alias("r_step"))
        source = objects.select("phase", *(F.col(k).alias(f"s_{k}") for k in KEY), F.col("step").alias("s_step"))
        edges = dependencies.select(*(F.col(k).alias(f"r_{k}") for k in KEY),
                                    *(F.col(f"dep_{k}").alias(f"s_{k}") for k in KEY))
        pairs = edges.join(reader, [f"r_{k}" for k in KEY]).join(source, ["phase", *(f"s_{k}" for k in KEY)])
        wrong = F.col("r_step") <= F.col("s_step") if later == "reader" else F.col("r_step") >= F.col("s_step")
        found.append(pairs.where(wrong).select(F.concat(
            F.col("phase"), F.lit(": "), _show(*(f"r_{k}" for k in KEY)), F.lit(" (step "), F.col("r_step"),
            F.lit(") reads "), _show(*(f"s_{k}" for k in KEY)), F.lit(" (step "), F.col("s_step"), F.lit(")"))
            .alias("detail")))
    return reduce(DataFrame.unionByName, found)


def _not_swapped(plan: DataFrame, inputs: PlanInputs) -> DataFrame:
    """Schemas receiving a staged copy (not a replacement), and staging copies of the clusters the database
    has, each have a SWAP (a cluster nothing deployed runs on is created under its own name)."""
    staged_schemas = (plan.where((F.col("phase") == "stage") & (F.col("object_type") == "object")
                                 & (F.col("action") == "CREATE") & (F.col("target_schema") != F.col("schema")))
                      .select("object_type", *SCHEMA).distinct().withColumn("object_type", F.lit("schema"))
                      .withColumn("name", F.lit(None).cast("string")))
    deployed = (_deployed(inputs).select("cluster").unionByName(inputs.old.indexes.select("cluster"))
                .select(F.col("cluster").alias("name")))
    staged_clusters = (plan.where((F.col("phase") == "stage") & (F.col("object_type") == "cluster"))
                       .join(deployed, "name", "left_semi").select("object_type", *SCHEMA, "name"))
    keys = ["object_type", "database", "schema", "name"]
    swapped = plan.where(F.col("phase") == "swap").select(*keys).alias("sw")
    staged = staged_schemas.unionByName(staged_clusters).select(*keys).alias("st")
    same = [F.col(f"st.{k}").eqNullSafe(F.col(f"sw.{k}")) for k in keys]
    return (staged.join(swapped, same, "left_anti")
            .select(F.concat(F.col("object_type"), F.lit(" "), _show("database", "schema", "name")).alias("detail")))
