"""Semi-naive evaluation of a checked program on Spark, in datafrog's shape: one Spark job a round.

- A ``Variable`` is a derived relation growing round by round: the tuples
  each round added (with their provenance: rule, cause, round) and the
  ``recent`` ones, which the next round joins.
- ``Known`` holds what a stratum has derived so far, for subtracting it from
  the next round's candidates: the rounds' tuples merged as datafrog merges
  (the newest batch absorbs the last while that one is at most twice as
  large), so a round anti-joins a handful of batches. Held as blocks they
  are hash-partitioned and sorted on the tuple, exactly as the round's
  aggregation partitions its candidates, so the anti-joins shuffle nothing
  of what is known.
- A ``Program`` plans every rule once (``compile.RulePlan``): the static
  part of each recursive rule, whatever does not change while its stratum
  runs, is joined and held before the loop, partitioned on the variables it
  shares with the round's new tuples. Those over base relations only are
  held with the base relations themselves (``requests``), in the same job
  as whatever else the caller holds then.
- A round joins the new tuples of the last round with the held static
  parts, picks one derivation per new tuple (the lowest rule, then the
  lowest cause) in one aggregation, subtracts what is known and holds the
  result (``Holding``): one Spark action, rows on the driver while the round
  is small. Everything within a round must be one job, so the session
  computes without adaptive execution and without broadcast joins
  (``conf/job.yaml``: ``spark.compute_conf``).
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
from .compile import RulePlan, all_wildcards, candidates, plan_rule, static_part, tuple_columns
from .holding import Batch, Hold, Holding, concat, in_one_partition, local_batch

RELATION = "relation"


def tuple_schema(arity: int) -> T.StructType:
    return T.StructType([T.StructField(f"c{i}", T.LongType()) for i in range(arity)])


def provenance_schema(arity: int, cause_width: int) -> T.StructType:
    return T.StructType([*tuple_schema(arity).fields, T.StructField("rule", T.IntegerType()),
                         T.StructField("cause_rel", T.StringType()),
                         *(T.StructField(f"k{i}", T.LongType()) for i in range(cause_width)),
                         T.StructField("round", T.IntegerType())])


@dataclass
class RoundLog:
    round: int
    stratum: int
    new: dict[str, int]
    seconds: float


@dataclass
class Variable:
    """A derived relation: the tuples each round added, with provenance, and the last round's."""

    name: str
    arity: int
    parts: list[Batch] = field(default_factory=list)  # c0.., rule, cause_rel, k*, round
    recent: Batch | None = None                       # c0.. of the last round's new tuples
    _tuples: Batch | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return sum(p.count for p in self.parts)

    def advance(self, part: Batch | None) -> None:
        if part is None or not part.count:
            self.recent = None
            return
        self.parts.append(part)
        self.recent = part.project(tuple_columns(self.arity))
        self._tuples = None

    def tuples(self, spark: SparkSession) -> Batch:
        if self._tuples is None:
            self._tuples = concat([p.project(tuple_columns(self.arity)) for p in self.parts],
                                  tuple_schema(self.arity), spark)
        return self._tuples

    def with_provenance(self, spark: SparkSession, cause_width: int) -> DataFrame:
        return concat(self.parts, provenance_schema(self.arity, cause_width), spark).frame


@dataclass
class Known:
    """A stratum's tuples so far (``relation, c0..``), in logarithmically many batches."""

    holding: Holding
    keys: list[str]
    batches: list[Batch] = field(default_factory=list)

    def add(self, batch: Batch) -> None:
        batch = batch.project(self.keys)
        while self.batches and self.batches[-1].count <= 2 * batch.count:
            batch = self._merge(self.batches.pop(), batch)
        self.batches.append(batch)

    def subtract_from(self, frame: DataFrame) -> DataFrame:
        for batch in self.batches:
            frame = frame.join(batch.frame, self.keys, "left_anti")
        return frame

    def _merge(self, older: Batch, newer: Batch) -> Batch:
        if older.local and newer.local:
            return local_batch(older.spark, older.rows + newer.rows, older.schema)
        union = older.frame.unionByName(newer.frame)
        # rows have no partitioning: the union gets the aggregation's. Filled by the next round's job, which
        # reads it: merging costs no job of its own
        held = self.holding.checkpoint(union, self.keys, partition=older.local or newer.local)
        return Batch(held, older.count + newer.count)


