"""The vocabulary every stage shares, with no engine behind it: the object key, object kinds and the
base relations with the facts tables that hold them (read-back imports this without pyspark)."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("table", "view", "materialized-view", "source", "table-from-source", "sink", "secret", "connection")
KEY = ("database", "schema", "name")

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


def facts_table(relation: str) -> str:
    """The table, under the output root, holding a base relation's facts."""
    return f"facts/{BY_NAME[relation].table}"
