"""The render inputs of a run's plan rows, kept for a later run, and the rows of restated objects rendered again
from them.

A plan row that carries an object's statement is rendered from the object's
SQL and the inputs the planner put beside it (``statements.RENDER``: its
target schema, its clusters, whether it replaces itself; and the objects it
reads under another schema, ``statements.MOVED``). All of those but the SQL
come from decisions, steps and the object's shape, so a later run whose only
changes are restated units (``changeset.units.RESTATED``: edited in their
statement's hash and text, with the facts of the run it starts from) has
that run's rows, but for the statements of those objects: it renders them
again from their new SQL and the inputs kept here (``RENDER_INPUTS``, one
row per plan row with a statement to render, by ``seq``), the references as
JSON text so that a run's staging suffix is replaced in them as in every
other string column (``store.taken.with_suffix``).
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch, local_batch
from ..model import KEY
from .statements import MOVED, REFERENCES, RENDER, grouped_references, references_by_reader

RENDER_INPUTS = "plan_render_inputs"  # the table under --out
RENDER_INPUT_ROWS = T.StructType([
    T.StructField("seq", T.IntegerType()),
    *(f for f in RENDER.fields if f.name != "sql"),  # the SQL is the new project's, read from it again
    T.StructField("references", T.StringType()),  # JSON: the MOVED references of the row's object, sorted
])
_KEPT = [f.name for f in RENDER_INPUT_ROWS.fields if f.name not in ("seq", "references")]


def render_inputs(rows: Batch, moved: Batch) -> Batch:
    """``RENDER_INPUT_ROWS`` of the plan rows (``planner.build_plan``'s, with ``seq`` and ``RENDER``) that carry
    a statement to render; ``moved``: its ``MOVED`` rows. On the driver when both are rows (no job), else lazy."""
    if rows.local and moved.local:
        refs = references_by_reader(moved)
        at = {c: rows.columns.index(c) for c in ("sql", "seq", *KEY, *_KEPT)}
        found = [(r[at["seq"]], *(r[at[c]] for c in _KEPT),
                  _references_json(refs.get(tuple(r[at[k]] for k in KEY), [])))
                 for r in rows.rows if r[at["sql"]] is not None]
        return local_batch(rows.spark, sorted(found, key=lambda r: r[0]), RENDER_INPUT_ROWS)
    grouped = grouped_references(moved.frame, sort=True)
    frame = (rows.frame.where(F.col("sql").isNotNull()).join(grouped, MOVED[:3], "left")
             .select("seq", *_KEPT, F.to_json(F.coalesce("references", F.array().cast(REFERENCES))).alias("references")))
    return Batch(frame, None)


def _references_json(references: list[tuple]) -> str:
    """As Spark's ``to_json`` writes a sorted array of ``MOVED`` references (no spaces, no null member)."""
    return json.dumps([{k: v for k, v in zip(MOVED[3:], r) if v is not None} for r in sorted(references)],
                      separators=(",", ":"), ensure_ascii=False)


def to_render_again(plan: DataFrame, inputs: DataFrame, restated: DataFrame, new_objects: DataFrame) -> DataFrame:
    """The rows of ``plan`` (``ddl_plan`` columns) of the ``restated`` objects (keys) that carry a statement,
    with their render inputs (``inputs``: ``RENDER_INPUT_ROWS``) and the objects' SQL from ``new_objects``:
    the plan columns, ``RENDER`` and ``references`` (``statements.REFERENCES``), for ``statements.render_carrying``."""
    sql = new_objects.select(*KEY, "sql")
    return (plan.join(restated.select(*KEY).distinct(), list(KEY), "left_semi").join(inputs, "seq")
            .join(sql, list(KEY))
            .select(*plan.columns, *RENDER.names, F.from_json("references", REFERENCES).alias("references")))


def with_rendered_again(plan: Batch, rendered: Batch) -> Batch:
    """``plan`` (``ddl_plan`` rows) with the rows ``rendered`` (the same columns and ``error``) in place of its own
    of the same ``seq``, and ``error`` null on the others (a succeeded run's statements all rendered): on the
    driver when both are rows (no job), else lazy."""
    schema = T.StructType([*plan.schema.fields, T.StructField("error", T.StringType())])
    if plan.local and rendered.local:
        at = {c: rendered.columns.index(c) for c in schema.names}
        again = {r[at["seq"]]: tuple(r[at[c]] for c in schema.names) for r in rendered.rows}
        seq = plan.columns.index("seq")
        return local_batch(plan.spark, [again.get(r[seq], (*r, None)) for r in plan.rows], schema)
    kept = plan.frame.join(rendered.frame.select("seq"), "seq", "left_anti")
    return Batch(kept.select(*plan.columns, F.lit(None).cast("string").alias("error"))
                 .unionByName(rendered.frame.select(*schema.names)), plan.count)
