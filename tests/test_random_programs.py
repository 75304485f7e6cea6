"""The engine against the naive evaluator on random *programs*, not only random catalogs.

Each group is a small random program over its own base relations (edges
``E``, ``P``; node sets ``N``, ``M``) with derived relations on up to three
negation levels: recursion through one or two atoms of the same stratum,
negation of a derived relation of a lower stratum, repeated variables,
wildcards and cross products (atoms sharing no variable). All groups are
namespaced into one program and evaluated in one Spark loop; engine and naive
evaluator must agree on every tuple, its round, its rule and its cause.
"""

import random

from dirtiness.datalog.check import check_program
import pytest

from dirtiness.datalog.engine import Program, tuple_schema
from dirtiness.datalog.holding import Batch, Holding, local_batch
from dirtiness.session import session_settings, spark_settings
from dirtiness.settings import RunParams, resolve
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.datalog.syntax import ProgramError, is_wildcard, parse_program
from spark_jobs import jobs_started, stages_of_jobs
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

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


def build(seed: int):
    rng = random.Random(seed)
    base_domains = {}
    lines, facts = [], {}
    for g in range(GROUPS):
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


# every round local rows; or every round checkpointed blocks, partitioned as a large catalog's
@pytest.mark.parametrize("local_rows, partitions", [(10_000, 1), (0, 3)])
def test_engine_matches_naive_on_random_programs(spark, config, local_rows, partitions):
    checked, facts = build(20261122)
    covered = features(checked)
    assert all(covered.values()), covered
    assert len(checked.strata) >= 3

    conf = {**spark_settings(config["spark"]["compute_conf"]), "spark.sql.shuffle.partitions": str(partitions)}
    with session_settings(spark, conf):
        base = {name: local_batch(spark, sorted(rows), tuple_schema(BASE[name[2:]])) for name, rows in facts.items()}
        holding = Holding(local_rows, partitions=partitions)
        program = Program(checked, holding)
        static = holding.hold_all(program.static_requests(base), try_local=bool(local_rows))
        evaluation = program.evaluate(base, static)
    naive, rounds = evaluate_naive(checked, facts)

    assert len(evaluation.rounds) == rounds
    print(f"{len(checked.rules)} rules, {len(checked.strata)} strata, {rounds} rounds, features {covered}")
    derived = 0
    for relation, expected in naive.items():
        arity = len(checked.derived[relation])
        rows = evaluation.relations[relation].collect()
        got = {tuple(r[f"c{i}"] for i in range(arity)): r for r in rows}
        assert len(got) == len(rows), relation  # no tuple derived twice
        assert set(got) == set(expected), relation
        for values, row in got.items():
            first = expected[values]
            assert (row["round"], row["rule"]) == (first.round, first.rule), (relation, values)
            cause = (row["cause_rel"], tuple(row[f"k{i}"] for i in range(len(checked.domains(row["cause_rel"])))))
            assert cause in first.causes, (relation, values, cause)
            derived += 1
    assert derived > 100, derived  # the programs really derive something


def test_a_round_whose_rules_all_join_an_empty_relation_is_counted_and_runs_no_job(spark, config):
    """Round 2 is due (``A`` grew) but its one rule joins ``M``, which is empty: the round is numbered as
    the naive evaluator numbers it, adds nothing, and costs no Spark job (``C``, reading only the empty ``B``,
    makes no round due). Held as blocks (a query over rows alone that an empty one empties runs no job
    anyway)."""
    program = "A(X) :- N(X)\nB(X) :- A(X), M(X)\nC(X) :- B(X), N(X)\nD(X) :- N(X), NOT A(X)"
    checked = check_program(parse_program(program, "idle.dl"), {"N": ("node",), "M": ("node",)})
    facts = {"N": {(1,), (2,)}, "M": set()}
    with session_settings(spark, spark_settings(config["spark"]["compute_conf"])):
        base = {name: local_batch(spark, sorted(rows), tuple_schema(1)) for name, rows in facts.items()}
        holding = Holding(0)
        program = Program(checked, holding)
        static = holding.hold_all(program.static_requests(base), try_local=False)
        rounds = []
        evaluation = program.evaluate(base, static, on_round=lambda entry: rounds.append((entry, jobs_started(spark))))
    naive, expected_rounds = evaluate_naive(checked, facts)

    assert [(e.round, e.stratum, e.new) for e, _ in rounds] == [
        (1, 0, {"A": 2, "B": 0, "C": 0}), (2, 0, {"A": 0, "B": 0, "C": 0}), (3, 1, {"D": 0})]
    assert len(rounds) == expected_rounds
    assert rounds[1][1] == rounds[0][1]  # round 2 ran no job
    assert {r: {tuple(row[:1]) for row in evaluation.relations[r].collect()} for r in "ABCD"} == \
        {r: set(naive[r]) for r in "ABCD"}


@pytest.mark.parametrize("local_rows", [10_000, 0])
def test_a_round_in_one_partition_is_one_job_of_one_stage(spark, config, local_rows):
    """Base relations that are views of what a small catalog holds (projections of its interned tables: rows
    on the driver, or blocks in the one partition of ``small_catalog_conf``) are joined where they are: every
    round is held by one job that shuffles nothing (one stage), its static part too, and the tuples are the
    naive evaluator's."""
    program = "T(X, Y) :- E(X, Y)\nT(X, Z) :- T(X, Y), E(Y, Z), N(Z)\nS(X) :- T(X, X), NOT M(X)"
    checked = check_program(parse_program(program, "rows.dl"), {"E": ("node", "node"), "N": ("node",),
                                                                 "M": ("node",)})
    facts = {"E": {(i, i + 1) for i in range(6)} | {(6, 0), (2, 9)}, "N": {(i,) for i in range(10)}, "M": {(3,)}}
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out="unused"), config)
    with session_settings(spark, settings.computed_with(local_rows or settings.holding.local_rows + 1)):
        holding = Holding(local_rows)
        rows = {name: local_batch(spark, sorted(r), tuple_schema(len(next(iter(r))))) for name, r in facts.items()}
        held = holding.hold_all({name: b.frame for name, b in rows.items()}, try_local=False) if not local_rows \
            else rows
        base = {name: Batch(b.frame.select("*"), None, over_rows=b.local) for name, b in held.items()}
        program = Program(checked, holding)
        before = jobs_started(spark)
        static = program.holding.hold_all(program.static_requests(base), try_local=bool(local_rows))
        after_static = jobs_started(spark)
        rounds = []
        evaluation = program.evaluate(base, static, on_round=lambda entry: rounds.append(jobs_started(spark)))
        naive, expected_rounds = evaluate_naive(checked, facts)
        got = {r: {tuple(row[:len(checked.derived[r])]) for row in evaluation.relations[r].collect()} for r in "TS"}

    assert stages_of_jobs(spark, before, after_static) == [1]  # the static part: one job, one stage
    ends = [after_static, *rounds]
    assert len(rounds) == expected_rounds > 5
    assert [stages_of_jobs(spark, start, end) for start, end in zip(ends, ends[1:])] == [[1]] * len(rounds)
    assert got == {r: set(naive[r]) for r in "TS"}
