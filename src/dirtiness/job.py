"""One run of the job: ``compute`` everything up to the checked plan, then ``publish`` it.

Compute first, publish last: nothing is written until the plan has passed
its checks. Outputs are tagged with the run id; the row in ``runs`` comes
last, so a reader that follows ``runs`` only ever sees finished runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .changeset.stages import base_facts, dirty_tables, intern_facts
from .datalog.engine import Evaluation, RoundLog, evaluate
from .errors import InputError, PolicyError
from .inputs.references import resolve_statements
from .inputs.snapshot import load_snapshot
from .model import BY_NAME, KEY
from .plan.blue_green import needing_attention
from .plan.invariants import check_invariants
from .plan.operations import PlanInputs, deploy_suffix
from .plan.planner import build_plan, check_statements, refuse_destructive
from .session import session_settings
from .settings import FINGERPRINTS, RunParams, RunSettings, resolve  # noqa: F401 - the job's API
from .store import run_log
from .store.delta import RUN_ID, DeltaStore, choose_backend

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

@dataclass
class Hooks:
    """Calls into a run as it goes: the CLI logs rounds, tests inject failures, the benchmark counts jobs."""

    on_stage: Callable[[str], None] | None = None       # each stage's name as it starts; "write:<table>" too
    on_round: Callable[[RoundLog], None] | None = None  # each round of the fixed point as it ends


@dataclass
class RunResult:
    """Everything a run computed and checked, not yet written: what ``publish`` writes."""

    settings: RunSettings
    started_at: dt.datetime
    facts: dict[str, DataFrame]    # base relation -> facts-table rows
    tables: dict[str, DataFrame]   # output table -> dirty rows
    plan: DataFrame                # the checked ddl_plan rows
    phases: dict[str, int]         # operations per plan phase, in phase order
    rounds: list[RoundLog]
    seconds: dict[str, float]      # wall seconds per compute stage
    evaluation: Evaluation | None  # the fixed point: every derived relation, its rounds and batches
    inputs: PlanInputs | None      # what the plan was built from: dirty sets and both snapshots
    needing_attention: list[str]
    verbatim: list[str]
    cached: list[DataFrame] = field(default_factory=list)
    small_catalog: bool = False    # computed with the small-data settings (``spark.small_catalog_conf``)

    def release(self) -> None:
        """A long-lived session (notebook, job cluster) must not keep a run's data."""
        for frame in self.cached:
            frame.unpersist()
        self.cached.clear()
        gc.collect()  # py4j frees a Java object only once its Python proxy is collected


def run(spark: SparkSession, settings: RunSettings, hooks: Hooks | None = None) -> dict:
    """``compute`` then ``publish``; a failure at any point leaves a ``failed`` (or ``refused``) row."""
    store = DeltaStore(spark, settings.out, choose_backend(spark, settings.delta_backend))
    started_at = dt.datetime.now(dt.timezone.utc)
    try:
        result = compute(settings, spark, hooks, started_at)
    except Exception as error:
        record_failure(store, settings, started_at, error)
        raise
    try:
        return publish(result, store, hooks)
    finally:
        result.release()


def latest_succeeded(spark: SparkSession, settings: RunSettings) -> dict | None:
    """The ``runs`` row of the latest succeeded run under the output root, if any."""
    store = DeltaStore(spark, settings.out, choose_backend(spark, settings.delta_backend))
    if not store.exists("runs"):
        return None
    rows = (store.read("runs").where(F.col("status") == "succeeded")
            .orderBy(F.col("finished_at").desc(), F.col("run_id").desc()).limit(1).collect())
    return rows[0].asDict() if rows else None


