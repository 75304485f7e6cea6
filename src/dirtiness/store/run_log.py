"""What a run records about itself, beside its results: the tables ``explain`` and ``report`` read.

- ``run_relations``: every relation of the rule program, base or derived, the
  table holding its tuples (``facts/<relation>``, an output table, or none
  when a derived relation is not written) and how many tuples it has. It is
  how ``explain`` follows a cause such as ``DirtyCluster(quickstart)`` to the
  table that explains it, whatever the configuration says today.
- ``run_rounds``: tuples derived per relation per round of the fixed point.
- ``run_stages``: wall-clock seconds per stage of the run.
"""

from __future__ import annotations

from pyspark.sql import types as T

from ..datalog.check import CheckedProgram
from ..datalog.engine import RoundLog
from ..model import facts_table

RUN_RELATIONS = T.StructType([
    T.StructField("relation", T.StringType()),
    T.StructField("role", T.StringType()),     # base | derived
    T.StructField("table", T.StringType()),    # under the output root; null: not written
    T.StructField("tuples", T.LongType()),
])
RUN_ROUNDS = T.StructType([
    T.StructField("round", T.IntegerType()),
    T.StructField("stratum", T.IntegerType()),
    T.StructField("relation", T.StringType()),
    T.StructField("derived", T.LongType()),
    T.StructField("seconds", T.DoubleType()),
])
RUN_STAGES = T.StructType([
    T.StructField("position", T.IntegerType()),
    T.StructField("stage", T.StringType()),
    T.StructField("seconds", T.DoubleType()),
])


def relation_rows(checked: CheckedProgram, outputs: dict[str, str], facts: dict[str, int],
                  rounds: list[RoundLog]) -> list[tuple]:
    """One row per relation the program uses: base relations first, then derived ones in stratum order."""
    derived = {name: 0 for stratum in checked.strata for name in stratum}
    for entry in rounds:
        for name, count in entry.new.items():
            derived[name] += count
    rows = [(name, "base", facts_table(name), facts.get(name)) for name in checked.base]
    rows += [(name, "derived", outputs.get(name), count) for name, count in derived.items()]
    return rows


def round_rows(rounds: list[RoundLog]) -> list[tuple]:
    return [(r.round, r.stratum, relation, count, round(r.seconds, 3))
            for r in rounds for relation, count in r.new.items()]


def stage_rows(seconds: dict[str, float]) -> list[tuple]:
    return [(i, stage, value) for i, (stage, value) in enumerate(seconds.items())]
