"""Run-tagged Delta tables under one output root, with two backends.

Every table holds rows of many runs, told apart by a ``run_id`` column; a run
writes its own files only, so replacing a run's rows (a retry) is one
transaction that adds the new files and removes that run's old ones (and, in
a file that a compaction gave rows of other runs too, rewrites it without
them).

Rows a run holds on the driver (a small catalog's facts, dirty sets and
plan; every run record) are written from Arrow by pyarrow and committed by
delta-rs: no Spark job. Rows held as Spark blocks are written by Spark.

Backends:
- ``spark``: native ``format("delta")`` (Databricks, EMR with Delta, Spark
  Connect servers with Delta).
- ``deltalake``: for sessions without the Delta jar. Spark writes plain
  parquet into a fresh folder inside the table; delta-rs commits those files
  to the Delta log from their parquet footers (no data re-read). The result is
  a real Delta table for Spark, delta-rs, DuckDB and Polars.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch, arrow_table
from .run_reads import RUN_ID, is_table, latest_of, latest_succeeded, run_dataset, succeeded_runs

_STAT_STRING_LIMIT = 64  # longer strings get no min/max (a truncated max would lie)


class DeltaSchemaError(RuntimeError):
    """A write whose schema differs from the table's other than by new trailing columns: refused."""


def choose_backend(spark: SparkSession, configured: str = "auto") -> str:
    if configured in ("spark", "deltalake"):
        return configured
    if configured != "auto":
        raise ValueError(f"delta backend must be auto, spark or deltalake, not {configured!r}")
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if "DeltaSparkSessionExtension" in extensions or os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return "spark"
    return "deltalake"


@dataclass
class DeltaStore:
    """The Delta tables under ``root``: ``store.replace_run("dirty_stmts", df, run_id)``."""

    spark: SparkSession
    root: str
    backend: str = "deltalake"

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def exists(self, name: str) -> bool:
        if self.backend == "spark":
            try:
                self.spark.read.format("delta").load(self.path(name)).schema
                return True
            except Exception:  # noqa: BLE001 - any failure to resolve means "no table"
                return False
        return is_table(self.path(name))

    def replace_run(self, name: str, rows: "Batch | DataFrame | pa.Table", run_id: str) -> int:
        """Write ``rows`` as run ``run_id``'s rows of table ``name`` (tagged with it here), replacing earlier
        ones; returns the number of rows written."""
        if self.backend == "spark":
            df = _frame(self.spark, rows)
            if RUN_ID not in df.columns:
                df = df.select(F.lit(run_id).alias(RUN_ID), *df.columns)
            df = df.localCheckpoint()
            literal = run_id.replace("'", "''")
            # a newer version's rows may add columns at the end, as the delta-rs backend allows (Sail refuses
            # any change of schema, mergeSchema or not)
            writer = df.write.format("delta").option("mergeSchema", "true")
            if self.exists(name):
                writer.mode("overwrite").option("replaceWhere", f"{RUN_ID} = '{literal}'").save(self.path(name))
            else:  # the first rows create the table (Sail refuses a replaceWhere with nothing to replace in)
                writer.mode("append").save(self.path(name))
            return df.count()
        table = _arrow(rows)
        if table is not None:
            return _commit_arrow(self.path(name), _tagged(table, run_id), replace_run=run_id)
        df = _frame(self.spark, rows)
        if RUN_ID not in df.columns:
            df = df.select(F.lit(run_id).alias(RUN_ID), *df.columns)
        return _commit_files(self.spark, self.path(name), df, replace_run=run_id)

    def append(self, name: str, rows: "DataFrame | pa.Table") -> int:
        if self.backend == "spark":
            df = _frame(self.spark, rows).localCheckpoint()
            df.write.format("delta").option("mergeSchema", "true").mode("append").save(self.path(name))
            return df.count()
        table = _arrow(rows)
        if table is not None:
            return _commit_arrow(self.path(name), table, replace_run=None)
        return _commit_files(self.spark, self.path(name), rows, replace_run=None)

    def latest_succeeded(self, name: str = "runs") -> dict | None:
        """The run record of the latest succeeded run: with delta-rs from the latest runs' files only
        (``run_reads``), through Spark (the run records, a small table) where delta-rs cannot read it."""
        if self.backend == "spark":
            return latest_of([r.asDict() for r in self.read(name).collect()])
        return latest_succeeded(self.path(name))

    def succeeded_runs(self, name: str = "runs") -> list[dict]:
        """Every succeeded run's record (a small table: a row per run)."""
        if self.backend == "spark":
            return [r.asDict() for r in self.read(name).where("status = 'succeeded'").collect()]
        return succeeded_runs(self.path(name))

    def read(self, name: str) -> DataFrame:
        if self.backend == "spark":
            return self.spark.read.format("delta").load(self.path(name))
        return _read(self.spark, self.path(name))

    def read_run(self, name: str, run_id: str) -> DataFrame:
        """Run ``run_id``'s rows of table ``name``: with delta-rs, from the files the Delta log's statistics say
        may hold them (not every run's files); with Spark's Delta, by its own data skipping."""
        if self.backend == "spark":
            return self.read(name).where(F.col(RUN_ID) == run_id)
        return _read(self.spark, self.path(name), run_id).where(F.col(RUN_ID) == run_id)


