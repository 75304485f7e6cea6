"""The Spark engine against the naive in-memory evaluator on random catalogs.

Many random catalogs run as one namespaced batch per program. For every
derived relation (not only the output ones) both must give the same tuples;
per tuple the same round and rule; and the engine's cause must be one of the
causes the naive evaluator found for that rule in that round. The same holds
for the strategy's plan rules of each run (as ids: the naive evaluator reads
the base relations the engine read, the dirty sets among them).
"""

import random
import re

import pytest
from catalogs import OUTPUTS, RULES, Scenario, obj, run_scenarios
from pyspark.sql import functions as F

from dirtiness.changeset.dirty_sets import column_names
from dirtiness.changeset.rules import load_rules
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.model import BY_NAME, OBJECT_DOMAIN

KINDS = ["view", "view", "materialized-view", "materialized-view", "table", "source", "sink"]
NAMES = ["a", "b", "c", "d", "Mixed", "dot.ted", 'quo"te', "e", "f"]


def random_scenario(rng: random.Random, number: int) -> Scenario:
    schemas = [("db", s) for s in rng.sample(["s1", "s2", "s3", "S4"], rng.randint(1, 4))]
    if rng.random() < 0.3:
        schemas.append(("other", "x"))
    clusters = ["c1", "c2", "c3"][: rng.randint(1, 3)]
    refs = []
    for _ in range(rng.randint(2, 9)):
        database, schema = rng.choice(schemas)
        ref = (database, schema, f"{rng.choice(NAMES)}{rng.randint(0, 3)}")
        if ref not in refs:
            refs.append(ref)
    old, kinds = [], {}
    for i, ref in enumerate(refs):  # a catalog a database could hold: nothing reads a sink, sinks have no indexes
        kind = kinds[ref] = rng.choice(KINDS)
        readable = [r for r in refs[:i] if kinds[r] != "sink"]
        deps = [list(d) for d in rng.sample(readable, min(len(readable), rng.randint(0, 2)))]
        indexes = [(f"{ref[2]}_i{j}", rng.choice(clusters))
                   for j in range(rng.choice([0, 0, 1, 2]) if kind != "sink" else 0)]
        old.append(obj(ref, kind, hash=rng.choice(["h1", "h1", None]),
                       cluster=rng.choice([None, *clusters]), deps=deps, indexes=indexes,
                       replacement=kind == "materialized-view" and rng.random() < 0.3))
    new = []
    for entry in old:
        roll = rng.random()
        if roll < 0.1:
            continue  # deleted
        if roll < 0.3:
            entry = {**entry, "hash": "h2"}
        new.append(entry)
    names = {(e["database"], e["schema"], e["name"]) for e in new}
    for entry in new:  # dependencies only on objects that still exist
        entry["depends_on"] = [d for d in entry["depends_on"] if tuple(d) in names]
    if rng.random() < 0.3:
        new.append(obj(f"db.{rng.choice(schemas)[1]}.added{number}", rng.choice(KINDS), cluster=rng.choice(clusters),
                       deps=[[*rng.choice(readable)]] if (readable := sorted(r for r in names
                                                                              if kinds[r] != "sink")) else []))
    present = sorted({(e["database"], e["schema"]) for e in new})  # the job refuses a schema the project lacks
    forced = [f"{d}.{s}" for d, s in rng.sample(present, 1)] if present and rng.random() < 0.15 else []
    return Scenario(f"random{number}", old, new, forced)


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[a-z_][a-z0-9_]*", part) else '"' + part.replace('"', '""') + '"'


def _show(relation: str, values: tuple, checked) -> str:
    shown = [".".join(_quote(p) for p in v) if d == OBJECT_DOMAIN else _quote(v)
             for v, d in zip(values, checked.domains(relation))]
    return f"{relation}({', '.join(shown)})"


def _flatten(values: tuple, domains) -> tuple:
    return tuple(p for v, d in zip(values, domains) for p in (v if d == OBJECT_DOMAIN else (v,)))


def _base_sets(facts) -> dict[str, set]:
    sets = {}
    for name, frame in facts.items():
        relation = BY_NAME[name]
        rows = frame.frame.collect()
        sets[name] = {tuple(tuple(row[f] for f in c.fields) if c.domain == OBJECT_DOMAIN else row[c.fields[0]]
                            for c in relation.columns) for row in rows}
    return sets


