"""One rule as DataFrame operations: joins for positive atoms, anti-joins for NOT.

Relations are DataFrames of integer columns ``c0..c{k-1}``. A rule is planned
once per stratum (``RulePlan``): which body atom is read as the round's new
tuples (the *delta*), which atoms do not change while the stratum runs (base
relations and relations of lower strata: the *static* part, joined once and
held before the loop, partitioned on the variables it shares with the
delta), and which must be joined every round (other atoms of the stratum,
negations on variables only the delta binds). A round then joins the delta
with the held static part and little else.

A rule's candidates carry their provenance: the relation, the head tuple
(padded with ``PAD``), the rule's index, and the body tuple that caused it
(``cause_rel`` and ``k0..``, padded with nulls).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .holding import in_one_partition
from .syntax import Atom, Rule, is_wildcard

PAD = -1  # fills the tuple columns a relation narrower than the widest does not have (ids are never negative)


def tuple_columns(arity: int, prefix: str = "c") -> list[str]:
    return [f"{prefix}{i}" for i in range(arity)]


def null_long() -> Column:
    return F.lit(None).cast("long")


@dataclass(frozen=True)
class RulePlan:
    """How one rule is joined: ``delta`` is the body position read as the round's new tuples (None: the rule
    reads nothing of its own stratum and fires once, in the stratum's first round)."""

    index: int
    rule: Rule
    delta: int | None
    static: tuple[int, ...]   # positive atoms outside the stratum, and negations they bind: joined once
    late: tuple[int, ...]     # atoms joined every round: other atoms of the stratum, negations the delta binds
    cause: int                # the body atom recorded as the cause

    @property
    def names(self) -> dict[str, str]:
        return variable_names(self.rule)

    @property
    def hoisted(self) -> bool:
        """Whether the static part is held before the loop: a recursive rule with something static to join."""
        return self.delta is not None and any(not self.rule.body[i].negated for i in self.static)

    @property
    def keys(self) -> tuple[str, ...]:
        """The columns the static part shares with the delta: what it is partitioned on."""
        names = self.names
        delta = self.rule.body[self.delta].variables()
        static = set().union(*(self.rule.body[i].variables() for i in self.static))
        return tuple(sorted(names[v] for v in delta & static))

    def static_relations(self) -> set[str]:
        return {self.rule.body[i].relation for i in self.static}


def plan_rule(index: int, rule: Rule, stratum: tuple[str, ...], delta: int | None, cause: int) -> RulePlan:
    if delta is None:
        return RulePlan(index, rule, None, tuple(range(len(rule.body))), (), cause)
    positive = [i for i, a in enumerate(rule.body) if not a.negated and i != delta]
    static = [i for i in positive if rule.body[i].relation not in stratum]
    late = [i for i in positive if i not in static]
    bound = set().union(*(rule.body[i].variables() for i in static))
    for i, atom in enumerate(rule.body):
        if atom.negated:
            (static if static and atom.variables() <= bound else late).append(i)
    return RulePlan(index, rule, delta, tuple(static), tuple(late), cause)


def static_part(plan: RulePlan, sources: dict[int, DataFrame], one_partition: bool = False) -> DataFrame:
    """The static atoms of a recursive rule joined (and their negations applied), columns named by variable."""
    names = plan.names
    frame = _join_positive(plan.rule, [i for i in plan.static if not plan.rule.body[i].negated], sources, names,
                           one_partition=one_partition)
    return _apply_negations(plan.rule, [i for i in plan.static if plan.rule.body[i].negated], frame, sources, names)


def candidates(plan: RulePlan, sources: dict[int, DataFrame], static: DataFrame | None, width: int,
               cause_width: int, one_partition: bool = False) -> DataFrame:
    """The head tuples ``plan`` derives, with provenance.

    ``sources`` holds a frame for the delta (the round's new tuples) and for
    every late atom; ``static`` is the held static part. A non-recursive rule
    has every atom in ``sources`` and no static part. ``one_partition``: every
    source is rows in one partition (``holding.local_frame``), and so is each join.
    """
    rule, names = plan.rule, plan.names
    if plan.delta is None:
        frame = _join_positive(rule, [i for i, a in enumerate(rule.body) if not a.negated], sources, names,
                               one_partition=one_partition)
        frame = _apply_negations(rule, [i for i, a in enumerate(rule.body) if a.negated], frame, sources, names)
    else:
        frame = bind(rule.body[plan.delta], sources[plan.delta], names)
        if static is not None:
            frame = _join(frame, static, one_partition)
        frame = _join_positive(rule, [i for i in plan.late if not rule.body[i].negated], sources, names, frame,
                               one_partition)
        frame = _apply_negations(rule, [i for i in plan.late if rule.body[i].negated], frame, sources, names)
    cause = rule.body[plan.cause]
    head = padded_head(rule, names, width)
    cause_cols = [F.col(names[v]) for v in cause.args] + [null_long()] * (cause_width - cause.arity)
    return frame.select(
        F.lit(rule.head.relation).alias("relation"),
        *(c.alias(f"c{j}") for j, c in enumerate(head)),
        F.lit(plan.index).alias("rule"),
        F.lit(cause.relation).alias("cause_rel"),
        *(c.alias(f"k{j}") for j, c in enumerate(cause_cols)),
    )