def compute(settings: RunSettings, spark: SparkSession, hooks: Hooks | None = None,
            started_at: dt.datetime | None = None) -> RunResult:
    """Everything up to the checked plan; nothing is written.

    A run that fails or is refused here (bad input, a broken plan, the
    destructive guard) has computed nothing anybody can see.
    """
    hooks = hooks or Hooks()
    clock = _Stages(hooks.on_stage)
    result = RunResult(settings=settings, started_at=started_at or dt.datetime.now(dt.timezone.utc), facts={},
                       tables={}, plan=None, phases={}, rounds=[], seconds=clock.seconds, evaluation=None,
                       inputs=None, needing_attention=[], verbatim=[])
    cached = result.cached
    small_catalog = contextlib.ExitStack()  # the session's own settings come back however compute ends
    try:
        with clock("load"):
            old, new = (load_snapshot(spark, settings.old, settings.old_format),
                        load_snapshot(spark, settings.new, settings.new_format))
            cached += [old.objects, old.dependencies, old.indexes, new.objects, new.dependencies, new.indexes]
            if settings.small_catalog_objects and settings.small_catalog_conf:
                objects = old.objects.select(*KEY).unionByName(new.objects.select(*KEY)).count()  # fills both caches
                if objects <= settings.small_catalog_objects:
                    result.small_catalog = True
                    log.info("small catalog (%d objects): computed with %s", objects, settings.small_catalog_conf)
                    small_catalog.enter_context(session_settings(spark, settings.small_catalog_conf))
            new = resolve_statements(new, settings.sql, list(settings.external_databases), side="new")
            old = resolve_statements(old, settings.sql, list(settings.external_databases), side="old")
            cached += [old.objects, old.dependencies, new.objects, new.dependencies]
            _check_forced_schemas(spark, new, list(settings.forced), settings.new)
        with clock("facts"):
            base = base_facts(spark, old, new, list(settings.forced))
            cached += [*base.facts.values(), base.attributes]
        with clock("intern"):
            interned = intern_facts(base.facts, settings.interning_buckets)
            cached += [interned.dictionaries.objects, interned.dictionaries.names, *interned.relations.values()]

        def on_round(entry: RoundLog) -> None:
            result.rounds.append(entry)
            grown = ", ".join(f"+{n} {rel}" for rel, n in entry.new.items())
            log.info("round %d (stratum %d): %s in %.2f s", entry.round, entry.stratum, grown, entry.seconds)
            if hooks.on_round:
                hooks.on_round(entry)

        with clock("fixpoint"):
            evaluation = result.evaluation = evaluate(settings.checked, interned.relations, on_round,
                                  broadcast_rows=settings.broadcast_rows, holding=settings.holding)
        with clock("dirty_sets"):
            result.tables = {name: frame.localCheckpoint() for name, frame in
                             dirty_tables(settings.checked, evaluation, interned, base.attributes,
                                          settings.outputs).items()}
        with clock("plan"):
            inputs = result.inputs = PlanInputs(
                dirty_stmts=result.tables["dirty_stmts"], dirty_clusters=result.tables["dirty_clusters"],
                dirty_schemas=result.tables["dirty_schemas"], old=old, new=new, dialect=settings.dialect,
                suffix=deploy_suffix(settings.run_id, settings.deploy_suffix), holding=settings.holding,
                verbatim_kinds=settings.sql.verbatim_kinds)
            plan = build_plan(inputs, settings.strategy).localCheckpoint()
            check_statements(plan, settings.dialect.max_identifier_length)
            check_invariants(plan, inputs, base.facts["ChangedStmt"], settings.strategy)
            refuse_destructive(plan, settings.allow_destructive)
            result.plan = plan.drop("error")
            result.phases = {r["phase"]: r["count"] for r in
                             result.plan.groupBy("phase_order", "phase").count().orderBy("phase_order").collect()}
            if settings.strategy == "blue-green":
                result.needing_attention = _needing_attention(inputs, result.plan)
            result.verbatim = _verbatim(result.plan)
        result.facts = base.facts
        return result
    except BaseException:
        result.release()
        raise
    finally:
        small_catalog.close()


