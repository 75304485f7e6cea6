"""Statements rendered by earlier runs, reused instead of written again.

After parsing, writing each object's statement for the plan (``sql.statement.render_row``: parse, qualify,
move under the target schema, write with sqlglot) is the run's other cost per statement in Python, about
twice a parse. A run keeps what it rendered in ``rendered_statements`` (keyed, written in its own commits),
and a later run into the same ``--out`` takes the statement of every render key a *succeeded* run rendered
and renders only the others: the same text either way.

A render's output is a function of its inputs (the statement, the object's kind and name, its target
schema, the objects it reads under other schemas, its clusters, whether it replaces itself, the dialect's
parser, the kinds carried verbatim, and the versions of this package and sqlglot), but a blue-green run
names its staged schemas and clusters with a suffix of its own (``operations.deploy_suffix``), so two runs
never render the same targets. The key is therefore taken over the *generic* inputs: the run's suffix at
the end of a target schema or staged cluster replaced by ``PLACEHOLDER``. Rendering the generic inputs and
putting the suffix back in place of the placeholder gives the text rendering the run's own inputs gives:
sqlglot only quotes and places these names. A row where that could fail (the placeholder anywhere in its
inputs, or the suffix anywhere but once at those ends) is rendered as it is, and neither kept nor reused.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY
from ..work_kept import installed, succeeded_rows

RENDERED_STATEMENTS = "rendered_statements"  # the table under --out
RENDER_KEY = "render_key"
RENDERED_ROWS = T.StructType([T.StructField(RENDER_KEY, T.StringType()), T.StructField("statement", T.StringType()),
                              T.StructField("verbatim", T.BooleanType()), T.StructField("error", T.StringType())])
PLACEHOLDER = "\u0001suffix\u0001"  # stands for the run's suffix in what is kept; never in a name or statement
RENDERED_BY = "rendered_by"  # on plan rows: "this" run, an "earlier" one (reused), "as is" (not kept), or null
GENERIC = "generic"  # whether the row's inputs have a generic form (else rendered as they are)

_REFERENCE = ("dep_database", "dep_schema", "dep_name", "dep_target")
_ENDS = ("render_target", "staged_cluster")  # where the run's suffix may end a name


def rendered_with(parser: str, verbatim_kinds: tuple[str, ...]) -> str:
    """What a render depends on besides its row: hashed into its key."""
    return "|".join(["dirtiness", installed("dirtiness"), "sqlglot", installed("sqlglot"), parser,
                     *sorted(verbatim_kinds)])


def _generic(value: Column, suffix: str) -> Column:
    """``value`` with ``suffix`` at its end replaced by ``PLACEHOLDER``."""
    cut = value.substr(F.lit(1), F.length(value) - F.lit(len(suffix)))
    return F.when(value.endswith(suffix), F.concat(cut, F.lit(PLACEHOLDER))).otherwise(value)


def _holds(texts: Column, part: str) -> Column:
    """Whether any of ``texts`` (an array) holds ``part``."""
    return F.exists(texts, lambda t: F.coalesce(t.contains(part), F.lit(False)))


def keyed(rows: DataFrame, suffix: str, parser: str, verbatim_kinds: tuple[str, ...]) -> DataFrame:
    """The plan rows to render (``sql`` not null, ``references`` of ``statements.REFERENCES``) with their
    generic inputs in place of their own, ``GENERIC`` (whether that form is exact) and ``RENDER_KEY``."""
    references = F.array_sort(F.coalesce(F.col("references"), F.array()))  # in a fixed order, for the key
    plain = [F.col("sql"), *(F.col(k) for k in KEY), F.col("object_cluster")]
    texts = [*plain, *(F.col(c) for c in _ENDS)]
    reference_texts = F.concat_ws("\u0000", F.transform(references, lambda r: F.concat_ws(
        "\u0000", *(r[c] for c in _REFERENCE))))
    # the suffix only where it ends a target or a staged cluster, once; the placeholder nowhere
    generic = (~_holds(F.array(*texts, reference_texts), PLACEHOLDER) & ~_holds(F.array(*plain), suffix)
               & ~_holds(F.array(*(_generic(F.col(c), suffix) for c in _ENDS)), suffix)
               & ~F.exists(references, lambda r: _holds(F.array(*(r[c] for c in _REFERENCE[:3]),
                                                                 _generic(r["dep_target"], suffix)), suffix)))
    generic_references = F.transform(references, lambda r: F.struct(
        *(r[c].alias(c) for c in _REFERENCE[:3]), _generic(r["dep_target"], suffix).alias("dep_target")))
    swapped = rows.select(*(c for c in rows.columns if c not in ("references", *_ENDS)),
                          *(F.when(generic, _generic(F.col(c), suffix)).otherwise(F.col(c)).alias(c) for c in _ENDS),
                          F.when(generic, generic_references).otherwise(references).alias("references"),
                          generic.alias(GENERIC))
    parts = [F.lit(rendered_with(parser, verbatim_kinds)), F.col("sql"), F.col("kind"), *(F.col(k) for k in KEY),
             *(F.col(c) for c in _ENDS), F.col("object_cluster"), F.col("replacing").cast("string"),
             F.to_json(F.col("references"))]
    # lengths, and a separator no name holds, so no two lists of parts make one text; a null part is "-1:"
    text = F.concat_ws("\u0000", *(F.concat(F.coalesce(F.length(p), F.lit(-1)).cast("string"), F.lit(":"),
                                            F.coalesce(p, F.lit(""))) for p in parts))
    return swapped.withColumn(RENDER_KEY, F.sha2(text, 256))


def earlier_rows(table: DataFrame, runs: DataFrame) -> DataFrame:
    """The rows of ``rendered_statements`` that succeeded runs wrote (``work_kept.succeeded_rows``)."""
    return succeeded_rows(table, runs, RENDER_KEY, RENDERED_ROWS.names)


def not_rendered_before(rows: DataFrame, earlier: DataFrame | None) -> DataFrame:
    """The generic rows no earlier run rendered, one per key."""
    distinct = rows.where(F.col(GENERIC)).dropDuplicates([RENDER_KEY])
    if earlier is not None:
        distinct = distinct.join(earlier.select(RENDER_KEY), RENDER_KEY, "left_anti")
    return distinct


def statements_by_key(rows: DataFrame, rendered: DataFrame, earlier: DataFrame | None) -> DataFrame:
    """The generic statement of every generic render key of ``rows``: ``rendered`` now (``RENDERED_ROWS``) and
    those an earlier run rendered, with ``RENDERED_BY`` saying which."""
    found = rendered.select(*RENDERED_ROWS.names, F.lit("this").alias(RENDERED_BY))
    if earlier is not None:
        wanted = rows.where(F.col(GENERIC)).select(RENDER_KEY)
        found = found.unionByName(earlier.join(wanted, RENDER_KEY, "left_semi")
                                  .select(*RENDERED_ROWS.names, F.lit("earlier").alias(RENDERED_BY)))
    return found


def with_statements(rows: DataFrame, statements: DataFrame, suffix: str) -> DataFrame:
    """The generic ``rows`` with their ``statement``, ``verbatim``, ``error`` and ``RENDERED_BY`` from ``statements``
    by key, the run's suffix back in place of the placeholder."""
    def own(column: str) -> Column:
        return F.replace(F.col(column), F.lit(PLACEHOLDER), F.lit(suffix)).alias(column)
    found = statements.select(RENDER_KEY, own("statement"), "verbatim", own("error"), RENDERED_BY)
    return rows.where(F.col(GENERIC)).drop("statement", "verbatim", "error").join(found, RENDER_KEY)


def kept_rows(plan: DataFrame, suffix: str) -> DataFrame:
    """What this run rendered, for later runs (``RENDERED_ROWS``), read off its plan rows: every suffix in a
    generic row's text came from a placeholder (the suffix is in none of its inputs), so it goes back."""
    def generic(column: str) -> Column:
        return F.replace(F.col(column), F.lit(suffix), F.lit(PLACEHOLDER)).alias(column)
    return (plan.where(F.col(RENDERED_BY) == "this").dropDuplicates([RENDER_KEY])
            .select(RENDER_KEY, generic("statement"), "verbatim", generic("error")))


def counts_of(parts: dict) -> dict[str, int]:
    """Plan statements rendered by this run and reused from earlier ones, from the held rows' counts."""
    return {"rendered": parts.get("this", 0) + parts.get("as is", 0), "render_reused": parts.get("earlier", 0)}
