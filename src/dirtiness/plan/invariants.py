"""Invariants every plan must satisfy before it is published; a violation is a bug (exit 1)."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..snapshot import KEY
from .operations import PlanInputs

CREATING = ("stage", "post-swap", "setup")  # phases that build dependencies before dependents
DROPPING = ("teardown",)                   # phases that drop dependents before dependencies


class InvariantError(RuntimeError):
    """The plan breaks an invariant: named, with examples."""


def check_invariants(plan: DataFrame, inputs: PlanInputs, changed: DataFrame, strategy: str, shown: int = 3) -> None:
    checks = {
        "every changed object of the new project is dirty": _changed_not_dirty(inputs, changed),
        "each object appears at most once per phase": _repeated(plan),
        "every dependency between planned objects is respected by their steps": _out_of_order(plan, inputs),
    }
    if strategy == "blue-green":
        checks["every staged schema and cluster is swapped"] = _not_swapped(plan)
    tagged = [frame.select(F.lit(name).alias("invariant"), F.col("detail")) for name, frame in checks.items()]
    found = reduce(DataFrame.unionByName, tagged).limit(len(checks) * shown).collect()
    if found:
        first = found[0]["invariant"]
        examples = [r["detail"] for r in found if r["invariant"] == first][:shown]
        raise InvariantError(f"plan invariant violated: {first}: {'; '.join(examples)}")


def _show(*columns) -> F.Column:
    return F.concat_ws(".", *columns)


def _changed_not_dirty(inputs: PlanInputs, changed: DataFrame) -> DataFrame:
    return (changed.where(F.col("change") != "deleted").select(*KEY)
            .join(inputs.dirty_stmts.select(*KEY), list(KEY), "left_anti")
            .select(_show(*KEY).alias("detail")))


def _repeated(plan: DataFrame) -> DataFrame:
    return (plan.groupBy("phase", "object_type", "database", "schema", "name").count().where(F.col("count") > 1)
            .select(F.concat(F.col("phase"), F.lit(": "), F.col("object_type"), F.lit(" "),
                             _show("database", "schema", "name")).alias("detail")))


def _out_of_order(plan: DataFrame, inputs: PlanInputs) -> DataFrame:
    objects = plan.where(F.col("object_type") == "object").select("phase", *KEY, "step")
    found = []
    for phases, dependencies, later in ((CREATING, inputs.new.dependencies, "reader"),
                                        (DROPPING, inputs.old.dependencies, "source")):
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


def _not_swapped(plan: DataFrame) -> DataFrame:
    staged = plan.where((F.col("phase") == "stage") & F.col("object_type").isin("schema", "cluster"))
    swapped = plan.where(F.col("phase") == "swap")
    keys = ["object_type", "database", "schema", "name"]
    staged, swapped = staged.select(*keys).alias("st"), swapped.select(*keys).alias("sw")
    same = [F.col(f"st.{k}").eqNullSafe(F.col(f"sw.{k}")) for k in keys]
    return (staged.join(swapped, same, "left_anti")
            .select(F.concat(F.col("object_type"), F.lit(" "), _show("database", "schema", "name")).alias("detail")))
