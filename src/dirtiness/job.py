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
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import fingerprints as fingerprints_of
from . import run_log
from .base_facts import BY_NAME
from .datalog.check import CheckedProgram
from .datalog.engine import RoundLog, evaluate
from .delta_tables import RUN_ID, DeltaStore, choose_backend
from .errors import InputError, PolicyError
from .pipeline import base_facts, dirty_tables, intern_facts
from .plan.blue_green import needing_attention
from .plan.dialect import Dialect
from .plan.invariants import check_invariants
from .plan.operations import PlanInputs, deploy_suffix
from .plan.planner import STRATEGIES, build_plan, check_statements, refuse_destructive
from .rules import load_rules
from .snapshot import KEY, load_snapshot
from .sql.analysis import resolve_statements

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
    T.StructField("strategy", T.StringType()),
    T.StructField("forced_schemas", T.StringType()),
    T.StructField("old_fingerprint", T.StringType()),
    T.StructField("new_fingerprint", T.StringType()),
    T.StructField("rules_fingerprint", T.StringType()),
    T.StructField("config_fingerprint", T.StringType()),
    T.StructField("ddl_operations", T.LongType()),
    T.StructField("dialect", T.StringType()),
])
FINGERPRINTS = ("old_fingerprint", "new_fingerprint", "rules_fingerprint", "config_fingerprint")


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
    fingerprints: dict[str, str]
    dialect: str = "materialize"


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
    dialect = Dialect.from_config(config)
    dialect.sql_settings(config)  # dialect and sql settings checked before any Spark work
    run_id = params.run_id or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    settings = {k: v for k, v in config.items() if k not in ("spark", "rules")}  # Spark sizing changes no result
    fingerprints = {
        "old_fingerprint": fingerprints_of.of_path(params.old),
        "new_fingerprint": fingerprints_of.of_path(params.new),
        "rules_fingerprint": fingerprints_of.of_text(checked.program.text),
        "config_fingerprint": fingerprints_of.of_settings(settings, forced=sorted(forced), strategy=strategy,
                                                          allow_destructive=params.allow_destructive),
    }
    return Prepared(params=params, run_id=run_id, checked=checked, outputs=outputs, forced=forced,
                    strategy=strategy, allow_destructive=params.allow_destructive, fingerprints=fingerprints,
                    dialect=dialect.name)


def _forced_schema(text: str) -> tuple[str, str]:
    parts = text.split(".")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise InputError(f"--forced-schema {text!r}: expected DATABASE.SCHEMA")
    return parts[0], parts[1]


def run(spark: SparkSession, prepared: Prepared, config: dict,
        on_stage: Callable[[str], None] | None = None) -> dict:
    """Compute and write one run; returns the summary (also what ``--summary-json`` writes).

    Everything is computed and checked (plan invariants, the destructive
    guard) before the first table is written, so a refused or failed run
    leaves nothing behind; the ``runs`` row comes last. ``on_stage`` is
    called with each stage's name as it starts (and ``write:<table>`` before
    each table is written): tests inject failures there.
    """
    cached: list[DataFrame] = []
    store = DeltaStore(spark, prepared.params.out, choose_backend(spark, config.get("delta_backend", "auto")))
    started_at = dt.datetime.now(dt.timezone.utc)
    try:
        return _run(spark, prepared, config, store, started_at, cached, _Stages(on_stage))
    except Exception as error:
        _record_failure(spark, store, prepared, started_at, error)
        raise
    finally:
        for frame in cached:  # a long-lived session (notebook, job cluster) must not keep a run's data
            frame.unpersist()


def latest_succeeded(spark: SparkSession, out: str, config: dict) -> dict | None:
    """The ``runs`` row of the latest succeeded run under ``out``, if any."""
    store = DeltaStore(spark, out, choose_backend(spark, config.get("delta_backend", "auto")))
    if not store.exists("runs"):
        return None
    rows = (store.read("runs").where(F.col("status") == "succeeded")
            .orderBy(F.col("finished_at").desc(), F.col("run_id").desc()).limit(1).collect())
    return rows[0].asDict() if rows else None


def _runs_row(prepared: Prepared, status: str, started_at, finished_at=None, message: str | None = None,
              rounds: int | None = None, counts: dict | None = None) -> tuple:
    counts = counts or {}
    seconds = round((finished_at - started_at).total_seconds(), 3) if finished_at else None
    return (prepared.run_id, status, started_at, finished_at, prepared.params.old, prepared.params.new,
            prepared.checked.path, rounds, counts.get("dirty_stmts"), counts.get("dirty_clusters"),
            counts.get("dirty_schemas"), seconds, message, prepared.strategy,
            ",".join(f"{d}.{s}" for d, s in prepared.forced) or None,
            *(prepared.fingerprints[k] for k in FINGERPRINTS), counts.get("ddl_plan"),
            prepared.dialect)


def _record_failure(spark: SparkSession, store: DeltaStore, prepared: Prepared, started_at, error: Exception) -> None:
    """Best effort: a ``failed`` (or ``refused``) row with the one-line reason; never hides the error."""
    status = "refused" if isinstance(error, PolicyError) else "failed"
    message = " ".join(str(error).split())[:2000] or type(error).__name__
    try:
        row = _runs_row(prepared, status, started_at, dt.datetime.now(dt.timezone.utc), message)
        store.replace_run("runs", spark.createDataFrame([row], RUNS), prepared.run_id)
    except Exception as secondary:  # noqa: BLE001 - the original error is what the caller must see
        log.warning("could not record the failed run: %s", secondary)


