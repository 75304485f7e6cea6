"""Both snapshots as the rule programs see them: one row per object, its edges, its indexes, all as ids.

Every base relation of the dirty rules and of the plan's rules is a view of
three interned tables:

- ``objects``: one row per object of either snapshot, with its id, the ids
  of its database, schema, clusters and kinds, and flags (in the new
  project, deployed, a member of its schema's dirty set, ...);
- ``edges``: the dependencies of both snapshots, as ids, flagged new;
- ``indexes``: the new project's indexes, as ids.

So interning costs a hash of each key (no join) and two joins per edge,
however many relations the programs read. An id is the key's 64-bit
``xxhash64`` (with the configured seed) with its sign bit cleared: a
function of the key alone, so a name has the same id in every run and in
both programs, and the choice between equal causes (the lowest ids) does not
move when unrelated objects come or go. Two keys of one kind with the same
id would be one object to the rules: ``id_clashes`` finds them, and the run
refuses (at a million keys about one chance in twenty million).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch, local_frame
from ..inputs.snapshot import Snapshot
from ..model import APPLY_MANAGED, KEY, OBJECT_DOMAIN
from ..plan.dialect import Dialect
from .interning import PARTS

DEP = [f"dep_{k}" for k in KEY]
SCHEMA = ["database", "schema"]
DEPLOYABLE = ("view", "materialized-view")           # staged and swapped by blue-green
RECREATABLE = ("view", "materialized-view", "sink")  # dropped and created again when dirty
NOT_UPSTREAM = ("connection", "secret")              # what a sink reads but takes no rows from
NAMES = T.StructType([T.StructField("value", T.StringType())])
SIGN_CLEARED = 0x7FFFFFFFFFFFFFFF  # ids are never negative (``datalog.compile.PAD``)


def object_table(old: Snapshot, new: Snapshot, changed: DataFrame, dialect: Dialect) -> DataFrame:
    """One row per object of either snapshot, by name, with what both programs read of it.

    "Deployed" is what the database holds before the plan: the old snapshot,
    and what the new project lists without having added it (a deploy record
    often omits what its tool does not manage). A "member" is in its
    schema's set for the dirty rules: the new project's objects, and the
    deleted ones (so a deleted object still dirties its schema).
    """
    old_ = old.objects.select(*KEY, F.col("kind").alias("old_kind"), F.col("cluster").alias("old_cluster"),
                              F.col("replacement").alias("old_replacement"), F.lit(True).alias("in_old"))
    new_ = new.objects.select(*KEY, F.col("kind").alias("new_kind"), F.col("cluster").alias("new_cluster"),
                              F.col("replacement").alias("new_replacement"), "sql", F.lit(True).alias("in_new"))
    kinds = new.objects.select(*(F.col(k).alias(d) for k, d in zip(KEY, DEP)), F.col("kind").alias("dep_kind"))
    upstream = (new.dependencies.join(kinds, DEP).where(~F.col("dep_kind").isin(*NOT_UPSTREAM))
                .select(*KEY).distinct().withColumn("has_upstream", F.lit(True)))
    joined = (old_.join(new_, list(KEY), "full_outer").join(changed.select(*KEY, "change"), list(KEY), "left")
              .join(upstream, list(KEY), "left"))
    in_old, in_new = F.coalesce("in_old", F.lit(False)), F.coalesce("in_new", F.lit(False))
    deployed = in_old | (in_new & (F.col("change").isNull() | (F.col("change") != "added")))
    deployed_kind = F.when(in_old, F.col("old_kind")).otherwise(F.col("new_kind"))
    member = in_new | (F.col("change") == "deleted")
    capable = (F.lit(dialect.in_place_replacement) & in_new & (F.col("new_kind") == "materialized-view")
               & F.coalesce("new_replacement", F.lit(False)) & deployed & (deployed_kind == "materialized-view"))
    return joined.select(
        *KEY, in_old.alias("in_old"), in_new.alias("in_new"), "change", "new_kind", "new_cluster", "sql",
        F.coalesce("new_replacement", F.lit(False)).alias("new_replacement"),
        deployed.alias("deployed"), deployed_kind.alias("deployed_kind"),
        F.when(in_old, F.col("old_cluster")).otherwise(F.col("new_cluster")).alias("deployed_cluster"),
        member.alias("member"), F.when(in_new, F.col("new_kind")).otherwise(F.col("old_kind")).alias("member_kind"),
        F.when(in_new, F.col("new_replacement")).otherwise(F.coalesce("old_replacement", F.lit(False)))
        .alias("member_replacement"),
        capable.alias("capable"), F.coalesce("has_upstream", F.lit(False)).alias("has_upstream"))


def edge_table(old: Snapshot, new: Snapshot) -> DataFrame:
    """``key, dep_*, new``: the dependencies of both snapshots, once each, flagged when the new project's."""
    both = (old.dependencies.select(*KEY, *DEP, F.lit(False).alias("new"))
            .unionByName(new.dependencies.select(*KEY, *DEP, F.lit(True).alias("new"))))
    return both.groupBy(*KEY, *DEP).agg(F.max("new").alias("new"))


