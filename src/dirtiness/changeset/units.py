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

from ..datalog.holding import Hold
from ..model import KEY
from ..wording import counted

UNIT_ROWS = T.StructType([T.StructField("side", T.StringType()), *(T.StructField(c, T.StringType()) for c in KEY),
                          T.StructField("content", T.BinaryType())])
CHANGES = ("added", "deleted", "edited")
CHANGE_OF = "change_of"  # a unit this run has and the earlier one lacks, the reverse, or both
DIGEST = "digest"  # of all of a run's units (``units_digest``), in its ``runs`` row as ``units_digest``


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


def hash_sum(*columns: Column | str) -> Column:
    """An aggregate: the exact sum of the rows' 64-bit hashes of ``columns`` (0 for none), whatever their order.
    Two sets of rows that differ have the same by a chance of about 2^-64."""
    return F.coalesce(F.sum(F.xxhash64(*columns).cast("decimal(38,0)")), F.lit(0).cast("decimal(38,0)"))


def units_digest(units: DataFrame) -> Hold:
    """One row, ``digest``: how many ``units`` and their ``hash_sum``; held split by it, so the hold's counts
    give it and nothing is collected. A run compares it with the one the run it starts from recorded before it
    reads that run's units, which only a change needs."""
    digest = F.concat_ws(":", F.count(F.lit(1)).cast("string"), hash_sum("side", *KEY, "content").cast("string"))
    return Hold(units.groupBy().agg(digest.alias(DIGEST)), split=DIGEST)


def unit_changes(units: DataFrame, earlier: DataFrame) -> Hold:
    """``side, change, change_of`` of every unit added, deleted or edited since ``earlier`` (the units of the run
    this one starts from), held split by ``CHANGE_OF`` (``side:change``): the hold counts them (``counts_of``),
    so nothing is collected to learn what changed."""
    keys = ["side", *KEY]
    joined = (units.select(*keys, F.col("content").alias("now"))
              .join(earlier.select(*keys, F.col("content").alias("then")), keys, "full_outer"))
    change = (F.when(F.col("then").isNull(), F.lit("added")).when(F.col("now").isNull(), F.lit("deleted"))
              .when(F.col("now") != F.col("then"), F.lit("edited")))
    changed = joined.select("side", change.alias("change")).where(F.col("change").isNotNull())
    return Hold(changed.withColumn(CHANGE_OF, F.concat_ws(":", "side", "change")), split=CHANGE_OF)


def counts_of(counts: dict[str, int]) -> dict[str, dict[str, int]]:
    """``{side: {change: units}}`` from the counts of a held ``unit_changes`` (``{"new:edited": 2}``), every
    side and change present (0 where none)."""
    changes = {side: {change: 0 for change in CHANGES} for side in ("old", "new")}
    for change_of, units in counts.items():
        side, change = change_of.split(":")
        changes["new" if side == "cluster" else side][change] += units  # a cluster definition: the new project's
    return changes


def left_none(changes: dict[str, dict[str, int]], units: int) -> bool:
    """Whether the run compared with left no units: every one of this run's was added, none deleted or edited."""
    added = sum(side["added"] for side in changes.values())
    return units > 0 and added == units == changed_total(changes)


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
