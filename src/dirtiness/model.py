"""The vocabulary every stage shares, with no engine behind it: the object key, object kinds, the base
relations of the dirty rules with the facts tables that hold them, and those of the plan's rules
(read-back imports this without pyspark)."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("table", "view", "materialized-view", "source", "table-from-source", "sink", "secret", "connection")
KEY = ("database", "schema", "name")
# Created and changed outside a deploy (mz-deploy's `apply`): never staged, swapped or dropped by one.
APPLY_MANAGED = ("table", "table-from-source", "source", "connection", "secret")

# blue-green and in-place plan DDL (their rules: plan.rules); none plans nothing: the dirty sets are the
# answer (dbt builds the selection itself: `dirtiness select`).
STRATEGIES = ("blue-green", "in-place", "none")
NO_PLAN = "none"

OBJECT_DOMAIN = "object"
# Where a cluster's name goes in its definition (mz-deploy's clusters/*.sql): the plan fills in the name it
# creates, a staged copy's or the cluster's own.
CLUSTER_NAME = "\x00cluster\x00"


@dataclass(frozen=True)
class Column:
    domain: str             # "object" (three name parts) or a name domain: database, schema, cluster, index
    fields: tuple[str, ...]  # the facts-table columns holding it


@dataclass(frozen=True)
class BaseRelation:
    name: str
    table: str | None  # its facts table under the output root (None: not written)
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
_KIND = Column("kind", ("kind",))

BASE_RELATIONS = (
    BaseRelation("ChangedStmt", "changed_stmt", (_OBJECT,), extra=("change",)),
    BaseRelation("ForcedSchema", "forced_schema", (_DATABASE, _SCHEMA)),
    BaseRelation("ObjectInSchema", "object_in_schema", (_OBJECT, _DATABASE, _SCHEMA)),
    BaseRelation("DependsOn", "depends_on", (_OBJECT, _DEPENDENCY)),
    BaseRelation("StmtUsesCluster", "stmt_uses_cluster", (_OBJECT, _CLUSTER)),
    BaseRelation("IndexUsesCluster", "index_uses_cluster", (_OBJECT, Column("index", ("index_name",)), _CLUSTER)),
    BaseRelation("IsSink", "is_sink", (_OBJECT,)),
    BaseRelation("IsReplacement", "is_replacement", (_OBJECT,)),
    BaseRelation("IsApplyManaged", "is_apply_managed", (_OBJECT,)),
    BaseRelation("ClusterBoundary", "cluster_boundary", (_CLUSTER,)),
)
BY_NAME = {r.name: r for r in BASE_RELATIONS}

# The plan's rules (conf/rules/plan_*.dl) read the dirty sets and these facts about both snapshots
# (changeset/catalog.py). "Deployed" is what the database holds before the plan: the old snapshot, and what
# the new one lists without having added it.
DIRTY_SETS = {"DirtyStmt": "dirty_stmts", "DirtyCluster": "dirty_clusters", "DirtySchema": "dirty_schemas"}
PLAN_RELATIONS = (
    BaseRelation("DirtyStmt", None, (_OBJECT,)),
    BaseRelation("DirtyCluster", None, (_CLUSTER,)),
    BaseRelation("DirtySchema", None, (_DATABASE, _SCHEMA)),
    BaseRelation("ChangedStmt", None, (_OBJECT,)),
    BaseRelation("Added", None, (_OBJECT,)),
    BaseRelation("Modified", None, (_OBJECT,)),
    BaseRelation("Deleted", None, (_OBJECT,)),
    BaseRelation("NewObject", None, (_OBJECT,)),
    BaseRelation("NewKind", None, (_OBJECT, _KIND)),
    BaseRelation("NewOn", None, (_OBJECT, _CLUSTER)),
    BaseRelation("Deployed", None, (_OBJECT,)),
    BaseRelation("DeployedKind", None, (_OBJECT, _KIND)),
    BaseRelation("DeployedOn", None, (_OBJECT, _CLUSTER)),
    BaseRelation("OnACluster", None, (_OBJECT,)),                # deployed on some cluster
    BaseRelation("InSchema", None, (_OBJECT, _DATABASE, _SCHEMA)),  # every object of either snapshot
    BaseRelation("Reads", None, (_OBJECT, _DEPENDENCY)),          # the dependencies of both snapshots
    BaseRelation("Capable", None, (_OBJECT,)),                   # a replacement the dialect applies in place
    BaseRelation("HasUpstream", None, (_OBJECT,)),               # reads a relation (not a connection or secret)
    BaseRelation("KnownSchema", None, (_DATABASE, _SCHEMA)),      # schemas the old snapshot shows
    BaseRelation("NewSchema", None, (_DATABASE, _SCHEMA)),
    BaseRelation("DeployedCluster", None, (_CLUSTER,)),           # run on by deployed objects or indexes
    BaseRelation("NewCluster", None, (_CLUSTER,)),                # run on by the new project's objects or indexes
    BaseRelation("Deployable", None, (_KIND,)),                   # staged and swapped by blue-green
    BaseRelation("Recreatable", None, (_KIND,)),                  # dropped and created again when dirty
    BaseRelation("SinkKind", None, (_KIND,)),
)
PLAN_BY_NAME = {r.name: r for r in PLAN_RELATIONS}
def base_domains() -> dict[str, tuple[str, ...]]:
    return {r.name: r.domains for r in BASE_RELATIONS}


def plan_domains() -> dict[str, tuple[str, ...]]:
    return {r.name: r.domains for r in PLAN_RELATIONS}


def facts_table(relation: str) -> str:
    """The table, under the output root, holding a base relation's facts."""
    return f"facts/{BY_NAME[relation].table}"


SELECTED_CHANGES = "selected_changes"  # a selective run's changes, each chosen or left as deployed, and why
UNITS = "units"  # each object of each side with a digest of what its facts come from (changeset.units)
DESIRED_OBJECTS = "desired_objects"  # the new project's objects (key, kind, hash): what apply records as deployed