def name_keys(spark: SparkSession, objects: DataFrame, new: Snapshot, old: Snapshot,
              forced: list[tuple[str, str]], clusters: bool) -> DataFrame:
    """``value``: every name the programs read (databases, schemas, clusters, index names, kinds), once."""
    def name(value: str, where=None) -> F.Column:
        return F.col(value) if where is None else F.when(where, F.col(value))
    # the object table's names in one pass over it (one read of its joins, not six)
    of_objects = objects.select(F.explode(F.array(
        name("database"), name("schema"),
        name("new_cluster", F.col("in_new") & F.col("new_cluster").isNotNull()),
        name("deployed_cluster", F.col("deployed_cluster").isNotNull() & F.lit(clusters)),
        name("new_kind"), name("deployed_kind"),
    )).alias("value")).where(F.col("value").isNotNull())
    clustered = new.indexes.where(F.col("cluster").isNotNull())
    names = [
        of_objects,
        clustered.select(F.col("index_name").alias("value")),
        clustered.select(F.col("cluster").alias("value")),
        old.indexes.where(F.col("cluster").isNotNull() & F.lit(clusters)).select(F.col("cluster").alias("value")),
        local_frame(spark, [(v,) for d, s in sorted(set(forced)) for v in (d, s)]
                    + [(k,) for k in (*RECREATABLE, *DEPLOYABLE)], NAMES),
    ]
    return reduce(DataFrame.unionByName, names).distinct()


def key_id(columns: list[str], seed: int) -> Column:
    """A key's id: its ``xxhash64`` with ``seed``, the sign bit cleared (the module's docstring)."""
    return F.xxhash64(F.lit(seed).cast("long"), *columns).bitwiseAND(F.lit(SIGN_CLEARED))


def numbered_objects(objects: DataFrame, edges: DataFrame, seed: int) -> DataFrame:
    """``objects`` with an ``id`` each (and a row, of nulls but the key, for each object only an edge names)."""
    endpoints = (edges.select(*KEY).unionByName(edges.select(*(F.col(d).alias(k) for d, k in zip(DEP, KEY))))
                 .distinct())
    return objects.join(endpoints, list(KEY), "full_outer").withColumn("id", key_id(list(KEY), seed))


def numbered_names(names: DataFrame, seed: int) -> DataFrame:
    """``value, id``: the names, each with its id."""
    return names.select("value", key_id(["value"], seed).alias("id"))


def id_clashes(objects: DataFrame, names: DataFrame) -> DataFrame:
    """``kind, id`` of each id two keys of one kind share (none but once in many millions of runs): only the ids
    travel, the keys are looked up for a clash found (``clash_detail``)."""
    ids = (objects.select(F.lit("objects").alias("kind"), "id")
           .unionByName(names.select(F.lit("names").alias("kind"), "id")))
    return ids.groupBy("kind", "id").count().where(F.col("count") > 1).drop("count")


