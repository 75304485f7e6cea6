"""A fixed point brought up to date after its base relations changed, by the same engine, from the last one.

What a full evaluation records of a tuple is its round within its stratum
(``depth``: the round that first derives it), the rule and the cause. A
tuple's depth is one more than the latest of its atoms of the stratum in its
earliest derivation, and other tuples read only its presence and its depth,
never its provenance. So a change spreads only through tuples whose presence
or depth changed, and only to tuples whose depth was later than that change
(a tuple of an earlier round never read it, and cannot gain by it): the
*cut-off*.

``_Update`` brings each stratum up to date in the order of its rounds:

- *pending* tuples are those whose entry may differ: first the heads of the
  rule instances that read a changed tuple of a lower stratum or of a base
  relation (positively or not), then whatever a change in the stratum reaches;
- each pending tuple has *candidates*, its derivations from what is settled
  (the tuples that were never pending, at their old depths, and the pending
  ones settled so far), each with its depth and cause as a full evaluation
  gives them (``compile.timed_derivations``);
- a *step* settles the pending tuples whose best candidate has the lowest
  depth (then the lowest rule and cause of that depth). A settled tuple whose
  depth is new (or that is new) has *moved*; a pending tuple not settled at
  its old depth has *left* it. Both are changes: the tuples that read them
  and whose old depth is later become pending, and every pending tuple that
  reads them has its candidates found again. A tuple settled at its old depth
  changes nothing but perhaps its provenance; the next step joins it, with
  the others settled, as new.

Everything a step reads is held (what is pending, what is settled, the best
candidates so far), so its query is as large as the stratum's rules, however
many steps came before: one Spark job a step, and one more on a step with
changes (what they reach, held before the candidates are found). There is a
step only for a depth where something is settled or left, and none for a
stratum none of whose inputs changed: the steps follow what changed, not the
depth of the catalog. The rounds, their numbers and every tuple's provenance
are those of a full evaluation over the new relations (checked against the
naive evaluator). Negation needs nothing more: a negated relation is of a
lower stratum, and its changed tuples make the heads of the rules reading
them pending like any other change.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .check import CheckedProgram
from .compile import all_wildcards, heads_of, joined_body, timed_derivations, tuple_columns
from .engine import RELATION, Evaluation, Evaluator, Program, RoundLog, provenance_schema, tuple_schema
from .holding import Batch, Hold, local_batch
from .syntax import Rule

AT = "at"      # a tuple's relation, depth and old depth: ``R@3@5`` (``R@3@`` new, ``R@@5`` not yet settled)
OLD = "d_old"  # a pending tuple's depth in the last fixed point (null: it was not there)


def _changed(old: Batch, new: Batch) -> Batch | DataFrame:
    """The tuples in one of ``old`` and ``new``, not both: rows when both are rows, else a frame to hold."""
    if old.local and new.local:
        return local_batch(old.spark, sorted(set(old.rows) ^ set(new.rows)), old.schema)
    before, after = old.frame, new.frame
    return before.subtract(after).unionByName(after.subtract(before))


@dataclass(frozen=True)
class Maintained:
    """A program whose fixed points are brought up to date (``update``) rather than evaluated again."""

    checked: CheckedProgram
    program: Program

    @classmethod
    def of(cls, program: Program) -> "Maintained":
        return cls(program.checked, program)

    def update(self, last: Evaluation, old: dict[str, Batch], new: dict[str, Batch],
               on_round: Callable[[RoundLog], None] | None = None) -> Evaluation:
        """The fixed point over the ``new`` base relations, from ``last``, the one over ``old``: equal, tuple
        for tuple with its provenance and round after round, to ``Program.evaluate`` over ``new``."""
        checked, holding = self.checked, self.program.holding
        spark = next(iter(new.values())).spark
        empty = {r: local_batch(spark, [], tuple_schema(len(d))) for r, d in checked.base.items()}
        old, new = {**empty, **old}, {**empty, **new}
        small = all(b.small for b in (*old.values(), *new.values()))
        changed = {r: _changed(old[r], new[r]) for r in checked.base}
        changed.update(holding.hold_all({r: c for r, c in changed.items() if isinstance(c, DataFrame)},
                                        try_local=small))
        either = {r: Batch(old[r].frame.unionByName(new[r].frame), None, over_rows=old[r].small and new[r].small)
                  for r in checked.base}
        before = _before(self.program, last, small and (last.derived is None or last.derived.local))
        return _Update(self.program, new, before, changed, either, small).run(on_round)


def _before(program: Program, last: Evaluation, small: bool) -> Batch:
    """Every tuple of the last fixed point with its provenance and its depth (its round within its stratum):
    rows when all is rows, else one hold, counted by relation and depth."""
    checked, width = program.checked, program.width
    stratum_of = {r: k for k, stratum in enumerate(checked.strata) for r in stratum}
    offsets = {r: sum(1 for e in last.rounds if e.stratum < k) for r, k in stratum_of.items()}
    schema = T.StructType([*_provenance(width, program.cause_width), T.StructField("depth", T.IntegerType()),
                           T.StructField(AT, T.StringType())])
    if last.derived is None:
        return local_batch(next(iter(last.tuples.values())).spark, [], schema)
    if last.derived.local:
        at = last.derived.columns.index("round")
        rows = []
        for row in last.derived.rows:
            depth = row[at] - offsets[row[0]]
            rows.append((*row[:at], *row[at + 1:], depth, f"{row[0]}@{depth}@{depth}"))
        batch = local_batch(last.derived.spark, rows, schema)
        batch.counts = Counter(row[-1] for row in rows)
        return batch
    offset = F.element_at(F.create_map(*(x for r, n in offsets.items() for x in (F.lit(r), F.lit(n)))),
                          F.col(RELATION))
    depth = (F.col("round") - offset).cast("int")
    frame = last.derived.frame.select(*(c for c in last.derived.columns if c != "round"), depth.alias("depth"))
    keys = (RELATION, *tuple_columns(width))  # as pending and settled tuples are held: joined without a shuffle
    return program.holding.hold(Hold(frame.withColumn(AT, _at(F.col("depth"), F.col("depth"))), keys, split=AT),
                                try_local=small)


def _provenance(width: int, cause_width: int) -> list[T.StructField]:
    """A round's tuples as ``Evaluation.derived`` holds them, without their round."""
    return [T.StructField(RELATION, T.StringType()),
            *(f for f in provenance_schema(width, cause_width).fields if f.name != "round")]


