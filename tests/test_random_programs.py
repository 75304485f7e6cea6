"""The engine against the naive evaluator on random *programs*, not only random catalogs.

Each group is a small random program over its own base relations (edges
``E``, ``P``; node sets ``N``, ``M``) with derived relations on up to three
negation levels: recursion through one or two atoms of the same stratum,
negation of a derived relation of a lower stratum, repeated variables,
wildcards and cross products (atoms sharing no variable). All groups are
namespaced into one program and evaluated in one Spark loop; engine and naive
evaluator must agree on every tuple, its round, its rule and its cause.
"""

import pytest

from dirtiness.datalog.check import check_program

from dirtiness.datalog.engine import Program, tuple_schema
from dirtiness.datalog.holding import Batch, Holding, local_batch
from dirtiness.session import session_settings, spark_settings
from dirtiness.settings import RunParams, resolve
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.datalog.syntax import parse_program
from spark_jobs import jobs_started, stages_of_jobs
from program_generator import BASE, build, features
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD


# every round local rows; or every round checkpointed blocks, partitioned as a large catalog's
@pytest.mark.parametrize("local_rows, partitions", [(10_000, 1), (0, 3)])
def test_engine_matches_naive_on_random_programs(spark, config, local_rows, partitions):
    checked, facts = build(20261122)
    covered = features(checked)
    assert all(covered.values()), covered
    assert len(checked.strata) >= 3

    # held as rows: the settings a run of a catalog held as rows computes with
    rows_conf = {**config["spark"]["small_catalog_conf"], **config["spark"]["local_catalog_conf"]} if local_rows else {}
    conf = {**spark_settings({**config["spark"]["compute_conf"], **rows_conf}),
            "spark.sql.shuffle.partitions": str(partitions)}
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
