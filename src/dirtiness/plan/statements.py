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

from ..model import KEY
from ..sql.statement import render_row
from .dialect import Dialect

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


def with_object_statements(objects: DataFrame, moved: DataFrame | None, dialect: Dialect,
                           verbatim_kinds=()) -> DataFrame:
    """``objects`` plus ``statement``, ``verbatim`` and ``error``.

    ``objects`` has the key, ``kind``, ``sql``, ``cluster``, ``target``
    (schema to create it in), ``staged_cluster`` (or null) and
    ``replacing``; ``moved`` has a reader's key and the ``dep_*`` key and
    ``dep_target`` schema of each object it reads under another schema.
    """
    parser, verbatim_kinds = dialect.parser, tuple(verbatim_kinds)

    def render(sql, kind, database, schema, name, target, references, cluster, staged_cluster, replacing):
        return render_row(sql, kind, (database, schema, name), target, references, cluster, staged_cluster,
                          bool(replacing), parser, verbatim_kinds)

    rendered = F.udf(render, RENDERED, useArrow=False)
    if moved is not None:
        references = moved.groupBy(*KEY).agg(F.collect_list(F.struct(
            "dep_database", "dep_schema", "dep_name", "dep_target")).alias("references"))
        objects = objects.join(references, list(KEY), "left")
    else:
        objects = objects.withColumn("references", F.lit(None).cast("array<struct<a:string,b:string,c:string,"
                                                                     "d:string>>"))
    return (objects.withColumn("r", rendered("sql", "kind", *KEY, "target", "references", "cluster",
                                             "staged_cluster", "replacing"))
            .select(*[c for c in objects.columns if c != "references"], "r.*"))
