"""How every fixed-point loop of the job holds its tuples: the rule engine's and the plan's.

- A ``Batch`` is materialized tuples with their exact count: rows on the
  driver read back as a local relation while small (as Spark's own
  recursive CTE does: joining one needs no shuffle and no job to broadcast
  it), checkpointed blocks when not.
- A ``Growing`` set is datafrog's ``Variable`` without provenance: the
  ``recent`` batch of the last round and ``stable`` batches of earlier
  rounds, merged so that their number stays logarithmic (the newest batch
  absorbs the last stable one while that one is at most twice as large).
  Subtracting what is known therefore anti-joins a handful of batches, not
  one part per round, and the plan of a round stays the same size however
  many rounds ran before it.
- ``Holding.hold_parts`` materializes one round's findings for several sets at
  once: one Spark action, split on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

ARROW_TYPES = {T.LongType(): pa.int64(), T.IntegerType(): pa.int32(), T.StringType(): pa.string(),
               T.BooleanType(): pa.bool_()}


@dataclass
class Batch:
    """Materialized tuples: local rows or checkpointed blocks, with their exact count."""

    frame: DataFrame
    count: int
    rows: list[tuple] | None = None  # the tuples themselves when local

    @property
    def local(self) -> bool:
        return self.rows is not None

    def project(self, columns: list[str]) -> "Batch":
        """The same tuples, fewer columns (the rows are not deduplicated)."""
        if not self.local:
            return Batch(self.frame.select(*columns), self.count)
        at = [self.frame.columns.index(c) for c in columns]
        rows = [tuple(row[i] for i in at) for row in self.rows]
        return local_batch(self.frame.sparkSession, rows, self.frame.select(*columns).schema)


def local_batch(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> Batch:
    return Batch(local_frame(spark, rows, schema), len(rows), rows)


def local_frame(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> DataFrame:
    """Rows on the driver as a local relation: from Arrow, Spark plans it as a local table with its
    exact size (from Python objects it would be an RDD of unknown size, joined by shuffling)."""
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    table = pa.table({f.name: pa.array(list(c), ARROW_TYPES[f.dataType]) for f, c in zip(schema.fields, columns)})
    return spark.createDataFrame(table, schema)


@dataclass(frozen=True)
class Holding:
    """The engine's switches for materializing what a loop finds, shared by every loop of a run.

    ``local_rows``: a result of at most this many rows becomes a local
    relation (0: never). ``lazy_checkpoints``: blocks are filled by the
    action that counts them (one job); a server that checkpoints only
    eagerly (Sail) turns this off and pays a job more for each held result.
    """

    local_rows: int = 10_000
    lazy_checkpoints: bool = True

    def checkpoint(self, frame: DataFrame) -> DataFrame:
        return frame.localCheckpoint(eager=not self.lazy_checkpoints)

    def hold(self, frame: DataFrame, try_local: bool = True) -> Batch:
        """A frame materialized: at most ``local_rows`` rows become a local relation (one job), more
        become checkpointed blocks (one job: the count fills them).

        ``try_local=False`` when the frame is known to be large: a failed attempt computes it twice.
        """
        if self.local_rows and try_local:
            rows = frame.limit(self.local_rows + 1).collect()
            if len(rows) <= self.local_rows:
                return local_batch(frame.sparkSession, rows, frame.schema)
        held = self.checkpoint(frame)
        return Batch(held, held.count())

    def hold_parts(self, frame: DataFrame, by: str, try_local: bool = True) -> dict[str, Batch]:
        """A frame materialized once and split on its column ``by``: one batch per value, without ``by``.

        Blocks are counted per part by the action that fills them; a round
        that turns out small is then collected from the blocks, so the next
        round joins it locally.
        """
        columns = [c for c in frame.columns if c != by]
        schema = frame.select(*columns).schema
        rows = frame.limit(self.local_rows + 1).collect() if self.local_rows and try_local else None
        if rows is None or len(rows) > self.local_rows:
            held = self.checkpoint(frame)
            counts = {row[by]: row["count"] for row in held.groupBy(by).count().collect()}
            if sum(counts.values()) > self.local_rows:
                return {part: Batch(held.where(F.col(by) == part).select(*columns), count)
                        for part, count in counts.items()}
            rows = held.collect()
        at, parts = frame.columns.index(by), {}
        for row in rows:
            parts.setdefault(row[at], []).append(tuple(row[c] for c in columns))
        return {part: local_batch(frame.sparkSession, found, schema) for part, found in parts.items()}


@dataclass
class Growing:
    """A set growing round by round: stable batches and the recent one, merged as datafrog merges."""

    schema: T.StructType
    stable: list[Batch] = field(default_factory=list)
    recent: Batch | None = None

    def batches(self) -> list[Batch]:
        return self.stable + ([self.recent] if self.recent is not None else [])

    def full(self, spark: SparkSession) -> DataFrame:
        """Every tuple so far: a union of the (few) batches."""
        batches = self.batches()
        if not batches:
            return spark.createDataFrame([], self.schema)
        return reduce(DataFrame.unionByName, [b.frame for b in batches])

    @property
    def count(self) -> int:
        return sum(b.count for b in self.batches())

    def advance(self, new: Batch | None) -> None:
        """The round is over: the recent tuples become stable, ``new`` (known to be new) recent."""
        if self.recent is not None:
            batch = self.recent
            while self.stable and self.stable[-1].count <= 2 * batch.count:
                batch = _merge(self.stable.pop(), batch)
            self.stable.append(batch)
        self.recent = new if new is not None and new.count else None


def _merge(older: Batch, newer: Batch) -> Batch:
    if older.local and newer.local:
        return local_batch(older.frame.sparkSession, older.rows + newer.rows, older.frame.schema)
    merged = older.frame.unionByName(newer.frame).localCheckpoint()  # one job: reads both, writes one batch
    return Batch(merged, older.count + newer.count)
