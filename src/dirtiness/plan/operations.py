"""What both strategies plan from, and the shape of one plan row.

A plan row is one operation: ``phase, phase_order, step, action,
object_type, database, schema, name, kind, target_schema, statement,
destructive, verbatim, reason``; ``seq`` is added when the strategies' rows
are put in order. While planning, a row also carries ``error`` (a statement
that could not be written), checked before anything is published.

The strategies write rows from ``Planning``: the decisions of the plan's
rules by name (``decisions``), the step of every object a phase orders
(``steps``) and the snapshots; they decide nothing themselves.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch
from ..model import CLUSTER_NAME, KEY
from .dialect import Dialect
from .statements import RENDER, quoted

STATEFUL = ("table", "source", "table-from-source")  # dropping loses data: destructive
SCHEMA = ["database", "schema"]
DEP = [f"dep_{k}" for k in KEY]

PLAN_COLUMNS = T.StructType([
    T.StructField("phase", T.StringType()),
    T.StructField("phase_order", T.IntegerType()),
    T.StructField("step", T.IntegerType()),
    T.StructField("action", T.StringType()),
    T.StructField("object_type", T.StringType()),
    T.StructField("database", T.StringType()),
    T.StructField("schema", T.StringType()),
    T.StructField("name", T.StringType()),
    T.StructField("kind", T.StringType()),
    T.StructField("target_schema", T.StringType()),
    T.StructField("statement", T.StringType()),
    T.StructField("destructive", T.BooleanType()),
    T.StructField("verbatim", T.BooleanType()),  # the object's SQL as written: the dialect cannot parse it
    T.StructField("reason", T.StringType()),     # why an object that is not dirty is in the plan
])


@dataclass
class Planning:
    """What a strategy writes its rows from."""

    decisions: Batch                 # the plan_decisions rows: relation, key columns, rule, cause, round, reason
    keys: dict[str, list[str]]       # plan relation -> its key columns (database, schema, name | cluster)
    steps: DataFrame                 # group, database, schema, name, step: each object's step in its phase
    new: DataFrame                   # key, kind, cluster, replacement, sql, change: the new project
    deployed: DataFrame              # key, kind, cluster: what the database holds before the plan
    dependencies: DataFrame          # key, dep_*: the new project's
    indexes: DataFrame               # key, index_name, cluster: the new project's
    dialect: Dialect
    suffix: str                      # appended to staged schema and cluster names, e.g. "_dpl3f2a1c09"
    verbatim_kinds: tuple[str, ...] = ()  # kinds whose unparseable SQL is carried as written
    cluster_definitions: DataFrame | None = None  # name, definition: the project's own (mz-deploy's clusters/)
    one_partition: bool = False      # a small catalog's session: every query runs in one partition anyway

    def decided(self, relation: str, with_reason: bool = True) -> DataFrame:
        """A plan relation's tuples by name (its key columns), with their reason: a view of the decisions."""
        columns = [*self.keys[relation], *(["reason"] if with_reason else [])]
        return self.decisions.frame.where(F.col("relation") == relation).select(*columns)

    def stepped(self, group: str, frame: DataFrame) -> DataFrame:
        """``frame`` (objects) with the step of each in ``group``."""
        return frame.join(self.steps.where(F.col("group") == group).drop("group"), list(KEY))

    def staging(self, column: str = "schema") -> Column:
        return F.concat(F.col(column), F.lit(self.suffix))

    def cluster_statement(self, clusters: DataFrame, name: Column) -> tuple[DataFrame, Column]:
        """``clusters`` (``name``) with what creates each as ``name`` (the quoted name it gets): its
        definition in the project where there is one (options and grants), else the dialect's template."""
        template = self.dialect.render("create_cluster", cluster=name, like=quoted("name"))
        if self.cluster_definitions is None:
            return clusters, template
        joined = clusters.join(self.cluster_definitions, "name", "left")
        defined = F.replace(F.col("definition"), F.lit(CLUSTER_NAME), name)
        return joined, F.when(F.col("definition").isNotNull(), defined).otherwise(template)


def deploy_suffix(run_id: str, template: str = "dpl{hash8}") -> str:
    """``_`` + the template filled from the run id: ``{hash8}`` (8 hex of its SHA-1) or ``{run_id}`` (slugged)."""
    slug = re.sub(r"[^a-z0-9_]+", "_", run_id.lower()).strip("_")
    digest = hashlib.sha1(run_id.encode()).hexdigest()[:8]
    return "_" + template.replace("{hash8}", digest).replace("{run_id}", slug)


def operations(frame: DataFrame, phase: str, phase_order: int, action: str | Column, object_type: str, *,
               step: Column, statement: Column | None = None, database: Column | None = None,
               schema: Column | None = None, name: Column | None = None, kind: Column | None = None,
               target_schema: Column | None = None, destructive: Column | None = None,
               render: dict[str, Column] | None = None) -> DataFrame:
    """Plan rows from ``frame``: one per row, columns defaulting to the frame's columns or null. A row's
    statement is ``statement`` (a template filled), or written later from the object's SQL (``render``:
    ``statements.to_render``)."""
    def pick(value: Column | None, column: str, default: Column | None = None) -> Column:
        if value is not None:
            return value
        if column in frame.columns:
            return F.col(column)
        return default if default is not None else F.lit(None).cast("string")

    return frame.select(
        F.lit(phase).alias("phase"), F.lit(phase_order).alias("phase_order"), step.cast("int").alias("step"),
        (action if isinstance(action, Column) else F.lit(action)).alias("action"), F.lit(object_type).alias("object_type"),
        pick(database, "database").alias("database"), pick(schema, "schema").alias("schema"),
        pick(name, "name").alias("name"), pick(kind, "kind").alias("kind"),
        (target_schema if target_schema is not None else F.lit(None).cast("string")).alias("target_schema"),
        (statement if statement is not None else F.lit(None).cast("string")).alias("statement"),
        (destructive if destructive is not None else F.lit(False)).alias("destructive"),
        F.lit(False).alias("verbatim"),
        pick(None, "reason").alias("reason"),
        F.lit(None).cast("string").alias("error"),
        *((render or {}).get(f.name, F.lit(None).cast(f.dataType)).alias(f.name) for f in RENDER.fields),
    )


def cluster_creations(missing: DataFrame, p: "Planning", phase: str, phase_order: int) -> DataFrame:
    """Step 0: each cluster the new project needs and the database does not have (``name``), under its own name."""
    missing, statement = p.cluster_statement(missing, quoted("name"))
    return operations(missing, phase, phase_order, "CREATE", "cluster", step=F.lit(0), statement=statement)
