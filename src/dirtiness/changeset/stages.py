"""The changeset as the job runs it: base facts, interned relations, dirty tables (``job.compute`` calls each).

Everything before the fixed point has a short lineage of fixed length, so it
is cached (lazily: filled by the first job that reads it, the Delta write of
the facts or the first round), not checkpointed: under adaptive execution
even a lazy checkpoint runs its shuffles at once. The loop itself cuts its
lineage every round (``datalog.engine``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from ..datalog.check import CheckedProgram
from ..datalog.engine import Evaluation
from ..inputs.snapshot import Snapshot
from .base_facts import extract_base_facts
from .diff import changed_stmt
from .dirty_sets import dirty_table, object_attributes
from .interning import Dictionaries, build_dictionaries, intern


@dataclass
class BaseFacts:
    facts: dict[str, DataFrame]  # base relation -> facts-table rows
    attributes: DataFrame        # database, schema, name, kind, change, tool_id of every object


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
