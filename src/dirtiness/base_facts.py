"""Base facts (DESIGN §3): the relations the rule program starts from.

Each base relation is declared with the domain of every column and the
string columns of its facts table, so the checker knows arities and domains,
and interning knows which dictionary each column uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .snapshot import KEY, Snapshot

OBJECT_DOMAIN = "object"


@dataclass(frozen=True)
class Column:
    domain: str             # "object" (three name parts) or a name domain: database, schema, cluster, index
    fields: tuple[str, ...]  # the facts-table columns holding it


@dataclass(frozen=True)
class BaseRelation:
    name: str
    table: str
    columns: tuple[Column, ...]
    extra: tuple[str, ...] = ()  # carried in the facts table, not part of the relation

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(c.domain for c in self.columns)

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(f for c in self.columns for f in c.fields)) + list(self.extra)


_OBJECT = Column(OBJECT_DOMAIN, KEY)
_DEPENDENCY = Column(OBJECT_DOMAIN, ("dep_database", "dep_schema", "dep_name"))
_DATABASE = Column("database", ("database",))
_SCHEMA = Column("schema", ("schema",))
_CLUSTER = Column("cluster", ("cluster",))

BASE_RELATIONS = (
    BaseRelation("ChangedStmt", "changed_stmt", (_OBJECT,), extra=("change",)),
    BaseRelation("ForcedSchema", "forced_schema", (_DATABASE, _SCHEMA)),
    BaseRelation("ObjectInSchema", "object_in_schema", (_OBJECT, _DATABASE, _SCHEMA)),
    BaseRelation("DependsOn", "depends_on", (_OBJECT, _DEPENDENCY)),
    BaseRelation("StmtUsesCluster", "stmt_uses_cluster", (_OBJECT, _CLUSTER)),
    BaseRelation("IndexUsesCluster", "index_uses_cluster", (_OBJECT, Column("index", ("index_name",)), _CLUSTER)),
    BaseRelation("IsSink", "is_sink", (_OBJECT,)),
    BaseRelation("IsReplacement", "is_replacement", (_OBJECT,)),
    BaseRelation("ClusterBoundary", "cluster_boundary", (_CLUSTER,)),
)
BY_NAME = {r.name: r for r in BASE_RELATIONS}


def base_domains() -> dict[str, tuple[str, ...]]:
    return {r.name: r.domains for r in BASE_RELATIONS}


def extract_base_facts(spark: SparkSession, old: Snapshot, new: Snapshot, changed: DataFrame,
                       forced_schemas: list[tuple[str, str]]) -> dict[str, DataFrame]:
    """Every base relation as a DataFrame of its facts-table columns, without duplicates.

    Membership, sinks and replacements come from the new project; deleted
    objects contribute theirs from the old one, so a deleted object still
    dirties its schema and a deleted sink still does not.
    """
    deleted = (old.objects.join(changed.where(F.col("change") == "deleted").select(*KEY), list(KEY), "left_semi"))
    members = new.objects.unionByName(deleted)
    stmt_cluster = new.objects.where(F.col("cluster").isNotNull()).select(*KEY, "cluster")
    index_cluster = new.indexes.where(F.col("cluster").isNotNull()).select(*KEY, "index_name", "cluster")
    facts = {
        "ChangedStmt": changed.select(*KEY, "change"),
        "ForcedSchema": spark.createDataFrame(sorted(set(forced_schemas)), "database string, schema string"),
        "ObjectInSchema": members.select(*KEY),
        "DependsOn": new.dependencies.select(*KEY, "dep_database", "dep_schema", "dep_name"),
        "StmtUsesCluster": stmt_cluster,
        "IndexUsesCluster": index_cluster,
        "IsSink": members.where(F.col("kind") == "sink").select(*KEY),
        "IsReplacement": members.where(F.col("replacement")).select(*KEY),
        "ClusterBoundary": stmt_cluster.select("cluster").unionByName(index_cluster.select("cluster")),
    }
    return {name: frame.select(*BY_NAME[name].fields).distinct() for name, frame in facts.items()}
