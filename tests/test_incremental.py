"""A fixed point brought up to date (``datalog.incremental``) against a full evaluation of the same relations.

Random programs (``program_generator``: recursion, negation of lower strata, wildcards, cross products), and
every bundled program, over random facts, then a chain of random edits (tuples added and removed, a relation
emptied, one filled anew; some groups of relations edited, the others not): after each edit the updated
fixed point must hold exactly what the naive evaluator derives from the edited relations, each tuple with the
provenance a full evaluation gives it (the round and rule that first derive it, the lowest of its causes),
in as many rounds.
"""

import random

import pytest

from dirtiness.datalog.engine import Program, tuple_schema
from dirtiness.datalog.holding import Holding, local_batch
from dirtiness.datalog.incremental import Maintained
from dirtiness.datalog.check import check_program
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.datalog.syntax import parse_program
from dirtiness.session import session_settings, spark_settings
from program_generator import BASE, VALUES, build, bundled_together, features


def edited(rng: random.Random, facts: dict[str, set[tuple]], groups: set[str],
           arity: dict[str, int]) -> dict[str, set[tuple]]:
    """Most relations of ``groups`` (a relation's group: its name up to its third character, ``g0``, ``b1``)
    edited: some tuples removed and some added; now and then a relation emptied or filled anew. The other
    groups' relations as they were."""
    out = {}
    for relation, rows in facts.items():
        if relation[:2] not in groups or rng.random() < 0.4:  # a group edited in some of its relations
            out[relation] = rows
            continue
        rows = {r for r in rows if rng.random() > 0.15}
        rows |= {tuple(rng.choice(VALUES) for _ in range(arity[relation])) for _ in range(rng.randint(0, 2))}
        draw = rng.random()
        if draw < 0.05:
            rows = set()
        elif draw < 0.1:
            rows = {tuple(rng.choice(VALUES) for _ in range(arity[relation])) for _ in range(6)}
        out[relation] = rows
    return out


def as_rows(evaluation) -> dict[str, set[tuple]]:
    return {relation: {tuple(r) for r in frame.collect()} for relation, frame in evaluation.relations.items()}


def provenance(rows: set[tuple], width: int, checked) -> dict[tuple, tuple]:
    """Each tuple's provenance as a relation's frame holds it: rule, cause relation, cause tuple, round."""
    out = {}
    for row in rows:
        cause = row[width + 1]
        out[row[:width]] = (row[width], cause, row[width + 2:width + 2 + len(checked.domains(cause))], row[-1])
    assert len(out) == len(rows)  # no tuple derived twice
    return out


def first_derivations(expected) -> dict[tuple, tuple]:
    """The naive evaluator's: the round and rule that first derive each tuple, and the lowest of its causes
    (the engine keeps the lowest rule, then the lowest cause)."""
    return {values: (d.rule, *min(d.causes), d.round) for values, d in expected.items()}


def random_program(seed: int, groups: int) -> tuple:
    checked, facts = build(seed, groups)
    assert all(features(checked).values()) and len(checked.strata) >= 3
    return checked, facts, {r: BASE[r[2:]] for r in facts}, [f"g{g}" for g in range(groups)]


def bundled_programs(seed: int) -> tuple:
    checked, facts, arity = bundled_together(seed)
    return checked, facts, arity, sorted({r[:2] for r in facts})


def updated_along(spark, config, checked, steps: list[dict[str, set[tuple]]], arity: dict[str, int],
                  local_rows: int = 10_000, partitions: int = 1) -> tuple[list[dict[str, set[tuple]]], int, int]:
    """A full evaluation of the first step's facts, then each later step's by an update from the one before,
    each checked against the naive evaluator (tuples, provenance, rounds): every update's relations, how
    many tuples the updates kept from the fixed point before, and how many they derived again (settled)."""
    # as a run of a small catalog sets them (held as rows, or as blocks in ``partitions`` partitions)
    small = {**config["spark"]["small_catalog_conf"], **(config["spark"]["local_catalog_conf"] if local_rows else {})}
    conf = {**spark_settings({**config["spark"]["compute_conf"], **small}),
            "spark.sql.shuffle.partitions": str(partitions)}
    with session_settings(spark, conf):
        holding = Holding(local_rows, partitions=partitions)
        engine = Program(checked, holding)
        maintained = Maintained.of(engine)

        def batches(rows):
            return {n: local_batch(spark, sorted(r), tuple_schema(arity[n])) for n, r in rows.items()}

        last, found, kept, settled = engine.evaluate(batches(steps[0])), [], 0, 0
        for step, (facts, new_facts) in enumerate(zip(steps, steps[1:])):
            updated = maintained.update(last, batches(facts), batches(new_facts))
            naive, rounds = evaluate_naive(checked, new_facts)
            assert len(updated.rounds) == rounds, step
            got = as_rows(updated)
            for relation, expected in naive.items():
                assert provenance(got[relation], len(checked.derived[relation]), checked) == \
                    first_derivations(expected), (step, relation)
            before = as_rows(last)
            kept += sum(len(got[r] & before[r]) for r in checked.derived)
            settled += sum(sum(sizes) for sizes in updated.batches.values())
            found.append({r: {t[:len(checked.derived[r])] for t in rows} for r, rows in got.items()})
            last = updated
    return found, kept, settled


