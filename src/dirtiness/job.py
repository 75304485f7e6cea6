"""One run of the job: inputs checked, facts and dirty sets computed, Delta tables written.

Outputs are tagged with the run id; the row in ``runs`` comes last, so a
reader that follows ``runs`` only ever sees finished runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import time
import uuid
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .base_facts import BY_NAME
from .datalog.check import CheckedProgram
from .datalog.engine import RoundLog, evaluate
from .delta_tables import RUN_ID, DeltaStore, choose_backend
from .errors import InputError
from .pipeline import base_facts, dirty_tables, intern_facts
from .plan.blue_green import needing_attention
from .plan.invariants import check_invariants
from .plan.operations import PlanInputs, deploy_suffix
from .plan.planner import STRATEGIES, build_plan, refuse_destructive
from .plan.statements import Dialect
from .rules import load_rules
from .snapshot import KEY, load_snapshot

log = logging.getLogger("dirtiness")

RUNS = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("status", T.StringType()),
    T.StructField("started_at", T.TimestampType()),
    T.StructField("finished_at", T.TimestampType()),
    T.StructField("old_snapshot", T.StringType()),
    T.StructField("new_snapshot", T.StringType()),
    T.StructField("rules", T.StringType()),
    T.StructField("rounds", T.IntegerType()),
    T.StructField("dirty_stmts", T.LongType()),
    T.StructField("dirty_clusters", T.LongType()),
    T.StructField("dirty_schemas", T.LongType()),
    T.StructField("seconds", T.DoubleType()),
    T.StructField("message", T.StringType()),
])


@dataclass
class RunParams:
    old: str
    new: str
    out: str
    forced_schemas: list[str] = field(default_factory=list)
    run_id: str | None = None
    rules: str | None = None
    strategy: str | None = None
    allow_destructive: bool = False


@dataclass
class Prepared:
    """What can be checked before a SparkSession exists: fast failures for bad usage."""

    params: RunParams
    run_id: str
    checked: CheckedProgram
    outputs: dict[str, str]
    forced: list[tuple[str, str]]
    strategy: str
    allow_destructive: bool


def prepare(params: RunParams, config: dict) -> Prepared:
    for label, path in (("--old", params.old), ("--new", params.new)):
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder ({label})")
    outputs = dict(config.get("outputs") or {})
    checked = load_rules(params.rules or config["rules"], outputs)
    forced = [_forced_schema(s) for s in params.forced_schemas]
    missing = [t for t in ("dirty_stmts", "dirty_clusters", "dirty_schemas") if t not in outputs.values()]
    if missing:
        raise InputError(f"configuration: outputs must name the tables {', '.join(missing)} (the plan reads them)")
    strategy = params.strategy or (config.get("plan") or {}).get("strategy", "blue-green")
    if strategy not in STRATEGIES:
        raise InputError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    Dialect.from_config(config)  # template errors before any Spark work
    run_id = params.run_id or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    return Prepared(params=params, run_id=run_id, checked=checked, outputs=outputs, forced=forced,
                    strategy=strategy, allow_destructive=params.allow_destructive)


def _forced_schema(text: str) -> tuple[str, str]:
    parts = text.split(".")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise InputError(f"--forced-schema {text!r}: expected DATABASE.SCHEMA")
    return parts[0], parts[1]


def run(spark: SparkSession, prepared: Prepared, config: dict) -> dict:
    """Compute and write one run; returns the summary (also what ``--summary-json`` writes).

    Everything is computed and checked (plan invariants, the destructive
    guard) before the first table is written, so a refused or failed run
    leaves nothing behind; the ``runs`` row comes last.
    """
    cached: list[DataFrame] = []
    try:
        return _run(spark, prepared, config, cached)
    finally:
        for frame in cached:  # a long-lived session (notebook, job cluster) must not keep a run's data
            frame.unpersist()


def _run(spark: SparkSession, prepared: Prepared, config: dict, cached: list[DataFrame]) -> dict:
    params, run_id = prepared.params, prepared.run_id
    store = DeltaStore(spark, params.out, choose_backend(spark, config.get("delta_backend", "auto")))
    clock = _Stages()
    started_at = dt.datetime.now(dt.timezone.utc)
    with clock("load"):
        old, new = load_snapshot(spark, params.old), load_snapshot(spark, params.new)
        cached += [old.objects, old.dependencies, old.indexes, new.objects, new.dependencies, new.indexes]
    with clock("facts"):
        base = base_facts(spark, old, new, prepared.forced)
        cached += [*base.facts.values(), base.attributes]
    with clock("intern"):
        interned = intern_facts(base.facts, int(config.get("interning_buckets", 1024)))
        cached += [interned.dictionaries.objects, interned.dictionaries.names, *interned.relations.values()]
    rounds: list[RoundLog] = []

    def on_round(entry: RoundLog) -> None:
        rounds.append(entry)
        grown = ", ".join(f"+{n} {rel}" for rel, n in entry.new.items())
        log.info("round %d (stratum %d): %s in %.2f s", entry.round, entry.stratum, grown, entry.seconds)

    with clock("fixpoint"):
        evaluation = evaluate(prepared.checked, interned.relations, on_round,
                              broadcast_rows=int(config.get("broadcast_rows", 100_000)))
    with clock("dirty_sets"):
        tables = {name: frame.localCheckpoint() for name, frame in
                  dirty_tables(prepared.checked, evaluation, interned, base.attributes, prepared.outputs).items()}
    with clock("plan"):
        inputs = PlanInputs(
            dirty_stmts=tables["dirty_stmts"], dirty_clusters=tables["dirty_clusters"],
            dirty_schemas=tables["dirty_schemas"], old=old, new=new, dialect=Dialect.from_config(config),
            suffix=deploy_suffix(run_id, (config.get("plan") or {}).get("deploy_suffix", "dpl{hash8}")))
        plan = build_plan(inputs, prepared.strategy).localCheckpoint()
        check_invariants(plan, inputs, base.facts["ChangedStmt"], prepared.strategy)
        refuse_destructive(plan, prepared.allow_destructive)
        attention = _needing_attention(inputs) if prepared.strategy == "blue-green" else []
    with clock("write"):
        facts_written = {name: store.replace_run(f"facts/{BY_NAME[name].table}", _tag(frame, run_id), run_id)
                         for name, frame in base.facts.items()}
        counts = {table: store.replace_run(table, _tag(frame, run_id), run_id) for table, frame in tables.items()}
        counts["ddl_plan"] = store.replace_run("ddl_plan", _tag(plan, run_id), run_id)
    finished_at = dt.datetime.now(dt.timezone.utc)
    summary = {
        "run_id": run_id,
        "status": "succeeded",
        "out": os.path.abspath(params.out),
        "rules": prepared.checked.path,
        "strategy": prepared.strategy,
        "delta_backend": store.backend,
        "counts": counts,
        "plan": {r["phase"]: r["count"]
                 for r in plan.groupBy("phase_order", "phase").count().orderBy("phase_order").collect()},
        "needing_attention": attention,
        "facts": {BY_NAME[name].table: n for name, n in facts_written.items()},
        "rounds": len(rounds),
        "round_log": [{"round": r.round, "stratum": r.stratum, "new": r.new, "seconds": round(r.seconds, 3)}
                      for r in rounds],
    }
    with clock("publish"):
        row = (run_id, "succeeded", started_at, finished_at, params.old, params.new, prepared.checked.path,
               len(rounds), counts.get("dirty_stmts"), counts.get("dirty_clusters"), counts.get("dirty_schemas"),
               round((finished_at - started_at).total_seconds(), 3), None)
        store.replace_run("runs", spark.createDataFrame([row], RUNS), run_id)
    summary["seconds"] = dict(clock.seconds)
    summary["seconds"]["total"] = round(sum(clock.seconds.values()), 3)
    return summary


def _needing_attention(inputs: PlanInputs, shown: int = 20) -> list[str]:
    """Dirty objects the blue-green plan leaves alone (tables, sources, ...): the first few, by name."""
    rows = needing_attention(inputs).orderBy(*KEY).limit(shown).collect()
    return [f"{r['database']}.{r['schema']}.{r['name']} ({r['kind']}, {r['change'] or 'dirty'})" for r in rows]


def _tag(frame: DataFrame, run_id: str) -> DataFrame:
    return frame.select(F.lit(run_id).alias(RUN_ID), *frame.columns)


class _Stages:
    """Wall-clock seconds per named stage: ``with clock("load"): ...``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(time.perf_counter() - started, 3)


def format_summary(summary: dict) -> str:
    counts = {t: n for t, n in summary["counts"].items() if t != "ddl_plan"}
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in summary["seconds"].items() if k != "total")
    phases = ", ".join(f"{n} {p}" for p, n in summary["plan"].items()) or "nothing to do"
    lines = [
        f"run {summary['run_id']}: {summary['status']} in {summary['seconds']['total']:.1f} s",
        "  dirty: " + ", ".join(f"{n} {t}" for t, n in counts.items()),
        f"  plan ({summary['strategy']}): {summary['counts'].get('ddl_plan', 0)} operations: {phases}",
        f"  base facts: {sum(summary['facts'].values())} rows in {len(summary['facts'])} relations",
        f"  rules: {summary['rules']} ({summary['rounds']} rounds to the fixed point)",
        f"  stages: {stages}",
        f"  tables: {summary['out']} ({summary['delta_backend']} backend)",
    ]
    if summary.get("needing_attention"):
        lines.append("  needing attention (dirty, not redeployed by blue-green): "
                     + ", ".join(summary["needing_attention"]))
    return "\n".join(lines)