# --- deltalake backend -------------------------------------------------------


def _read(spark: SparkSession, path: str, run_id: str | None = None) -> DataFrame:
    """The table's active files (only those that may hold ``run_id``'s rows, if given) as a Spark frame."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    schema = spark_schema_of(table.schema().to_arrow())
    if run_id is None:
        uris = table.file_uris()
    else:  # the dataset's files are relative to the table's root
        uris = [f"{path.rstrip('/')}/{f}" for f in run_dataset(path, run_id).files]
    if not uris:
        return spark.createDataFrame([], schema)
    # Only the files the log says are active: reading the folder would also
    # pick up files removed by an earlier replace.
    return spark.read.schema(schema).parquet(*uris)


def _arrow(rows) -> pa.Table | None:
    """Rows on the driver as an Arrow table (local batches, Arrow tables); None for Spark data."""
    if isinstance(rows, pa.Table):
        return rows
    if isinstance(rows, Batch) and rows.local:
        return arrow_table(rows.rows, rows.schema)
    return None


def _frame(spark: SparkSession, rows) -> DataFrame:
    if isinstance(rows, Batch):
        return rows.frame
    if isinstance(rows, pa.Table):
        return spark.createDataFrame(rows, spark_schema_of(rows.schema))
    return rows


def _tagged(table: pa.Table, run_id: str) -> pa.Table:
    if RUN_ID in table.column_names:  # a run record carries its run id already
        return table
    return table.add_column(0, RUN_ID, pa.array([run_id] * table.num_rows, pa.string()))


def _new_folder() -> str:
    return f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}"


def _commit_arrow(table_path: str, table: pa.Table, replace_run: str | None) -> int:
    """Arrow rows written by pyarrow as one parquet file of a fresh folder, then committed like Spark's files."""
    arrow_schema = arrow_schema_of(spark_schema_of(table.schema))
    table = table.cast(arrow_schema)
    existing = None
    if is_table(table_path):  # refuse before writing anything
        from deltalake import DeltaTable

        existing = DeltaTable(table_path)
        _new_columns(table_path, existing.schema().to_arrow(), arrow_schema)
    folder = _new_folder()
    os.makedirs(os.path.join(table_path, folder))
    pq.write_table(table, os.path.join(table_path, folder, "part-00000.parquet"))
    # the table as just loaded commits the file written a moment later (loading it costs more than the write
    # once it holds thousands of runs' files); a commit that lost a race loads it again
    return _commit(table_path, folder, arrow_schema, replace_run, existing)


def _commit_files(spark: SparkSession, table_path: str, df: DataFrame, replace_run: str | None) -> int:
    from deltalake import DeltaTable

    arrow_schema = arrow_schema_of(df.schema)
    if is_table(table_path):  # refuse before writing anything
        _new_columns(table_path, DeltaTable(table_path).schema().to_arrow(), arrow_schema)
    folder = _new_folder()
    df.write.mode("error").parquet(os.path.join(table_path, folder))
    return _commit(table_path, folder, arrow_schema, replace_run)


def _commit(table_path: str, folder: str, arrow_schema: pa.Schema, replace_run: str | None, table=None) -> int:
    """The parquet files of ``folder`` committed to the table's Delta log (replacing ``replace_run``'s rows);
    ``table``: the table loaded already, if it exists."""
    from deltalake import DeltaTable, Schema
    from deltalake.exceptions import DeltaError
    from deltalake.transaction import CommitProperties, create_table_with_add_actions

    adds = _add_actions(table_path, folder)
    rows = sum(json.loads(a.stats)["numRecords"] for a in adds)

    for attempt in range(5):
        if table is None and not is_table(table_path):
            try:
                create_table_with_add_actions(table_path, Schema.from_arrow(arrow_schema), adds, mode="error")
                return rows
            except DeltaError:
                if not is_table(table_path):
                    raise
                # another writer created the table first: commit as an append below
        table = table if table is not None else DeltaTable(table_path)
        added = _new_columns(table_path, table.schema().to_arrow(), arrow_schema)
        if added:
            _add_columns(table, added)
            table = DeltaTable(table_path)
        removes = _run_files(table, table_path, replace_run) if replace_run is not None else []
        try:
            table.create_write_transaction(
                adds + removes, mode="append", schema=Schema.from_arrow(arrow_schema),
                commit_properties=CommitProperties(max_commit_retries=10),
            )
            return rows
        except DeltaError:
            if attempt == 4:
                raise
            table = None
            time.sleep(0.1 * (attempt + 1))


