"""Statements analysed by earlier runs, reused instead of parsed again.

Parsing is the one part of a run whose cost is per statement in Python
(sqlglot, milliseconds a statement): a project of a hundred thousand
statements pays minutes for it on every run, though an hour changes a few.
What ``references.analyse`` finds for a statement is a function of the
statement, its object's kind and name, the dialect, the system schemas and
the versions of this package and of sqlglot: ``statement_key`` hashes them
all. A run keeps the rows of every statement it parsed in ``sql_analysis``
(keyed so, written in its own commits), and a later run into the same
``--out`` takes the rows of every statement a *succeeded* run analysed
from there and parses only the others: the same rows either way, so the
same answer. A statement both snapshots hold alike is parsed once.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY
from ..work_kept import installed, succeeded_rows
from .references import ANALYSIS, SqlSettings

SQL_ANALYSIS = "sql_analysis"  # the table under --out
STATEMENT_KEY = "statement_key"
ANALYSED = T.StructType([T.StructField(STATEMENT_KEY, T.StringType()),
                         *(f for f in ANALYSIS.fields if f.name not in ("side", *KEY))])
PARSED = "parsed"  # true: parsed by this run; false: taken from an earlier one


def analysed_with(sql: SqlSettings) -> str:
    """What a statement's analysis depends on besides the statement: hashed into its key."""
    return "|".join(["dirtiness", installed("dirtiness"), "sqlglot", installed("sqlglot"), sql.dialect,
                     *sorted(sql.system_schemas)])


def statement_keys(statements: DataFrame, sql: SqlSettings) -> DataFrame:
    """``statements`` (``side``, the key, ``kind``, ``sql``) with each one's ``statement_key``."""
    parts = [F.lit(analysed_with(sql)), F.col("kind"), *(F.col(k) for k in KEY), F.col("sql")]
    # a separator no name or statement holds, and lengths, so no two lists of parts make one text
    text = F.concat_ws("\u0000", *(F.concat(F.length(p).cast("string"), F.lit(":"), p) for p in parts))
    return statements.withColumn(STATEMENT_KEY, F.sha2(text, 256))


def earlier_rows(table: DataFrame, runs: DataFrame) -> DataFrame:
    """The rows of ``sql_analysis`` that succeeded runs wrote (``work_kept.succeeded_rows``)."""
    return succeeded_rows(table, runs, STATEMENT_KEY, ANALYSED.names)


def to_parse(keyed: DataFrame, earlier: DataFrame | None) -> DataFrame:
    """The statements no earlier run analysed, one row per key, as the analyser reads them (the key in the
    ``side`` column, which it carries through)."""
    distinct = keyed.dropDuplicates([STATEMENT_KEY])
    if earlier is not None:
        distinct = distinct.join(earlier.select(STATEMENT_KEY).distinct(), STATEMENT_KEY, "left_anti")
    return distinct.select(F.col(STATEMENT_KEY).alias("side"), *KEY, "kind", "sql")


def analysed_rows(keyed: DataFrame, parsed: DataFrame, earlier: DataFrame | None) -> DataFrame:
    """The analysis rows of every statement of ``keyed``: those ``parsed`` now (the analyser's rows, the key
    in ``side``) and those an earlier run analysed, flagged ``parsed``; ``part`` (parsed or reused, then
    statement or reads) to count them by."""
    rows = parsed.withColumnRenamed("side", STATEMENT_KEY).select(*ANALYSED.names, F.lit(True).alias(PARSED))
    if earlier is not None:
        wanted = keyed.select(STATEMENT_KEY).distinct()
        rows = rows.unionByName(earlier.join(wanted, STATEMENT_KEY, "left_semi")
                                .select(*ANALYSED.names, F.lit(False).alias(PARSED)))
    part = F.concat(F.when(F.col(PARSED), F.lit("parsed")).otherwise(F.lit("reused")), F.lit(":"), F.col("found"))
    return rows.withColumn("part", part)


def analysis_of(keyed: DataFrame, rows: DataFrame) -> DataFrame:
    """Each side's analysis (``references.ANALYSIS``) from the rows by statement key."""
    return (keyed.select("side", STATEMENT_KEY, *KEY).join(rows, STATEMENT_KEY)
            .select(*ANALYSIS.names))


def counts_of(parts: dict[str, int]) -> dict[str, int]:
    """Distinct statements parsed by this run and reused from earlier ones, from the held rows' ``part``
    counts."""
    return {"parsed": parts.get("parsed:statement", 0), "reused": parts.get("reused:statement", 0)}

