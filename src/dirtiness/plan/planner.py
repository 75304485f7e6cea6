"""Choosing a strategy, putting its operations in one deterministic order, and the checks before publishing."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..errors import InputError, PolicyError
from .blue_green import blue_green_plan
from .in_place import in_place_plan
from .operations import PLAN_COLUMNS, PlanInputs

STRATEGIES = {"blue-green": blue_green_plan, "in-place": in_place_plan}
TYPE_ORDER = ("schema", "cluster", "object", "index")


def build_plan(inputs: PlanInputs, strategy: str) -> DataFrame:
    """The plan rows with ``seq`` (phase, step, object type, then names and action), and ``error``.

    ``seq`` is numbered without a single-partition window: rows are numbered
    within their (phase, step, object type, database, schema) group in
    parallel, and each group starts after the rows of the groups before it
    (offsets from one small aggregation: one row per group).
    """
    if strategy not in STRATEGIES:
        raise InputError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    type_rank = F.create_map(*(x for i, t in enumerate(TYPE_ORDER) for x in (F.lit(t), F.lit(i))))
    plan = (STRATEGIES[strategy](inputs).select(*PLAN_COLUMNS.names, "error")
            .withColumn("type_rank", F.element_at(type_rank, F.col("object_type"))))
    group = ["phase_order", "step", "type_rank", "database", "schema"]
    group_order = [F.col("phase_order"), F.col("step"), F.col("type_rank"), F.col("database").asc_nulls_first(),
                   F.col("schema").asc_nulls_first()]
    within = Window.partitionBy(*group).orderBy(F.col("name").asc_nulls_first(), "action",
                                                 F.col("target_schema").asc_nulls_first())
    offsets = (plan.groupBy(*group).count()
               .select(*group, (F.sum("count").over(Window.orderBy(*group_order)) - F.col("count")).alias("offset")))
    numbered = plan.withColumn("n", F.row_number().over(within))
    joined = numbered.join(F.broadcast(offsets).select(*(F.col(c).alias(f"g_{c}") for c in group), "offset"),
                           [F.col(c).eqNullSafe(F.col(f"g_{c}")) for c in group])
    return joined.select(*PLAN_COLUMNS.names[:4], (F.col("offset") + F.col("n")).cast("int").alias("seq"),
                         *PLAN_COLUMNS.names[4:], "error")


def check_statements(plan: DataFrame, max_identifier_length: int | None, shown: int = 5) -> None:
    """Exit 2 when a statement cannot be written: SQL that cannot be rewritten, or a staging name too long
    for the database (PostgreSQL would truncate it silently)."""
    errors = plan.where(F.col("error").isNotNull()).select(F.col("error").alias("detail"))
    if max_identifier_length:
        longest = F.concat(F.col("target_schema"), F.lit("_swap"))  # the parking name of a swap is the longest
        errors = errors.unionByName(
            plan.where((F.col("object_type") == "schema") & (F.col("target_schema") != F.col("schema"))
                       & (F.octet_length(longest) > max_identifier_length))
            .select(F.concat(F.concat_ws(".", "database", "schema"), F.lit(": the staging name "), longest,
                             F.lit(f" is longer than {max_identifier_length} bytes")).alias("detail")))
    found = [r["detail"] for r in errors.distinct().orderBy("detail").limit(shown + 1).collect()]
    if found:
        more = " (and more)" if len(found) > shown else ""
        raise InputError("the plan cannot write these statements: " + "; ".join(found[:shown]) + more)


def refuse_destructive(plan: DataFrame, allowed: bool, shown: int = 5) -> None:
    """Exit 3 unless ``--allow-destructive``: a plan that drops tables or sources loses data."""
    if allowed:
        return
    rows = (plan.where(F.col("destructive")).orderBy("seq")
            .select(F.concat_ws(".", "database", "schema", "name").alias("object"), "kind").limit(shown + 1).collect())
    if rows:
        names = ", ".join(f"{r['object']} ({r['kind']})" for r in rows[:shown]) + (", ..." if len(rows) > shown else "")
        raise PolicyError(f"the plan drops stateful objects, refused without --allow-destructive: {names}")
