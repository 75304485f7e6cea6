"""One rule as DataFrame operations: joins for positive atoms, anti-joins for NOT.

Relations are DataFrames of integer columns ``c0..c{k-1}``. A compiled rule
yields candidate head tuples with their provenance: the rule's index, and the
body tuple that caused it (``cause_rel`` and ``k0..``, padded with nulls).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .syntax import Atom, Rule, is_wildcard


def tuple_columns(arity: int, prefix: str = "c") -> list[str]:
    return [f"{prefix}{i}" for i in range(arity)]


def null_long() -> Column:
    return F.lit(None).cast("long")


def candidates(rule: Rule, rule_index: int, sources: list[DataFrame], cause_at: int, cause_width: int) -> DataFrame:
    """Head tuples derived by ``rule`` from ``sources`` (one DataFrame per body atom).

    ``cause_at`` is the body atom recorded as the cause: the atom read as the
    round's delta for recursive rules, else the first positive atom.
    """
    names = _variable_names(rule)
    order = [cause_at] + [i for i, a in enumerate(rule.body) if not a.negated and i != cause_at]
    frame: DataFrame | None = None
    for i in order:
        bound = _bind(rule.body[i], sources[i], names)
        if frame is None:
            frame = bound
        else:
            shared = [c for c in bound.columns if c in frame.columns]
            frame = frame.join(bound, shared, "inner") if shared else frame.crossJoin(bound)
    for i, atom in enumerate(rule.body):
        if atom.negated:
            keys = [names[v] for v in atom.args if not is_wildcard(v)]
            negated = _bind(atom, sources[i], names)
            if keys:
                frame = frame.join(negated.select(*keys), keys, "left_anti")  # duplicates harmless
            else:  # NOT R(_, ...): true only while R is empty
                frame = frame.join(negated.select(F.lit(1).alias("_any")).limit(1), F.lit(True), "left_anti")
    cause = rule.body[cause_at]
    cause_cols = [F.col(names[v]) for v in cause.args] + [null_long()] * (cause_width - cause.arity)
    return frame.select(
        *(F.col(names[v]).alias(f"c{j}") for j, v in enumerate(rule.head.args)),
        F.lit(rule_index).alias("rule"),
        F.lit(cause.relation).alias("cause_rel"),
        *(c.alias(f"k{j}") for j, c in enumerate(cause_cols)),
    )


def _variable_names(rule: Rule) -> dict[str, str]:
    """Column name per variable: positional, since Spark column names ignore case."""
    names: dict[str, str] = {}
    for atom in (rule.head, *rule.body):
        for var in atom.args:
            names.setdefault(var, f"v{len(names)}")
    return names


def _bind(atom: Atom, source: DataFrame, names: dict[str, str]) -> DataFrame:
    """The atom's tuples with columns named by variable; a repeated variable filters equality."""
    first: dict[str, int] = {}
    conditions, columns = [], []
    for position, var in enumerate(atom.args):
        name = names[var]
        if name in first:
            conditions.append(F.col(f"c{position}") == F.col(f"c{first[name]}"))
            continue
        first[name] = position
        columns.append(F.col(f"c{position}").alias(name))
    for condition in conditions:
        source = source.where(condition)
    return source.select(*columns)
