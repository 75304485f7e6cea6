"""The plan's statements: quoted identifiers for generated DDL, and each object's own SQL rewritten with sqlglot.

Every identifier is double-quoted with embedded quotes doubled, so a hostile
name such as ``x"; DROP TABLE t; --`` stays one identifier. Generated DDL
comes from the dialect's templates; an object's ``CREATE`` is its own SQL,
parsed and written again by sqlglot (``sql.statement.render_row``) on the
executors: qualified, under its target schema, reading staged copies where
they exist and running on the staging cluster when its cluster is staged.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch, Hold, Holding, local_batch
from ..sql.statement import render_row
from .dialect import Dialect
from .rendered_before import (
    GENERIC,
    RENDER_KEY,
    RENDERED_BY,
    RENDERED_ROWS,
    counts_of,
    keyed,
    kept_rows,
    not_rendered_before,
    statements_by_key,
    with_statements,
)

KIND_KEYWORDS = {
    "view": "VIEW", "materialized-view": "MATERIALIZED VIEW", "sink": "SINK", "table": "TABLE",
    "source": "SOURCE", "table-from-source": "TABLE", "secret": "SECRET", "connection": "CONNECTION",
}
RENDERED = T.StructType([
    T.StructField("statement", T.StringType()),
    T.StructField("verbatim", T.BooleanType()),
    T.StructField("error", T.StringType()),
])


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quoted(column: Column | str) -> Column:
    """The Spark expression of ``quote``."""
    column = F.col(column) if isinstance(column, str) else column
    return F.concat(F.lit('"'), F.replace(column, F.lit('"'), F.lit('""')), F.lit('"'))


def qualified(*parts: Column | str) -> Column:
    return F.concat_ws(".", *(quoted(p) for p in parts))


def schema_name(dialect: Dialect, database: Column | str, schema: Column | str) -> Column:
    """A schema as the dialect names it: ``"db"."schema"`` or just ``"schema"`` (PostgreSQL)."""
    return qualified(database, schema) if dialect.qualify_schemas else quoted(schema)


def kind_keyword(kind: Column | str) -> Column:
    kind = F.col(kind) if isinstance(kind, str) else kind
    mapping = F.create_map(*(x for k, v in KIND_KEYWORDS.items() for x in (F.lit(k), F.lit(v))))
    return F.element_at(mapping, kind)


# What a plan row carries until its statement is written from the object's own SQL (``render``).
RENDER = T.StructType([
    T.StructField("sql", T.StringType()),             # the object's statement; null: nothing to render
    T.StructField("render_target", T.StringType()),   # the schema to create it in
    T.StructField("object_cluster", T.StringType()),  # its cluster, added when the statement names none
    T.StructField("staged_cluster", T.StringType()),  # run there instead
    T.StructField("replacing", T.BooleanType()),      # a replacement of the object itself
])
MOVED = ["database", "schema", "name", "dep_database", "dep_schema", "dep_name", "dep_target"]
REFERENCES = T.ArrayType(T.StructType([T.StructField(c, T.StringType()) for c in MOVED[3:]]))


def references_by_reader(moved: Batch) -> dict[tuple, list[tuple]]:
    """Each reader's key -> its ``MOVED`` references (``dep_database, dep_schema, dep_name, dep_target``), from
    rows held on the driver."""
    found: dict[tuple, list[tuple]] = {}
    for row in moved.rows:
        found.setdefault(tuple(row[:3]), []).append(tuple(row[3:]))
    return found


def grouped_references(moved: DataFrame, sort: bool = False) -> DataFrame:
    """``MOVED`` rows as one row per reader: its key and ``references`` (``REFERENCES``), sorted if asked."""
    collected = F.collect_list(F.struct(*MOVED[3:]))
    return moved.groupBy(*MOVED[:3]).agg((F.array_sort(collected) if sort else collected).alias("references"))


def to_render(frame: DataFrame, target: Column | str = "schema", staged_cluster: Column | None = None,
              replacing: Column | bool = False, when: Column | None = None) -> dict[str, Column]:
    """The render inputs of rows of ``frame`` (an object's key, kind, sql and cluster), for ``operations``:
    rows where ``when`` holds get their statement from their SQL."""
    sql = F.col("sql") if when is None else F.when(when, F.col("sql"))
    return {"sql": sql, "render_target": F.col(target) if isinstance(target, str) else target,
            "object_cluster": F.col("cluster"),
            "staged_cluster": staged_cluster if staged_cluster is not None else F.lit(None).cast("string"),
            "replacing": replacing if isinstance(replacing, Column) else F.lit(replacing)}


def render(rows: Batch, moved: Batch, dialect: Dialect, verbatim_kinds, holding: Holding) -> Batch:
    """The plan rows with ``statement``, ``verbatim`` and ``error`` written from each object's SQL where a
    row carries it (``RENDER``), the render inputs dropped: in Arrow batches where the rows are (here for
    local rows, by Spark's Python workers for blocks). ``moved``: ``MOVED`` rows, a reader's key and each
    object it reads under another schema (``dep_target``)."""
    keep = [c for c in rows.columns if c not in RENDER.names and c not in ("statement", "verbatim", "error")]
    schema = T.StructType([*(rows.schema[c] for c in keep), *RENDERED.fields])
    if rows.local and moved.local:
        refs = {reader: [dict(zip(MOVED[3:], r)) for r in found]
                for reader, found in references_by_reader(moved).items()}
        columns = rows.columns
        at = {c: columns.index(c) for c in columns}
        with_refs = [(*r, refs.get((r[at["database"]], r[at["schema"]], r[at["name"]]))) for r in rows.rows]
        frame_schema = T.StructType([*rows.schema.fields, T.StructField("references", REFERENCES)])
        return render_carrying(local_batch(rows.spark, with_refs, frame_schema), dialect, verbatim_kinds, holding)
    function = _renderer(dialect.parser, tuple(verbatim_kinds), keep, schema)
    grouped = grouped_references(moved.frame)
    with_sql = rows.frame.where(F.col("sql").isNotNull()).join(grouped, MOVED[:3], "left")
    without = rows.frame.where(F.col("sql").isNull()).select(*keep, "statement", "verbatim", "error")
    return holding.hold(with_sql.mapInArrow(function, schema).unionByName(without), try_local=False)


def render_carrying(rows: Batch, dialect: Dialect, verbatim_kinds, holding: Holding) -> Batch:
    """``render`` of rows that carry their ``references`` (``REFERENCES``) beside ``RENDER``: where the rows are
    (``Holding.map_arrow``), lazily for blocks."""
    keep = [c for c in rows.columns
            if c not in RENDER.names and c not in ("statement", "verbatim", "error", "references")]
    schema = T.StructType([*(rows.schema[c] for c in keep), *RENDERED.fields])
    return holding.map_arrow(rows, _renderer(dialect.parser, tuple(verbatim_kinds), keep, schema), schema)


def render_reusing(rows: Batch, moved: Batch, dialect: Dialect, verbatim_kinds, holding: Holding,
                   earlier: DataFrame | None, suffix: str,
                   try_local: bool) -> tuple[Batch, Batch | None, dict[str, int]]:
    """``render``, taking the statements earlier runs rendered (``plan.rendered_before``) and rendering the
    others: one hold. Returns the plan rows (with ``RENDER_KEY`` and ``RENDERED_BY`` besides), what this run
    rendered (``RENDERED_ROWS``, for later runs; None if nothing) and the counts of both."""
    verbatim_kinds = tuple(verbatim_kinds)
    keep = [c for c in rows.columns if c not in RENDER.names and c not in ("statement", "verbatim", "error")]
    schema = T.StructType([*(rows.schema[c] for c in keep), *RENDERED.fields])
    grouped = grouped_references(moved.frame)
    with_sql = keyed(rows.frame.where(F.col("sql").isNotNull()).join(grouped, MOVED[:3], "left"), suffix,
                     dialect.parser, verbatim_kinds)
    rendered = not_rendered_before(with_sql, earlier).mapInArrow(
        _renderer(dialect.parser, verbatim_kinds, [RENDER_KEY], RENDERED_ROWS), RENDERED_ROWS)
    generic = with_statements(with_sql, statements_by_key(with_sql, rendered, earlier), suffix)
    as_they_are = with_sql.where(~F.col(GENERIC)).mapInArrow(_renderer(dialect.parser, verbatim_kinds, keep, schema),
                                                             schema)
    nothing = F.lit(None).cast("string")
    plan = (generic.select(*keep, *RENDERED.names, RENDER_KEY, RENDERED_BY)
            .unionByName(as_they_are.select("*", nothing.alias(RENDER_KEY), F.lit("as is").alias(RENDERED_BY)))
            .unionByName(rows.frame.where(F.col("sql").isNull()).select(
                *keep, "statement", "verbatim", "error", nothing.alias(RENDER_KEY), nothing.alias(RENDERED_BY))))
    held = holding.hold(Hold(plan, split=RENDERED_BY), try_local=try_local)
    kept = Batch(kept_rows(held.frame, suffix), None) if (held.counts or {}).get("this") else None  # no empty write
    return held, kept, counts_of(held.counts or {})


def _renderer(parser: str, verbatim_kinds: tuple[str, ...], kept: list[str], schema: T.StructType):
    """The function ``mapInArrow`` runs: each row with SQL gets its statement (``render_row``), the others
    keep theirs; the render inputs are dropped."""
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema)
    carried = len(kept)

    def render_batches(batches):
        import pyarrow as pa

        for batch in batches:
            out = []
            for r in batch.to_pylist():
                if r["sql"] is None:
                    out.append((r.get("statement"), bool(r.get("verbatim")), r.get("error")))
                    continue
                out.append(render_row(
                    r["sql"], r["kind"], (r["database"], r["schema"], r["name"]), r["render_target"],
                    [(x["dep_database"], x["dep_schema"], x["dep_name"], x["dep_target"]) for x in r["references"] or ()],
                    r["object_cluster"], r["staged_cluster"], bool(r["replacing"]), parser, verbatim_kinds))
            columns = [batch.column(name) for name in kept]
            columns += [pa.array([o[i] for o in out], arrow_schema.field(carried + i).type) for i in range(3)]
            yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)
    return render_batches