def clash_detail(objects: DataFrame, names: DataFrame, kind: str, id_: int) -> str:
    """``kind`` and the first two keys with id ``id_`` (a Spark job; only for a clash found)."""
    if kind == "objects":
        keys = objects.where(F.col("id") == id_).select(F.concat_ws(".", *KEY).alias("key"))
    else:
        keys = names.where(F.col("id") == id_).select(F.col("value").alias("key"))
    found = sorted(r["key"] for r in keys.collect())
    return f"{kind} {found[0]} and {found[1]}"


def dictionary(objects: DataFrame, names: DataFrame) -> DataFrame:
    """``kind, p0, p1, p2, id`` (``interning.DICTIONARY``): ids back to names, for naming the results."""
    return (objects.select(F.lit(OBJECT_DOMAIN).alias("kind"), *(F.col(k).alias(p) for k, p in zip(KEY, PARTS)), "id")
            .unionByName(names.select(F.lit("name").alias("kind"), F.col("value").alias("p0"), F.lit("").alias("p1"),
                                      F.lit("").alias("p2"), "id")))


def interned_objects(objects: DataFrame, names: DataFrame) -> DataFrame:
    """The numbered objects with the ids of their names (database, schema, clusters, kinds) and flags."""
    frame = objects
    for column in ("database", "schema", "new_cluster", "deployed_cluster", "new_kind", "deployed_kind",
                   "member_kind"):
        frame = frame.join(names.select(F.col("value").alias(column), F.col("id").alias(f"{column}_id")).hint(
            "shuffle_hash"), column, "left")
    flags = ("in_old", "in_new", "deployed", "member", "new_replacement", "member_replacement", "capable",
             "has_upstream")
    return frame.where(F.col("database").isNotNull() & (F.col("in_old") | F.col("in_new"))).select(
        "id", *(f"{c}_id" for c in ("database", "schema", "new_cluster", "deployed_cluster", "new_kind",
                                    "deployed_kind", "member_kind")),
        "change", *(F.coalesce(F.col(c), F.lit(False)).alias(c) for c in flags))


def interned_edges(edges: DataFrame, objects: DataFrame) -> DataFrame:
    """``c0, c1, new``: each dependency as the ids of the reader and what it reads."""
    ids = objects.select(*KEY, "id")
    return (edges.join(ids.withColumnRenamed("id", "c0"), list(KEY))
            .join(ids.select(*(F.col(k).alias(d) for k, d in zip(KEY, DEP)), F.col("id").alias("c1")), DEP)
            .select("c0", "c1", "new"))


def interned_indexes(indexes: DataFrame, objects: DataFrame, names: DataFrame) -> DataFrame:
    """``c0, c1, c2``: the new project's indexes as the ids of object, index name and cluster."""
    ids = objects.select(*KEY, F.col("id").alias("c0"))
    named = names.select("value", "id")
    return (indexes.where(F.col("cluster").isNotNull()).join(ids, list(KEY))
            .join(named.select(F.col("value").alias("index_name"), F.col("id").alias("c1")), "index_name")
            .join(named.select(F.col("value").alias("cluster"), F.col("id").alias("c2")), "cluster")
            .select("c0", "c1", "c2"))


def interned_forced(forced: DataFrame, names: DataFrame) -> DataFrame:
    """``c0, c1``: the forced schemas as the ids of their database and schema."""
    named = names.select("value", "id")
    return (forced.join(named.select(F.col("value").alias("database"), F.col("id").alias("c0")), "database")
            .join(named.select(F.col("value").alias("schema"), F.col("id").alias("c1")), "schema").select("c0", "c1"))


def interned_clusters(indexes: DataFrame, names: DataFrame) -> DataFrame:
    """``c0``: the clusters of the old snapshot's indexes, as ids."""
    return (indexes.where(F.col("cluster").isNotNull()).select("cluster").distinct()
            .join(names.select(F.col("value").alias("cluster"), F.col("id").alias("c0")), "cluster").select("c0"))


