"""A fixed point brought up to date after its base relations changed, by the same engine, from the last one.

Two rule programs are made from the program, as rule text, and evaluated by
``engine.Program`` like any other:

- the *affected* program (``affected_program``) derives, for every derived
  relation ``R``, ``Affected__R``: the tuples whose derivations, before or
  after the change, read a changed base tuple or an affected tuple. Every
  body atom of a rule, positive or negated, is in turn the one read as
  changed; the others are read as they were or are (``Either__R``). It is
  an over-approximation with no negation, so one stratum: its rounds follow
  the change down the dependencies, never the whole catalog.
- the *restricted* program (``restricted_program``) is the program with one
  more atom in each rule, ``Affected__H(head)``: its rules derive affected
  tuples only.

A tuple that is not affected has exactly the derivations it had, from tuples
that are not affected either: it keeps its stratum round (``depth``) and its
provenance. Those are the *seed*; the restricted program derives the affected
tuples among the new ones from it (``_Update``), a stratum at a time, in the
order of their rounds: a tuple first derivable in round ``d`` of its stratum
is derived by a rule whose atoms of that stratum were all known by round
``d - 1``, one of them then. So each step takes the affected tuples of the
lowest round still pending, joins them with what is known, and the round of
each head it finds is one more than the latest of its atoms (the cause: the
lowest of those latest). One Spark job a round that adds an affected tuple,
none for the rounds the seed alone fills: the steps follow the change, not
the depth of the catalog. The rounds, their numbers and every tuple's
provenance (rule, cause, round) are those of a full evaluation over the new
relations. This is DRed's delete-and-rederive with the deletion made
wholesale: what is affected is derived again rather than deleted and checked
for alternatives. Negation needs nothing more: a changed tuple of a negated
relation affects the heads its absence supported or blocked, and strata still
run in order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .check import CheckedProgram, check_program
from .compile import PAD, RulePlan, candidates, timed_candidates, tuple_columns
from .engine import RELATION, Evaluation, Evaluator, Known, Program, RoundLog, provenance_schema, tuple_schema
from .holding import Batch, Hold, concat, local_batch
from .syntax import Atom, parse_program

AFFECTED, EITHER, CHANGED, BEFORE = "Affected__", "Either__", "Changed__", "Before__"


def _atom(relation: str, atom: Atom) -> str:
    return str(Atom(relation, atom.args))


def affected_program(checked: CheckedProgram) -> CheckedProgram:
    """``Affected__R`` for every derived ``R``, read off the program's rules (see the module's docstring).

    Base relations: ``Changed__B`` (the tuples of base relation ``B`` in one of the old and new relations,
    not both), ``Either__B`` (in either), ``Before__R`` (derived ``R``'s tuples in the last fixed point)."""
    lines = [line for relation in checked.derived for line in _either(checked, relation)]
    for rule in checked.rules:
        for at, atom in enumerate(rule.body):
            changed = (CHANGED if atom.relation in checked.base else AFFECTED) + atom.relation
            body = [_atom(changed, atom)] + [_atom(EITHER + other.relation, other)
                                             for i, other in enumerate(rule.body) if i != at and not other.negated]
            lines.append(f"{_atom(AFFECTED + rule.head.relation, rule.head)} :- {', '.join(body)}")
    base = {**{f"{prefix}{r}": d for r, d in checked.base.items() for prefix in (CHANGED, EITHER)},
            **{f"{BEFORE}{r}": d for r, d in checked.derived.items()}}
    return check_program(parse_program("\n".join(lines), f"{checked.path} (affected)"), base)


def _either(checked: CheckedProgram, relation: str) -> list[str]:
    args = ", ".join(f"V{i}" for i in range(len(checked.derived[relation])))
    return [f"{EITHER}{relation}({args}) :- {BEFORE}{relation}({args})",
            f"{EITHER}{relation}({args}) :- {AFFECTED}{relation}({args})"]


def restricted_program(checked: CheckedProgram) -> CheckedProgram:
    """The program with ``Affected__H(head)`` added to each rule: the same rules, labels, reasons, causes and
    strata, deriving affected tuples only."""
    text = "\n".join(f"{rule}, {_atom(AFFECTED + rule.head.relation, rule.head)}" for rule in checked.rules)
    restricted = check_program(parse_program(text, checked.path),
                               {**checked.base, **{AFFECTED + r: d for r, d in checked.derived.items()}})
    assert restricted.strata == checked.strata, (restricted.strata, checked.strata)
    return restricted


def _changed(old: Batch, new: Batch) -> Batch | DataFrame:
    """The tuples in one of ``old`` and ``new``, not both: rows when both are rows, else a frame to hold."""
    if old.local and new.local:
        return local_batch(old.spark, sorted(set(old.rows) ^ set(new.rows)), old.schema)
    before, after = old.frame, new.frame
    return before.subtract(after).unionByName(after.subtract(before))


@dataclass(frozen=True)
class Maintained:
    """The programs an update runs, made once per program (as ``Program`` is)."""

    checked: CheckedProgram
    affected: Program
    restricted: Program

    @classmethod
    def of(cls, program: Program) -> "Maintained":
        checked, holding, label = program.checked, program.holding, program.label
        return cls(checked, Program(affected_program(checked), holding, f"{label}:affected"),
                   Program(restricted_program(checked), holding, f"{label}:restricted"))

    def update(self, last: Evaluation, old: dict[str, Batch], new: dict[str, Batch],
               on_round: Callable[[RoundLog], None] | None = None) -> Evaluation:
        """The fixed point over the ``new`` base relations, from ``last``, the one over ``old``: equal, tuple
        for tuple with its provenance and round after round, to ``Program.evaluate`` over ``new``."""
        checked, holding = self.checked, self.restricted.holding
        spark = next(iter(new.values())).spark
        empty = {r: local_batch(spark, [], tuple_schema(len(d))) for r, d in checked.base.items()}
        old, new = {**empty, **old}, {**empty, **new}
        small = all(b.small for b in (*old.values(), *new.values()))
        changed = {CHANGED + r: _changed(old[r], new[r]) for r in checked.base}
        changed.update(holding.hold_all({r: c for r, c in changed.items() if isinstance(c, DataFrame)},
                                        try_local=small))
        either = {EITHER + r: Batch(old[r].frame.unionByName(new[r].frame), None,
                                    over_rows=old[r].small and new[r].small) for r in checked.base}
        before = {BEFORE + r: last.tuples[r] for r in checked.derived}
        affected = self.affected.evaluate({**changed, **either, **before})
        affected_tuples = {AFFECTED + r: affected.tuples[AFFECTED + r] for r in checked.derived}
        seed = self._seed(last, affected_tuples)
        return _Update(self.restricted, {**new, **affected_tuples}, seed).run(on_round)

    def _seed(self, last: Evaluation, affected: dict[str, Batch]) -> Batch:
        """The last fixed point's tuples that are not affected, each with its round within its stratum
        (``depth``) and its provenance: rows when all is rows, else one hold, counted by relation and depth."""
        checked, width = self.checked, self.restricted.width
        stratum_of = {r: k for k, stratum in enumerate(checked.strata) for r in stratum}
        before = {r: sum(1 for e in last.rounds if e.stratum < k) for r, k in stratum_of.items()}
        spark = next(iter(affected.values())).spark
        schema = T.StructType([*provenance_columns(width, self.restricted.cause_width),
                               T.StructField("depth", T.IntegerType()), T.StructField(AT, T.StringType())])
        if last.derived is None:
            return local_batch(spark, [], schema)
        if last.derived.local and all(t.local for t in affected.values()):
            gone = {(r[len(AFFECTED):], *(row + (PAD,) * width)[:width])
                    for r, t in affected.items() for row in t.rows}
            at = last.derived.columns.index("round")
            rows = []
            for row in last.derived.rows:
                if tuple(row[:width + 1]) not in gone:
                    depth = row[at] - before[row[0]]
                    rows.append((*row[:at], *row[at + 1:], depth, at_key(row[0], depth)))
            return local_batch(spark, rows, schema)
        keys = [RELATION, *tuple_columns(width)]
        gone = [t.frame.select(F.lit(r[len(AFFECTED):]).alias(RELATION), *tuple_columns(len(t.columns)),
                               *(F.lit(PAD).cast("long").alias(c) for c in tuple_columns(width)[len(t.columns):]))
                for r, t in affected.items() if t.count != 0]
        derived = last.derived.frame
        if gone:
            derived = derived.join(reduce(DataFrame.unionByName, gone), keys, "left_anti")
        offset = F.element_at(F.create_map(*(x for r, n in before.items() for x in (F.lit(r), F.lit(n)))),
                              F.col(RELATION))
        depth = (F.col("round") - offset).cast("int")
        seeded = derived.select(*(c for c in last.derived.columns if c != "round"), depth.alias("depth"),
                                _at(depth).alias(AT))
        return self.restricted.holding.hold(Hold(seeded, split=AT), try_local=False)


AT = "at"  # a tuple's relation and round within its stratum: ``R@3``; what the seed and each step are counted by


def at_key(relation: str, depth: int) -> str:
    return f"{relation}@{depth}"


def _at(depth: Column) -> Column:
    return F.concat(F.col(RELATION), F.lit("@"), depth.cast("string"))


def provenance_columns(width: int, cause_width: int) -> list[T.StructField]:
    """A round's tuples as ``Evaluation.derived`` holds them, without their round."""
    return [T.StructField(RELATION, T.StringType()),
            *(f for f in provenance_schema(width, cause_width).fields if f.name != "round")]


def _counted(batch: Batch) -> dict[tuple[str, int], int]:
    """Tuples per relation and round within the stratum, of a batch counted by ``AT``."""
    if batch.local:
        at = batch.columns.index(AT)
        counts: dict[str, int] = {}
        for row in batch.rows:
            counts[row[at]] = counts.get(row[at], 0) + 1
    else:
        counts = batch.counts or {}
    return {(k.rsplit("@", 1)[0], int(k.rsplit("@", 1)[1])): n for k, n in counts.items()}


class _Update(Evaluator):
    """The restricted program's fixed point from the seed (see the module's docstring): per stratum, the seed's
    tuples, then the affected ones in the order of their rounds; the rounds logged as a full evaluation's."""

    def __init__(self, program: Program, base: dict[str, Batch], seed: Batch) -> None:
        super().__init__(program, base, {}, None)
        self.seed, self.seed_counts = seed, _counted(seed)
        self.columns = [f.name for f in provenance_columns(program.width, program.cause_width)]

    def run_stratum(self, stratum_no: int, stratum: tuple[str, ...], on_round) -> None:
        offset = len(self.rounds)  # rounds of lower strata: this stratum's round d is round ``offset + d``
        plans = [p for p in self.program.plans[stratum_no] if not self.vacuous(p)]
        seed_counts = {key: n for key, n in self.seed_counts.items() if key[0] in stratum}
        seeds = {r: self._seed_of(r, seed_counts) for r in stratum}
        timed = {r: [seeds[r]] for r in stratum}  # each relation's tuples with their depth, so far
        steps: list[tuple[int, Batch, dict[str, int], float]] = []  # per step: depth, tuples, counts, seconds
        known = Known(self.holding, self.keys)
        if any(self.count(AFFECTED + r) for r in stratum):
            started = time.perf_counter()
            static = self.hold_static(stratum_no, plans)
            found, rest = self._first(plans, static, seeds), None
            while found or rest is not None:
                pool = self._pool(found, rest, known)
                pool_counts = _counted(pool)
                if not pool_counts:
                    break
                depth = min(d for _, d in pool_counts)
                now = {r: n for (r, d), n in pool_counts.items() if d == depth}
                step = self._at_depth(pool, depth, now)
                known.add(step)
                parts = {r: self._tuples_of(step, r) for r in now}
                for relation, part in parts.items():
                    timed[relation].append(part)
                steps.append((depth, step, now, time.perf_counter() - started))
                started = time.perf_counter()
                found = self._next(plans, static, parts, timed)
                rest = pool.frame.where(F.col("depth") > depth) if len(pool_counts) > len(now) else None
        self.batches[stratum_no] = [b.count for b in known.batches]
        self._finish(stratum_no, stratum, plans, offset, seed_counts, steps, on_round)

    def _seed_of(self, relation: str, counts: dict[tuple[str, int], int]) -> Batch:
        """``c0.., depth`` of the seed's tuples of ``relation``."""
        columns = [*tuple_columns(len(self.checked.derived[relation])), "depth"]
        count = sum(n for (r, _), n in counts.items() if r == relation)
        if self.seed.local:
            return self.seed.part(RELATION, relation, columns)
        return Batch(self.seed.frame.where(F.col(RELATION) == relation).select(*columns), count)

    def _tuples_of(self, step: Batch, relation: str) -> Batch:
        return step.part(RELATION, relation, [*tuple_columns(len(self.checked.derived[relation])), "depth"])

    def _timed(self, relation: str, timed: dict[str, list[Batch]]) -> DataFrame:
        parts = timed[relation]
        return concat(parts, parts[0].schema, self.spark).frame

    def _first(self, plans: list[RulePlan], static: dict, seeds: dict[str, Batch]) -> list[DataFrame]:
        """What the rules derive from the seed alone: the rules reading nothing of the stratum (in its first
        round), and one plan of each of the others, its atoms of the stratum read from the seed."""
        found, done = [], set()
        for plan in plans:
            rule = plan.rule
            if plan.delta is None:
                if self.idle(plan, static):
                    continue
                sources = {i: self.full(a.relation).frame for i, a in enumerate(rule.body)}
                frame = candidates(plan, sources, None, self.program.width, self.program.cause_width,
                                   self._one_partition())
                found.append(frame.withColumn("depth", F.lit(1)))
            elif plan.index not in done:
                done.add(plan.index)
                found += self._joined(plan, static, seeds[rule.body[plan.delta].relation],
                                      {r: [seeds[r]] for r in seeds})
        return found

    def _next(self, plans: list[RulePlan], static: dict, parts: dict[str, Batch],
              timed: dict[str, list[Batch]]) -> list[DataFrame]:
        """What the rules derive with one of the step's tuples in the atom they read as new."""
        found = []
        for plan in plans:
            if plan.delta is not None and plan.rule.body[plan.delta].relation in parts:
                found += self._joined(plan, static, parts[plan.rule.body[plan.delta].relation], timed)
        return found

    def _joined(self, plan: RulePlan, static: dict, delta: Batch, timed: dict[str, list[Batch]]) -> list[DataFrame]:
        rule = plan.rule
        late = [i for i in plan.late if not rule.body[i].negated]
        timed_at = (plan.delta, *(i for i in late if rule.body[i].relation in timed))
        if not delta.count or (plan.hoisted and static[(plan.index, plan.delta)].count == 0) or any(
                self._empty(rule.body[i].relation, timed) for i in late):
            return []
        sources = {plan.delta: delta.frame,
                   **{i: self._timed(rule.body[i].relation, timed) if i in timed_at else
                      self.full(rule.body[i].relation).frame for i in plan.late}}
        held = static[(plan.index, plan.delta)].frame if plan.hoisted else None
        return [timed_candidates(plan, sources, held, self.program.width, self.program.cause_width, timed_at,
                                 self._one_partition())]

    def _empty(self, relation: str, timed: dict[str, list[Batch]]) -> bool:
        if relation in timed:
            return all(b.count == 0 for b in timed[relation])
        return self.empty(relation)

    def _one_partition(self) -> bool:
        return self.holding.single or all(b.small for b in (*self.relations.values(), self.seed))

    def _pool(self, found: list[DataFrame], rest: DataFrame | None, known: Known) -> Batch:
        """Every affected head found so far and not yet derived, with its lowest round and, in it, the lowest
        rule and cause: one job, counted by relation and round."""
        columns = ["relation", *tuple_columns(self.program.width), "depth", "rule", "cause_rel",
                   *tuple_columns(self.program.cause_width, "k")]
        frames = [f.select(*columns) for f in found] + ([rest.select(*columns)] if rest is not None else [])
        union = reduce(DataFrame.unionByName, frames)
        picked = (union.groupBy(*self.keys).agg(F.min(F.struct(*columns[len(self.keys):])).alias("p"))
                  .select(*self.keys, "p.*"))
        picked = known.subtract_from(picked)
        return self.holding.hold(Hold(picked.withColumn(AT, _at(F.col("depth"))), tuple(self.keys), split=AT),
                                 try_local=self._one_partition())

    def _at_depth(self, pool: Batch, depth: int, counts: dict[str, int]) -> Batch:
        """The pool's heads of round ``depth``, counted by relation (``counts``: what ``Batch.part`` reads)."""
        columns = [c for c in pool.columns if c != AT]
        if pool.local:
            at = pool.columns.index("depth")
            return local_batch(self.spark, [tuple(r[i] for i, c in enumerate(pool.columns) if c != AT)
                                            for r in pool.rows if r[at] == depth],
                               T.StructType([pool.schema[c] for c in columns]))
        return Batch(pool.frame.where(F.col("depth") == depth).select(*columns), sum(counts.values()),
                     counts=dict(counts))

    def _finish(self, stratum_no: int, stratum: tuple[str, ...], plans: list[RulePlan], offset: int,
                seed_counts: dict[tuple[str, int], int], steps: list[tuple[int, Batch, dict[str, int], float]],
                on_round) -> None:
        """The stratum's rounds logged as a full evaluation runs them, and its tuples (seed and derived) numbered
        by round: its variables and outputs."""
        counts = dict(seed_counts)
        for at, _, now, _ in steps:
            for relation, n in now.items():
                counts[(relation, at)] = counts.get((relation, at), 0) + n
        depth = max((d for (_, d), n in counts.items() if n), default=0)
        if not any(p.delta is None for p in plans):
            rounds = 0  # no rule can fire first: a full evaluation runs no round (and derives nothing)
        elif depth == 0:
            rounds = 1  # the first round derives nothing
        else:  # and one more, deriving nothing, when a rule reads what the last one added
            last = {r for (r, d), n in counts.items() if d == depth and n}
            rounds = depth + any(p.delta is not None and p.rule.body[p.delta].relation in last for p in plans)
        seconds = {at: s for at, _, _, s in steps}
        for d in range(1, rounds + 1):
            self.log_round(stratum_no, stratum, {r: n for (r, dd), n in counts.items() if dd == d}, 0.0, on_round,
                           seconds=seconds.get(d, 0.0))
        seed = self._numbered(self.seed, stratum, offset, seed=True)
        seed_total = {r: sum(n for (rr, _), n in seed_counts.items() if rr == r) for r in stratum}
        self.outputs.append(seed)
        for relation in stratum:
            if seed_total[relation]:
                self.variables[relation].advance(self.part_of(seed, relation, seed_total[relation]))
        for _, step, now, _ in steps:
            numbered = self._numbered(step, stratum, offset)
            self.outputs.append(numbered)
            for relation, n in now.items():
                self.variables[relation].advance(self.part_of(numbered, relation, n))

    def _numbered(self, batch: Batch, stratum: tuple[str, ...], offset: int, seed: bool = False) -> Batch:
        """``batch``'s tuples of ``stratum`` in the columns of a round's: the round is the stratum's ``offset``
        plus their depth."""
        schema = T.StructType([*provenance_columns(self.program.width, self.program.cause_width),
                               T.StructField("round", T.IntegerType(), False)])
        if batch.local:
            names = batch.columns
            rel, at = names.index(RELATION), names.index("depth")
            picked = [names.index(c) for c in self.columns]
            rows = [(*(r[i] for i in picked), offset + r[at]) for r in batch.rows if r[rel] in stratum]
            return local_batch(self.spark, rows, schema)
        frame = batch.frame.where(F.col(RELATION).isin(*stratum)) if seed else batch.frame
        count = None if seed else batch.count
        return Batch(frame.select(*self.columns, (F.col("depth") + offset).cast("int").alias("round")), count)


