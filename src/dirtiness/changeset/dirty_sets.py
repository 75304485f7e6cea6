"""Derived relations back to named rows: the dirty-set tables of docs/design.md §5, and the plan's decisions.

Every derived tuple of both programs, as their rounds held them, is named by
one query: each id becomes its names (a join per tuple and cause column,
however many relations there are), the rule index its label, the cause a
readable tuple such as ``DirtyStmt(materialize.internal.winning_bids)``. A
tuple of one object also gets the object's ``kind``, ``change`` and
``tool_id``; a plan decision its reason (``plan.decisions``). The tables
are then each program's rows, shaped per relation (``dirty_table``,
``decision_rows``): on the driver when the rows are, as views otherwise.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..datalog.check import CheckedProgram
from ..datalog.engine import Evaluation
from ..datalog.holding import Batch
from ..model import KEY, OBJECT_DOMAIN
from .interning import PARTS, kind_of, named

TOOL = ("kind", "change", "tool_id")


def column_names(domains: tuple[str, ...]) -> list[list[str]]:
    """Output columns per relation column: an object is database, schema, name; a name is its domain."""
    objects = sum(1 for d in domains if d == OBJECT_DOMAIN)
    names = []
    for i, domain in enumerate(domains):
        if domain == OBJECT_DOMAIN:
            names.append(list(KEY) if objects == 1 else [f"{k}{i + 1}" for k in KEY])
        else:
            names.append([domain if domains.count(domain) == 1 else f"{domain}{i + 1}"])
    return names


def named_outputs(programs: dict[str, tuple[CheckedProgram, Evaluation]], dictionary: DataFrame,
                  attributes: DataFrame, extra: dict[str, Column] | None = None) -> DataFrame | None:
    """Every derived tuple of the given programs, named: ``program, relation, c{j}_p0..p2, rule`` (its label),
    ``cause, k{j}_raw, round`` and, for a tuple of one object, ``kind, change, tool_id``.

    ``attributes``: ``database, schema, name, kind, change, tool_id`` of every object. ``extra``: more
    columns computed from those (the plan's reasons).
    """
    width = max(len(d) for checked, _ in programs.values() for d in checked.derived.values())
    cause_width = max(checked.max_arity for checked, _ in programs.values())
    parts = []
    for program, (checked, evaluation) in programs.items():
        if evaluation.derived is None:
            continue
        frame = evaluation.derived.frame
        parts.append(frame.select(
            F.lit(program).alias("program"), "relation",
            *(F.col(f"c{i}") if f"c{i}" in frame.columns else F.lit(-1).cast("long").alias(f"c{i}")
              for i in range(width)),
            "rule", "cause_rel",
            *(F.col(f"k{i}") if f"k{i}" in frame.columns else F.lit(None).cast("long").alias(f"k{i}")
              for i in range(cause_width)),
            "round"))
    if not parts:
        return None
    union = reduce(DataFrame.unionByName, parts)
    kinds = {r: [kind_of(d) for d in checked.domains(r)]
             for checked, _ in programs.values() for r in (*checked.base, *checked.derived)}
    union = named(union, dictionary, kinds, [f"c{i}" for i in range(width)])
    union = named(union, dictionary, kinds, [f"k{i}" for i in range(cause_width)], relation="cause_rel", texts=True)
    labels = F.create_map(*(x for program, (checked, _) in programs.items() for i, rule in enumerate(checked.rules)
                            for x in (F.lit(f"{program}:{i}"), F.lit(rule.label))))
    single = [r for checked, _ in programs.values() for r in checked.derived if checked.domains(r) == (OBJECT_DOMAIN,)]
    objects = attributes.select(*(F.col(k).alias(f"_a_{p}") for k, p in zip(KEY, PARTS)), *TOOL)
    is_single = F.col("relation").isin(*single)
    union = union.join(objects, [F.when(is_single, F.col(f"c0_{p}")) == F.col(f"_a_{p}") for p in PARTS], "left")
    cause = F.concat(F.col("cause_rel"), F.lit("("), F.concat_ws(", ", *(F.col(f"k{i}_text")
                                                                       for i in range(cause_width))), F.lit(")"))
    columns = {
        "program": F.col("program"), "relation": F.col("relation"),
        **{f"c{i}": F.col(f"c{i}") for i in range(width)},
        **{f"c{i}_{p}": F.col(f"c{i}_{p}") for i in range(width) for p in PARTS},
        "rule_index": F.col("rule"), "rule": F.element_at(labels, F.concat_ws(":", "program", "rule")),
        "cause_rel": F.col("cause_rel"), **{f"k{i}": F.col(f"k{i}") for i in range(cause_width)},
        "cause": cause, **{f"k{i}_raw": F.col(f"k{i}_raw") for i in range(cause_width)},
        "round": F.col("round").cast("int"), **{t: F.col(t) for t in TOOL},
    }
    named_ = union.select(*(c.alias(n) for n, c in columns.items()))
    for name, column in (extra or {}).items():
        named_ = named_.withColumn(name, column)
    return named_


def dirty_table(checked: CheckedProgram, relation: str, outputs: Batch) -> Batch:
    """Rows ``<key columns>, [kind, change], rule, cause, round[, tool_id]`` of one derived relation, from
    ``named_outputs`` (held)."""
    domains = checked.domains(relation)
    columns: dict[str, str] = {}
    for i, (domain, names) in enumerate(zip(domains, column_names(domains))):
        for name, part in zip(names, PARTS):
            columns[name] = f"c{i}_{part}"
    single = domains == (OBJECT_DOMAIN,)
    if single:
        columns.update(kind="kind", change="change")
    columns.update(rule="rule", cause="cause", round="round")
    if single:
        columns["tool_id"] = "tool_id"  # last: tables written before it widen
    return outputs.part("relation", relation, columns)


def object_attributes(old_objects: DataFrame, new_objects: DataFrame, changed: DataFrame) -> DataFrame:
    """``database, schema, name, kind, change, tool_id`` for every object of either snapshot (new side wins)."""
    old = old_objects.select(*KEY, F.col("kind").alias("old_kind"), F.col("tool_id").alias("old_tool_id"))
    new = new_objects.select(*KEY, F.col("kind").alias("new_kind"), F.col("tool_id").alias("new_tool_id"))
    return (old.join(new, list(KEY), "full_outer")
            .join(changed.select(*KEY, "change"), list(KEY), "left")
            .select(*KEY, F.coalesce("new_kind", "old_kind").alias("kind"), "change",
                    F.coalesce("new_tool_id", "old_tool_id").alias("tool_id")))
