"""Semi-naive evaluation of a checked program on Spark.

In the manner of datafrog: a base ``Relation`` never changes; a ``Variable``
grows round by round, keeping its ``stable`` tuples and the ``recent`` ones
derived in the last round; ``evaluate`` loops per stratum while any variable
changed. Each round joins only recent tuples against full relations, removes
what is already known, cuts the lineage and counts the new tuples of every
relation in one Spark job.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import reduce
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .check import CheckedProgram
from .compile import candidates, null_long, tuple_columns

log = logging.getLogger(__name__)


@dataclass
class Variable:
    """A derived relation: stable tuples plus the recent delta, with provenance."""

    name: str
    arity: int
    stable: list[DataFrame] = field(default_factory=list)
    recent: DataFrame | None = None
    recent_count: int = 0
    count: int = 0  # all tuples, stable and recent

    def advance(self, delta: DataFrame, count: int) -> None:
        if self.recent is not None and self.recent_count:
            self.stable.append(self.recent)
        self.recent, self.recent_count = (delta, count) if count else (None, 0)
        self.count += count

    def parts(self) -> list[DataFrame]:
        return self.stable + ([self.recent] if self.recent is not None else [])

    def full(self) -> DataFrame | None:
        """Every tuple so far, with ``rule``, ``cause_rel``, ``k*`` and ``round``."""
        parts = self.parts()
        return reduce(DataFrame.unionByName, parts) if parts else None

    def tuples(self) -> DataFrame | None:
        full = self.full()
        return full.select(*tuple_columns(self.arity)) if full is not None else None


@dataclass
class RoundLog:
    round: int
    stratum: int
    new: dict[str, int]
    seconds: float


@dataclass
class Evaluation:
    relations: dict[str, DataFrame]  # derived relation -> all its tuples with provenance
    rounds: list[RoundLog]


def evaluate(checked: CheckedProgram, base: dict[str, DataFrame],
             on_round: Callable[[RoundLog], None] | None = None, broadcast_rows: int = 100_000) -> Evaluation:
    """Evaluate ``checked`` over interned base relations (columns ``c0..``) to its fixed point.

    Join strategy from exact counts: a relation of at most ``broadcast_rows``
    tuples is broadcast (checkpointed data carries no size statistics, so
    Spark alone would shuffle both sides of every join).
    """
    spark = next(iter(base.values())).sparkSession
    base_counts = _count_all(base)

    def sized(frame: DataFrame, rows: int) -> DataFrame:
        return F.broadcast(frame) if rows <= broadcast_rows else frame

    width = checked.max_arity
    derived_width = max(len(d) for d in checked.derived.values())
    variables = {name: Variable(name, len(d)) for name, d in checked.derived.items()}
    logs: list[RoundLog] = []
    round_no = 0

    def empty(relation: str) -> DataFrame:
        arity = len(checked.domains(relation))
        schema = ", ".join(f"c{i} long" for i in range(arity))
        return spark.createDataFrame([], schema)

    def full_tuples(relation: str, joined: bool) -> DataFrame:
        """All tuples of a relation; hinted for broadcast when small and joined with something."""
        if relation in base:
            frame, rows = base[relation], base_counts[relation]
        elif variables[relation].count:
            frame, rows = variables[relation].tuples(), variables[relation].count
        else:
            return empty(relation)
        return sized(frame, rows) if joined else frame

    for stratum_no, stratum in enumerate(checked.strata):
        first = True
        while True:
            started = time.perf_counter()
            derivations: dict[str, list[DataFrame]] = {}
            for index, rule in checked.rules_of(stratum):
                recursive = [i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum]
                if not recursive:
                    if first:
                        cause_at = checked.cause_index(rule)
                        sources = [full_tuples(a.relation, len(rule.body) > 1) for a in rule.body]
                        derivations.setdefault(rule.head.relation, []).append(
                            candidates(rule, index, sources, cause_at, width))
                    continue
                for at in recursive:
                    delta = variables[rule.body[at].relation]
                    if first or delta.recent is None:
                        continue
                    recent = delta.recent.select(*tuple_columns(delta.arity))
                    recent = sized(recent, delta.recent_count) if len(rule.body) > 1 else recent
                    sources = [recent if i == at else full_tuples(a.relation, True) for i, a in enumerate(rule.body)]
                    derivations.setdefault(rule.head.relation, []).append(
                        candidates(rule, index, sources, at, width))
            first = False
            if not derivations:  # nothing can fire: the stratum is complete without another round
                break
            round_no += 1
            new_frames = [
                _pad(_new_tuples(frames, variables[relation], width, broadcast_rows), relation, variables[relation].arity,
                     derived_width, width, round_no)
                for relation, frames in derivations.items()
            ]
            # One job per round: the lazy checkpoint is filled by the count that decides whether to go on.
            delta = reduce(DataFrame.unionByName, new_frames).localCheckpoint(eager=False)
            counts = {row["relation"]: row["count"] for row in delta.groupBy("relation").count().collect()}
            for name in stratum:
                variable = variables[name]
                part = delta.where(F.col("relation") == name).select(
                    *tuple_columns(variable.arity), "rule", "cause_rel", *tuple_columns(width, "k"), "round")
                variable.advance(part, counts.get(name, 0))
            entry = RoundLog(round_no, stratum_no, {n: counts.get(n, 0) for n in stratum},
                             time.perf_counter() - started)
            logs.append(entry)
            if on_round:
                on_round(entry)
            if not any(counts.values()):
                break

    relations = {}
    for name, variable in variables.items():
        full = variable.full()
        if full is None:
            schema = ", ".join([*(f"c{i} long" for i in range(variable.arity)), "rule int", "cause_rel string",
                                *(f"k{i} long" for i in range(width)), "round int"])
            full = spark.createDataFrame([], schema)
        relations[name] = full
    return Evaluation(relations=relations, rounds=logs)


def _count_all(base: dict[str, DataFrame]) -> dict[str, int]:
    """Tuples per base relation, in one Spark job."""
    tagged = [frame.select(F.lit(name).alias("relation")) for name, frame in base.items()]
    counts = {row["relation"]: row["count"] for row in reduce(DataFrame.unionByName, tagged)
              .groupBy("relation").count().collect()}
    return {name: counts.get(name, 0) for name in base}


def _new_tuples(frames: list[DataFrame], variable: Variable, width: int, broadcast_rows: int) -> DataFrame:
    """One derivation per tuple not known before: the lowest rule index, then the lowest cause."""
    keys = tuple_columns(variable.arity)
    causes = tuple_columns(width, "k")
    union = reduce(DataFrame.unionByName, frames)
    picked = (union.groupBy(*keys)
              .agg(F.min(F.struct("rule", "cause_rel", *causes)).alias("p"))
              .select(*keys, "p.*"))
    known = variable.tuples()
    if known is None:
        return picked
    return picked.join(F.broadcast(known) if variable.count <= broadcast_rows else known, keys, "left_anti")


def _pad(frame: DataFrame, relation: str, arity: int, derived_width: int, width: int, round_no: int) -> DataFrame:
    return frame.select(
        F.lit(relation).alias("relation"),
        *(F.col(f"c{i}") if i < arity else null_long().alias(f"c{i}") for i in range(derived_width)),
        "rule", "cause_rel", *tuple_columns(width, "k"),
        F.lit(round_no).alias("round"),
    )
