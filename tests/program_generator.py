"""Random stratified programs over small random facts, for checking the engine against the naive evaluator
and an update against a full evaluation: ``build`` a program of ``GROUPS`` independent groups, each over its
own base relations (edges ``E``, ``P``; node sets ``N``, ``M``) with derived relations on up to three negation
levels: recursion through one or two atoms of the same stratum, negation of a derived relation of a lower
stratum, repeated variables, wildcards and cross products (atoms sharing no variable)."""

import random

from dirtiness.datalog.check import check_program
from dirtiness.datalog.syntax import ProgramError, is_wildcard, parse_program

BASE = {"E": 2, "P": 2, "N": 1, "M": 1}
VARIABLES = "XYZ"
VALUES = range(5)
GROUPS = 10


def random_group(rng: random.Random, tag: str) -> list[str]:
    """Rules of one random stratified program; relation names prefixed with ``tag``."""
    derived = {f"{tag}D{i}": (rng.choice([1, 2]), level)
               for i, level in enumerate(sorted(rng.choice([0, 0, 1, 2]) for _ in range(4)))}
    lines = []
    for head, (arity, level) in derived.items():
        for number in range(rng.randint(1, 3)):
            allowed = [(f"{tag}{b}", n) for b, n in BASE.items()]
            if number:  # the first rule of a relation reads base relations only: something to start from
                allowed += [(d, a) for d, (a, lv) in derived.items() if lv <= level]
            body, bound = [], []
            for _ in range(rng.choice([1, 2, 2, 3])):
                relation, n = rng.choice(allowed)
                args = [rng.choice(VARIABLES) for _ in range(n)]
                body.append(f"{relation}({', '.join(args)})")
                bound += args
            if rng.random() < 0.5:
                lower = [(d, a) for d, (a, lv) in derived.items() if lv < level]
                relation, n = rng.choice(lower if lower and rng.random() < 0.8 else
                                         [(f"{tag}{b}", n) for b, n in BASE.items()])
                args = [rng.choice(bound) if rng.random() < 0.85 else "_" for _ in range(n)]
                body.append(f"NOT {relation}({', '.join(args)})")
            head_args = [rng.choice(bound) for _ in range(arity)]
            lines.append(f"{head}({', '.join(head_args)}) :- {', '.join(body)}")
    return lines


def random_facts(rng: random.Random, tag: str) -> dict[str, set[tuple]]:
    facts = {}
    for relation, arity in BASE.items():
        universe = [tuple(rng.choice(VALUES) for _ in range(arity)) for _ in range(12)]
        facts[f"{tag}{relation}"] = set(rng.sample(universe, rng.randint(0, len(universe))))
    return facts


def features(checked) -> dict[str, int]:
    """How often the program uses each feature the test is meant to cover."""
    stratum_of = {r: k for k, stratum in enumerate(checked.strata) for r in stratum}
    found = dict.fromkeys(("two recursive atoms", "negated derived", "repeated variable", "cross product",
                           "wildcard"), 0)
    for rule in checked.rules:
        level = stratum_of[rule.head.relation]
        same = [a for a in rule.positive if stratum_of.get(a.relation) == level]
        found["two recursive atoms"] += len(same) >= 2
        found["negated derived"] += any(a.relation in checked.derived for a in rule.negative)
        named = [[v for v in a.args if not is_wildcard(v)] for a in rule.body]
        found["repeated variable"] += any(len(set(args)) < len(args) for args in named)
        found["wildcard"] += any(is_wildcard(v) for a in rule.body for v in a.args)
        positive = list(rule.positive)
        found["cross product"] += any(not set(a.args) & set(b.args) for i, a in enumerate(positive)
                                      for b in positive[i + 1:])
    return found


def build(seed: int, groups: int = GROUPS):
    rng = random.Random(seed)
    base_domains = {}
    lines, facts = [], {}
    for g in range(groups):
        tag = f"g{g}"
        while True:  # a group the checker rejects (an unsafe head, say) is drawn again
            group = random_group(rng, tag)
            try:
                check_program(parse_program("\n".join(group), "group.dl"),
                              {f"{tag}{b}": ("node",) * n for b, n in BASE.items()})
                break
            except ProgramError:
                continue
        lines += group
        facts.update(random_facts(rng, tag))
        base_domains.update({f"{tag}{b}": ("node",) * n for b, n in BASE.items()})
    checked = check_program(parse_program("\n".join(lines), "random.dl"), base_domains)
    return checked, facts


def bundled_together(seed: int) -> tuple:
    """Every bundled rule program (``conf/rules``) in one program, each namespaced by ``b{i}_`` (its relations
    renamed, its rules, labels and reasons as they are), with random facts for every base relation it reads:
    the checked program, the facts, and each base relation's arity."""
    from dirtiness.config import RULES
    from dirtiness.datalog.syntax import Atom
    from dirtiness.model import base_domains, plan_domains

    rng = random.Random(seed)
    lines, domains = [], {}
    for i, path in enumerate(sorted(RULES.glob("*.dl"))):
        given = plan_domains() if path.stem.startswith("plan_") else base_domains()
        checked = check_program(parse_program(path.read_text(), str(path)), given)
        tag = f"b{i}_"
        for rule in checked.rules:
            reason = f' "{rule.reason}"' if rule.reason is not None else ""
            body = ", ".join(str(Atom(tag + a.relation, a.args, a.negated)) for a in rule.body)
            lines.append(f"{rule.label}{reason}: {Atom(tag + rule.head.relation, rule.head.args)} :- {body}")
        domains.update({tag + r: given[r] for r in checked.inputs})
    together = check_program(parse_program("\n".join(lines), "bundled.dl"), domains)
    arity = {r: len(d) for r, d in domains.items()}
    facts = {r: {tuple(rng.choice(VALUES) for _ in range(n)) for _ in range(rng.randint(0, 8))}
             for r, n in arity.items()}
    return together, facts, arity
