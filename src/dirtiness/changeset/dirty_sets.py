"""Derived relations back to named rows: the dirty-set tables of docs/design.md §5.

Integer columns become names again; the rule index becomes its label; the
cause becomes a readable tuple such as
``DirtyStmt(materialize.internal.winning_bids)``. A relation with exactly one
object column also gets the object's ``kind``, ``change`` and ``tool_id``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..datalog.check import CheckedProgram
from ..model import KEY, OBJECT_DOMAIN
from .interning import Dictionaries, display_names


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


def dirty_table(checked: CheckedProgram, relation: str, derived: DataFrame, dictionaries: Dictionaries,
                attributes: DataFrame) -> DataFrame:
    """Rows ``<key columns>, [kind, change], rule, cause, round[, tool_id]`` for one derived relation.

    ``attributes`` holds ``database, schema, name, kind, change, tool_id`` of every object.
    """
    domains = checked.domains(relation)
    names = column_names(domains)
    frame = _with_cause(checked, derived, dictionaries)
    keys: list[str] = []
    for i, (domain, columns) in enumerate(zip(domains, names)):
        table, fields = dictionaries.for_domain(domain)
        frame = frame.join(table.select(F.col("id").alias(f"c{i}"), *(F.col(f).alias(c) for f, c in zip(fields, columns))),
                           f"c{i}", "inner")
        keys.extend(columns)
    labels = F.array(*(F.lit(r.label) for r in checked.rules))
    detail: list[str] = []
    tool: list[str] = []
    if sum(1 for d in domains if d == OBJECT_DOMAIN) == 1:
        frame = frame.join(attributes, list(KEY), "left")
        detail, tool = ["kind", "change"], ["tool_id"]  # tool_id last: tables written before it widen
    return frame.select(*keys, *detail, F.element_at(labels, F.col("rule") + 1).alias("rule"),
                        "cause", F.col("round").cast("int").alias("round"), *tool)


def _with_cause(checked: CheckedProgram, derived: DataFrame, dictionaries: Dictionaries) -> DataFrame:
    """Adds ``cause``: the cause relation with its arguments shown by name."""
    display = display_names(dictionaries)
    shown = (display[OBJECT_DOMAIN].withColumn("kind", F.lit(OBJECT_DOMAIN))
             .unionByName(display["name"].withColumn("kind", F.lit("name"))))
    relations = sorted({*checked.base, *checked.derived})
    frame = derived
    parts = []
    for j in range(checked.max_arity):
        kinds = {r: _kind(checked.domains(r)[j]) for r in relations if j < len(checked.domains(r))}
        if not kinds:
            continue
        kind_of = F.create_map(*(x for r, k in kinds.items() for x in (F.lit(r), F.lit(k))))
        frame = (frame.withColumn(f"kind{j}", F.element_at(kind_of, F.col("cause_rel")))
                 .join(shown.select(F.col("id").alias(f"k{j}"), F.col("kind").alias(f"kind{j}"),
                                    F.col("text").alias(f"text{j}")),
                       [f"k{j}", f"kind{j}"], "left"))
        parts.append(F.col(f"text{j}"))
    cause = F.concat(F.col("cause_rel"), F.lit("("), F.concat_ws(", ", *parts), F.lit(")"))
    return frame.withColumn("cause", cause)


def _kind(domain: str) -> str:
    return OBJECT_DOMAIN if domain == OBJECT_DOMAIN else "name"


def object_attributes(old_objects: DataFrame, new_objects: DataFrame, changed: DataFrame) -> DataFrame:
    """``database, schema, name, kind, change, tool_id`` for every object of either snapshot (new side wins)."""
    old = old_objects.select(*KEY, F.col("kind").alias("old_kind"), F.col("tool_id").alias("old_tool_id"))
    new = new_objects.select(*KEY, F.col("kind").alias("new_kind"), F.col("tool_id").alias("new_tool_id"))
    return (old.join(new, list(KEY), "full_outer")
            .join(changed.select(*KEY, "change"), list(KEY), "left")
            .select(*KEY, F.coalesce("new_kind", "old_kind").alias("kind"), "change",
                    F.coalesce("new_tool_id", "old_tool_id").alias("tool_id")))
