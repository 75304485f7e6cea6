"""A small naive evaluator in plain Python: the reference the Spark engine is checked against.

Naive, not semi-naive: every round re-evaluates every rule of the stratum
over everything known, so it shares no delta bookkeeping with the engine.
Rounds are numbered the same way (a round runs while some rule can fire on
the previous round's new tuples; strata in order), so per tuple the round and
the rule that first derived it must match the engine, and the engine's cause
must be one of the causes found here. Holds everything in memory: for tests
and the benchmark, never for the job.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .check import CheckedProgram
from .syntax import Atom, Rule, is_wildcard


@dataclass
class Derivation:
    round: int
    rule: int                                     # lowest rule index deriving it in that round
    causes: set[tuple[str, tuple]] = field(default_factory=set)  # (relation, tuple) allowed as cause


def evaluate_naive(checked: CheckedProgram, base: dict[str, set[tuple]]) -> tuple[dict[str, dict[tuple, Derivation]], int]:
    """Derived relation -> tuple -> how it was first derived; and the number of rounds run."""
    known: dict[str, dict[tuple, Derivation]] = {name: {} for name in checked.derived}
    round_no = 0
    for stratum in checked.strata:
        # NOT R(_, ...) over a relation that holds something: the rule cannot fire, nor make a round due
        rules = [(i, rule) for i, rule in checked.rules_of(stratum)
                 if not any(a.negated and all(is_wildcard(v) for v in a.args)
                            and (base.get(a.relation) or known.get(a.relation)) for a in rule.body)]
        recent: dict[str, set[tuple]] = {}
        first = True
        while True:
            can_fire = any(
                (first and not _recursive(rule, stratum))
                or (not first and any(recent.get(rule.body[i].relation) for i in _recursive(rule, stratum)))
                for _, rule in rules)
            if not can_fire:
                break
            round_no += 1
            state = {**{n: set(t) for n, t in base.items()}, **{n: set(d) for n, d in known.items()}}
            found: dict[str, dict[tuple, Derivation]] = defaultdict(dict)
            for index, rule in rules:
                recursive = _recursive(rule, stratum)
                for binding in _bindings(rule, state):
                    head = tuple(binding[v] for v in rule.head.args)
                    if head in known[rule.head.relation]:
                        continue
                    if recursive:
                        causes = {(rule.body[i].relation, _ground(rule.body[i], binding)) for i in recursive}
                        causes = {c for c in causes if c[1] in recent.get(c[0], set())}
                    else:
                        atom = rule.body[checked.cause_index(rule)]
                        causes = {(atom.relation, _ground(atom, binding))}
                    entry = found[rule.head.relation].get(head)
                    if entry is None or index < entry.rule:
                        found[rule.head.relation][head] = Derivation(round_no, index, set(causes))
                    elif index == entry.rule:
                        entry.causes |= causes
            recent = {name: set(tuples) for name, tuples in found.items()}
            for name, tuples in found.items():
                known[name].update(tuples)
            first = False
            if not any(recent.values()):
                break
    return known, round_no


def _recursive(rule: Rule, stratum: tuple[str, ...]) -> list[int]:
    return [i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum]


def _ground(atom: Atom, binding: dict[str, object]) -> tuple:
    return tuple(binding[v] for v in atom.args)


def _bindings(rule: Rule, state: dict[str, set[tuple]]):
    """Every variable binding satisfying the body: hash-indexed nested loops, smallest atom first."""
    indexes: dict[tuple[str, tuple[int, ...]], dict[tuple, list[tuple]]] = {}

    def lookup(atom: Atom, binding: dict[str, object]) -> list[tuple]:
        bound = tuple(i for i, v in enumerate(atom.args) if v in binding)
        key = (atom.relation, bound)
        if key not in indexes:
            index: dict[tuple, list[tuple]] = defaultdict(list)
            for fact in state.get(atom.relation, ()):
                index[tuple(fact[i] for i in bound)].append(fact)
            indexes[key] = index
        return indexes[key].get(tuple(binding[atom.args[i]] for i in bound), [])

    def extend(remaining: list[Atom], binding: dict[str, object]):
        if not remaining:
            if not any(lookup_negated(atom, binding) for atom in rule.negative):
                yield binding
            return
        atom = max(remaining, key=lambda a: (sum(v in binding for v in a.args), -len(state.get(a.relation, ()))))
        rest = [a for a in remaining if a is not atom]
        for fact in lookup(atom, binding):
            extended = _unify(atom, fact, binding)
            if extended is not None:
                yield from extend(rest, extended)

    def lookup_negated(atom: Atom, binding: dict[str, object]) -> bool:
        return any(_unify(atom, fact, binding) is not None for fact in lookup(atom, binding))

    yield from extend(list(rule.positive), {})


def _unify(atom: Atom, fact: tuple, binding: dict[str, object]) -> dict[str, object] | None:
    out = dict(binding)
    for var, value in zip(atom.args, fact):
        if out.setdefault(var, value) != value:
            return None
    return out
