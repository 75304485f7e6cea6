"""The units a run's base facts come from, each with a digest of its content, and what changed in them since
the run this one starts from.

A unit is an object of either side, old or new (Glean's unit of ownership):
its kind, statement hash and text, cluster, replacement flag, the schema its
key names, the dependencies it declares or its SQL reads (as resolved), and
its indexes. Every base fact of both rule programs is owned by one unit or a
few (a dependency by the object that has it, ``ChangedStmt`` by the old and
the new unit of one key), so a unit whose digest did not change supports the
same facts as before. The digest (the first 128 bits of the SHA-256 of the
unit's canonical JSON, as 16 bytes: the units of a run take about the room of
its facts) lets a later run find what changed by comparing one column per
unit, never field by field: the first thing a run that starts from an
earlier one needs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY
from ..wording import counted

UNIT_ROWS = T.StructType([T.StructField("side", T.StringType()), *(T.StructField(c, T.StringType()) for c in KEY),
                          T.StructField("content", T.BinaryType())])
CHANGES = ("added", "deleted", "edited")  # a unit this run has and the earlier one lacks, the reverse, or both


def unit_contents(side: str, objects: DataFrame, dependencies: DataFrame, indexes: DataFrame) -> DataFrame:
    """``side, database, schema, name, content`` of every object of one side (``UNIT_ROWS``)."""
    deps = (dependencies.groupBy(*KEY)
            .agg(F.array_sort(F.collect_set(F.struct("dep_database", "dep_schema", "dep_name"))).alias("deps")))
    idx = (indexes.groupBy(*KEY)
           .agg(F.array_sort(F.collect_set(F.struct("index_name", "cluster", "key"))).alias("indexes")))
    content = F.to_json(F.struct("kind", "hash", "cluster", "replacement", "sql", "tool_id",
                                 F.coalesce("deps", F.array()).alias("deps"),
                                 F.coalesce("indexes", F.array()).alias("indexes")))
    return (objects.join(deps, list(KEY), "left").join(idx, list(KEY), "left")
            .select(F.lit(side).alias("side"), *KEY, _digest(content).alias("content")))


def cluster_units(spark: SparkSession, definitions: dict[str, str]) -> DataFrame:
    """The new project's cluster definitions as units (``UNIT_ROWS``): a local relation, no job."""
    rows = [("cluster", "", "", name, definition) for name, definition in sorted(definitions.items())]
    frame = spark.createDataFrame(rows, "side string, database string, schema string, name string, text string")
    return frame.select("side", *KEY, _digest(F.col("text")).alias("content"))


def _digest(text: Column) -> Column:
    return F.unhex(F.substring(F.sha2(text, 256), 1, 32))  # 128 bits


def unit_changes(units: DataFrame, earlier: DataFrame) -> DataFrame:
    """``side, change, units``: how many units of each side were added, deleted or edited since ``earlier`` (the
    units of the run this one starts from); a side and change with none has no row."""
    keys = ["side", *KEY]
    joined = (units.select(*keys, F.col("content").alias("now"))
              .join(earlier.select(*keys, F.col("content").alias("then")), keys, "full_outer"))
    change = (F.when(F.col("then").isNull(), F.lit("added")).when(F.col("now").isNull(), F.lit("deleted"))
              .when(F.col("now") != F.col("then"), F.lit("edited")))
    return (joined.select("side", change.alias("change")).where(F.col("change").isNotNull())
            .groupBy("side", "change").agg(F.count(F.lit(1)).alias("units")))


def counts_of(rows: list[dict]) -> dict[str, dict[str, int]]:
    """``{side: {change: units}}`` from ``unit_changes`` rows, every side and change present (0 where none)."""
    counts = {side: {change: 0 for change in CHANGES} for side in ("old", "new")}
    for row in rows:  # a cluster definition is a unit of the new project
        counts["new" if row["side"] == "cluster" else row["side"]][row["change"]] += row["units"]
    return counts


def changed_total(changes: dict[str, dict[str, int]]) -> int:
    """Units added, deleted or edited on either side."""
    return sum(n for side in changes.values() for n in side.values())


def changed_units_line(changes: dict[str, dict[str, int]]) -> str:
    """``3 units changed (new: 1 added, 2 edited)``, or ``no unit changed``."""
    total = changed_total(changes)
    if not total:
        return "no unit changed"
    sides = "; ".join(f"{side}: " + ", ".join(f"{n} {change}" for change, n in kinds.items() if n)
                      for side, kinds in changes.items() if any(kinds.values()))
    return f"{counted(total, 'unit')} changed ({sides})"