def test_a_change_seen_only_through_negation_is_followed(spark, config):
    """Only negated relations change: a base one (``M``), and a derived one (``A``, through ``P``); what their
    absence supported or blocked is derived again, what depends on it too."""
    program = ("A(X) :- P(X)\nB(X) :- N(X), NOT M(X)\nC(X) :- N(X), NOT A(X)\nD(X) :- C(X), N(X)\n"
               "E(X) :- N(X), NOT D(_)")
    checked = check_program(parse_program(program, "negation.dl"), {r: ("node",) for r in "NMP"})
    steps = [{"N": {(1,), (2,), (3,)}, "M": {(1,)}, "P": {(2,)}},
             {"N": {(1,), (2,), (3,)}, "M": {(2,)}, "P": {(2,), (3,)}},
             {"N": {(1,), (2,), (3,)}, "M": set(), "P": {(1,), (2,), (3,)}}]
    found, _, _ = updated_along(spark, config, checked, steps, {r: 1 for r in "NMP"})
    assert [{r: {t[0] for t in rows} for r, rows in f.items()} for f in found] == [
        {"A": {2, 3}, "B": {1, 3}, "C": {1}, "D": {1}, "E": set()},
        {"A": {1, 2, 3}, "B": {1, 2, 3}, "C": set(), "D": set(), "E": {1, 2, 3}}]


def test_a_change_at_the_start_of_a_chain_is_followed_round_by_round_in_blocks(spark, config):
    """Held as blocks: the changed start of a chain moves every tuple after it to an earlier round, each found
    from the one before it in the step after it; another chain keeps its tuples and rounds, and is never
    derived again (the cut-off: nothing it reads changed)."""
    program = "R(X) :- S(X)\nR(Y) :- R(X), E(X, Y)"
    checked = check_program(parse_program(program, "chain.dl"), {"S": ("node",), "E": ("node", "node")})
    edges = {(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (10, 11), (11, 12)}
    steps = [{"S": {(1,), (10,)}, "E": edges}, {"S": {(3,), (10,)}, "E": edges}]
    found, kept, settled = updated_along(spark, config, checked, steps, {"S": 1, "E": 2}, local_rows=0,
                                         partitions=2)
    assert {t[0] for t in found[0]["R"]} == {3, 4, 5, 6, 10, 11, 12}
    assert kept == 3  # the other chain's tuples, as they were
    assert settled == 4  # R(3) .. R(6), each at its new round; R(1) and R(2) left, the other chain untouched


# random programs, rows on the driver, a chain of edits of one group, of none, of all; random programs as
# checkpointed blocks, partitioned as a large catalog's, one edit; every bundled program, one edit of three of
# them (the others' tuples kept as they are)
@pytest.mark.parametrize("local_rows, partitions, program, edits", [
    (10_000, 1, lambda: random_program(12, 3), (1, 0, 3)), (0, 3, lambda: random_program(7, 2), (1,)),
    (10_000, 1, lambda: bundled_programs(5), (3,))], ids=["random-rows", "random-blocks", "bundled"])
def test_an_update_equals_a_full_evaluation_after_every_edit(spark, config, local_rows, partitions, program, edits):
    checked, facts, arity, groups = program()
    rng = random.Random(local_rows)
    steps = [facts]
    for edited_groups in edits:
        steps.append(edited(rng, steps[-1], set(rng.sample(groups, edited_groups)), arity))
    _, kept, _ = updated_along(spark, config, checked, steps, arity, local_rows, partitions)
    assert kept > 10  # the updates kept tuples, with their provenance, from the fixed point before
