"""How a run materializes what it computes: any number of frames in one Spark job.

- A ``Batch`` is materialized tuples with their exact count: rows on the
  driver, read back as a local relation, while small (as Spark's own
  recursive CTE does), or checkpointed blocks when not.
- ``Holding.hold_all`` materializes several frames with one action. Small
  ones come back as rows from one collect of their padded union (at most
  ``local_rows + 1`` rows ever reach the driver). Otherwise every frame is
  checkpointed lazily, hash-partitioned and sorted on the columns it will be
  joined on, so a later join reads it without a shuffle or a sort, and one
  counting query fills all the checkpoints at once.

Every job a run pays for goes through here or through the engine's rounds,
which hold their results the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Callable

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .size_estimate import without_size_estimate

PART = "_part"


class Batch:
    """Materialized tuples: local rows or checkpointed blocks, with their exact count.

    A local batch makes its frame only when something reads it, and a part of one (``part``,
    ``project``) is a view of its frame, not a local relation of its own: a run splits and projects many
    batches it only ever writes or reads row by row, and each local relation made costs dozens of calls
    into the JVM.
    """

    def __init__(self, frame: DataFrame | None, count: int | None, rows: list[tuple] | None = None,
                 counts: dict | None = None, schema: T.StructType | None = None,
                 spark: SparkSession | None = None, derive: Callable[[], DataFrame] | None = None,
                 over_rows: bool = False) -> None:
        self._frame, self.count, self.rows, self.counts = frame, count, rows, counts
        self.over_rows = over_rows  # a view of rows held on the driver (its count not known)
        self.schema = schema if schema is not None else frame.schema
        self._spark = spark if spark is not None else frame.sparkSession
        self._derive = derive

    @property
    def frame(self) -> DataFrame:
        if self._frame is None:
            self._frame = self._derive() if self._derive else local_frame(self._spark, self.rows, self.schema)
        return self._frame

    @property
    def spark(self) -> SparkSession:
        return self._spark

    @property
    def columns(self) -> list[str]:
        return self.schema.names

    @property
    def local(self) -> bool:
        return self.rows is not None

    @property
    def small(self) -> bool:
        """Rows on the driver or a view of them: what is computed from it is worth trying to hold as rows."""
        return self.local or self.over_rows

    def dicts(self) -> list[dict]:
        """Every row by column name: the local rows, or the blocks collected (a Spark job)."""
        if self.local:
            return [dict(zip(self.schema.names, row)) for row in self.rows]
        return [row.asDict() for row in self.frame.collect()]

    def part(self, by: str | None, value, columns: list[str] | dict[str, str]) -> "Batch":
        """The rows whose ``by`` is ``value`` (all of them: ``by`` None), with ``columns`` (a list, or output
        name -> column): filtered here when local, a view of the blocks otherwise (its count known when the
        batch was held split by ``by``)."""
        renamed = columns if isinstance(columns, dict) else {c: c for c in columns}
        if not self.local:
            frame = self.frame if by is None else self.frame.where(F.col(by) == F.lit(value))
            count = (self.count if by is None else
                     self.counts.get(value, 0) if self.counts is not None else None)
            return Batch(frame.select(*(F.col(source).alias(name) for name, source in renamed.items())), count)
        names = self.schema.names
        at = names.index(by) if by is not None else None
        picked = [names.index(c) for c in renamed.values()]
        schema = T.StructType([T.StructField(name, self.schema[source].dataType, True)
                               for name, source in renamed.items()])
        rows = [tuple(r[i] for i in picked) for r in self.rows if at is None or r[at] == value]

        def view() -> DataFrame:
            frame = self.frame if by is None else self.frame.where(F.col(by) == F.lit(value))
            return frame.select(*(F.col(source).alias(name) for name, source in renamed.items()))
        return Batch(None, len(rows), rows, schema=schema, spark=self._spark, derive=view)

    def project(self, columns: list[str]) -> "Batch":
        """The same tuples, fewer columns (the rows are not deduplicated)."""
        return self.part(None, None, columns)


def local_batch(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> Batch:
    return Batch(None, len(rows), rows, schema=schema, spark=spark)


def local_frame(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> DataFrame:
    """Rows on the driver as a local relation: from Arrow, Spark plans it as a local table with its
    exact size (from Python objects it would be an RDD). In one partition, so that a query over local
    relations alone joins and aggregates without shuffling (see ``in_one_partition``)."""
    return spark.createDataFrame(arrow_table(rows, schema), schema).coalesce(1)


def in_one_partition(frame: DataFrame, one_partition: bool) -> DataFrame:
    """A join of frames in one partition each (rows, ``local_frame``, or blocks ``Holding.single`` held by keys)
    said to be in one partition, as it is. Spark reports an inner join's output as partitioned like each of
    its inputs, not as one partition, and shuffles it again for the next join or aggregation; said so, a
    query over such frames alone runs as one stage (``spark.small_catalog_conf`` lets Spark keep it there)."""
    return frame.coalesce(1) if one_partition else frame


def arrow_table(rows: list[tuple], schema: T.StructType) -> pa.Table:
    """Rows of ``schema`` as an Arrow table, typed as Spark types its columns."""
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    return pa.Table.from_arrays([pa.array([_plain(v) for v in c], f.type) for f, c in zip(arrow, columns)],
                                schema=arrow)


def _plain(value):
    """A collected value as Arrow takes it: rows of a struct or a list of structs become dicts."""
    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def concat(batches: list[Batch], schema: T.StructType, spark: SparkSession) -> Batch:
    """Several batches of one schema as one: rows stay rows, blocks become a (lazy) union."""
    if not batches:
        return local_batch(spark, [], schema)
    if all(b.local for b in batches):
        if len(batches) == 1:
            return batches[0]
        return Batch(None, sum(b.count for b in batches), [r for b in batches for r in b.rows], schema=schema,
                     spark=spark, derive=lambda: reduce(DataFrame.unionByName, [b.frame for b in batches]))
    counts = [b.count for b in batches]
    return Batch(reduce(DataFrame.unionByName, [b.frame for b in batches]),
                 None if None in counts else sum(counts))


# Where checkpointed blocks are kept (``checkpoint_storage``). PySpark's storage levels are serialized:
# ``memory_and_disk`` is the JVM's MEMORY_AND_DISK_SER. ``default``: the server's own (Spark keeps Java
# objects in memory; Sail takes no storage level and keeps its checkpoints in its object store).
STORAGE = {"disk": StorageLevel.DISK_ONLY, "memory_and_disk": StorageLevel.MEMORY_AND_DISK, "default": None}


@dataclass(frozen=True)
class Hold:
    """A frame to materialize, and the columns later joins will read it by (blocks are partitioned and
    sorted on them; empty: as it comes)."""

    frame: DataFrame
    keys: tuple[str, ...] = ()
    split: str | None = None  # count the rows per value of this column too (``Batch.part`` reads them)


@dataclass(frozen=True)
class Holding:
    """The switches for materializing, shared by every stage of a run.

    ``local_rows``: results of at most this many rows in all become local
    relations (0: never). ``lazy_checkpoints``: blocks are filled by the
    action that counts them (one job); a server that checkpoints only eagerly
    (Sail) turns this off and pays a job more for each frame held as blocks.
    ``partitions``: how many hash partitions blocks held by keys get (the
    session's shuffle partitions, so that joins and aggregations on those
    keys find them already partitioned). ``storage``: where blocks are kept
    (``STORAGE``): as bytes on the executors' disk by default, never as Java
    objects in the heap, whose size Spark only estimates (at 1M objects a run
    holds some 16 million rows, and as objects they overran a 4 GB heap), and
    not in memory either: a block spilled from there is read back whole into
    the heap, and at 1M objects that overran a 1 GB driver.
    """

    local_rows: int = 10_000
    lazy_checkpoints: bool = True
    partitions: int = 1
    storage: str = "disk"

    @property
    def single(self) -> bool:
        """Every shuffle of the session ends in one partition (``spark.small_catalog_conf``): so do blocks held
        by keys for the joins that read them, and they are said to be (as rows are, ``in_one_partition``),
        so that a round or a step layer over them joins and aggregates where they are, in one stage. Blocks
        held as they come keep their partitions: the stage that makes them is not pulled into one task."""
        return self.partitions == 1

    def checkpoint(self, frame: DataFrame, keys: tuple[str, ...] | list[str] = (), partition: bool = False) -> DataFrame:
        """``frame`` held as blocks (lazily: the action that counts it fills it); with ``keys``, sorted on them
        within its partitions: in one partition said to be one when ``single``, else hash-partitioned on them
        first when ``partition`` (as the session's aggregations and joins on them are)."""
        if keys:
            if self.single:
                frame = frame.coalesce(1)
            elif partition:
                frame = frame.repartition(self.partitions, *keys)
            frame = frame.sortWithinPartitions(*keys)
        level = STORAGE[self.storage]
        if level is None:
            held = frame.localCheckpoint(eager=not self.lazy_checkpoints)
        else:
            held = frame.localCheckpoint(eager=not self.lazy_checkpoints, storageLevel=level)
        return without_size_estimate(held)

    def columnar(self, held: Batch, by: str) -> tuple[Batch, DataFrame | None]:
        """A batch of blocks that many queries read in parts, each a few columns of the rows of one ``by``
        value: cached in Spark's columnar form, sorted by ``by`` within partitions, where the blocks are kept
        (``storage``). A query then reads only the columns it uses and skips the column batches whose ``by``
        range excludes its value; a checkpoint's rows are read whole, every column of every row, by each.
        Filled by the first query that reads it (no job of its own). Returns the batch and the cached frame,
        which the caller must release (``unpersist``: a cache outlives its run). Local rows, and blocks kept
        where the server chooses (``storage: default``: Spark would cache Java objects in the heap), are
        returned as they are."""
        level = STORAGE[self.storage]
        if held.local or held.over_rows or level is None:
            return held, None
        cached = held.frame.sortWithinPartitions(by).persist(level)
        return Batch(cached, held.count, counts=held.counts), cached

    def hold(self, frame: DataFrame | Hold, try_local: bool = True) -> Batch:
        return self.hold_all({"_": frame}, try_local)["_"]

    def hold_all(self, frames: dict[str, DataFrame | Hold], try_local: bool = True) -> dict[str, Batch]:
        """Every frame materialized by one Spark action: as rows when all of them together have at most
        ``local_rows`` rows, else as blocks. ``try_local=False`` when they are known to be large (a failed
        attempt computes them twice)."""
        requests = {name: f if isinstance(f, Hold) else Hold(f) for name, f in frames.items()}
        if not requests:
            return {}
        if self.local_rows and try_local:
            held = self._as_rows(requests)
            if held is not None:
                return held
        return self._as_blocks(requests)

    def _as_rows(self, requests: dict[str, Hold]) -> dict[str, Batch] | None:
        packed, slots = _pack({name: r.frame for name, r in requests.items()})
        rows = packed.limit(self.local_rows + 1).collect()
        if len(rows) > self.local_rows:
            return None
        found: dict[str, list[tuple]] = {name: [] for name in requests}
        for row in rows:
            found[row[0]].append(tuple(row[i] for i in slots[row[0]]))
        spark = packed.sparkSession
        held = {name: local_batch(spark, found[name], r.frame.schema) for name, r in requests.items()}
        for name, request in requests.items():
            if request.split:
                at = request.frame.columns.index(request.split)
                held[name].counts = {}
                for row in found[name]:
                    held[name].counts[row[at]] = held[name].counts.get(row[at], 0) + 1
        return held

    def _as_blocks(self, requests: dict[str, Hold]) -> dict[str, Batch]:
        blocks = {}
        for name, request in requests.items():
            blocks[name] = self.checkpoint(request.frame, request.keys, partition=True)
        counted = reduce(DataFrame.unionByName, [
            b.select(F.lit(name).alias(PART), (F.col(requests[name].split).cast("string") if requests[name].split
                                               else F.lit(None).cast("string")).alias("value"))
            for name, b in blocks.items()])
        counts: dict[str, dict] = {}
        for row in counted.groupBy(PART, "value").count().collect():  # fills every checkpoint
            counts.setdefault(row[PART], {})[row["value"]] = row["count"]
        return {name: Batch(blocks[name], sum(counts.get(name, {}).values()),
                            counts=counts.get(name, {}) if requests[name].split else None) for name in requests}

    def map_arrow(self, held: Batch, function, schema: T.StructType) -> Batch:
        """``function`` (Arrow record batches in, record batches of ``schema`` out, as ``mapInArrow`` runs it)
        applied where the rows are: here for local rows, by Spark's Python workers for blocks (the result
        then lazily computed by whatever reads it)."""
        if not held.local:
            return Batch(held.frame.mapInArrow(function, schema), None)
        from pyspark.sql.pandas.types import to_arrow_schema

        table = arrow_table(held.rows, held.schema)
        out = pa.Table.from_batches(list(function(iter(table.to_batches()))), schema=to_arrow_schema(schema))
        rows = list(zip(*(out.column(i).to_pylist() for i in range(out.num_columns)))) if out.num_rows else []
        return local_batch(held.spark, rows, schema)


def _pack(frames: dict[str, DataFrame]) -> tuple[DataFrame, dict[str, list[int]]]:
    """Frames of different schemas as one union: a ``_part`` column, then one column per slot, a slot for
    each column of a type (padded with nulls); and, per frame, the positions of its columns."""
    kinds: list[T.DataType] = []
    for frame in frames.values():
        used: dict[T.DataType, int] = {}
        for field in frame.schema.fields:
            used[field.dataType] = used.get(field.dataType, 0) + 1
            if sum(1 for k in kinds if k == field.dataType) < used[field.dataType]:
                kinds.append(field.dataType)
    parts, slots = [], {}
    nulls = [F.lit(None).cast(k) for k in kinds]  # one padding column per slot, shared by every part
    for name, frame in frames.items():
        taken: list[int] = []
        columns: list = list(nulls)
        for field in frame.schema.fields:
            at = next(i for i, k in enumerate(kinds) if k == field.dataType and i not in taken)
            taken.append(at)
            columns[at] = F.col(field.name)
        slots[name] = [1 + i for i in taken]
        parts.append(frame.select(F.lit(name).alias(PART), *(c.alias(f"s{i}") for i, c in enumerate(columns))))
    # By position (every part's columns are the same slots, in the same order): cheaper to analyse than by name.
    return reduce(DataFrame.union, parts).coalesce(1), slots  # one task reads every part