def publish(result: RunResult, store: DeltaStore, hooks: Hooks | None = None) -> dict:
    """Write a computed run's tables, its records and, last, its ``runs`` row; returns the summary.

    Until the final row, readers see the run as not succeeded; a failure
    here leaves a ``failed`` row, and publishing again (a retry with the
    same run id) replaces everything the failed attempt wrote.
    """
    settings, run_id, spark = result.settings, result.settings.run_id, store.spark
    clock = _Stages((hooks or Hooks()).on_stage)

    def write(table: str, frame: DataFrame) -> int:
        clock.enter(f"write:{table}")
        return store.replace_run(table, _tag(frame, run_id), run_id)

    try:
        with clock("write"):
            store.replace_run("runs", spark.createDataFrame([_runs_row(settings, "running", result.started_at)],
                                                            RUNS), run_id)
            facts_written = {name: write(f"facts/{BY_NAME[name].table}", frame)
                             for name, frame in result.facts.items()}
            counts = {table: write(table, frame) for table, frame in result.tables.items()}
            counts["ddl_plan"] = write("ddl_plan", result.plan)
            write("run_relations", spark.createDataFrame(
                run_log.relation_rows(settings.checked, settings.outputs, facts_written, result.rounds),
                run_log.RUN_RELATIONS))
            write("run_rounds", spark.createDataFrame(run_log.round_rows(result.rounds), run_log.RUN_ROUNDS))
        seconds = {**result.seconds, **clock.seconds}
        finished_at = dt.datetime.now(dt.timezone.utc)
        with clock("publish"):
            write("run_stages", spark.createDataFrame(run_log.stage_rows(seconds), run_log.RUN_STAGES))
            row = _runs_row(settings, "succeeded", result.started_at, finished_at, rounds=len(result.rounds),
                            counts=counts)
            store.replace_run("runs", spark.createDataFrame([row], RUNS), run_id)
    except Exception as error:
        record_failure(store, settings, result.started_at, error)
        raise
    seconds["publish"] = clock.seconds["publish"]
    return {
        "run_id": run_id,
        "status": "succeeded",
        "out": os.path.abspath(settings.out),
        "rules": settings.checked.path,
        "strategy": settings.strategy,
        "delta_backend": store.backend,
        "small_catalog": result.small_catalog,
        "counts": counts,
        "plan": result.phases,
        "needing_attention": result.needing_attention,
        "verbatim": result.verbatim,
        "facts": {BY_NAME[name].table: n for name, n in facts_written.items()},
        "fingerprints": settings.fingerprints,
        "rounds": len(result.rounds),
        "round_log": [{"round": r.round, "stratum": r.stratum, "new": r.new, "seconds": round(r.seconds, 3)}
                      for r in result.rounds],
        "seconds": {**seconds, "total": round(sum(seconds.values()), 3)},
    }


def record_failure(store: DeltaStore, settings: RunSettings, started_at, error: Exception) -> None:
    """Best effort: a ``failed`` (or ``refused``) row with the one-line reason; never hides the error."""
    status = "refused" if isinstance(error, PolicyError) else "failed"
    message = " ".join(str(error).split())[:2000] or type(error).__name__
    try:
        row = _runs_row(settings, status, started_at, dt.datetime.now(dt.timezone.utc), message)
        store.replace_run("runs", store.spark.createDataFrame([row], RUNS), settings.run_id)
    except Exception as secondary:  # noqa: BLE001 - the original error is what the caller must see
        log.warning("could not record the failed run: %s", secondary)


def _runs_row(settings: RunSettings, status: str, started_at, finished_at=None, message: str | None = None,
              rounds: int | None = None, counts: dict | None = None) -> tuple:
    counts = counts or {}
    seconds = round((finished_at - started_at).total_seconds(), 3) if finished_at else None
    return (settings.run_id, status, started_at, finished_at, settings.old, settings.new,
            settings.checked.path, rounds, counts.get("dirty_stmts"), counts.get("dirty_clusters"),
            counts.get("dirty_schemas"), seconds, message, settings.strategy,
            ",".join(f"{d}.{s}" for d, s in settings.forced) or None,
            *(settings.fingerprints[k] for k in FINGERPRINTS), counts.get("ddl_plan"),
            settings.dialect.name)


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