def _at(depth: Column, old: Column) -> Column:
    return F.concat(F.col(RELATION), F.lit("@"), F.coalesce(depth.cast("string"), F.lit("")), F.lit("@"),
                    F.coalesce(old.cast("string"), F.lit("")))


def _counted(batch: Batch) -> Counter:
    """``(relation, depth, old depth)`` -> tuples, of a batch counted by ``AT`` (a missing depth is None)."""
    found = Counter()
    for key, n in (batch.counts or {}).items():
        relation, depth, old = key.rsplit("@", 2)
        found[(relation, int(depth) if depth else None, int(old) if old else None)] += n
    return found


def _union(frames: list[DataFrame]) -> DataFrame | None:
    return reduce(DataFrame.unionByName, frames) if frames else None


class _Update(Evaluator):
    """The fixed point over the new relations from the last one (see the module's docstring), a stratum at a
    time; the rounds logged, and the tuples numbered, as a full evaluation's."""

    def __init__(self, program: Program, base: dict[str, Batch], before: Batch, changed: dict[str, Batch],
                 either: dict[str, Batch], small: bool) -> None:
        super().__init__(program, base, {}, None)
        self.before, self.before_counts = before, _counted(before)
        self.changed, self.either, self.small = dict(changed), dict(either), small
        self.key_columns = [RELATION, *tuple_columns(program.width)]
        self.candidate_columns = [*self.key_columns, "depth", "rule", "cause_rel",
                                  *tuple_columns(program.cause_width, "k")]

    # what the last fixed point held, and what changed below a stratum

    def _arity(self, relation: str) -> int:
        return len(self.checked.domains(relation))

    def _of(self, frame: DataFrame, relation: str, depth: bool = False) -> DataFrame:
        """``c0.. [, depth]`` of one relation's rows of a frame keyed by ``relation, c0..``."""
        columns = tuple_columns(self._arity(relation)) + (["depth"] if depth else [])
        return frame.where(F.col(RELATION) == relation).select(*columns)

    def _has_changed(self, relation: str) -> bool:
        batch = self.changed.get(relation)
        return batch is not None and batch.count != 0

    def _one_partition(self) -> bool:
        return self.small or self.holding.single

    def _hold(self, requests: dict[str, Hold]) -> dict[str, Batch]:
        return self.holding.hold_all(requests, try_local=self.small)

    # a stratum

    def run_stratum(self, stratum_no: int, stratum: tuple[str, ...], on_round) -> None:
        offset = len(self.rounds)  # rounds of lower strata: this stratum's round d is round ``offset + d``
        rules = self.checked.rules_of(stratum)
        live = [(i, r) for i, r in rules if not self._vacuous_rule(r)]
        state = _Stratum(stratum, self.key_columns)
        if any(self._has_changed(a.relation) for _, r in rules for a in r.body if a.relation not in stratum):
            started = time.perf_counter()
            touched = self._with_old(self._touched(rules, stratum), stratum)
            state.pend(self._hold({"pending": Hold(touched, tuple(self.key_columns), split=AT)})["pending"])
            if state.pending:  # else what changed below reaches no rule instance of the stratum
                pending = state.pending_frame()
                pool = self._hold({"pool": Hold(self._best(self._derivations(live, stratum, pending, state),
                                                           pending), tuple(self.key_columns), split=AT)})["pool"]
            passed = 0
            while state.pending:
                pool_counts = _counted(pool)
                due = state.leaving(passed) | {d for (_, d, _), n in pool_counts.items() if n}
                if not due:
                    break
                depth = min(due)
                now = Counter({(r, o): n for (r, d, o), n in pool_counts.items() if d == depth})
                step = self._at_depth(pool, depth, now)
                changed = state.settle(depth, step, now, time.perf_counter() - started)
                started = time.perf_counter()
                pool = self._step(live, rules, state, depth, pool, changed)
                passed = depth
        self._finish(stratum_no, stratum, offset, state, on_round)

    def _vacuous_rule(self, rule: Rule) -> bool:
        """``NOT R(_, ...)`` while R holds something (as ``Evaluator.vacuous``)."""
        return any(a.negated and all_wildcards(a) and self.count(a.relation) for a in rule.body)

    def _step(self, live: list, rules: list, state: "_Stratum", depth: int, pool: Batch, changed: set[str]) -> Batch:
        """After the tuples of ``depth`` are settled: the changes they make reach their readers (one job), then
        every unsettled pending tuple's best candidate is found (one job, with what is settled)."""
        keys = self.key_columns
        settled = state.settled_frame(self.spark, self._settled_schema())
        reset = None
        if changed:
            pending = state.pending_frame()
            moved = state.step.frame.where(F.col(OLD).isNull() | (F.col(OLD) != depth)).select(*keys)
            left = pending.where(F.col(OLD) == depth).join(settled.select(*keys), keys, "left_anti").select(*keys)
            readers = self._with_old(self._readers(moved.unionByName(left), changed, rules, state), state.stratum)
            readers = readers.join(settled.select(*keys), keys, "left_anti")
            marked = (readers.join(pending.select(*keys), keys, "left_anti")
                      .where(F.col(OLD).isNull() | (F.col(OLD) > depth)))
            again = readers.join(pending.select(*keys), keys, "left_semi")
            held = self._hold({"marked": Hold(marked, tuple(keys), split=AT),
                               "reset": Hold(again.unionByName(marked), tuple(keys), split=AT)})
            state.pend(held["marked"])
            if held["reset"].count:
                reset = held["reset"]
        unsettled = state.pending_frame().join(settled.select(*keys), keys, "left_anti")
        found = self._delta(state.step, unsettled, live, state)
        if reset is not None:
            found += self._derivations(live, state.stratum, reset.frame, state,
                                       {r for (r, _, _) in _counted(reset)})
        rest = pool.frame.where(F.col("depth") > depth)
        if reset is not None:
            rest = rest.join(reset.frame.select(*keys), keys, "left_anti")
        best = self._best([rest.select(*self.candidate_columns), *found], unsettled)
        held = self._hold({"pool": Hold(best, tuple(keys), split=AT), "settled": Hold(settled, tuple(keys))})
        state.settled, state.step, state.known = held["settled"], None, None
        return held["pool"]

    def _with_old(self, heads: DataFrame, stratum: tuple[str, ...]) -> DataFrame:
        """Distinct heads (keys) with their old depth, counted by it (``AT``)."""
        old = self.before.frame.where(F.col(RELATION).isin(*stratum)).select(*self.key_columns,
                                                                              F.col("depth").alias(OLD))
        found = heads.distinct().join(old, self.key_columns, "left")
        return found.withColumn(AT, _at(F.lit(None), F.col(OLD)))

    def _touched(self, rules: list, stratum: tuple[str, ...]) -> DataFrame:
        """The heads of the rule instances that read a changed tuple of a lower stratum or base relation (the
        other atoms as they were or are; negations not applied, the changed one read positively)."""
        frames = []
        for _, rule in rules:
            for i, atom in enumerate(rule.body):
                if atom.relation in stratum or not self._has_changed(atom.relation):
                    continue
                sources = {j: self.changed[a.relation].frame if j == i else
                           self._of(self.before.frame, a.relation) if a.relation in stratum else
                           self.either[a.relation].frame for j, a in enumerate(rule.body)}
                joined = joined_body(rule, sources, first=i, negations=False, one_partition=self._one_partition())
                frames.append(heads_of(rule, joined, self.program.width))
        return _union(frames)

    def _readers(self, changes: DataFrame, changed: set[str], rules: list, state: "_Stratum") -> DataFrame:
        """The heads of the rule instances that read a changed tuple (``changes``: keys, of the relations
        ``changed``) of the stratum, the other atoms of the stratum as they were or as settled, the others as
        they were or are."""
        settled = state.settled_frame(self.spark, self._settled_schema())
        frames = []
        for _, rule in rules:
            for i, atom in enumerate(rule.body):
                if atom.negated or atom.relation not in changed:
                    continue
                sources = {}
                for j, a in enumerate(rule.body):
                    if j == i:
                        sources[j] = self._of(changes, a.relation)
                    elif a.relation in state.stratum:
                        sources[j] = self._of(self.before.frame, a.relation).unionByName(self._of(settled, a.relation))
                    else:
                        sources[j] = self.either[a.relation].frame
                joined = joined_body(rule, sources, first=i, negations=False, one_partition=self._one_partition())
                frames.append(heads_of(rule, joined, self.program.width))
        return _union(frames) if frames else self._no_keys()

    def _known(self, relation: str, state: "_Stratum") -> DataFrame:
        """``c0.., depth`` of what is settled of ``relation``: the tuples never pending, at their old depth, and
        the pending ones settled so far, at their new one."""
        if state.known is None:
            keys = self.key_columns
            kept = self.before.frame.join(state.pending_frame().select(*keys), keys, "left_anti")
            state.known = kept.select(*keys, "depth").unionByName(
                state.settled_frame(self.spark, self._settled_schema()).select(*keys, "depth"))
        return self._of(state.known, relation, depth=True)

    def _derivations(self, live: list, stratum: tuple[str, ...], heads: DataFrame, state: "_Stratum",
                     relations: set[str] | None = None) -> list[DataFrame]:
        """Every derivation of the given heads (keys; of ``relations`` only, when given) from what is settled."""
        return [self._derived(index, rule, heads, state) for index, rule in live
                if relations is None or rule.head.relation in relations]

    def _delta(self, step: Batch, heads: DataFrame, live: list, state: "_Stratum") -> list[DataFrame]:
        """The derivations of the given pending heads that read a tuple the step settled."""
        relations = set(step.counts or {})
        return [self._derived(index, rule, heads, state, first=i, step=step) for index, rule in live
                for i in self._timed(rule, state.stratum) if rule.body[i].relation in relations]

    def _timed(self, rule: Rule, stratum: tuple[str, ...]) -> tuple[int, ...]:
        """The positive atoms of the rule's own stratum: those that carry a depth."""
        return tuple(i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum)

    def _derived(self, index: int, rule: Rule, heads: DataFrame, state: "_Stratum", first: int | None = None,
                 step: Batch | None = None) -> DataFrame:
        """One rule's derivations of the given heads from what is settled; with ``first``, those reading the
        step's tuples there."""
        timed = self._timed(rule, state.stratum)
        sources = {i: self._known(a.relation, state) if i in timed else self.full(a.relation).frame
                   for i, a in enumerate(rule.body)}
        if first is not None:
            sources[first] = self._of(step.frame, rule.body[first].relation, depth=True)
        joined = joined_body(rule, sources, timed, first=first, head=self._of(heads, rule.head.relation),
                             one_partition=self._one_partition())
        return timed_derivations(rule, index, joined, timed, self.checked.cause_index(rule), self.program.width,
                                 self.program.cause_width)

    def _best(self, found: list[DataFrame], pending: DataFrame) -> DataFrame:
        """Each pending head's best candidate (the lowest depth, then rule, then cause), with its old depth."""
        keys, columns = self.key_columns, self.candidate_columns
        frames = [f.select(*columns) for f in found]
        if not frames:
            return self._no_pool()
        best = (_union(frames).groupBy(*keys).agg(F.min(F.struct(*columns[len(keys):])).alias("p"))
                .select(*keys, "p.*"))
        best = best.join(pending.select(*keys, OLD).dropDuplicates(keys), keys)
        return best.withColumn(AT, _at(F.col("depth"), F.col(OLD)))

    def _settled_schema(self) -> T.StructType:
        return T.StructType([*_provenance(self.program.width, self.program.cause_width),
                             T.StructField("depth", T.IntegerType()), T.StructField(OLD, T.IntegerType()),
                             T.StructField(AT, T.StringType())])

    def _no_keys(self) -> DataFrame:
        return self.spark.createDataFrame([], T.StructType([T.StructField(RELATION, T.StringType()),
                                                            *tuple_schema(self.program.width).fields]))

    def _no_pool(self) -> DataFrame:
        return self.spark.createDataFrame([], self._settled_schema()).select(
            *self.candidate_columns, OLD, AT)

    def _at_depth(self, pool: Batch, depth: int, now: Counter) -> Batch:
        """The pool's heads of ``depth``, counted by relation (``counts``: what ``Batch.part`` reads)."""
        by_relation = Counter()
        for (relation, _), n in now.items():
            by_relation[relation] += n
        frame = pool.frame.where(F.col("depth") == depth).select(*self.candidate_columns, OLD, AT)
        if pool.local:
            at = pool.columns.index("depth")
            names = pool.columns
            picked = [names.index(c) for c in [*self.candidate_columns, OLD, AT]]
            rows = [tuple(r[i] for i in picked) for r in pool.rows if r[at] == depth]
            return Batch(None, len(rows), rows, counts=dict(by_relation),
                         schema=T.StructType([pool.schema[c] for c in [*self.candidate_columns, OLD, AT]]),
                         spark=self.spark, derive=lambda: frame)
        return Batch(frame, sum(by_relation.values()), counts=dict(by_relation))

    # the stratum's rounds and tuples

    def _finish(self, stratum_no: int, stratum: tuple[str, ...], offset: int, state: "_Stratum", on_round) -> None:
        """The stratum's rounds logged as a full evaluation runs them; its tuples (those never pending, then
        those settled) numbered by round: its variables and outputs; and what changed in it, for the strata
        above."""
        by_depth = Counter()
        for (relation, depth, _), n in self.before_counts.items():
            if relation in stratum:
                by_depth[(relation, depth)] += n
        for (relation, old), n in state.pending_counts.items():
            if old is not None:
                by_depth[(relation, old)] -= n
        for (relation, depth, _), n in state.settled_counts.items():
            by_depth[(relation, depth)] += n
        deepest = max((d for (_, d), n in by_depth.items() if n), default=0)
        plans = [p for p in self.program.plans[stratum_no] if not self.vacuous(p)]
        if not any(p.delta is None for p in plans):
            rounds = 0  # no rule can fire first: a full evaluation runs no round (and derives nothing)
        elif deepest == 0:
            rounds = 1  # the first round derives nothing
        else:  # and one more, deriving nothing, when a rule reads what the last one added
            last = {r for (r, d), n in by_depth.items() if d == deepest and n}
            rounds = deepest + any(p.delta is not None and p.rule.body[p.delta].relation in last for p in plans)
        for d in range(1, rounds + 1):
            self.log_round(stratum_no, stratum, {r: n for (r, dd), n in by_depth.items() if dd == d}, 0.0,
                           on_round, seconds=state.seconds.get(d, 0.0))
        self.batches[stratum_no] = list(state.step_sizes)
        kept, settled = self._kept_and_settled(stratum, state)
        for relation in stratum:
            for tuples in (kept, settled):
                count = tuples.counts.get(relation, 0)
                if count:
                    part, derived = self._numbered(tuples, relation, offset, count)
                    self.outputs.append(derived)
                    self.variables[relation].advance(part)
        self._changed_in(stratum, state, settled)

    def _kept_and_settled(self, stratum: tuple[str, ...], state: "_Stratum") -> tuple[Batch, Batch]:
        """The stratum's tuples never pending (at their old depth) and those settled (at their new one), each
        with ``depth`` and counted by relation: rows when all is rows."""
        keys, width = self.key_columns, self.program.width
        schema = self._settled_schema()
        parts = [b for b in (state.settled, state.step) if b is not None and b.count]
        if self.before.local and all(b.local for b in (*state.pending, *parts)):
            pending = {tuple(r[:width + 1]) for b in state.pending for r in b.rows}
            kept = [r for r in self.before.rows if r[0] in stratum and tuple(r[:width + 1]) not in pending]
            columns = list(schema.names)
            settled = [tuple(r[b.columns.index(c)] for c in columns) for b in parts for r in b.rows]
            return (self._rows(kept, T.StructType(list(self.before.schema.fields))),
                    self._rows(settled, schema))
        kept = self.before.frame.where(F.col(RELATION).isin(*stratum))
        if state.pending:
            kept = kept.join(state.pending_frame().select(*keys), keys, "left_anti")
        gone = Counter()
        for (relation, old), n in state.pending_counts.items():
            if old is not None:
                gone[relation] += n
        kept_counts = {r: sum(n for (rr, _, _), n in self.before_counts.items() if rr == r) - gone[r] for r in stratum}
        settled_counts = {r: sum(n for (rr, _, _), n in state.settled_counts.items() if rr == r) for r in stratum}
        return (Batch(kept, sum(kept_counts.values()), counts=kept_counts),
                Batch(state.settled_frame(self.spark, schema), sum(settled_counts.values()), counts=settled_counts))

    def _rows(self, rows: list[tuple], schema: T.StructType) -> Batch:
        batch = local_batch(self.spark, rows, schema)
        batch.counts = Counter(r[0] for r in rows)
        return batch

    def _numbered(self, tuples: Batch, relation: str, offset: int, count: int) -> tuple[Batch, Batch]:
        """One relation's tuples (keyed by ``relation, c0..``, with ``depth``): as a variable's part (``c0..,
        rule, cause_rel, k*, round``) and as ``Evaluation.derived`` holds rounds."""
        arity, width, cause = self._arity(relation), self.program.width, tuple_columns(self.program.cause_width, "k")
        part_columns = [*tuple_columns(arity), "rule", "cause_rel", *cause]
        derived_columns = [RELATION, *tuple_columns(width), "rule", "cause_rel", *cause]
        if tuples.local:
            names = tuples.columns
            at, depth = names.index(RELATION), names.index("depth")
            rows = [r for r in tuples.rows if r[at] == relation]

            def numbered(columns: list[str]) -> Batch:
                picked = [names.index(c) for c in columns]
                schema = T.StructType([*(tuples.schema[c] for c in columns),
                                       T.StructField("round", T.IntegerType(), False)])
                return local_batch(self.spark, [(*(r[i] for i in picked), offset + r[depth]) for r in rows], schema)
            return numbered(part_columns), numbered(derived_columns)
        frame = tuples.frame.where(F.col(RELATION) == relation).withColumn(
            "round", (F.col("depth") + offset).cast("int"))
        return Batch(frame.select(*part_columns, "round"), count), Batch(frame.select(*derived_columns, "round"), count)

    def _changed_in(self, stratum: tuple[str, ...], state: "_Stratum", settled: Batch) -> None:
        """What a higher stratum reads of this one: the tuples gone or new (``changed``: rows when all is rows,
        else one job), old and new together (``either``)."""
        keys, width = self.key_columns, self.program.width
        if not state.pending:
            return
        if settled.local and all(b.local for b in state.pending):
            at = settled.columns.index(OLD)
            now = {tuple(r[:width + 1]) for r in settled.rows}
            new = {tuple(r[:width + 1]) for r in settled.rows if r[at] is None}
            gone = {tuple(r[:width + 1]) for b in state.pending for r in b.rows
                    if r[b.columns.index(OLD)] is not None} - now
            changes = {r: sorted(t[1:1 + self._arity(r)] for t in new | gone if t[0] == r) for r in stratum}
            held = {r: local_batch(self.spark, rows, tuple_schema(self._arity(r))) for r, rows in changes.items()}
        else:
            gone = (state.pending_frame().where(F.col(OLD).isNotNull()).select(*keys)
                    .join(settled.frame.select(*keys), keys, "left_anti"))
            changes = gone.unionByName(settled.frame.where(F.col(OLD).isNull()).select(*keys))
            held = self._hold({r: Hold(self._of(changes, r)) for r in stratum})
        for relation in stratum:
            self.changed[relation] = held[relation]
            self.either[relation] = Batch(
                self._of(self.before.frame, relation).unionByName(self._of(settled.frame, relation)), None)


