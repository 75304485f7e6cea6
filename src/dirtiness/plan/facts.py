"""The facts the plan's rules read (``model.PLAN_RELATIONS``), from both snapshots and the dialect.

Computed before the dirty rules run, with the dirty rules' own facts, and
held with them: the plan's rules then start from the dirty sets and these.
What a dialect cannot do is an empty relation: without in-place replacement
nothing is ``Capable``, without clusters no cluster is deployed or new.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import local_frame
from ..inputs.snapshot import Snapshot
from ..model import KEY, PLAN_BY_NAME
from .dialect import Dialect

DEPLOYABLE = ("view", "materialized-view")           # staged and swapped by blue-green
RECREATABLE = ("view", "materialized-view", "sink")  # dropped and created again when dirty
STATEFUL = ("table", "source", "table-from-source")  # dropping loses data: destructive
NOT_UPSTREAM = ("connection", "secret")              # what a sink reads but takes no rows from
DEP = [f"dep_{k}" for k in KEY]
SCHEMA = ["database", "schema"]
KINDS = T.StructType([T.StructField("kind", T.StringType())])


def deployed_objects(old: Snapshot, new: Snapshot, changed: DataFrame) -> DataFrame:
    """``key, kind, cluster`` of what the database holds before the plan: the old snapshot, and what the
    new project lists without having added it (a deploy record often omits what its tool does not manage)."""
    listed = old.objects.select(*KEY, "kind", "cluster")
    added = changed.where(F.col("change") == "added").select(*KEY)
    presumed = (new.objects.join(added, list(KEY), "left_anti").select(*KEY, "kind", "cluster")
                .join(listed.select(*KEY), list(KEY), "left_anti"))
    return listed.unionByName(presumed)


def plan_facts(spark: SparkSession, old: Snapshot, new: Snapshot, changed: DataFrame,
               dialect: Dialect) -> dict[str, DataFrame]:
    """Every plan base relation but the dirty sets, as frames of its named columns, without duplicates."""
    deployed = deployed_objects(old, new, changed)
    fresh = new.objects
    with_kind = fresh.select(*(F.col(k).alias(d) for k, d in zip(KEY, DEP)), F.col("kind").alias("dep_kind"))
    upstream = (new.dependencies.join(with_kind, DEP).where(~F.col("dep_kind").isin(*NOT_UPSTREAM)).select(*KEY))
    if dialect.in_place_replacement:
        capable = (fresh.where((F.col("kind") == "materialized-view") & F.col("replacement")).select(*KEY)
                   .join(deployed.where(F.col("kind") == "materialized-view"), list(KEY), "left_semi"))
    else:
        capable = fresh.select(*KEY).limit(0)
    clusters = F.col("cluster").isNotNull() & F.lit(dialect.clusters)

    def change(kind: str) -> DataFrame:
        return changed.where(F.col("change") == kind).select(*KEY)

    def kinds(names) -> DataFrame:
        return local_frame(spark, [(k,) for k in names], KINDS)

    facts = {
        "ChangedStmt": changed.select(*KEY),
        "Added": change("added"), "Modified": change("modified"), "Deleted": change("deleted"),
        "NewObject": fresh.select(*KEY),
        "NewKind": fresh.select(*KEY, "kind"),
        "NewOn": fresh.where(F.col("cluster").isNotNull()).select(*KEY, "cluster"),
        "Deployed": deployed.select(*KEY),
        "DeployedKind": deployed.select(*KEY, "kind"),
        "DeployedOn": deployed.where(F.col("cluster").isNotNull()).select(*KEY, "cluster"),
        "OnACluster": deployed.where(F.col("cluster").isNotNull()).select(*KEY),
        "InSchema": old.objects.select(*KEY).unionByName(fresh.select(*KEY)),
        "Reads": old.dependencies.select(*KEY, *DEP).unionByName(new.dependencies.select(*KEY, *DEP)),
        "Capable": capable,
        "HasUpstream": upstream,
        "KnownSchema": old.objects.select(*SCHEMA),
        "NewSchema": fresh.select(*SCHEMA),
        "DeployedCluster": deployed.select("cluster").unionByName(old.indexes.select("cluster")).where(clusters),
        "NewCluster": fresh.select("cluster").unionByName(new.indexes.select("cluster")).where(clusters),
        "Deployable": kinds(DEPLOYABLE),
        "Recreatable": kinds(RECREATABLE),
        "SinkKind": kinds(["sink"]),
    }
    return {name: frame.select(*PLAN_BY_NAME[name].fields).distinct() for name, frame in facts.items()}
