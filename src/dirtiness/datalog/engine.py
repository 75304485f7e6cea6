"""Semi-naive evaluation of a checked program on Spark, in datafrog's shape.

- A ``Relation`` is a base relation: fixed tuples and their exact count.
- A ``Variable`` is a derived relation growing round by round. It owns its
  whole lifecycle: recent and stable batches merged as datafrog merges them
  (a ``Growing`` set, shared with the plan's loops in ``iteration``),
  subtracting what is known from new candidates, and the provenance of each
  tuple (rule, cause, round), kept beside the tuples and joined to them only
  once, at the end.
- ``evaluate`` loops per stratum while any variable changed. Each round
  joins only recent tuples against full relations, picks one derivation per
  new tuple and materializes the round's new tuples of every relation at
  once: one Spark action, rows on the driver while the round is small
  (``Holding.hold_parts``), so a small catalog pays for few Spark jobs a
  round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import reduce
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .check import CheckedProgram
from .compile import candidates, null_long, tuple_columns
from .iteration import Batch, Growing, Holding, local_batch


def tuple_schema(arity: int) -> T.StructType:
    return T.StructType([T.StructField(f"c{i}", T.LongType()) for i in range(arity)])


@dataclass
class Relation:
    """A base relation: its tuples never change."""

    batch: Batch


@dataclass
class Variable(Growing):
    """A derived relation: a growing set of tuples, and the provenance of every tuple."""

    name: str = ""
    arity: int = 0
    provenance: list[DataFrame] = field(default_factory=list)  # per round: tuples + rule, cause_rel, k*, round

    def advance(self, new: Batch | None, provenance: DataFrame | None = None) -> None:
        super().advance(new)
        if self.recent is not None:
            self.provenance.append(provenance)

    def with_provenance(self, spark: SparkSession, width: int) -> DataFrame:
        """All tuples with ``rule``, ``cause_rel``, ``k*`` and ``round``: the parts joined once, at the end."""
        if self.provenance:
            return reduce(DataFrame.unionByName, self.provenance)
        schema = ", ".join([*(f"c{i} long" for i in range(self.arity)), "rule int", "cause_rel string",
                            *(f"k{i} long" for i in range(width)), "round int"])
        return spark.createDataFrame([], schema)


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
    batches: dict[str, list[int]] = field(default_factory=dict)  # derived relation -> sizes of its batches


class Iteration:
    """One evaluation: the relations, the variables, and the rounds run so far."""

    def __init__(self, checked: CheckedProgram, base: dict[str, DataFrame], broadcast_rows: int,
                 holding: Holding) -> None:
        self.checked = checked
        self.spark = next(iter(base.values())).sparkSession
        self.broadcast_rows, self.holding = broadcast_rows, holding
        self.width = checked.max_arity
        self.derived_width = max(len(d) for d in checked.derived.values())
        self.relations = _materialize_base(self.spark, base, holding.local_rows)
        self.variables = {name: Variable(tuple_schema(len(d)), name=name, arity=len(d))
                          for name, d in checked.derived.items()}
        self.rounds: list[RoundLog] = []

    def sized(self, batch: Batch, joined: bool) -> DataFrame:
        """A batch's frame, hinted for broadcast when small and joined with something."""
        if joined and not batch.local and batch.count <= self.broadcast_rows:
            return F.broadcast(batch.frame)
        return batch.frame

    def full(self, relation: str, joined: bool) -> DataFrame:
        if relation in self.relations:
            return self.sized(self.relations[relation].batch, joined)
        variable = self.variables[relation]
        batches = variable.batches()
        if not batches:
            schema = ", ".join(f"c{i} long" for i in range(len(self.checked.domains(relation))))
            return self.spark.createDataFrame([], schema)
        return reduce(DataFrame.unionByName, [self.sized(b, joined) for b in batches])

    def derivations(self, stratum: tuple[str, ...], first: bool) -> dict[str, list[DataFrame]]:
        """Candidate head tuples with provenance, per relation: what the stratum's rules derive this round."""
        found: dict[str, list[DataFrame]] = {}
        for index, rule in self.checked.rules_of(stratum):
            joined = len(rule.body) > 1
            recursive = [i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum]
            if not recursive:
                if first:
                    sources = [self.full(a.relation, joined) for a in rule.body]
                    found.setdefault(rule.head.relation, []).append(
                        candidates(rule, index, sources, self.checked.cause_index(rule), self.width))
                continue
            for at in recursive:
                recent = self.variables[rule.body[at].relation].recent
                if first or recent is None:
                    continue
                # A local recent batch has a known, small size: Spark broadcasts it and streams the
                # rest. Hinting the other side would broadcast a whole relation every round instead.
                sources = [self.sized(recent, joined) if i == at else self.full(a.relation, not recent.local)
                           for i, a in enumerate(rule.body)]
                found.setdefault(rule.head.relation, []).append(candidates(rule, index, sources, at, self.width))
        return found

    def new_tuples(self, found: dict[str, list[DataFrame]], round_no: int) -> DataFrame:
        """One derivation per tuple not known before (the lowest rule index, then the lowest cause).

        All relations of the round in one aggregation, keyed by relation and
        padded tuple (padding is constant per relation, so it never joins
        across relations). What is known is subtracted by a broadcast
        anti-join when small, else in the same aggregation (one shuffle of
        candidates and known tuples, not two).
        """
        keys = ["relation", *tuple_columns(self.derived_width)]
        causes = ["rule", "cause_rel", *tuple_columns(self.width, "k")]
        candidates_ = reduce(DataFrame.unionByName, [self._padded(relation, frame, *causes)
                                                     for relation, frames in found.items() for frame in frames])
        known_batches = [(name, b) for name in found for b in self.variables[name].batches()]
        known_rows = sum(b.count for _, b in known_batches)
        if known_batches and not all(b.local for _, b in known_batches) and known_rows > self.broadcast_rows:
            known = reduce(DataFrame.unionByName, [self._padded(name, b.frame) for name, b in known_batches])
            picked = (candidates_.select(*keys, F.struct(*causes).alias("p"), F.lit(False).alias("known"))
                      .unionByName(known.select(*keys, F.lit(None).cast(candidates_.select(F.struct(*causes))
                                                                         .schema[0].dataType).alias("p"),
                                                F.lit(True).alias("known")))
                      .groupBy(*keys).agg(F.min("p").alias("p"), F.max("known").alias("known"))
                      .where(~F.col("known")).select(*keys, "p.*"))
        else:
            picked = candidates_.groupBy(*keys).agg(F.min(F.struct(*causes)).alias("p")).select(*keys, "p.*")
            if known_batches:
                known = reduce(DataFrame.unionByName, [self._padded(name, b.frame) for name, b in known_batches])
                known = F.broadcast(known.select(*(F.col(k).alias(f"known_{k}") for k in keys)))
                picked = picked.join(known, [F.col(k).eqNullSafe(F.col(f"known_{k}")) for k in keys], "left_anti")
        return picked.select(*keys, *causes, F.lit(round_no).alias("round"))

    def _padded(self, relation: str, frame: DataFrame, *extra: str) -> DataFrame:
        arity = self.variables[relation].arity
        return frame.select(F.lit(relation).alias("relation"),
                            *(F.col(f"c{i}") if i < arity else null_long().alias(f"c{i}")
                              for i in range(self.derived_width)), *extra)

    def materialize(self, delta: DataFrame, stratum: tuple[str, ...]) -> dict[str, int]:
        """The round's new tuples, split per variable and handed to it; returns the counts.

        One action a round. The round is collected as rows when it may be
        small: the last round's new tuples were all local (a stratum's first
        round: the base relations are). At most ``local_rows + 1`` rows ever
        reach the driver: a round that derives more is checkpointed instead.
        """
        recent = [v.recent for v in self.variables.values() if v.recent is not None]
        may_be_small = all(b.local for b in recent) and (bool(recent) or all(
            r.batch.local for r in self.relations.values()))
        parts = self.holding.hold_parts(delta, "relation", may_be_small)
        provenance = self._provenance_columns()
        for name in stratum:
            variable, part = self.variables[name], parts.get(name)
            if part is None:
                variable.advance(None)
                continue
            tuples = tuple_columns(variable.arity)
            variable.advance(part.project(tuples), part.project([*tuples, *provenance]).frame)
        return {name: parts[name].count if name in parts else 0 for name in stratum}

    def _provenance_columns(self) -> list[str]:
        return ["rule", "cause_rel", *tuple_columns(self.width, "k"), "round"]

    def run(self, on_round: Callable[[RoundLog], None] | None) -> Evaluation:
        round_no = 0
        for stratum_no, stratum in enumerate(self.checked.strata):
            first = True
            while True:
                started = time.perf_counter()
                found = self.derivations(stratum, first)
                first = False
                if not found:  # nothing can fire: the stratum is complete without another round
                    break
                round_no += 1
                delta = self.new_tuples(found, round_no)
                counts = self.materialize(delta, stratum)
                entry = RoundLog(round_no, stratum_no, counts, time.perf_counter() - started)
                self.rounds.append(entry)
                if on_round:
                    on_round(entry)
                if not any(counts.values()):
                    break
        return Evaluation(relations={name: v.with_provenance(self.spark, self.width)
                                     for name, v in self.variables.items()}, rounds=self.rounds,
                          batches={name: [b.count for b in v.batches()] for name, v in self.variables.items()})


