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
earlier one needs. A second digest, its ``shape``, leaves out the statement's
hash and text but keeps whether the object changed (its ``ChangedStmt``
row): a new-side unit whose content changed and whose shape did not was
*restated* (edited in its statement only), which changes no fact and no
plan row but those carrying its SQL. Only a changed object of the new side
has one (null elsewhere, which Parquet keeps for nothing): an unchanged
object whose statement is edited changes, and the old side is what was
deployed.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Hold
from ..model import KEY
from ..wording import counted

UNIT_ROWS = T.StructType([T.StructField("side", T.StringType()), *(T.StructField(c, T.StringType()) for c in KEY),
                          T.StructField("content", T.BinaryType()), T.StructField("shape", T.BinaryType())])
CHANGES = ("added", "deleted", "edited")
RESTATED = "restated"  # a change of ``unit_changes``: a new-side unit edited in its statement's hash and text only
CHANGE_OF = "change_of"  # a unit this run has and the earlier one lacks, the reverse, or both
# of all of a run's units and of them by shape (``units_digests``), in its ``runs`` row as ``units_digest`` and
# ``shapes_digest``
DIGESTS = "digests"


def unit_contents(side: str, objects: DataFrame, dependencies: DataFrame, indexes: DataFrame,
                  changed: DataFrame) -> DataFrame:
    """``side, database, schema, name, content, shape`` of every object of one side (``UNIT_ROWS``); ``changed``
    (``changeset.diff.changed_stmt``): the object's ``change``, in its shape only (its content has the hash of
    its side, and the other side's unit the other), which a changed new-side object alone has."""
    deps = (dependencies.groupBy(*KEY)
            .agg(F.array_sort(F.collect_set(F.struct("dep_database", "dep_schema", "dep_name"))).alias("deps")))
    idx = (indexes.groupBy(*KEY)
           .agg(F.array_sort(F.collect_set(F.struct("index_name", "cluster", "key"))).alias("indexes")))
    related = [F.coalesce("deps", F.array()).alias("deps"), F.coalesce("indexes", F.array()).alias("indexes")]
    content = F.to_json(F.struct("kind", "hash", "cluster", "replacement", "sql", "tool_id", *related))
    shape = F.to_json(F.struct("kind", "cluster", "replacement", "tool_id", F.col("sql").isNull().alias("no_sql"),
                               "change", *related))
    return (objects.join(deps, list(KEY), "left").join(idx, list(KEY), "left")
            .join(changed.select(*KEY, "change"), list(KEY), "left")
            .select(F.lit(side).alias("side"), *KEY, _digest(content).alias("content"),
                    (F.when(F.col("change").isNotNull(), _digest(shape)) if side == "new" else F.lit(None))
                    .cast("binary").alias("shape")))


def cluster_units(spark: SparkSession, definitions: dict[str, str]) -> DataFrame:
    """The new project's cluster definitions as units (``UNIT_ROWS``; no shape: a definition edited is edited): a
    local relation, no job."""
    rows = [("cluster", "", "", name, definition) for name, definition in sorted(definitions.items())]
    frame = spark.createDataFrame(rows, "side string, database string, schema string, name string, text string")
    return frame.select("side", *KEY, _digest(F.col("text")).alias("content"), F.lit(None).cast("binary").alias("shape"))


def _digest(text: Column) -> Column:
    return F.unhex(F.substring(F.sha2(text, 256), 1, 32))  # 128 bits


def hash_sum(*columns: Column | str) -> Column:
    """An aggregate: the exact sum of the rows' 64-bit hashes of ``columns`` (0 for none), whatever their order.
    Two sets of rows that differ have the same by a chance of about 2^-64."""
    return F.coalesce(F.sum(F.xxhash64(*columns).cast("decimal(38,0)")), F.lit(0).cast("decimal(38,0)"))


def units_digests(units: DataFrame) -> Hold:
    """One row, ``digests``: the digest of all ``units`` and their digest by shape (``split_digests``), held split
    by it, so the hold's counts give both and nothing is collected; one aggregation, so the units are computed
    once for both. The first is how many units there are and the ``hash_sum`` of their contents: a run compares
    it with the one the run it starts from recorded before it reads that run's units, which only a change needs.
    The second sums each unit by its shape where it has one, else by its content. A unit has a shape where its
    object changed, and a change of that (its ``ChangedStmt`` row) is in its shape, so while the first differs
    from that run's, the second is that run's only when every unit that changed was restated: a run knows it
    from the hold that checks its inputs, with no key numbered, and finds which units in the hold that takes
    that run's answer."""
    count = F.count(F.lit(1)).cast("string")
    by_content = F.concat_ws(":", count, hash_sum("side", *KEY, "content").cast("string"))
    by_shape = F.concat_ws(":", count, hash_sum("side", *KEY, F.col("shape").isNull(),
                                                F.coalesce(F.col("shape"), F.col("content"))).cast("string"))
    return Hold(units.groupBy().agg(F.concat_ws(" ", by_content, by_shape).alias(DIGESTS)), split=DIGESTS)


def split_digests(digests: str) -> tuple[str, str]:
    """The units' digest and their digest by shape, from the value of ``units_digests``."""
    by_content, by_shape = digests.split(" ")
    return by_content, by_shape


def unit_changes(units: DataFrame, earlier: DataFrame) -> Hold:
    """``side, database, schema, name, change, change_of`` of every unit added, deleted, edited or restated
    (``RESTATED``) since ``earlier`` (the units of the run this one starts from), held split by ``CHANGE_OF``
    (``side:change``): the hold counts them (``counts_of``), so nothing is collected to learn what changed.
    A unit without a shape (kept by an earlier version) is edited, never restated."""
    keys = ["side", *KEY]
    joined = (units.select(*keys, F.col("content").alias("now"), F.col("shape").alias("shape_now"))
              .join(earlier.select(*keys, F.col("content").alias("then"), F.col("shape").alias("shape_then")),
                    keys, "full_outer"))
    restated = (F.col("side") == "new") & (F.col("shape_now") == F.col("shape_then"))
    change = (F.when(F.col("then").isNull(), F.lit("added")).when(F.col("now").isNull(), F.lit("deleted"))
              .when((F.col("now") != F.col("then")) & F.coalesce(restated, F.lit(False)), F.lit(RESTATED))
              .when(F.col("now") != F.col("then"), F.lit("edited")))
    changed = joined.select(*keys, change.alias("change")).where(F.col("change").isNotNull())
    return Hold(changed.withColumn(CHANGE_OF, F.concat_ws(":", "side", "change")), split=CHANGE_OF)


def counts_of(counts: dict[str, int]) -> dict[str, dict[str, int]]:
    """``{side: {change: units}}`` from the counts of a held ``unit_changes`` (``{"new:edited": 2}``), every
    side and change present (0 where none); a restated unit is an edited one."""
    changes = {side: {change: 0 for change in CHANGES} for side in ("old", "new")}
    for change_of, units in counts.items():
        side, change = change_of.split(":")
        changes["new" if side == "cluster" else side]["edited" if change == RESTATED else change] += units
    return changes


def restated_only(counts: dict[str, int]) -> int:
    """How many units were restated when every change of a held ``unit_changes`` is a restatement (0 when
    another change is among them, or none): a run that may take its base run's answer and render again the
    plan rows of those statements."""
    restated = counts.get(f"new:{RESTATED}", 0)
    return restated if restated and restated == sum(counts.values()) else 0


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