@dataclass
class Evaluation:
    relations: dict[str, DataFrame]  # derived relation -> its tuples with provenance
    tuples: dict[str, Batch]         # derived relation -> its tuples (c0..): base relations of a later program
    rounds: list[RoundLog]
    batches: dict[int, list[int]] = field(default_factory=dict)  # stratum -> sizes of its known batches
    derived: Batch | None = None     # every derived tuple of every round, as rounds hold them: relation,
    # c0.. (padded with PAD), rule, cause_rel, k0.. (padded with nulls), round; None: nothing derived


class Program:
    """A checked program planned for evaluation: ``requests`` what to hold, then ``evaluate``."""

    def __init__(self, checked: CheckedProgram, holding: Holding, label: str = "rules") -> None:
        self.checked, self.holding, self.label = checked, holding, label
        self.width = max(len(d) for d in checked.derived.values())  # tuple columns of a round
        self.cause_width = checked.max_arity
        self.plans: list[list[RulePlan]] = []
        for stratum in checked.strata:
            plans = []
            for index, rule in checked.rules_of(stratum):
                recursive = [i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum]
                if not recursive:
                    plans.append(plan_rule(index, rule, stratum, None, checked.cause_index(rule)))
                plans += [plan_rule(index, rule, stratum, at, at) for at in recursive]
            self.plans.append(plans)

    def name(self, *parts) -> str:
        """The name a frame of this program is held by (``static_requests``)."""
        return ":".join([self.label, *map(str, parts)])

    def static_requests(self, base: dict[str, Batch]) -> dict[str, Hold]:
        """The static part of every rule over the given base relations alone, to be held by one
        ``hold_all`` with whatever else the caller holds (one Spark job for all), partitioned on the
        variables it shares with the round's new tuples."""
        wanted = {}
        for plans in self.plans:
            for plan in plans:
                if plan.hoisted and plan.static_relations() <= set(base):
                    wanted[self.name("static", plan.index, plan.delta)] = static_hold(
                        plan, {i: base[plan.rule.body[i].relation] for i in plan.static}, self.holding)
        return wanted

    def evaluate(self, base: dict[str, Batch], static: dict[str, Batch] | None = None,
                 on_round: Callable[[RoundLog], None] | None = None,
                 on_static: Callable[[int], None] | None = None) -> Evaluation:
        """The fixed point over the base relations (a relation not given is empty) and the static parts held
        so far (``static_requests``); the others are held as their stratum starts (one job, then
        ``on_static(stratum)``)."""
        return Evaluator(self, base, static or {}, on_static).run(on_round)


def static_hold(plan: RulePlan, sources: dict[int, Batch], holding: Holding) -> Hold:
    """A recursive rule's static part, to be held partitioned on its keys; joined in one partition when every
    atom it reads is rows (or a view of them), or all that is held is in one (``Holding.single``)."""
    one_partition = holding.single or all(b.small for b in sources.values())
    return Hold(static_part(plan, {i: b.frame for i, b in sources.items()}, one_partition), plan.keys)


