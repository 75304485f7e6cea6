"""A fixed point brought up to date (``datalog.incremental``) against a full evaluation of the same relations.

Random programs (``program_generator``: recursion, negation of lower strata, wildcards, cross products) over
random facts, then a chain of random edits (tuples added and removed in every base relation, a relation
emptied, one filled): after each edit the updated fixed point must equal a full evaluation of the edited
relations tuple for tuple, with its provenance (rule, cause, round), and round for round (number, stratum,
tuples added), and the naive evaluator's tuples.
"""

import random

import pytest

from dirtiness.datalog.engine import Program, tuple_schema
from dirtiness.datalog.holding import Holding, local_batch
from dirtiness.datalog.incremental import Maintained, affected_program, restricted_program
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.session import session_settings, spark_settings
from program_generator import BASE, VALUES, build, features


def edited(rng: random.Random, facts: dict[str, set[tuple]], groups: set[str]) -> dict[str, set[tuple]]:
    """The relations of ``groups`` edited: some tuples removed and some added; now and then a relation emptied
    or filled anew. The other groups' relations as they were."""
    out = {}
    for relation, rows in facts.items():
        if relation[:2] not in groups:
            out[relation] = rows
            continue
        arity = BASE[relation[2:]]
        rows = {r for r in rows if rng.random() > 0.15}
        rows |= {tuple(rng.choice(VALUES) for _ in range(arity)) for _ in range(rng.randint(0, 2))}
        draw = rng.random()
        if draw < 0.05:
            rows = set()
        elif draw < 0.1:
            rows = {tuple(rng.choice(VALUES) for _ in range(arity)) for _ in range(6)}
        out[relation] = rows
    return out


def as_rows(evaluation) -> dict[str, set[tuple]]:
    return {relation: {tuple(r) for r in frame.collect()} for relation, frame in evaluation.relations.items()}


def rounds_of(evaluation) -> list[tuple]:
    return [(e.round, e.stratum, e.new) for e in evaluation.rounds]


def test_the_derived_programs_are_rule_text_the_checker_accepts():
    checked, _ = build(7)
    affected, restricted = affected_program(checked), restricted_program(checked)
    assert set(affected.derived) == {f"{p}{r}" for r in checked.derived for p in ("Affected__", "Either__")}
    assert len(affected.strata) == 1  # no negation: one stratum, its rounds as deep as the change goes
    assert [str(r).split(", Affected__")[0] for r in restricted.rules] == [str(r) for r in checked.rules]
    assert restricted.strata == checked.strata


# rows on the driver, a chain of edits of one group, of none, of all; or checkpointed blocks, partitioned
# as a large catalog's, one edit
@pytest.mark.parametrize("local_rows, partitions, seed, groups, edits",
                         [(10_000, 1, 12, 3, (1, 0, 3)), (0, 3, 7, 2, (1,))])
def test_an_update_equals_a_full_evaluation_after_every_edit(spark, config, local_rows, partitions, seed, groups,
                                                             edits):
    checked, facts = build(seed, groups)
    assert all(features(checked).values()) and len(checked.strata) >= 3
    rng = random.Random(local_rows)
    conf = {**spark_settings(config["spark"]["compute_conf"]), "spark.sql.shuffle.partitions": str(partitions)}
    with session_settings(spark, conf):
        holding = Holding(local_rows, partitions=partitions)
        program = Program(checked, holding)
        maintained = Maintained.of(program)

        def batches(rows):
            return {n: local_batch(spark, sorted(r), tuple_schema(BASE[n[2:]])) for n, r in rows.items()}

        last = program.evaluate(batches(facts))
        kept = 0
        for step, edited_groups in enumerate(edits):
            new_facts = edited(rng, facts, set(rng.sample([f"g{g}" for g in range(groups)], edited_groups)))
            updated = maintained.update(last, batches(facts), batches(new_facts))
            full = program.evaluate(batches(new_facts))
            got, expected = as_rows(updated), as_rows(full)
            for relation in checked.derived:
                assert got[relation] == expected[relation], (step, relation)
            assert rounds_of(updated) == rounds_of(full), step
            naive, _ = evaluate_naive(checked, new_facts)
            assert {r: {t[:len(checked.derived[r])] for t in rows} for r, rows in got.items()} == \
                {r: set(t) for r, t in naive.items()}, step
            before = as_rows(last)
            kept += sum(len(got[r] & before[r]) for r in checked.derived)
            last, facts = updated, new_facts
    assert kept > 10  # the updates kept tuples, with their provenance, from the fixed point before
