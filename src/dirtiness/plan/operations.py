"""What both strategies plan from, and the shape of one plan row.

A plan row is one operation: ``phase, phase_order, step, action,
object_type, database, schema, name, kind, target_schema, statement,
destructive, verbatim, reason``; ``seq`` is added when the strategies' rows
are put in order. While planning, a row also carries ``error`` (a statement
that could not be written), checked before anything is published.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.iteration import Holding
from ..inputs.snapshot import Snapshot
from .dialect import Dialect
from .statements import quoted

DEPLOYABLE = ("view", "materialized-view")        # staged and swapped by blue-green
RECREATABLE = ("view", "materialized-view", "sink")  # dropped and created again when dirty
STATEFUL = ("table", "source", "table-from-source")  # dropping loses data: destructive

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
class PlanInputs:
    """The dirty sets of a run and the two snapshots they came from."""

    dirty_stmts: DataFrame     # database, schema, name, kind, change, ...
    dirty_clusters: DataFrame  # cluster, ...
    dirty_schemas: DataFrame   # database, schema, ...
    old: Snapshot
    new: Snapshot
    dialect: Dialect
    suffix: str                # appended to staged schema and cluster names, e.g. "_dpl3f2a1c09"
    holding: Holding           # the engine's switches, for the plan's own loops
    verbatim_kinds: tuple[str, ...] = ()  # kinds whose unparseable SQL is carried as written


def deploy_suffix(run_id: str, template: str = "dpl{hash8}") -> str:
    """``_`` + the template filled from the run id: ``{hash8}`` (8 hex of its SHA-1) or ``{run_id}`` (slugged)."""
    slug = re.sub(r"[^a-z0-9_]+", "_", run_id.lower()).strip("_")
    digest = hashlib.sha1(run_id.encode()).hexdigest()[:8]
    return "_" + template.replace("{hash8}", digest).replace("{run_id}", slug)


def operations(frame: DataFrame, phase: str, phase_order: int, action: str | Column, object_type: str, *,
               step: Column, statement: Column, database: Column | None = None, schema: Column | None = None,
               name: Column | None = None, kind: Column | None = None, target_schema: Column | None = None,
               destructive: Column | None = None) -> DataFrame:
    """Plan rows from ``frame``: one per row, columns defaulting to the frame's columns or null."""
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
        statement.alias("statement"),
        (destructive if destructive is not None else F.lit(False)).alias("destructive"),
        pick(None, "verbatim", F.lit(False)).alias("verbatim"),
        pick(None, "reason").alias("reason"),
        pick(None, "error").alias("error"),
    )


def cluster_creations(missing: DataFrame, dialect: Dialect, phase: str, phase_order: int) -> DataFrame:
    """Step 0: each cluster the new project needs and the database does not have (``name``), under its own name."""
    return operations(missing, phase, phase_order, "CREATE", "cluster", step=F.lit(0),
                      statement=dialect.render("create_cluster", cluster=quoted("name"), like=quoted("name")))