def _new_columns(table_path: str, existing, incoming: pa.Schema) -> list[pa.Field]:
    """The columns ``incoming`` adds at the end of the table's schema; any other difference is refused."""
    have = [(f.name, str(f.type)) for f in pa.schema(existing)]
    new = [(f.name, str(f.type)) for f in arrow_schema_of(spark_schema_of(incoming))]
    if new[:len(have)] != have:
        raise DeltaSchemaError(f"{table_path}: schema of the table {have} differs from the rows written {new}")
    return list(pa.schema(incoming))[len(have):]


def _add_columns(table, fields: list[pa.Field]) -> None:
    """Widen the table before appending rows with more columns (delta-rs would drop them silently)."""
    from deltalake import Schema

    table.alter.add_columns(list(Schema.from_arrow(pa.schema(fields)).fields))


def _run_files(table, table_path: str, run_id: str) -> list:
    """The actions that take ``run_id``'s rows out of the table: a remove for every active file that holds only
    its rows, and, for a file that holds them beside other runs' (as after a compaction, by delta-rs's
    ``optimize.compact`` or Databricks' OPTIMIZE), a remove and an add of a copy without them, written to a
    fresh folder. Which files may hold them: by the log's statistics; a file without them is read."""
    from deltalake.transaction import RemoveAction

    files = pa.table(table.get_add_actions(flatten=True))
    low, high = f"min.{RUN_ID}", f"max.{RUN_ID}"
    if {low, high} <= set(files.column_names):
        only = pc.fill_null(pc.and_(pc.equal(files[low], run_id), pc.equal(files[high], run_id)), False)
        may_hold = pc.fill_null(pc.and_(pc.less_equal(files[low], run_id), pc.greater_equal(files[high], run_id)),
                                True)  # no statistics: it may
        ours = files.filter(only).to_pylist()
        unsure = files.filter(pc.and_(may_hold, pc.invert(only))).to_pylist()
    else:
        ours, unsure = [], files.to_pylist()
    mixed = []
    for row in unsure:
        held = _run_ids_in_file(table, row["path"])
        if held == {run_id}:
            ours.append(row)
        elif run_id in held:
            mixed.append(row)
    now = int(time.time() * 1000)
    removes = [RemoveAction(path=row["path"], data_change=True, deletion_timestamp=now, size=row.get("size_bytes"))
               for row in ours + mixed]
    return removes + (_without_run(table, table_path, [row["path"] for row in mixed], run_id) if mixed else [])


def _table_fs(table_path: str) -> tuple[pafs.FileSystem, str]:
    return pafs.FileSystem.from_uri(os.path.abspath(table_path) if "://" not in table_path else table_path)


def _file_of(table, relative: str) -> tuple[pafs.FileSystem, str]:
    return pafs.FileSystem.from_uri(os.path.join(table.table_uri, relative))


def _run_ids_in_file(table, relative: str) -> set:
    fs, path = _file_of(table, relative)
    return set(pq.read_table(path, columns=[RUN_ID], filesystem=fs).column(RUN_ID).to_pylist())


def _without_run(table, table_path: str, relatives: list[str], run_id: str) -> list:
    """Add actions for copies of the given files without ``run_id``'s rows, written to a fresh folder of the
    table (a copy on write, as Delta's own DELETE makes; the originals stay until VACUUM)."""
    folder = _new_folder()
    fs, base = _table_fs(table_path)
    fs.create_dir(f"{base}/{folder}")
    for number, relative in enumerate(relatives):
        source_fs, path = _file_of(table, relative)
        rows = pq.read_table(path, filesystem=source_fs)
        kept = rows.filter(pc.fill_null(pc.not_equal(rows[RUN_ID], run_id), True))
        pq.write_table(kept, f"{base}/{folder}/part-{number:05d}.parquet", filesystem=fs)
    return _add_actions(table_path, folder)


