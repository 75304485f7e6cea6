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
provenance. So the restricted program is evaluated with the last fixed point's
unaffected tuples as its *seed* (``Program.evaluate(seed=...)``), each added in
the round of its stratum that derived it, and derives the affected ones among
them, round by round: the rounds, their numbers and every tuple's provenance
(rule, cause, round) are those of a full evaluation over the new relations.
This is DRed's delete-and-rederive with the deletion made wholesale: what is
affected is derived again rather than deleted and checked for alternatives.
Negation needs nothing more: a changed tuple of a negated relation affects
the heads its absence supported or blocked, and strata still run in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .check import CheckedProgram, check_program
from .compile import PAD, tuple_columns
from .engine import RELATION, SEED_KEY, Evaluation, Program, RoundLog, seed_key, tuple_schema
from .holding import Batch, Hold, local_batch
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
               on_round: Callable[[RoundLog], None] | None = None,
               on_affected: Callable[[RoundLog], None] | None = None) -> Evaluation:
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
        affected = self.affected.evaluate({**changed, **either, **before}, on_round=on_affected)
        affected_tuples = {AFFECTED + r: affected.tuples[AFFECTED + r] for r in checked.derived}
        seed = self._seed(last, affected_tuples)
        return self.restricted.evaluate({**new, **affected_tuples}, on_round=on_round, seed=seed)

    def _seed(self, last: Evaluation, affected: dict[str, Batch]) -> Batch | None:
        """The last fixed point's tuples that are not affected, each with its round within its stratum
        (``depth``): rows when all is rows, else one hold, split by relation and depth (``engine.seed_key``)."""
        if last.derived is None:
            return None
        checked, width = self.checked, self.restricted.width
        stratum_of = {r: k for k, stratum in enumerate(checked.strata) for r in stratum}
        before = {r: sum(1 for e in last.rounds if e.stratum < k) for r, k in stratum_of.items()}
        schema = T.StructType([*(f for f in last.derived.schema.fields if f.name != "round"),
                               T.StructField("depth", T.IntegerType()), T.StructField(SEED_KEY, T.StringType())])
        if last.derived.local and all(t.local for t in affected.values()):
            gone = {(r[len(AFFECTED):], *(row + (PAD,) * width)[:width])
                    for r, t in affected.items() for row in t.rows}
            at = last.derived.columns.index("round")
            rows = []
            for row in last.derived.rows:
                if tuple(row[:width + 1]) not in gone:
                    depth = row[at] - before[row[0]]
                    rows.append((*row[:at], *row[at + 1:], depth, seed_key(row[0], depth)))
            return local_batch(last.derived.spark, rows, schema)
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
                                F.concat(F.col(RELATION), F.lit("@"), depth.cast("string")).alias(SEED_KEY))
        return self.restricted.holding.hold(Hold(seeded, split=SEED_KEY), try_local=False)