class _Stratum:
    """What an update of one stratum knows so far: the pending tuples (held batches, counted by relation and old
    depth), the settled ones (held after each step), and the step just settled."""

    def __init__(self, stratum: tuple[str, ...], keys: list[str]) -> None:
        self.stratum, self.keys = stratum, keys
        self.pending: list[Batch] = []
        self.pending_counts: Counter = Counter()   # (relation, old depth) -> tuples made pending
        self.settled: Batch | None = None           # held after each step
        self.settled_counts: Counter = Counter()   # (relation, depth, old depth) -> tuples settled
        self.step: Batch | None = None
        self.seconds: Counter = Counter()
        self.step_sizes: list[int] = []
        self.known: DataFrame | None = None        # what ``_Update._known`` reads, made once per step

    def pend(self, batch: Batch) -> None:
        self.known = None
        if batch.count:
            self.pending.append(batch)
            self.pending_counts.update({(r, o): n for (r, _, o), n in _counted(batch).items()})

    def pending_frame(self) -> DataFrame:
        return _union([b.frame.select(*self.keys, OLD) for b in self.pending])

    def settled_frame(self, spark, schema: T.StructType) -> DataFrame:
        """Everything settled, the step just settled included."""
        parts = [b.frame.select(*schema.names) for b in (self.settled, self.step) if b is not None and b.count]
        return _union(parts) if parts else spark.createDataFrame([], schema)

    def _settled_from(self) -> Counter:
        """``(relation, old depth)`` -> tuples of that old depth settled so far (at any depth)."""
        found = Counter()
        for (relation, _, old), n in self.settled_counts.items():
            found[(relation, old)] += n
        return found

    def leaving(self, passed: int) -> set[int]:
        """The old depths after ``passed`` where a pending tuple is not settled yet: it leaves its old depth there
        unless settled at it."""
        settled_from = self._settled_from()
        return {old for (relation, old), n in self.pending_counts.items()
                if old is not None and old > passed and n > settled_from[(relation, old)]}

    def settle(self, depth: int, step: Batch, now: Counter, seconds: float) -> set[str]:
        """The step's tuples settled at ``depth``; the relations it changes: of tuples moved there or new, and
        of pending tuples of that old depth not settled at it."""
        self.step, self.known = step, None  # the step before it is in ``settled`` (held by ``_Update._step``)
        self.settled_counts.update({(r, depth, o): n for (r, o), n in now.items()})
        self.seconds[depth] += seconds
        self.step_sizes.append(step.count)
        settled_from = self._settled_from()
        left = {r for (r, o), n in self.pending_counts.items() if o == depth and n > settled_from[(r, o)]}
        return left | {r for (r, o), n in now.items() if o != depth and n}
