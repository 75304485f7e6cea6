"""The computation without I/O: snapshots in, base facts, fixed point and dirty tables out.

Everything before the fixed point has a short lineage of fixed length, so it
is cached (lazily: filled by the first job that reads it, the Delta write of
the facts or the first round), not checkpointed: under adaptive execution
even a lazy checkpoint runs its shuffles at once. The loop itself cuts its
lineage every round (``datalog.engine``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from .base_facts import extract_base_facts
from .datalog.check import CheckedProgram
from .datalog.engine import Evaluation, RoundLog, evaluate
from .diff import changed_stmt
from .interning import Dictionaries, build_dictionaries, intern
from .outputs import dirty_table, object_attributes
from .snapshot import Snapshot


@dataclass
class BaseFacts:
    facts: dict[str, DataFrame]  # base relation -> facts-table rows
    attributes: DataFrame        # database, schema, name, kind, change of every object


@dataclass
class Interned:
    dictionaries: Dictionaries
    relations: dict[str, DataFrame]  # base relation -> c0.. integer tuples


def base_facts(spark: SparkSession, old: Snapshot, new: Snapshot, forced: list[tuple[str, str]]) -> BaseFacts:
    changed = changed_stmt(old.objects, new.objects).cache()
    facts = {name: frame.cache()
             for name, frame in extract_base_facts(spark, old, new, changed, forced).items()}
    attributes = object_attributes(old.objects, new.objects, changed).cache()
    return BaseFacts(facts=facts, attributes=attributes)


def intern_facts(facts: dict[str, DataFrame], buckets: int) -> Interned:
    dictionaries = build_dictionaries(facts, buckets)
    dictionaries = Dictionaries(objects=dictionaries.objects.cache(),
                                names=dictionaries.names.cache())
    relations = {name: intern(name, frame, dictionaries).cache() for name, frame in facts.items()}
    return Interned(dictionaries=dictionaries, relations=relations)


def dirty_tables(checked: CheckedProgram, evaluation: Evaluation, interned: Interned, attributes: DataFrame,
                 outputs: dict[str, str]) -> dict[str, DataFrame]:
    """Output table name -> rows (without ``run_id``), for every relation listed in ``outputs``."""
    return {table: dirty_table(checked, relation, evaluation.relations[relation], interned.dictionaries, attributes)
            for relation, table in outputs.items()}


def compute_dirty(spark: SparkSession, old: Snapshot, new: Snapshot, forced: list[tuple[str, str]],
                  checked: CheckedProgram, outputs: dict[str, str], buckets: int, broadcast_rows: int,
                  local_rows: int, on_round: Callable[[RoundLog], None] | None = None):
    """All steps in one call: (base facts, evaluation, dirty tables)."""
    base = base_facts(spark, old, new, forced)
    interned = intern_facts(base.facts, buckets)
    evaluation = evaluate(checked, interned.relations, on_round, broadcast_rows, local_rows)
    return base, evaluation, dirty_tables(checked, evaluation, interned, base.attributes, outputs)
