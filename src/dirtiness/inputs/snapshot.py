"""Loading a snapshot (docs/design.md §2): a YAML/JSON document or a folder of tables.

Both forms become the same three DataFrames, so the rest of the job never
knows which form it was given. Documents are parsed and validated object by
object before Spark starts, and become local relations (Spark runs no job to
read them); table folders are checked for their columns here and for their
contents by Spark, all table-form snapshots of a run in one job that also
counts their objects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import reduce

import yaml
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import local_frame
from ..errors import InputError, InputProblems, summarize
from ..model import KEY, KINDS
from ..sql import secrets
from ..wording import counted, did_you_mean
from .formats import detect, to_document

OBJECTS = T.StructType([
    *(T.StructField(c, T.StringType()) for c in (*KEY, "kind", "hash", "cluster")),
    T.StructField("replacement", T.BooleanType()),
    T.StructField("sql", T.StringType()),
    T.StructField("tool_id", T.StringType()),  # the object's id in the tool it came from (dbt's unique_id)
])
DEPENDENCIES = T.StructType([T.StructField(c, T.StringType())
                             for c in (*KEY, "dep_database", "dep_schema", "dep_name")])
# key: the index's key expressions as SQL ("a", lower("b")), comma-separated; null for a default index
INDEXES = T.StructType([T.StructField(c, T.StringType()) for c in (*KEY, "index_name", "cluster", "key")])
TABLES = {"objects": OBJECTS, "dependencies": DEPENDENCIES, "indexes": INDEXES}
REQUIRED = {"objects": (*KEY, "kind"), "dependencies": DEPENDENCIES.names, "indexes": (*KEY, "index_name", "cluster")}


@dataclass
class Snapshot:
    path: str
    objects: DataFrame
    dependencies: DataFrame
    indexes: DataFrame

    def cached(self) -> "Snapshot":
        """Cached once: documents would otherwise be re-read through Python workers by every job."""
        return Snapshot(self.path, self.objects.cache(), self.dependencies.cache(), self.indexes.cache())


@dataclass
class Loaded:
    """The snapshots of a run by side, and how many objects they hold together (the small-data decision)."""

    snapshots: dict[str, Snapshot]
    objects: int

    @property
    def old(self) -> Snapshot:
        return self.snapshots["old"]

    @property
    def new(self) -> Snapshot:
        return self.snapshots["new"]


def load_snapshots(spark: SparkSession, sides: dict[str, "Document | str"]) -> Loaded:
    """The snapshots given by side (``old``, ``new``): each a document read before Spark started, a
    document's path, or the path of a table-form snapshot (validated and counted here, all in one job).

    Whether dependencies name objects the snapshot lists is checked later
    (``inputs.references``), once the SQL has had its say.
    """
    snapshots, counts, problems = {}, {}, {}
    for side, given in sides.items():
        if isinstance(given, str) and is_document(given):
            given = read_document(given)
        if isinstance(given, Document):
            snapshots[side] = _snapshot(spark, given)
            counts[side] = len(given.objects)
            continue
        if not os.path.exists(given):
            raise InputError(f"{given}: no such file or folder")
        snapshots[side] = _load_tables(spark, given).cached()
        problems.update({(side, p): frame for p, frame in _table_checks(snapshots[side]).items()})
    if problems:  # one job: every table-form snapshot's checks, and its objects counted
        tables = {side for side, _ in problems}
        counted = {f"{side}:objects": snapshots[side].objects for side in tables}
        found = first_problems({f"{side}:{p}": f for (side, p), f in problems.items()}, counted=counted)
        for (side, problem) in problems:
            details, total = found.get(f"{side}:{problem}", ([], 0))
            if total:
                raise InputError(summarize(details, f"{snapshots[side].path}: {total} {problem}", total=total))
        counts.update({side: found[f"{side}:objects"][1] for side in tables})
    return Loaded(snapshots, sum(counts.values()))


def is_document(path: str, format: str = "auto") -> bool:
    """Whether ``path`` is read on the driver as one document (this job's own, or a tool's artefact
    converted to one), rather than as table folders read by Spark."""
    return not os.path.isdir(path) or (format if format != "auto" else detect(path)) != "snapshot"


FORMS = ("a snapshot document (YAML or JSON), a folder of objects/, dependencies/ and indexes/ tables, a dbt "
         "manifest (.json or .json.gz), an mz-deploy project folder (models/) or a Moose infrastructure map")


def check_table_form(path: str) -> None:
    """A folder to be read as a table-form snapshot is one, checked before Spark starts: not the output
    root of a run, an ``objects`` table, each table in a format Spark reads, and every parquet file whole."""
    if os.path.isdir(os.path.join(path, "runs", "_delta_log")):
        raise InputError(f"{path}: the output root of `dirtiness run` (it holds a runs table), not a project: give "
                         f"the deployed or desired project as {FORMS}")
    if not os.path.isdir(os.path.join(path, "objects")):
        raise InputError(f"{path}: not a catalog: no objects/ table in this folder (expected {FORMS})")
    for table in TABLES:
        if os.path.isdir(os.path.join(path, table)):
            table_format(os.path.join(path, table))
    check_parquet_footers(path)


def table_format(folder: str) -> str:
    """``delta``, ``parquet``, ``json`` or ``csv``: how the table in ``folder`` is read."""
    if os.path.isdir(os.path.join(folder, "_delta_log")):
        return "delta"
    files = [f for _, _, names in os.walk(folder) for f in names if not f.startswith((".", "_"))]
    extensions = {os.path.splitext(f)[1].lower() for f in files}
    for format, known in (("parquet", {".parquet"}), ("json", {".json", ".jsonl"}), ("csv", {".csv"})):
        if extensions and extensions <= known:
            return format
    raise InputError(f"{folder}: cannot tell the format (expected a Delta table or parquet, json or csv files, "
                     f"found {sorted(extensions) or 'no files'})")


def check_parquet_footers(path: str) -> None:
    """Every parquet file of a table-form snapshot opens (its footer read with pyarrow), before Spark reads
    any: a truncated or foreign file is one line naming it, not a JVM stack trace at the end of a load."""
    import pyarrow.parquet as pq

    for folder, _, files in sorted(os.walk(path)):
        for name in sorted(f for f in files if f.endswith(".parquet")):
            file = os.path.join(folder, name)
            try:
                pq.read_metadata(file)
            except Exception as error:  # noqa: BLE001 - pyarrow's errors for a bad file vary by cause
                reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
                raise InputError(f"{file}: not a readable parquet file ({reason})") from None


def missing_dependencies(snapshot: Snapshot, external_databases=()) -> DataFrame:
    """``detail`` of each dependency on an object the snapshot does not list, outside ``external_databases``."""
    listed = snapshot.objects.select(*(F.col(k).alias(f"dep_{k}") for k in KEY))
    missing = snapshot.dependencies.join(listed, [f"dep_{k}" for k in KEY], "left_anti")
    if external_databases:
        missing = missing.where(~F.col("dep_database").isin(*external_databases))
    return missing.select(F.concat(F.concat_ws(".", *KEY), F.lit(": depends on "),
                                   F.concat_ws(".", *(f"dep_{k}" for k in KEY)),
                                   F.lit(", which is not in the snapshot")).alias("detail"))


@dataclass
class Document:
    """A snapshot document parsed and validated in Python: the rows of its three tables."""

    path: str
    objects: list[tuple]
    dependencies: list[tuple]
    indexes: list[tuple]
    converted: bool = False  # converted from a tool's artefact (inputs.formats)
    unit_tests: dict[str, int] = field(default_factory=dict)  # object -> its unit tests (mz-deploy), not deployed
    clusters: dict[str, str] = field(default_factory=dict)  # cluster -> its definition (mz-deploy's clusters/*.sql)


def read_document(path: str, format: str = "auto", system_schemas=(), external_databases=()) -> Document:
    """Parse and validate a snapshot document without Spark (bad input fails before a session starts):
    a YAML/JSON snapshot, or a tool's artefact converted to one (``inputs.formats``; a project folder's
    references are checked against ``system_schemas`` and ``external_databases`` here)."""
    converted = to_document(path, format, system_schemas=system_schemas, external_databases=external_databases)
    if converted is not None:
        unit_tests, clusters = converted.pop("unit_tests", {}), converted.pop("clusters", {})
        document = parse_document(converted, path)
        document.converted, document.unit_tests, document.clusters = True, unit_tests, clusters
        return document
    return _parse_yaml(path)


def _parse_yaml(path: str) -> Document:
    try:
        with open(path, encoding="utf-8") as handle:
            parsed = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{path}:{where}: malformed YAML/JSON: {problem}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not a catalog: byte {error.start} is not UTF-8 text, as a YAML or JSON snapshot "
                         f"is (expected {FORMS})") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
    return parse_document(parsed, path)


def snapshot_from_document(spark: SparkSession, document, path: str = "<document>") -> Snapshot:
    """A snapshot from a parsed document (``{"objects": [...]}``), validated object by object."""
    return _snapshot(spark, parse_document(document, path))


def _snapshot(spark: SparkSession, document: Document) -> Snapshot:
    return Snapshot(
        path=document.path,
        objects=local_frame(spark, document.objects, OBJECTS),
        dependencies=local_frame(spark, document.dependencies, DEPENDENCIES),
        indexes=local_frame(spark, document.indexes, INDEXES),
    )


def parse_document(document, path: str = "<document>") -> Document:
    """The rows of a parsed document (``{"objects": [...]}``), validated object by object (no Spark)."""
    if not isinstance(document, dict) or "objects" not in document:
        raise InputError(f"{path}: not a snapshot: expected a document with an 'objects' list (or {FORMS})")
    entries = document["objects"]
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise InputError(f"{path}: 'objects' must be a list, not {type(entries).__name__}")

    objects, dependencies, indexes, problems, seen = [], [], [], [], set()
    index_owner: dict[tuple, tuple] = {}  # (database, schema, index) -> the object it indexes
    unknown: dict[tuple[str, bool], list[tuple[int, int | None, str]]] = {}  # (field, of an index) -> where
    for number, entry in enumerate(entries, start=1):
        for field, index, name in _unknown_fields(entry, number):
            unknown.setdefault((field, index is not None), []).append((number, index, name))
        try:
            key, row, deps, idx = _parse_object(entry, number)
        except _Problem as problem:
            problems.append(str(problem))
            continue
        if key in seen:
            problems.append(f"{_show(key)}: duplicate object")
            continue
        seen.add(key)
        clash = [i[0] for i in idx if index_owner.setdefault((*key[:2], i[0]), key) != key]
        if clash:  # an index lives in its object's schema, beside the other indexes there
            owner = index_owner[(*key[:2], clash[0])]
            problems.append(f"{_show(key)}: index {clash[0]!r} is also an index of {_show(owner)} "
                            f"(index names are unique within a schema)")
            continue
        objects.append(row)
        dependencies.extend((*key, *dep) for dep in deps)
        indexes.extend((*key, *i) for i in idx)
    if unknown:  # one line per misspelt field, where it first appears, with the field it may have meant
        lines = [_unknown_line(path, field, in_index, found) for (field, in_index), found in unknown.items()]
        if problems:
            lines.append(summarize(problems, f"{path}: {counted(len(problems), 'other invalid object')}"))
        raise InputProblems(lines)
    if problems:
        raise InputError(summarize(problems, f"{path}: {counted(len(problems), 'invalid object')}"))
    return Document(path, objects, dependencies, indexes)


OBJECT_FIELDS = (*KEY, "kind", "hash", "cluster", "replacement", "depends_on", "indexes", "sql", "tool_id")
INDEX_FIELDS = ("name", "cluster", "key")


def _unknown_fields(entry, number: int) -> list[tuple[str, int | None, str]]:
    """``(field, index position or None, object name)`` of every field of an object entry, or of one of its
    indexes, that a snapshot does not have."""
    if not isinstance(entry, dict):
        return []
    key = tuple(entry.get(part) for part in KEY)
    name = _show(key) if all(isinstance(p, str) and p for p in key) else f"object #{number}"
    found = [(str(f), None, name) for f in entry if f not in OBJECT_FIELDS]
    indexes = entry.get("indexes")
    for position, index in enumerate(indexes if isinstance(indexes, list) else []):
        if isinstance(index, dict):
            found += [(str(f), position, name) for f in index if f not in INDEX_FIELDS]
    return found


def _unknown_line(path: str, field: str, in_index: bool, found: list[tuple[int, int | None, str]]) -> str:
    number, index, name = found[0]
    line = _line_of_field(path, number, index, field)
    where = f"{path}:{line}" if line else path
    owner = "an index" if in_index else "an object"
    objects = len({n for n, _, _ in found})
    seen = f"{name}" if objects == 1 else f"{counted(objects, 'object')}, first {name}"
    return (f"{where}: unknown field {field!r} of {owner} ({seen})"
            f"{did_you_mean(field, INDEX_FIELDS if in_index else OBJECT_FIELDS)}")


def _line_of_field(path: str, number: int, index: int | None, field: str) -> int | None:
    """The line of ``field`` in object ``number`` (from 1) of the document at ``path`` (in its index at
    ``index``): the document composed again, only on the way to an error."""
    try:
        with open(path, encoding="utf-8") as handle:
            root = yaml.compose(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        entry = _value(root, "objects").value[number - 1]
        if index is not None:
            entry = _value(entry, "indexes").value[index]
        return next(k.start_mark.line + 1 for k, _ in entry.value if k.value == field)
    except Exception:  # noqa: BLE001 - not a file, not the shape expected: the message goes without a line
        return None


def _value(mapping, key: str):
    return next(v for k, v in mapping.value if k.value == key)


class _Problem(ValueError):
    pass


def _show(key) -> str:
    return ".".join(str(p) for p in key)


def _parse_object(entry, number: int):
    if not isinstance(entry, dict):
        raise _Problem(f"object #{number}: expected a mapping, got {type(entry).__name__}")
    key = tuple(entry.get(part) for part in KEY)
    name = _show(key) if all(isinstance(p, str) and p for p in key) else f"object #{number}"
    for part in KEY:
        value = entry.get(part)
        if value is None:
            raise _Problem(f"{name}: missing required field '{part}'")
        if not isinstance(value, str):
            raise _Problem(f"{name}: field '{part}' must be a string, not {type(value).__name__}")
        if not value.strip():
            raise _Problem(f"{name}: field '{part}' is empty")
    kind = entry.get("kind")
    if kind is None:
        raise _Problem(f"{name}: missing required field 'kind'")
    if kind not in KINDS:
        raise _Problem(f"{name}: unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
    for field in ("hash", "cluster", "sql", "tool_id"):
        if entry.get(field) is not None and not isinstance(entry[field], str):
            raise _Problem(f"{name}: field '{field}' must be a string or null, not {type(entry[field]).__name__}")
    replacement = entry.get("replacement", False)
    if replacement is None:
        replacement = False
    if not isinstance(replacement, bool):
        raise _Problem(f"{name}: field 'replacement' must be true or false, not {replacement!r}")
    deps = [_reference(ref, name) for ref in _list(entry, "depends_on", name)]
    idx = []
    for index in _list(entry, "indexes", name):
        if not isinstance(index, dict) or not isinstance(index.get("name"), str) or not index["name"]:
            raise _Problem(f"{name}: each index needs a non-empty 'name', got {index!r}")
        cluster = index.get("cluster")
        if cluster is not None and not isinstance(cluster, str):
            raise _Problem(f"{name}: index {index['name']}: 'cluster' must be a string")
        expressions = index.get("key")
        if expressions is not None and (not isinstance(expressions, list) or not expressions
                                        or not all(isinstance(k, str) and k.strip() for k in expressions)):
            raise _Problem(f"{name}: index {index['name']}: 'key' must be a non-empty list of SQL expressions")
        idx.append((index["name"], cluster, ", ".join(expressions) if expressions else None))
    row = (*key, kind, entry.get("hash"), entry.get("cluster"), replacement, _without_value(entry.get("sql"), kind,
                                                                                             key, name),
           entry.get("tool_id"))
    return key, row, deps, idx


def _without_value(sql: str | None, kind: str, key: tuple, name: str) -> str | None:
    """A secret's statement as the job carries it: its name and a placeholder, never its value (nor, in a
    message, its text)."""
    if sql is None:
        return None
    if secrets.is_secret_text(sql) != (kind == "secret"):
        raise _Problem(f"{name}: its kind is {kind}, but its sql is {'' if kind != 'secret' else 'not '}a CREATE "
                       f"SECRET statement (the statement is not shown: it may hold a secret's value)")
    if kind != "secret" or secrets.value_hidden(sql):  # an mz-deploy file's placeholder names where it is
        return sql
    return secrets.masked_statement(*key)


def _list(entry: dict, field: str, name: str) -> list:
    value = entry.get(field) or []
    if not isinstance(value, list):
        raise _Problem(f"{name}: field '{field}' must be a list, not {type(value).__name__}")
    return value


def _reference(ref, name: str) -> tuple[str, str, str]:
    """A dependency: ``[db, schema, name]`` or ``"db.schema.name"``, exactly three non-empty parts."""
    parts = ref.split(".") if isinstance(ref, str) else ref
    if not isinstance(parts, list) or len(parts) != 3 or not all(isinstance(p, str) and p.strip() for p in parts):
        raise _Problem(f"{name}: dependency {ref!r} is not a three-part reference (database, schema, name)")
    return tuple(parts)


# --- table form --------------------------------------------------------------


def _load_tables(spark: SparkSession, path: str) -> Snapshot:
    frames = {}
    for table, schema in TABLES.items():
        folder = os.path.join(path, table)
        if not os.path.exists(folder):
            if table == "objects":
                raise InputError(f"{path}: table-form snapshot has no 'objects' folder")
            frames[table] = spark.createDataFrame([], schema)  # no dependencies or indexes: empty
            continue
        frames[table] = _conform(_read_table(spark, folder), schema, folder, REQUIRED[table])
    return Snapshot(path=path, **frames)


def _read_table(spark: SparkSession, folder: str) -> DataFrame:
    format = table_format(folder)
    if format == "delta":
        from ..store.delta import DeltaStore

        parent, name = os.path.split(folder.rstrip("/"))
        return DeltaStore(spark, parent, backend="deltalake").read(name)
    if format == "parquet":
        return spark.read.schema(_parquet_schema(folder)).parquet(folder)  # footers read here: no Spark job
    if format == "json":
        return spark.read.json(folder)
    return spark.read.option("header", True).csv(folder)


def _parquet_schema(folder: str) -> T.StructType:
    """The schema of a folder of parquet files, from their footers (pyarrow), so Spark need not infer it."""
    import pyarrow.dataset as pads

    from ..store.delta import spark_schema_of

    try:
        return spark_schema_of(pads.dataset(folder, format="parquet").schema)
    except Exception as error:  # noqa: BLE001 - any unreadable footer: one line naming the folder
        raise InputError(f"{folder}: cannot read the parquet files: {str(error).splitlines()[0]}") from None


def _conform(frame: DataFrame, schema: T.StructType, folder: str, required) -> DataFrame:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"{folder}: missing {'column' if len(missing) == 1 else 'columns'} {', '.join(missing)}")
    columns = []
    for field in schema.fields:
        if field.name == "sql" and "sql" in frame.columns:
            columns.append(_sql_without_value(frame).alias("sql"))
        elif field.name not in frame.columns:
            missing = F.lit(False) if isinstance(field.dataType, T.BooleanType) else F.lit(None)
            columns.append(missing.cast(field.dataType).alias(field.name))
        elif isinstance(field.dataType, T.BooleanType):
            raw = F.col(field.name)
            if isinstance(frame.schema[field.name].dataType, T.BooleanType):
                columns.append(F.coalesce(raw, F.lit(False)).alias(field.name))
                continue
            # text (CSV, JSON): true/false/1/0 or empty; anything else becomes null, reported by validation
            text = F.coalesce(F.lower(F.trim(raw.cast("string"))), F.lit(""))
            value = F.when(text.isin("true", "1"), True).when(text.isin("false", "0", ""), False)
            columns.append(value.alias(field.name))
        else:
            columns.append(F.col(field.name).cast(field.dataType).alias(field.name))
    return frame.select(*columns)


# Java's regular expression for what ``secrets.is_secret_text`` tells in Python: a CREATE SECRET statement.
_SECRET_STATEMENT = r"(?is)^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*CREATE\s+SECRET\b.*"


def _sql_without_value(frame: DataFrame) -> F.Column:
    """A table-form snapshot's ``sql`` as it is read: a secret's statement (or any CREATE SECRET, whatever the
    row's kind says) becomes its name and a placeholder (``secrets.masked_statement``), its value never kept."""
    sql = F.col("sql").cast("string")
    name = F.concat_ws(".", *(F.concat(F.lit('"'), F.replace(F.col(k).cast("string"), F.lit('"'), F.lit('""')),
                                       F.lit('"')) for k in KEY))
    secret = (F.lower(F.trim(F.col("kind").cast("string"))) == "secret") | sql.rlike(_SECRET_STATEMENT)
    return F.when(sql.isNotNull() & secret, F.concat(F.lit("CREATE SECRET "), name, F.lit(" AS "),
                                                     F.lit(secrets.placeholder()))).otherwise(sql)


def _table_checks(snapshot: Snapshot) -> dict[str, DataFrame]:
    """The content checks of a table-form snapshot: a frame of ``detail`` rows per kind of problem."""
    objects, key = snapshot.objects, [F.col(k) for k in KEY]
    shown = F.concat_ws(".", *(F.coalesce(F.col(k), F.lit("<null>")) for k in KEY))
    empty = reduce(lambda a, b: a | b, (F.col(k).isNull() | (F.trim(F.col(k)) == "") for k in KEY))
    return {
        "objects with an empty name part": objects.where(empty).select(shown.alias("detail")),
        "objects of unknown kind": objects.where(F.col("kind").isNull() | ~F.col("kind").isin(*KINDS)).select(
            F.concat(shown, F.lit(": "), F.coalesce(F.col("kind"), F.lit("<null>"))).alias("detail")),
        "objects whose replacement is not true or false":
            objects.where(F.col("replacement").isNull()).select(shown.alias("detail")),
        "duplicate objects": objects.groupBy(*key).count().where(F.col("count") > 1).select(shown.alias("detail")),
        "index names used twice in a schema (index names are unique within a schema)":
            snapshot.indexes.groupBy("database", "schema", "index_name").agg(F.countDistinct("name").alias("n"))
            .where(F.col("n") > 1).select(F.concat_ws(".", "database", "schema", "index_name").alias("detail")),
    }


def first_problems(problems: dict[str, DataFrame], shown: int = 5,
                   counted: dict[str, DataFrame] | None = None) -> dict[str, tuple[list[str], int]]:
    """For each kind of problem found (a frame of ``detail`` rows), its first details and its count,
    in the order given, all in one Spark job; ``counted`` frames come back as ``([], rows)``."""
    return read_problems(collect_problems(problems, shown, counted).collect(), problems, counted)


def collect_problems(problems: dict[str, DataFrame], shown: int = 5,
                     counted: dict[str, DataFrame] | None = None) -> DataFrame:
    """``problem, n, detail, total`` rows: the first ``shown`` details of each problem (by ``order`` when a
    frame has that column, else by ``detail``) and its count, and the row count of each ``counted`` frame
    (a frame to hold with others; ``read_problems`` reads it)."""
    # Every part below is selected into the same columns in the same order, so they are unioned by
    # position: a union by name re-resolves its whole tree, and a plan's checks are some 30 unions.
    parts = []
    if problems:
        tagged = [frame.select(F.lit(name).alias("problem"), F.col("detail").cast("string"),
                               (F.col("order") if "order" in frame.columns else F.col("detail")).cast("string")
                               .alias("order"))
                  for name, frame in problems.items()]
        ranked = reduce(DataFrame.union, tagged).select(
            "problem", "detail",
            F.row_number().over(Window.partitionBy("problem").orderBy("order", "detail")).alias("n"),
            F.count(F.lit(1)).over(Window.partitionBy("problem")).alias("total"))
        parts.append(ranked.where(F.col("n") <= shown).select("problem", "n", "detail", "total"))
    for name, frame in (counted or {}).items():
        parts.append(frame.select(F.lit(name).alias("problem")).groupBy("problem").agg(
            F.lit(None).cast("int").alias("n"), F.lit(None).cast("string").alias("detail"),
            F.count(F.lit(1)).alias("total")))
    return reduce(DataFrame.union, parts)


def read_problems(rows, problems: dict[str, DataFrame], counted: dict[str, DataFrame] | None = None
                  ) -> dict[str, tuple[list[str], int]]:
    found: dict[str, tuple[list, int]] = {}
    for row in rows:
        details, _ = found.get(row["problem"], ([], 0))
        found[row["problem"]] = (details + ([(row["n"], row["detail"])] if row["detail"] is not None else []),
                                 row["total"])
    result = {name: ([d for _, d in sorted(found[name][0])], found[name][1])
              for name in problems if name in found and found[name][1]}
    result.update({name: ([], found.get(name, ([], 0))[1]) for name in counted or {}})
    return result