@dataclass
class Interned:
    """The interned tables (held) and the numbered names."""

    objects: Batch
    edges: Batch
    indexes: Batch
    names: Batch
    forced: Batch         # c0, c1: the forced schemas' database and schema ids
    old_clusters: Batch   # c0: the clusters the old snapshot's indexes run on
    defined_clusters: Batch | None = None  # c0: the clusters the project defines, where every other cluster it
    # uses exists outside it (mz-deploy's: created by its apply, or by hand); None: the project defines none

    def relations(self, clusters: bool) -> dict[str, DataFrame]:
        """Every base relation of both programs (``model.BASE_RELATIONS``, ``PLAN_RELATIONS``) as ``c0..``."""
        o, e, names = self.objects.frame, self.edges.frame, self.names.frame

        def objects(where: Column, *columns: str) -> DataFrame:
            return o.where(where).select(*(F.col(c).alias(f"c{i}") for i, c in enumerate(columns)))

        def kinds(values) -> DataFrame:
            return names.where(F.col("value").isin(*values)).select(F.col("id").alias("c0"))

        new_clusters = objects(F.col("in_new") & F.col("new_cluster_id").isNotNull(), "new_cluster_id").unionByName(
            self.indexes.frame.select(F.col("c2").alias("c0"))).distinct()
        deployed_clusters = objects(F.col("deployed") & F.col("deployed_cluster_id").isNotNull(),
                                    "deployed_cluster_id").unionByName(self.old_clusters.frame)
        if self.defined_clusters is not None:  # there already, whatever the deployed project ran on them
            deployed_clusters = deployed_clusters.unionByName(
                new_clusters.join(self.defined_clusters.frame, "c0", "left_anti"))

        def members_of_kind(values) -> DataFrame:
            wanted = kinds(values).withColumnRenamed("c0", "member_kind_id")
            return o.where(F.col("member")).join(wanted, "member_kind_id", "left_semi").select(F.col("id").alias("c0"))

        return {
            # the dirty rules'
            "ChangedStmt": objects(F.col("change").isNotNull(), "id"),
            "ForcedSchema": self.forced.frame,
            "ObjectInSchema": objects(F.col("member"), "id", "database_id", "schema_id"),
            "DependsOn": e.where(F.col("new")).select("c0", "c1"),
            "StmtUsesCluster": objects(F.col("in_new") & F.col("new_cluster_id").isNotNull(), "id", "new_cluster_id"),
            "IndexUsesCluster": self.indexes.frame,
            "IsSink": members_of_kind(["sink"]),
            "IsReplacement": objects(F.col("member") & F.col("member_replacement"), "id"),
            "IsApplyManaged": members_of_kind(APPLY_MANAGED),
            "ClusterBoundary": new_clusters,
            # the plan's
            "Added": objects(F.col("change") == "added", "id"),
            "Modified": objects(F.col("change") == "modified", "id"),
            "Deleted": objects(F.col("change") == "deleted", "id"),
            "NewObject": objects(F.col("in_new"), "id"),
            "NewKind": objects(F.col("in_new"), "id", "new_kind_id"),
            "NewOn": objects(F.col("in_new") & F.col("new_cluster_id").isNotNull(), "id", "new_cluster_id"),
            "Deployed": objects(F.col("deployed"), "id"),
            "DeployedKind": objects(F.col("deployed"), "id", "deployed_kind_id"),
            "DeployedOn": objects(F.col("deployed") & F.col("deployed_cluster_id").isNotNull(), "id",
                                  "deployed_cluster_id"),
            "OnACluster": objects(F.col("deployed") & F.col("deployed_cluster_id").isNotNull(), "id"),
            "InSchema": objects(F.lit(True), "id", "database_id", "schema_id"),
            "Reads": e.select("c0", "c1"),
            "Capable": objects(F.col("capable"), "id"),
            "HasUpstream": objects(F.col("in_new") & F.col("has_upstream"), "id"),
            "KnownSchema": objects(F.col("in_old"), "database_id", "schema_id").distinct(),
            "NewSchema": objects(F.col("in_new"), "database_id", "schema_id").distinct(),
            "DeployedCluster": deployed_clusters.where(F.lit(clusters)).distinct(),
            "NewCluster": new_clusters.where(F.lit(clusters)),
            "Deployable": kinds(DEPLOYABLE),
            "Recreatable": kinds(RECREATABLE),
            "SinkKind": kinds(["sink"]),
        }