@pytest.mark.parametrize("program, local_rows, small_catalog, lazy, strategy", [
    ("dirty", None, True, True, "blue-green"),  # the configured small-data path: every round's tuples local
    # a large catalog's session, rounds switching between local rows and blocks, the blocks filled eagerly (as
    # under Sail): in one run, as each costs what the plan over blocks costs (some 25 s) however many it tests
    ("index_aware", 12, False, False, "in-place"),
])
def test_engine_matches_naive_evaluator(spark, program, local_rows, small_catalog, lazy, strategy):
    rng = random.Random(20261121 + len(program))
    scenarios = [random_scenario(rng, i) for i in range(40)]
    derived = load_rules(RULES[program], {}).derived
    outputs = {relation: OUTPUTS.get(relation, relation.lower()) for relation in derived}
    batch = run_scenarios(spark, scenarios, program, outputs, local_rows=local_rows,  # plan invariants checked too
                          small_catalog=small_catalog, lazy_checkpoints=lazy, strategy=strategy)
    assert batch.result.small_catalog is small_catalog
    (_, evaluation), tables, checked = batch.fixpoints["dirty"], batch.tables, batch.checked

    naive, naive_rounds = evaluate_naive(checked, _base_sets(batch.result.facts))
    assert len(evaluation.rounds) == naive_rounds
    for stratum, sizes in evaluation.batches.items():  # merged as datafrog does: logarithmically many
        assert sum(sizes) == sum(len(naive[r]) for r in checked.strata[stratum]), stratum
        assert all(older > 2 * newer for older, newer in zip(sizes, sizes[1:])), (stratum, sizes)
    print(f"{program}: {naive_rounds} rounds, " + ", ".join(f"{r.seconds:.2f}" for r in evaluation.rounds))
    compared = 0
    for relation, table in outputs.items():
        domains = checked.domains(relation)
        keys = [c for cols in column_names(domains) for c in cols]
        engine_rows = {tuple(r[k] for k in keys): r for r in tables[table].frame.collect()}
        expected = {_flatten(t, domains): (t, d) for t, d in naive[relation].items()}
        assert set(engine_rows) == set(expected), relation
        for key, row in engine_rows.items():
            values, derivation = expected[key]
            assert row["round"] == derivation.round, (relation, key)
            assert row["rule"] == checked.rules[derivation.rule].label, (relation, key)
            assert row["cause"] in {_show(r, t, checked) for r, t in derivation.causes}, (relation, key, row["cause"])
            compared += 1
    assert compared > 100  # the random catalogs really exercise the rules
    assert _plan_program_matches(batch.checked_plan, *batch.fixpoints["plan"]) > 100
    if local_rows is not None:  # blocks: the decisions and the plan rows cached in columns for the run, dropped
        cached = list(batch.result.cached)
        assert len(cached) == 2 and all(frame.storageLevel.useDisk for frame in cached)
        batch.result.release()
        assert batch.result.cached == [] and not any(frame.storageLevel.useDisk for frame in cached)


def _tuples(frames: dict, arity_of, *more: str) -> list:
    """Every frame's rows in one collect: ``r`` (its relation), ``t`` (its tuple), and ``more`` columns."""
    parts = [frame.select(F.lit(name).alias("r"), F.array(*(F.col(f"c{i}").cast("long")
                                                              for i in range(arity_of(name)))).alias("t"), *more)
             for name, frame in frames.items()]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    return union.collect()


def _plan_program_matches(checked, inputs: dict, evaluation) -> int:
    """The strategy's rules of one run against the naive evaluator over the same base relations (ids)."""
    arity = lambda relation: len(checked.domains(relation))  # noqa: E731
    base = {name: set() for name in checked.base}
    for row in _tuples({n: b.frame for n, b in inputs.items()}, arity):
        base[row["r"]].add(tuple(row["t"]))
    naive, naive_rounds = evaluate_naive(checked, base)
    assert len(evaluation.rounds) == naive_rounds
    k = [f"k{i}" for i in range(max(checked.max_arity, 1))]
    rows = _tuples(evaluation.relations, arity, "rule", "cause_rel", F.array(*k).alias("k"), "round")
    engine = {(r["r"], tuple(r["t"])): r for r in rows}
    expected = {(relation, t): d for relation, tuples in naive.items() for t, d in tuples.items()}
    assert set(engine) == set(expected)
    for key, row in engine.items():
        derivation = expected[key]
        assert (row["round"], row["rule"]) == (derivation.round, derivation.rule), key
        assert (row["cause_rel"], tuple(row["k"][:arity(row["cause_rel"])])) in derivation.causes, key
    return len(engine)