def _run(spark: SparkSession, prepared: Prepared, config: dict, store: DeltaStore, started_at,
         cached: list[DataFrame], clock: "_Stages") -> dict:
    params, run_id = prepared.params, prepared.run_id

    def write(table: str, frame: DataFrame) -> int:
        clock.enter(f"write:{table}")
        return store.replace_run(table, _tag(frame, run_id), run_id)
    dialect = Dialect.from_config(config)
    sql_settings = dialect.sql_settings(config)
    with clock("load"):
        external = list(config.get("external_databases") or [])
        old, new = load_snapshot(spark, params.old), load_snapshot(spark, params.new)
        cached += [old.objects, old.dependencies, old.indexes, new.objects, new.dependencies, new.indexes]
        new = resolve_statements(new, sql_settings, external, side="new")
        old = resolve_statements(old, sql_settings, external, side="old")
        cached += [old.objects, old.dependencies, new.objects, new.dependencies]
        _check_forced_schemas(spark, new, prepared.forced, params.new)
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
            dirty_schemas=tables["dirty_schemas"], old=old, new=new, dialect=dialect,
            suffix=deploy_suffix(run_id, (config.get("plan") or {}).get("deploy_suffix", "dpl{hash8}")),
            verbatim_kinds=sql_settings.verbatim_kinds)
        plan = build_plan(inputs, prepared.strategy).localCheckpoint()
        check_statements(plan, dialect.max_identifier_length)
        check_invariants(plan, inputs, base.facts["ChangedStmt"], prepared.strategy)
        refuse_destructive(plan, prepared.allow_destructive)
        plan = plan.drop("error")
        attention = _needing_attention(inputs, plan) if prepared.strategy == "blue-green" else []
        verbatim = _verbatim(plan)
    with clock("write"):
        # From here on the run's tables change: until the final row, readers see it as not succeeded.
        store.replace_run("runs", spark.createDataFrame([_runs_row(prepared, "running", started_at)], RUNS), run_id)
        facts_written = {name: write(f"facts/{BY_NAME[name].table}", frame) for name, frame in base.facts.items()}
        counts = {table: write(table, frame) for table, frame in tables.items()}
        counts["ddl_plan"] = write("ddl_plan", plan)
        write("run_relations", spark.createDataFrame(
            run_log.relation_rows(prepared.checked, prepared.outputs, facts_written, rounds), run_log.RUN_RELATIONS))
        write("run_rounds", spark.createDataFrame(run_log.round_rows(rounds), run_log.RUN_ROUNDS))
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
        "verbatim": verbatim,
        "facts": {BY_NAME[name].table: n for name, n in facts_written.items()},
        "fingerprints": prepared.fingerprints,
        "rounds": len(rounds),
        "round_log": [{"round": r.round, "stratum": r.stratum, "new": r.new, "seconds": round(r.seconds, 3)}
                      for r in rounds],
    }
    with clock("publish"):
        write("run_stages", spark.createDataFrame(run_log.stage_rows(clock.seconds), run_log.RUN_STAGES))
        row = _runs_row(prepared, "succeeded", started_at, finished_at, rounds=len(rounds), counts=counts)
        store.replace_run("runs", spark.createDataFrame([row], RUNS), run_id)
    summary["seconds"] = dict(clock.seconds)
    summary["seconds"]["total"] = round(sum(clock.seconds.values()), 3)
    return summary


def _check_forced_schemas(spark: SparkSession, new, forced: list[tuple[str, str]], path: str) -> None:
    if not forced:
        return
    wanted = spark.createDataFrame(sorted(set(forced)), "database string, schema string")
    absent = (wanted.join(new.objects.select("database", "schema"), ["database", "schema"], "left_anti")
              .orderBy("database", "schema").collect())
    if absent:
        names = ", ".join(f"{r['database']}.{r['schema']}" for r in absent)
        raise InputError(f"--forced-schema {names}: no such schema in the new project ({path})")


def _needing_attention(inputs: PlanInputs, plan: DataFrame, shown: int = 20) -> list[str]:
    """Dirty objects the blue-green plan leaves alone (a changed table, ...): the first few, by name."""
    rows = needing_attention(inputs, plan).orderBy(*KEY).limit(shown).collect()
    return [f"{r['database']}.{r['schema']}.{r['name']} ({r['kind']}, {r['change'] or 'dirty'})" for r in rows]


def _verbatim(plan: DataFrame, shown: int = 20) -> list[str]:
    """Operations whose statement is an object's SQL carried as written: the first few, by seq."""
    rows = plan.where(F.col("verbatim")).orderBy("seq").limit(shown).collect()
    return [f"{r['seq']} {r['phase']} {r['database']}.{r['schema']}.{r['name']} ({r['kind']})" for r in rows]


def _tag(frame: DataFrame, run_id: str) -> DataFrame:
    return frame.select(F.lit(run_id).alias(RUN_ID), *frame.columns)


class _Stages:
    """Wall-clock seconds per named stage: ``with clock("load"): ...``."""

    def __init__(self, on_stage: Callable[[str], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.on_stage = on_stage

    def enter(self, name: str) -> None:
        if self.on_stage:
            self.on_stage(name)

    @contextlib.contextmanager
    def __call__(self, name: str):
        self.enter(name)
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
    if summary.get("verbatim"):
        lines.append("  statements carried verbatim (not qualified or rewritten): " + ", ".join(summary["verbatim"]))
    return "\n".join(lines)