def joined_body(rule: Rule, sources: dict[int, DataFrame], timed: tuple[int, ...] = (), first: int | None = None,
                head: DataFrame | None = None, negations: bool = True, one_partition: bool = False) -> DataFrame:
    """A rule's body joined, columns named by variable (``datalog.incremental``): the sources at the positions
    ``timed`` carry ``depth`` (kept as ``_d{i}``); ``first``: the atom joined first (a small one); ``head``:
    only the instances whose head is one of these tuples (``c0..``); ``negations=False``: negated atoms are
    read positively, at ``first``, and ignored elsewhere (every instance a change of them may touch)."""
    names = variable_names(rule)
    frame = bind(rule.head, head, names).distinct() if head is not None else None
    order = ([first] if first is not None else []) + [i for i in range(len(rule.body)) if i != first]
    for i in order:
        atom = rule.body[i]
        if atom.negated and i != first:
            continue
        bound = bind(atom, sources[i], names, {"depth": f"_d{i}"} if i in timed else None)
        frame = bound if frame is None else _join(frame, bound, one_partition)
    if negations:
        frame = _apply_negations(rule, [i for i, a in enumerate(rule.body) if a.negated and i != first], frame,
                                 sources, names)
    return frame


def heads_of(rule: Rule, joined: DataFrame, width: int) -> DataFrame:
    """``relation, c0..`` (padded with ``PAD``) of the heads of a joined body."""
    names = variable_names(rule)
    head = padded_head(rule, names, width)
    return joined.select(F.lit(rule.head.relation).alias("relation"), *(c.alias(f"c{j}") for j, c in enumerate(head)))


def timed_derivations(rule: Rule, index: int, joined: DataFrame, timed: tuple[int, ...], cause: int, width: int,
                      cause_width: int) -> DataFrame:
    """``relation, c0.., depth, rule, cause_rel, k0..`` of each derivation of a joined body whose atoms of its
    stratum (``timed``) carry their depth: one more than the latest of them, caused by the lowest of those
    latest (what a round of ``candidates`` finds in the round the last of them became known); a rule reading
    nothing of its stratum derives in depth 1, caused by the atom ``cause``."""
    names = variable_names(rule)

    def cause_of(i: int) -> Column:
        atom = rule.body[i]
        values = [F.col(names[v]) for v in atom.args] + [null_long()] * (cause_width - atom.arity)
        return F.struct(F.lit(atom.relation).alias("cause_rel"), *(c.alias(f"k{j}") for j, c in enumerate(values)))
    if timed:
        latest = F.greatest(*(F.col(f"_d{i}") for i in timed)) if len(timed) > 1 else F.col(f"_d{timed[0]}")
        causes = [F.when(F.col(f"_d{i}") == latest, cause_of(i)) for i in timed]
        depth, chosen = (latest + 1).cast("int"), F.least(*causes) if len(causes) > 1 else causes[0]
    else:
        depth, chosen = F.lit(1), cause_of(cause)
    head = padded_head(rule, names, width)
    return joined.select(F.lit(rule.head.relation).alias("relation"), *(c.alias(f"c{j}") for j, c in enumerate(head)),
                         depth.alias("depth"), F.lit(index).alias("rule"), chosen.alias("_cause")).select(
        "relation", *(f"c{j}" for j in range(width)), "depth", "rule", "_cause.*")


def _join_positive(rule: Rule, positions: list[int], sources: dict[int, DataFrame], names: dict[str, str],
                   frame: DataFrame | None = None, one_partition: bool = False) -> DataFrame:
    for i in positions:
        bound = bind(rule.body[i], sources[i], names)
        frame = bound if frame is None else _join(frame, bound, one_partition)
    return frame


def _join(left: DataFrame, right: DataFrame, one_partition: bool = False) -> DataFrame:
    shared = [c for c in right.columns if c in left.columns]
    return in_one_partition(left.join(right, shared, "inner") if shared else left.crossJoin(right), one_partition)


def _apply_negations(rule: Rule, positions: list[int], frame: DataFrame, sources: dict[int, DataFrame],
                     names: dict[str, str]) -> DataFrame:
    for i in positions:
        atom = rule.body[i]
        keys = list(dict.fromkeys(names[v] for v in atom.args if not is_wildcard(v)))
        if not keys:  # NOT R(_, ...): the engine fires the rule only while R is empty
            continue
        frame = frame.join(bind(atom, sources[i], names).select(*keys), keys, "left_anti")  # duplicates harmless
    return frame


def padded_head(rule: Rule, names: dict[str, str], width: int) -> list[Column]:
    """The head's columns, padded with ``PAD`` to the ``width`` of a round's tuples."""
    return [F.col(names[v]) for v in rule.head.args] + [F.lit(PAD).cast("long")] * (width - rule.head.arity)


def variable_names(rule: Rule) -> dict[str, str]:
    """Column name per variable: positional, since Spark column names ignore case."""
    names: dict[str, str] = {}
    for atom in (rule.head, *rule.body):
        for var in atom.args:
            names.setdefault(var, f"v{len(names)}")
    return names


def bind(atom: Atom, source: DataFrame, names: dict[str, str], keep: dict[str, str] | None = None) -> DataFrame:
    """The atom's tuples with columns named by variable; a repeated variable filters equality. ``keep``: more
    columns of ``source`` kept, renamed (source column -> name)."""
    first: dict[str, int] = {}
    conditions, columns = [], []
    for position, var in enumerate(atom.args):
        name = names[var]
        if name in first:
            conditions.append(F.col(f"c{position}") == F.col(f"c{first[name]}"))
            continue
        first[name] = position
        columns.append(F.col(f"c{position}").alias(name))
    for condition in conditions:
        source = source.where(condition)
    return source.select(*columns, *(F.col(c).alias(n) for c, n in (keep or {}).items()))


def all_wildcards(atom: Atom) -> bool:
    return all(is_wildcard(v) for v in atom.args)
