"""Choosing a strategy and putting its operations in one deterministic order."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..errors import InputError
from .operations import PLAN_COLUMNS, Planning
from .statements import RENDER
from .strategies import PLANNERS

TYPE_ORDER = ("schema", "cluster", "object", "index")


def build_plan(planning: Planning, strategy: str) -> tuple[DataFrame, DataFrame]:
    """The plan rows with ``seq`` (phase, step, object type, then names and action), their render inputs
    (``statements.RENDER``), and what staged statements read under another schema
    (``statements.MOVED``).

    ``seq`` orders rows by phase, step, object type, database, schema, then name, action and target
    schema. In a small catalog's session (one partition: ``Planning.one_partition``) one window numbers
    them. Otherwise not in a single-partition window: rows are numbered within their (phase, step, object
    type, database, schema) group in parallel, and each group starts after the rows of the groups before
    it (offsets from one small aggregation: one row per group). The same numbers either way; the first
    reads the operations once, not twice.
    """
    if strategy not in PLANNERS:
        raise InputError(f"--strategy {strategy!r}: expected one of {', '.join(PLANNERS)}")
    type_rank = F.create_map(*(x for i, t in enumerate(TYPE_ORDER) for x in (F.lit(t), F.lit(i))))
    operations, moved = PLANNERS[strategy].operations(planning)
    plan = (operations.select(*PLAN_COLUMNS.names, "error", *RENDER.names)
            .withColumn("type_rank", F.element_at(type_rank, F.col("object_type"))))
    group = ["phase_order", "step", "type_rank", "database", "schema"]
    group_order = [F.col("phase_order"), F.col("step"), F.col("type_rank"), F.col("database").asc_nulls_first(),
                   F.col("schema").asc_nulls_first()]
    names_order = [F.col("name").asc_nulls_first(), "action", F.col("target_schema").asc_nulls_first()]
    if planning.one_partition:
        numbered = plan.select("*", F.row_number().over(Window.orderBy(*group_order, *names_order)).alias("seq"))
    else:
        offsets = (plan.groupBy(*group).count()
                   .select(*(F.col(c).alias(f"g_{c}") for c in group),
                           (F.sum("count").over(Window.orderBy(*group_order)) - F.col("count")).alias("offset")))
        numbered = (plan.withColumn("n", F.row_number().over(Window.partitionBy(*group).orderBy(*names_order)))
                    .join(offsets, [F.col(c).eqNullSafe(F.col(f"g_{c}")) for c in group])
                    .withColumn("seq", F.col("offset") + F.col("n")))
    return numbered.select(*PLAN_COLUMNS.names[:4], F.col("seq").cast("int").alias("seq"),
                           *PLAN_COLUMNS.names[4:], "error", *RENDER.names), moved


def plan_columns() -> list[str]:
    """The columns of a ``ddl_plan`` row, in order."""
    return [*PLAN_COLUMNS.names[:4], "seq", *PLAN_COLUMNS.names[4:]]