def evaluate(checked: CheckedProgram, base: dict[str, DataFrame], on_round: Callable[[RoundLog], None] | None,
             broadcast_rows: int, holding: Holding) -> Evaluation:
    """Evaluate ``checked`` over interned base relations (columns ``c0..``) to its fixed point.

    Join strategy from exact counts: a relation of at most ``broadcast_rows``
    tuples is broadcast (checkpointed data carries no size statistics, so
    Spark alone would shuffle both sides of every join).
    """
    return Iteration(checked, base, broadcast_rows, holding).run(on_round)


def _materialize_base(spark: SparkSession, base: dict[str, DataFrame], local_rows: int) -> dict[str, Relation]:
    """Every base relation with its exact count (one job); the small ones collected (one more) as local."""
    tagged = [frame.select(F.lit(name).alias("relation")) for name, frame in base.items()]
    counts = {row["relation"]: row["count"] for row in reduce(DataFrame.unionByName, tagged)
              .groupBy("relation").count().collect()}
    small = [name for name in base if counts.get(name, 0) <= local_rows]
    width = max((len(base[name].columns) for name in small), default=0)
    rows: dict[str, list[tuple]] = {name: [] for name in small}
    if small:
        padded = [base[name].select(F.lit(name).alias("relation"), *base[name].columns,
                                    *(null_long().alias(f"c{i}") for i in range(len(base[name].columns), width)))
                  for name in small]
        for row in reduce(DataFrame.unionByName, padded).collect():
            rows[row[0]].append(tuple(row[1:1 + len(base[row[0]].columns)]))
    return {name: Relation(local_batch(spark, rows[name], tuple_schema(len(frame.columns))) if name in rows
                           else Batch(frame, counts.get(name, 0)))
            for name, frame in base.items()}