class Evaluator:
    """One evaluation: the relations, the variables, and the rounds run so far; ``run_stratum`` runs a
    stratum's rounds (``datalog.incremental`` brings one up to date instead)."""

    def __init__(self, program: Program, base: dict[str, Batch], static: dict[str, Batch],
                 on_static: Callable[[int], None] | None) -> None:
        self.program, self.checked, self.holding = program, program.checked, program.holding
        self.on_static = on_static
        self.held = static
        self.spark = next(iter(base.values())).spark
        self.relations: dict[str, Batch] = {}
        for name, domains in self.checked.base.items():
            batch = base.get(name)
            self.relations[name] = batch if batch is not None else local_batch(self.spark, [], tuple_schema(len(domains)))
        self.outputs: list[Batch] = []
        self.variables = {name: Variable(name, len(d)) for name, d in self.checked.derived.items()}
        self.keys = [RELATION, *tuple_columns(program.width)]
        self.rounds: list[RoundLog] = []
        self.batches: dict[int, list[int]] = {}

    def count(self, relation: str) -> int:
        return self.relations[relation].count if relation in self.relations else self.variables[relation].count

    def full(self, relation: str) -> Batch:
        if relation in self.relations:
            return self.relations[relation]
        return self.variables[relation].tuples(self.spark)

    def vacuous(self, plan: RulePlan) -> bool:
        """A rule with ``NOT R(_, ...)`` cannot fire while R holds anything (R is fixed while the rule runs).
        A count not known (a view of blocks) is not taken for "holds something": the rule runs."""
        return any(a.negated and all_wildcards(a) and self.count(a.relation) for a in plan.rule.body)

    def empty(self, relation: str) -> bool:
        """Known to hold nothing now (a view of blocks, whose count is not known, is not)."""
        return self.count(relation) == 0

    def idle(self, plan: RulePlan, static: dict[tuple[int, int], Batch]) -> bool:
        """A rule that derives nothing this round because a relation it joins is empty: its held static part,
        or a positive atom it reads whole. Nothing of it is built, so a round costs what fires."""
        if plan.hoisted and static[(plan.index, plan.delta)].count == 0:
            return True
        whole = range(len(plan.rule.body)) if plan.delta is None else plan.late
        return any(not plan.rule.body[i].negated and self.empty(plan.rule.body[i].relation) for i in whole)

    def run(self, on_round: Callable[[RoundLog], None] | None) -> Evaluation:
        for stratum_no, stratum in enumerate(self.checked.strata):
            self.run_stratum(stratum_no, stratum, on_round)
        cause_width = self.program.cause_width
        schema = self.outputs[0].schema if self.outputs else None
        return Evaluation(
            relations={n: v.with_provenance(self.spark, cause_width) for n, v in self.variables.items()},
            tuples={n: v.tuples(self.spark) for n, v in self.variables.items()},
            rounds=self.rounds, batches=self.batches,
            derived=concat(self.outputs, schema, self.spark) if schema is not None else None)

    def run_stratum(self, stratum_no: int, stratum: tuple[str, ...], on_round) -> None:
        plans = [p for p in self.program.plans[stratum_no] if not self.vacuous(p)]
        static = self.hold_static(stratum_no, plans)
        known = Known(self.holding, self.keys)
        inputs = [*self.relations.values(), *static.values(), *(p for v in self.variables.values() for p in v.parts)]
        first, small = True, all(b.small for b in inputs)
        while True:
            started = time.perf_counter()
            found, due = [], False  # due: some rule may fire on what the last round added (a round is run)
            one_partition = small or self.holding.single  # what the round reads is in one partition
            for plan in plans:
                rule = plan.rule
                if plan.delta is None:
                    if not first:  # a rule reading nothing of its stratum fires once, in the first round
                        continue
                else:
                    recent = self.variables[rule.body[plan.delta].relation].recent
                    if recent is None:
                        continue
                due = True
                if self.idle(plan, static):
                    continue
                if plan.delta is None:
                    sources = {i: self.full(a.relation).frame for i, a in enumerate(rule.body)}
                else:
                    sources = {plan.delta: recent.frame, **{i: self.full(rule.body[i].relation).frame
                                                            for i in plan.late}}
                found.append(candidates(plan, sources, static[(plan.index, plan.delta)].frame if plan.hoisted else None,
                                        self.program.width, self.program.cause_width, one_partition))
            first = False
            if not due:  # nothing can fire: the stratum is complete without another round
                break
            if not found:  # every rule due joins an empty relation: the round derives nothing, no job
                self.log_round(stratum_no, stratum, {}, started, on_round)
                break
            new = self.new_tuples(found, known, len(self.rounds) + 1, one_partition)
            held, counts = self.hold_round(new, stratum, small)
            small = held.local
            known.add(held)
            for name in stratum:
                variable = self.variables[name]
                variable.advance(self.part_of(held, name, counts.get(name, 0)) if counts.get(name) else None)
            self.outputs.append(held)
            self.log_round(stratum_no, stratum, counts, started, on_round)
            if not any(counts.values()):
                break
        self.batches[stratum_no] = [b.count for b in known.batches]

    def log_round(self, stratum_no: int, stratum: tuple[str, ...], counts: dict[str, int], started: float,
                  on_round: Callable[[RoundLog], None] | None, seconds: float | None = None) -> None:
        """The round just run (``started`` then), or one of ``seconds`` (``datalog.incremental``)."""
        entry = RoundLog(len(self.rounds) + 1, stratum_no, {name: counts.get(name, 0) for name in stratum},
                         time.perf_counter() - started if seconds is None else seconds)
        self.rounds.append(entry)
        if on_round:
            on_round(entry)

    def hold_static(self, stratum_no: int, plans: list[RulePlan]) -> dict[tuple[int, int], Batch]:
        """The static parts of the stratum's recursive rules: held with the base relations, or now (one job for
        those that read relations of lower strata; none for one that joins a relation known to be empty)."""
        static, missing = {}, {}
        for plan in plans:
            if not plan.hoisted:
                continue
            name = self.program.name("static", plan.index, plan.delta)
            if name in self.held:
                static[(plan.index, plan.delta)] = self.held[name]
            elif any(self.empty(plan.rule.body[i].relation) for i in plan.static if not plan.rule.body[i].negated):
                static[(plan.index, plan.delta)] = local_batch(self.spark, [], T.StructType([]))  # joins nothing
            else:
                missing[(plan.index, plan.delta)] = static_hold(
                    plan, {i: self.full(plan.rule.body[i].relation) for i in plan.static}, self.holding)
        if missing:
            small = all(b.small for b in self.relations.values())
            held = self.holding.hold_all({f"{i}:{d}": h for (i, d), h in missing.items()}, try_local=small)
            static.update({key: held[f"{key[0]}:{key[1]}"] for key in missing})
            if self.on_static:
                self.on_static(stratum_no)
        return static

    def new_tuples(self, found: list[DataFrame], known: Known, round_no: int, one_partition: bool) -> DataFrame:
        """One derivation per tuple not known before: the lowest rule index, then the lowest cause.
        ``one_partition``: the candidates are joins in one partition, aggregated there."""
        causes = ["rule", "cause_rel", *tuple_columns(self.program.cause_width, "k")]
        # ``compile.candidates`` selects every rule's tuples into the same columns in the same order
        picked = (in_one_partition(reduce(DataFrame.union, found), one_partition).groupBy(*self.keys)
                  .agg(F.min(F.struct(*causes)).alias("p")).select(*self.keys, "p.*"))
        return known.subtract_from(picked).withColumn("round", F.lit(round_no))

    def hold_round(self, new: DataFrame, stratum: tuple[str, ...], small: bool) -> tuple[Batch, dict[str, int]]:
        """The round's new tuples materialized by one action: rows while the round may be small, else blocks
        kept in the aggregation's partitioning (sorted, so later anti-joins read them as they are)."""
        holding = self.holding
        if small and holding.local_rows:
            rows = new.limit(holding.local_rows + 1).collect()
            if len(rows) <= holding.local_rows:
                batch = local_batch(self.spark, [tuple(r) for r in rows], new.schema)
                counts: dict[str, int] = {}
                for row in rows:
                    counts[row[RELATION]] = counts.get(row[RELATION], 0) + 1
                return batch, counts
        held = holding.checkpoint(new, self.keys)
        counts = {r[RELATION]: r["count"] for r in held.groupBy(RELATION).count().collect()}
        return Batch(held, sum(counts.values())), counts

    def part_of(self, held: Batch, relation: str, count: int) -> Batch:
        """One relation's tuples of a round, with provenance: ``c0..c{arity-1}``, rule, cause_rel, k*, round."""
        arity = self.variables[relation].arity
        columns = [*tuple_columns(arity), "rule", "cause_rel", *tuple_columns(self.program.cause_width, "k"), "round"]
        if held.local:
            at = held.columns.index(RELATION)
            rows = [r for r in held.rows if r[at] == relation]
            return local_batch(self.spark, rows, held.schema).project(columns)
        return Batch(held.frame.where(F.col(RELATION) == relation).select(*columns), count)