def _add_actions(table_path: str, folder: str) -> list:
    from deltalake.transaction import AddAction

    fs, base = _table_fs(table_path)
    infos = fs.get_file_info(pafs.FileSelector(f"{base}/{folder}"))
    adds = []
    for info in sorted(infos, key=lambda i: i.path):
        name = os.path.basename(info.path)
        if not name.endswith(".parquet") or name.startswith((".", "_")):
            continue
        with fs.open_input_file(info.path) as handle:
            meta = pq.ParquetFile(handle).metadata
        adds.append(AddAction(
            path=f"{folder}/{name}", size=info.size, partition_values={},
            modification_time=int(info.mtime.timestamp() * 1000) if info.mtime else int(time.time() * 1000),
            data_change=True, stats=json.dumps(_stats(meta)),
        ))
    return adds


def _stats(meta: pq.FileMetaData) -> dict:
    """Delta file statistics from the parquet footer: numRecords, nullCount, min/max."""
    stats: dict = {"numRecords": meta.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    for c in range(meta.num_columns):
        column = meta.schema.column(c)
        if "." in column.path:  # nested: no stats
            continue
        per_second = _timestamp_unit(column.logical_type)
        lows, highs, nulls, complete = [], [], 0, True
        for g in range(meta.num_row_groups):
            s = meta.row_group(g).column(c).statistics
            if s is None or not s.has_null_count:
                complete = False
                break
            nulls += s.null_count
            if s.has_min_max:
                lows.append(s.min_raw if per_second else s.min)
                highs.append(s.max_raw if per_second else s.max)
        if not complete:
            continue
        stats["nullCount"][column.path] = nulls
        if lows and per_second:
            stats["minValues"][column.path] = _timestamp_stat(min(lows), per_second)
            stats["maxValues"][column.path] = _timestamp_stat(max(highs), per_second)
        elif lows and _stat_ok(lows) and _stat_ok(highs):
            stats["minValues"][column.path] = min(lows)
            stats["maxValues"][column.path] = max(highs)
    return stats


_TIMESTAMP_UNITS = {"milliseconds": 1_000, "microseconds": 1_000_000, "nanoseconds": 1_000_000_000}


def _timestamp_unit(logical_type) -> int | None:
    """Ticks per second of a UTC timestamp column (what Spark and this module write); None for any other."""
    if logical_type.type != "TIMESTAMP":
        return None
    described = json.loads(logical_type.to_json())
    return _TIMESTAMP_UNITS.get(described.get("timeUnit")) if described.get("isAdjustedToUTC") else None


def _timestamp_stat(value: int, per_second: int) -> str:
    """A timestamp statistic as Delta writes it: UTC, to the millisecond below (readers allow for the cut)."""
    milliseconds = value * 1_000 // per_second
    moment = datetime.fromtimestamp(milliseconds // 1_000, timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{milliseconds % 1_000:03d}Z"


def _stat_ok(values: list) -> bool:
    return all(isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= _STAT_STRING_LIMIT)
               for v in values)


# --- schema conversion -------------------------------------------------------

_TO_ARROW = {
    T.StringType: pa.string(), T.LongType: pa.int64(), T.IntegerType: pa.int32(),
    T.BooleanType: pa.bool_(), T.DoubleType: pa.float64(), T.ShortType: pa.int16(),
    T.TimestampType: pa.timestamp("us", tz="UTC"), T.DateType: pa.date32(), T.BinaryType: pa.binary(),
}


def arrow_schema_of(schema: T.StructType) -> pa.Schema:
    fields = []
    for field in schema.fields:
        kind = _TO_ARROW.get(type(field.dataType))
        if kind is None:
            raise DeltaSchemaError(f"column {field.name}: type {field.dataType.simpleString()} is not supported")
        fields.append(pa.field(field.name, kind, nullable=True))
    return pa.schema(fields)


_FROM_ARROW = (
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), T.StringType),
    (pa.types.is_int64, T.LongType), (pa.types.is_int32, T.IntegerType), (pa.types.is_int16, T.ShortType),
    (pa.types.is_boolean, T.BooleanType), (pa.types.is_floating, T.DoubleType),
    (pa.types.is_timestamp, T.TimestampType), (pa.types.is_date, T.DateType),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t), T.BinaryType),
)


def spark_schema_of(schema) -> T.StructType:
    fields = []
    for field in pa.schema(schema):
        kind = next((spark_type() for matches, spark_type in _FROM_ARROW if matches(field.type)), None)
        if kind is None:
            raise DeltaSchemaError(f"column {field.name}: type {field.type} is not supported")
        fields.append(T.StructField(field.name, kind, True))
    return T.StructType(fields)
