"""One run, assembled in one place: ``compute`` everything up to the checked plan, then ``publish`` it.

The command line, spark-submit, the benchmark and the tests all run a job
through here. Compute first, publish last: nothing is written until the plan
has passed its checks. Every Spark job a run pays for is one of these:

=========  ================================================================
load       table-form snapshots: validated and counted (documents: none)
sql        every statement of both snapshots parsed (when any has SQL), or,
           from ``sql.reuse_from_objects`` objects, those no earlier run analysed
facts      the input checks with the digests of the units, compared with the
           run this one starts from (one hold; one more to find which units
           changed when that digest differs, unless their digest by shape
           does not: only restatements); then, unless that run's answer is taken,
           the keys numbered, the base facts of both rule programs interned
           and the static parts of their rules (a hold each)
taken      instead of ``fixpoint``, ``plan`` and the numbering, interning and
           static parts of ``facts``, when no unit changed since the run this
           one starts from, or only restated ones: one job for that run's
           outputs, the digests of them that its plan's checks recorded, and
           this run's facts tables (or two, from rows to blocks; restated:
           with the units compared, the facts checked and the rows to render
           again, then rendered); one more for every check of the plan where
           its findings cannot be taken with it
fixpoint   one job a round of the dirty rules
plan       one job a round of the strategy's rules, one a dependency layer,
           one for the plan rows (with the dirty sets and the plan's
           decisions by name), one for every check of the plan
names      instead of ``plan`` under strategy none: one job for the dirty
           sets by name
=========  ================================================================

A small catalog holds everything as local relations (rows on the driver,
at most ``local_rows`` at a time), a large one as checkpointed blocks; the
session computes (and ``publish`` writes) with ``spark.compute_conf`` (and
``small_catalog_conf``) and gets its own settings back afterwards.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from dataclasses import dataclass, field, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .changeset.base_facts import extract_base_facts
from .changeset.diff import changed_stmt
from .changeset.dirty_sets import column_names, dirty_table, named_outputs, object_attributes
from .changeset.catalog import (
    Interned,
    clash_detail,
    dictionary,
    edge_table,
    id_clashes,
    interned_clusters,
    interned_edges,
    interned_forced,
    interned_indexes,
    interned_objects,
    name_keys,
    numbered_names,
    numbered_objects,
    object_table,
)
from .changeset.interning import object_names
from .changeset.units import (
    UNIT_ROWS,
    changed_total,
    changed_units_line,
    cluster_units,
    left_none,
    restated_only,
    unit_changes,
    unit_contents,
    split_digests,
    units_digests,
)
from .changeset.units import RESTATED
from .changeset.units import counts_of as unit_counts
from .computed import INCREMENTAL, Earlier, Hooks, RunResult, Stages, named_stages
from .datalog.engine import Evaluation, Program, RoundLog
from .datalog.holding import Batch, Hold, concat, local_batch
from .errors import InputError, RunError, first_line
from .inputs.analysed_before import (
    ANALYSED,
    PARSED,
    SQL_ANALYSIS,
    analysed_rows,
    analysis_of,
    counts_of,
    earlier_rows,
    statement_keys,
    to_parse,
)
from .inputs.references import ANALYSIS, analyser, resolve_statements, statements_to_analyse
from .inputs.snapshot import Document, Snapshot, collect_problems, load_snapshots, read_problems
from .model import APPLY_MANAGED, BY_NAME, DIRTY_SETS, KEY, UNITS, facts_table
from .plan import planner
from .plan.checks import PlanContext, PlanReport, plan_checks, plan_report, statement_checks
from .plan.decision_table import decided_subjects, decision_table
from .plan.decisions import decision_rows, reason_columns
from .plan.excluded import HeldTables, excluded_moved
from .plan.operations import Planning, deploy_suffix
from .plan.rendered_again import RENDER_INPUT_ROWS, RENDER_INPUTS, render_inputs, to_render_again, with_rendered_again
from .plan.rendered_before import RENDERED_ROWS, RENDERED_STATEMENTS
from .plan.rendered_before import earlier_rows as earlier_rendered
from .plan.statements import render, render_carrying, render_reusing
from .plan.steps import layered
from .plan.strategies import PLANNERS
from .session import session_settings
from .settings import RunSettings
from .store.base_run import BaseRun, base_run
from .store.run_log import DECISIONS, PLAN_CHECK_ROWS, PLAN_CHECKS, PLAN_DECISIONS, ROUNDS_TABLE, relation_rows
from .store.taken import digests_differ, facts_differ, rounds_of, row_digests, suffix_in, taken_report, with_suffix
from .wording import counted
from .work_kept import installed

log = logging.getLogger("dirtiness")


def compute(settings: RunSettings, spark: SparkSession, hooks: Hooks | None = None,
            started_at: dt.datetime | None = None, earlier: Earlier | None = None) -> RunResult:
    """Everything up to the checked plan; nothing is written. ``earlier``: what earlier runs under ``--out``
    left that this one may start from (``earlier_of``).

    A run that fails or is refused here (bad input, a broken plan, the
    destructive guard) has computed nothing anybody can see.
    """
    hooks = hooks or Hooks()
    started_at = started_at or dt.datetime.now(dt.timezone.utc)
    cached: list[DataFrame] = []  # the run's columnar caches, dropped with it (``RunResult.release``)
    with session_settings(spark, settings.compute_conf), named_stages(spark, settings, hooks.on_stage) as clock:
        with clock("load"):
            loaded = load_snapshots(spark, settings.inputs)
        small_catalog = settings.small_catalog(loaded.objects)
        if small_catalog:  # which settings, by their place in the configuration (not their values)
            log.info("small catalog (%s): computed in one partition (spark.small_catalog_conf%s)",
                     counted(loaded.objects, "object"),
                     " and local_catalog_conf" if settings.held_as_rows(loaded.objects) else "")
        with session_settings(spark, settings.small_catalog_settings(loaded.objects)):
            try:
                computed = _Run(settings, spark, hooks, loaded.objects, cached).stages(
                    clock, loaded.old, loaded.new, earlier or Earlier())
            except BaseException:
                with contextlib.suppress(Exception):  # the run's own error is the one to report
                    RunResult(settings, started_at, cached=cached).release()
                raise
    return RunResult(settings, started_at, seconds=clock.seconds, small_catalog=small_catalog,
                     objects=loaded.objects, cached=cached, **computed)


@dataclass(frozen=True)
class _Statements:
    """Every statement of both snapshots analysed, and what of it later runs may reuse."""

    analysis: DataFrame           # references.ANALYSIS
    parsed: Batch | None = None   # the rows of the statements this run parsed (analysed_before.ANALYSED)
    counts: dict = field(default_factory=dict)  # distinct statements parsed and reused


@dataclass(frozen=True)
class _Resolved:
    """Both snapshots resolved against their SQL and checked, held, with their diff."""

    old: Snapshot
    new: Snapshot
    changed: DataFrame  # changed_stmt: key, change
    desired: Batch      # the new project's objects: key, kind, hash


@dataclass(frozen=True)
class _Numbered:
    """Every key numbered (a full run's): what facts are interned from."""

    objects: DataFrame        # the numbered object table (by name, what the plan reads)
    names: Batch              # the numbered names of schemas, clusters, kinds and indexes
    edges: DataFrame          # the dependencies of both sides (``changeset.catalog.edge_table``)
    tables: dict[str, Batch]  # base relation -> its facts-table rows


@dataclass(frozen=True)
class _Facts:
    """The base relations of both programs, interned, and what the later stages read beside them."""

    base: dict[str, Batch]    # base relation -> its tuples of ids
    static: dict[str, Batch]  # the static parts of both programs' rules
    dictionary: DataFrame     # id -> name
    numbered: _Numbered


@dataclass(frozen=True)
class _Units:
    """Every unit of both sides with its digest, and what changed in them since the run this one starts from."""

    units: Batch               # changeset.units.UNIT_ROWS
    digest: str                # of them all (``changeset.units.units_digests``), for the next run to compare with
    shapes: str                # of them by shape (``changeset.units.units_digests``), likewise
    started_from: BaseRun      # that run, or why there is none
    changes: dict | None       # {side: {change: units}}; None without such a run (or not compared yet)
    comparison: Hold | None = None  # their comparison with that run's, still to hold (``Run.compared``)
    alike_in_shape: bool = False    # with it pending: only restated units can have changed (``units_digests``)
    changed: Batch | None = None    # the units that changed (``unit_changes``), held
    restated: int = 0               # how many, when every one was restated (``changeset.units.restated_only``)


class _Run:
    """The stages of one ``compute``, each a function of what the ones before it returned.

    Spark analyses a query's whole tree for every step that builds it and
    pays for every join it runs, so each hold reads held frames and the
    relations of both programs travel together, as one frame.
    """

    def __init__(self, settings: RunSettings, spark: SparkSession, hooks: Hooks, objects: int,
                 cached: list[DataFrame]) -> None:
        self.settings, self.spark, self.hooks, self.cached = settings, spark, hooks, cached
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.holding = replace(settings.holding, partitions=partitions)
        self.small = settings.held_as_rows(objects)  # worth trying rows first
        self.reuses_analysis = settings.reuses_analysis(objects)
        self.dirty = Program(settings.checked, self.holding, "dirty")
        self.plan = Program(settings.plan_checked, self.holding, "plan") if settings.plan_checked else None

    def hold(self, frames: dict) -> dict[str, Batch]:
        return self.holding.hold_all(frames, try_local=self.small)

    def columnar(self, held: Batch, by: str) -> Batch:
        """``held`` cached in columnar form for the many queries that read it in parts (``Holding.columnar``),
        released with the run."""
        batch, cached = self.holding.columnar(held, by)
        if cached is not None:
            self.cached.append(cached)
        return batch

    def stages(self, clock: "Stages", old: Snapshot, new: Snapshot, earlier: Earlier) -> dict:
        """The stages in order; returns the ``RunResult`` fields they computed."""
        with clock("sql"):
            statements = self.statements(old, new, earlier)
        with clock("facts"):
            resolved, units = self.resolved(old, new, statements.analysis, earlier)
            numbered = None
            if units.comparison is not None and not units.alike_in_shape:
                numbered, units = self.compared(resolved, units)  # the run is full, and compares as it numbers
            full_because = self.full_because(units)
            facts = None if full_because is None else self.facts(resolved, numbered or self.numbered(resolved)[0])
        if facts is None:  # no unit changed, or only restated ones
            with clock("taken"):
                taken, full_because, units = self.taken(resolved, units, earlier)
            if taken is not None:
                if units.restated:
                    log.info("mode: incremental: %s restated since run %s (only their statements edited), whose "
                             "dirty sets and plan this run takes, their plan rows rendered again",
                             counted(units.restated, "unit"), units.started_from.run_id)
                else:
                    log.info("mode: incremental: no unit changed since run %s, whose dirty sets and plan this run "
                             "takes", units.started_from.run_id)
                return {**self._computed(statements, resolved, units), **taken, "mode": INCREMENTAL}
            with clock("facts"):  # a state not taken: the rest of the facts, its time added to the stage's
                if units.comparison is not None and units.changes is None:  # still to compare
                    numbered, units = self.compared(resolved, units)
                facts = self.facts(resolved, numbered or self.numbered(resolved)[0])
        computed = {**self._computed(statements, resolved, units), "facts": facts.numbered.tables}
        log.info("mode: full (%s)", full_because)
        computed = {**computed, "full_because": full_because}
        with clock("fixpoint"):
            dirty = self.evaluated(self.dirty, {n: facts.base[n] for n in self.settings.checked.base}, facts.static)
        computed["rounds"] = dirty.rounds
        if self.plan is None:  # strategy none: the dirty sets by name are the answer
            with clock("names"):
                return {**computed, "tables": self.named(resolved, facts, dirty)}
        with clock("plan"):
            planned = self.planned(resolved, facts, dirty, earlier)
        rendered = planned.pop("render_counts", {})
        return {**computed, **planned, "statements": {**statements.counts, **rendered}}

    @staticmethod
    def _computed(statements: _Statements, resolved: _Resolved, units: _Units) -> dict:
        return {"desired": resolved.desired, "analysed": statements.parsed, "statements": statements.counts,
                "units": units.units, "units_digest": units.digest, "shapes_digest": units.shapes,
                "started_from": units.started_from, "unit_changes": units.changes}

    def full_because(self, units: _Units) -> str | None:
        """Why this run computes everything (None: it may take what the run it starts from computed)."""
        started_from = units.started_from
        if started_from.run_id is None:
            return started_from.why
        if units.alike_in_shape:  # which units were restated is found as that run's answer is taken
            return None
        if changed_total(units.changes) > units.restated:
            return f"{changed_units_line(units.changes)} since run {started_from.run_id}"
        return None

    def taken(self, resolved: _Resolved, units: _Units, earlier: Earlier) -> tuple[dict | None, str | None, _Units]:
        """No unit changed since the run this one starts from, or only restated ones: its dirty sets, plan and
        decisions are this run's (``store.taken``), and what its plan's checks found: one hold (with the check
        that the inputs do not hold that run's staging suffix, the digests of what it read to compare with those
        its checks recorded, and this run's facts tables); one job for the plan's checks where their findings
        cannot be taken (no digests recorded, a suffix of another length, a selective run), or for those of the
        statements rendered again alone; no key is numbered. Restated units: in the same hold, this run's facts tables are compared with
        that run's, and the plan rows carrying those statements are rendered again (``plan.rendered_again``);
        where only the units' digest by shape told so, which units they are is found in that hold too. Returns
        the ``RunResult`` fields, or None and why a state that cannot be read or does not add up is not taken,
        with the units as compared."""
        settings, base = self.settings, units.started_from.run_id
        pending = units.comparison if units.alike_in_shape and units.changes is None else None
        restated = units.restated or pending is not None  # how many, once compared
        then, now = (deploy_suffix(run_id, settings.deploy_suffix) for run_id in (base, settings.run_id))
        tables = [*settings.outputs.values(), *(("ddl_plan", PLAN_DECISIONS, DECISIONS) if self.plan else ()),
                  ROUNDS_TABLE]
        old, new = resolved.old, resolved.new
        inputs = [old.objects, old.dependencies, old.indexes, new.objects, new.dependencies, new.indexes]
        texts = [*(f"{n}\n{d}" for n, d in self._clusters().items()), *(f"{d}.{s}" for d, s in settings.forced)]
        facts = self._fact_tables(resolved)
        try:
            frames = {t: earlier.run_table(t, base) for t in tables}
            checks = earlier.checks(base) if self.plan else None
            if checks is not None:  # with the digests of the tables as read, to compare with those recorded
                taken = {t: frame for t, frame in frames.items() if t != ROUNDS_TABLE}  # as ``_taken_tables``
                checks = checks.withColumn("read", F.lit(False)).unionByName(
                    row_digests(taken, then).withColumn("read", F.lit(True)))
            renders = self._render_inputs_of(earlier, base, required=bool(restated))
            again = {}
            if restated:  # their facts as that run's; with a plan, their rows with what to render them from
                facts_then = {n: earlier.run_table(facts_table(n), base).select(*BY_NAME[n].fields) for n in facts}
                again = {"facts_differ": facts_differ(facts, facts_then),
                         **({"unit_changes": pending} if pending is not None else {})}
                if self.plan:
                    plan_now = with_suffix(frames["ddl_plan"], then, now).select(*planner.plan_columns())
                    changed = pending.frame if pending is not None else units.changed.frame
                    again["again"] = to_render_again(plan_now, with_suffix(renders, then, now),
                                                     changed.where(F.col("change") == RESTATED), new.objects)
            held = self.hold({**{t: with_suffix(frame, then, now) for t, frame in frames.items()},
                              **({RENDER_INPUTS: with_suffix(renders, then, now)} if renders is not None else {}),
                              **({"suffix": suffix_in(inputs, texts, then)} if then != now else {}),
                              **({"checks": checks} if checks is not None else {}), **again,
                              **({f"facts:{n}": f for n, f in facts.items()} if self.small else {})})
        except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
            return None, f"the outputs of run {base} could not be read ({first_line(error)})", units
        if pending is not None:
            units = self.units(units.units, units.digest, units.shapes, units.started_from, held["unit_changes"])
            restated = units.restated
            if not restated:  # only by a chance of about 2^-64: some unit changed in its shape after all
                why = units.started_from.why or f"{changed_units_line(units.changes)} since run {base}"
                return None, why, units
        if "suffix" in held and held["suffix"].dicts()[0]["count"]:
            return None, (f"the inputs hold {then}, the staging suffix of run {base}, which its plan cannot be told "
                          f"apart from"), units
        if restated and (differing := held["facts_differ"].dicts()[0]["relations"]):
            return None, (f"{changed_units_line(units.changes)} since run {base}, only in their statements, but "
                          f"the facts of {differing} differ from that run's"), units
        recorded = {"ddl_plan": "ddl_operations", **{t: t for t in ("dirty_stmts", "dirty_clusters", "dirty_schemas")}}
        for table, column in recorded.items():
            said = (units.started_from.row or {}).get(column)
            if table in held and held[table].count != said:
                return None, (f"run {base} has {counted(held[table].count, 'row')} in {table}, where its runs row "
                              f"says {said}"), units
        check_rows = held["checks"].dicts() if "checks" in held else []
        found = [{c: r[c] for c in PLAN_CHECK_ROWS.names} for r in check_rows if not r["read"]] or None  # None: none
        if found is not None and (differs := digests_differ(found, [r for r in check_rows if r["read"]])):
            return None, f"the rows of {differs} of run {base} are not those its checks recorded", units
        rounds = rounds_of(held[ROUNDS_TABLE].dicts())
        fields = {"tables": {t: held[t] for t in settings.outputs.values()}, "rounds": rounds.get("rules", []),
                  "checks_taken": False, "restated": restated,
                  "facts": {n: held[f"facts:{n}"] if self.small else Batch(f, None) for n, f in facts.items()}}
        if self.plan is None:
            return fields, None, units
        columns = list(planner.plan_columns())
        rows = held["ddl_plan"].part(None, None, columns)  # a succeeded run's statements all rendered
        if restated:  # the rows of the restated statements rendered again, in place of the earlier run's
            rendered = render_carrying(held["again"], settings.dialect, settings.sql.verbatim_kinds, self.holding)
            plan = with_rendered_again(rows, rendered)
            rows = plan.project(columns)
        else:
            plan = Batch(rows.frame.withColumn("error", F.lit(None).cast("string")), rows.count)
        if found is not None and len(then) == len(now) and settings.selection is None:
            # the checks find what they found in that run: a staging name as long, the same rows otherwise, or
            # but for the statements rendered again, whose checks run again (with the digests of the tables)
            fresh = self.checked_statements(fields["tables"], held[PLAN_DECISIONS], held[DECISIONS], plan) \
                if restated else None
            report = taken_report(found, then, now, fresh)
            report.enforce(settings.allow_destructive)
            fields["checks_taken"] = True
        else:
            report = self.checked_plan(resolved, fields["facts"], fields["tables"], held[PLAN_DECISIONS],
                                       held[DECISIONS], plan)
        return {**fields, "plan": rows, "decisions": held[PLAN_DECISIONS], "object_decisions": held[DECISIONS],
                "report": report, "plan_rounds": rounds.get("plan", []),
                "render_inputs": held.get(RENDER_INPUTS)}, None, units

    def _render_inputs_of(self, earlier: Earlier, base: str, required: bool) -> DataFrame | None:
        """The render inputs run ``base`` kept (``plan.rendered_again``): raises where they cannot be read and a
        run needs them, else None (a run of an earlier version kept none; this run then keeps none either)."""
        if self.plan is None:
            return None
        try:
            return earlier.run_table(RENDER_INPUTS, base).select(*RENDER_INPUT_ROWS.names)
        except Exception:  # noqa: BLE001 - what earlier runs left is never what fails a run
            if required:
                raise
            return None

    def evaluated(self, program: Program, base: dict[str, Batch], static: dict[str, Batch]) -> Evaluation:
        """One program's fixed point, its rounds logged as they end."""
        evaluation = program.evaluate(base, static, self._on_round, self.hooks.on_static)
        if self.hooks.on_fixpoint:
            self.hooks.on_fixpoint(program.label, base, evaluation)
        return evaluation

    def _on_round(self, entry: RoundLog) -> None:
        grown = ", ".join(f"+{n} {rel}" for rel, n in entry.new.items())
        log.info("round %d (stratum %d): %s in %.2f s", entry.round, entry.stratum, grown, entry.seconds)
        if self.hooks.on_round:
            self.hooks.on_round(entry)

    def statements(self, old: Snapshot, new: Snapshot, earlier: Earlier) -> _Statements:
        """Every statement of both snapshots parsed, in Arrow batches where the rows are: on the driver for
        documents (no Python worker, no job), by Spark for table-form snapshots (one job). A catalog from
        ``sql.reuse_from_objects`` objects takes what earlier runs analysed (``inputs.analysed_before``) and
        parses the rest, by Spark (one job)."""
        inputs, with_sql = self.settings.inputs, statements_to_analyse({"old": old, "new": new})
        if all(isinstance(given, Document) for given in inputs.values()):
            rows = [(side, *o[:4], o[7]) for side, given in inputs.items() for o in given.objects if o[7] is not None]
            if not rows:  # no statement to parse
                return _Statements(self.spark.createDataFrame([], ANALYSIS))
            held = local_batch(self.spark, rows, with_sql.schema)
        else:
            held = Batch(with_sql, None)
        sql = self.settings.sql
        if self.reuses_analysis:
            analysed_before = earlier.analysis()
            try:
                return self.analysed(held.frame, analysed_before)
            except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
                if analysed_before is None:
                    raise
                log.info("%s under %s could not be read (%s): every statement is parsed", SQL_ANALYSIS,
                         self.settings.out, first_line(error))
                return self.analysed(held.frame, None)
        analysed = self.holding.map_arrow(held, analyser(sql.dialect, sql.system_schemas), ANALYSIS)
        return _Statements(analysed.frame if analysed.local else
                           self.holding.hold(analysed.frame, try_local=self.small).frame)

    def analysed(self, statements: DataFrame, earlier: DataFrame | None) -> _Statements:
        """The statements no succeeded earlier run analysed parsed, the others' rows taken from ``earlier``:
        one hold, which counts both."""
        sql = self.settings.sql
        keyed = statement_keys(statements, sql)
        parse = analyser(sql.dialect, sql.system_schemas)
        parsed = self.holding.map_arrow(Batch(to_parse(keyed, earlier), None), parse, ANALYSIS).frame
        held = self.holding.hold(Hold(analysed_rows(keyed, parsed, earlier), split="part"), try_local=self.small)
        counts = counts_of(held.counts or {})
        log.info("SQL: %s parsed, %d as earlier runs analysed them", counted(counts["parsed"], "statement"),
                 counts["reused"])
        mine = Batch(held.frame.where(F.col(PARSED)).select(*ANALYSED.names), None) if counts["parsed"] else None
        return _Statements(analysis_of(keyed, held.frame.drop(PARSED, "part")), mine, counts)

    def resolved(self, old: Snapshot, new: Snapshot, analysis: DataFrame, earlier: Earlier) -> tuple[_Resolved, _Units]:
        """Both snapshots resolved against their SQL, the diff, every input check, and the digest of the units
        compared with the one the run this one starts from recorded: one hold. Where they differ, which units
        changed is left for the numbering's hold (``comparison``): a run in which something changed is full."""
        settings = self.settings
        external = list(settings.external_databases)
        sides = {"new": resolve_statements(new, analysis, settings.sql, external, side="new"),
                 "old": resolve_statements(old, analysis, settings.sql, external, side="old")}
        problems, warnings = {}, {}
        for side, resolved in sides.items():
            where = f"{resolved.snapshot.path} ({side} project)"
            problems.update({f"{where}: {{total}} {p}": frame for p, frame in resolved.problems.items()})
            warnings.update({f"{where}: {{total}} {p}": frame for p, frame in resolved.warnings.items()})
        forced = _absent_forced_schemas(self.spark, sides["new"].snapshot, list(settings.forced))
        if forced is not None:
            problems["--forced-schema"] = forced
        old, new = sides["old"].snapshot, sides["new"].snapshot
        if _reads_apply_managed(settings):
            warnings[f"{new.path}: {{total}} {APPLY_MANAGED_CHANGES}"] = _apply_managed_changes(old, new)
        checks = {"checks": collect_problems({**problems, **warnings})} if problems or warnings else {}
        started_from, before = earlier.units()
        changed = changed_stmt(old.objects, new.objects)
        units = (unit_contents("old", old.objects, old.dependencies, old.indexes, changed)
                 .unionByName(unit_contents("new", new.objects, new.dependencies, new.indexes, changed)))
        clusters = self._clusters()
        if clusters:
            units = units.unionByName(cluster_units(self.spark, clusters))
        frames = {"changed": changed, **_snapshot_frames("old", old),
                  **_snapshot_frames("new", new), **checks, "units": units, "digests": units_digests(units)}
        # that run's units are read only where its digest of them differs from this one's (or it recorded none)
        recorded = (started_from.row or {}).get("units_digest") if before is not None else None
        compared = {"unit_changes": unit_changes(units, before)} if before is not None and not recorded else {}
        held, unreadable = self._hold_comparing(frames, compared)
        started_from = unreadable or started_from
        self._raise(held.get("checks"), problems, warnings)
        digest, shapes = split_digests(*held["digests"].counts)
        resolved = _Resolved(_snapshot_of(held, "old", old.path), _snapshot_of(held, "new", new.path),
                             held["changed"].frame, held["new:objects"].project([*KEY, "kind", "hash"]))
        if recorded and recorded != digest and started_from.run_id is not None:
            return resolved, _Units(held["units"], digest, shapes, started_from, None,
                                    unit_changes(held["units"].frame, before),
                                    alike_in_shape=shapes == started_from.row.get("shapes_digest"))
        if "unit_changes" in held:
            return resolved, self.units(held["units"], digest, shapes, started_from, held["unit_changes"])
        return resolved, self.units(held["units"], digest, shapes, started_from, {} if recorded == digest else None)

    def compared(self, resolved: _Resolved, units: _Units) -> tuple[_Numbered, _Units]:
        """The keys numbered (``numbered``) and, in the same hold, which units changed since the run this one
        starts from (their digests differ): no job of its own, as a full run numbers its keys anyway."""
        numbered, held, unreadable = self.numbered(resolved, {"unit_changes": units.comparison})
        if unreadable is not None:
            return numbered, self.units(units.units, units.digest, units.shapes, unreadable, None)
        return numbered, self.units(units.units, units.digest, units.shapes, units.started_from,
                                    held["unit_changes"])

    def _hold_comparing(self, frames: dict, compared: dict) -> tuple[dict[str, Batch], BaseRun | None]:
        """``frames`` and ``compared`` (which read the units of the run this one starts from) in one hold; where
        those cannot be read, ``frames`` alone, and that run as none to start from (why)."""
        try:
            return self.hold({**frames, **compared}), None
        except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
            if not compared:
                raise
            unreadable = BaseRun(why=f"{UNITS} under {self.settings.out} could not be read ({first_line(error)})")
            return self.hold(frames), unreadable

    def units(self, units: Batch, digest: str, shapes: str, started_from: BaseRun,
              changed: Batch | dict | None) -> _Units:
        """Both sides' units as ``resolved`` held them and their digests, and what changed since the run this one
        starts from (``changed``: the held ``unit_changes``; {} for none, None when not compared). A run that
        left no units is none to start from."""
        counts = changed.counts or {} if isinstance(changed, Batch) else changed
        changes = None if counts is None else unit_counts(counts)
        if started_from.run_id is not None and left_none(changes, units.count):
            started_from = BaseRun(why=f"run {started_from.run_id} left no {UNITS}")
        if started_from.run_id is None:
            log.info("units: compared with no earlier run under %s (%s)", self.settings.out, started_from.why)
            return _Units(units, digest, shapes, started_from, None)
        log.info("units: %s since run %s", changed_units_line(changes), started_from.run_id)
        return _Units(units, digest, shapes, started_from, changes,
                      changed=changed if isinstance(changed, Batch) else None, restated=restated_only(counts))

    def numbered(self, resolved: _Resolved, compared: dict | None = None) -> tuple[_Numbered, dict[str, Batch],
                                                                                 BaseRun | None]:
        """The keys of both sides numbered (``changeset.catalog``), with the facts tables of a small catalog: one
        hold, with ``compared`` (frames reading the units of the run this one starts from), which it returns
        held, or else why that run's units could not be read."""
        settings, spark = self.settings, self.spark
        old, new, changed = resolved.old, resolved.new, resolved.changed
        dirty_facts = self._fact_tables(resolved)
        table = object_table(old, new, changed, settings.dialect)
        edges = edge_table(old, new)
        numbered_objects_ = numbered_objects(table, edges, settings.interning_seed)
        numbered_names_ = numbered_names(name_keys(spark, table, new, old, list(settings.forced),
                                                   settings.dialect.clusters), settings.interning_seed)
        held, unreadable = self._hold_comparing(
            {"objects": numbered_objects_, "names": numbered_names_,
             "clashes": id_clashes(numbered_objects_, numbered_names_),
             **({f"facts:{n}": f for n, f in dirty_facts.items()} if self.small else {})}, compared or {})
        if held["clashes"].count:
            kind, id_ = min((r["kind"], r["id"]) for r in held["clashes"].dicts())
            clash = clash_detail(held["objects"].frame, held["names"].frame, kind, id_)
            raise RunError(f"two keys have the same id ({clash}): set interning_seed in the configuration to "
                           "another integer and run again")
        tables = {n: held[f"facts:{n}"] if self.small else Batch(f, None) for n, f in dirty_facts.items()}
        return (_Numbered(held["objects"].frame, held["names"], edges, tables),
                {n: held[n] for n in compared or {} if n in held}, unreadable)

    def _fact_tables(self, resolved: _Resolved) -> dict[str, DataFrame]:
        """The rows of the base facts tables (``facts/<relation>``), as frames."""
        return extract_base_facts(self.spark, resolved.old, resolved.new, resolved.changed, list(self.settings.forced))

    def facts(self, resolved: _Resolved, numbered: _Numbered) -> _Facts:
        """The base relations of both programs as views of the interned object table, edges and indexes
        (``changeset.catalog``): interned (one hold), then the static parts of both programs' rules (one
        hold)."""
        settings, spark = self.settings, self.spark
        old, new, edges = resolved.old, resolved.new, numbered.edges
        objects, names = numbered.objects, numbered.names.frame
        forced = spark.createDataFrame(sorted(set(settings.forced)), "database string, schema string")
        defined = {}
        if settings.clusters_outside:  # the project's own clusters, by their files
            defined = {"defined_clusters": interned_clusters(spark.createDataFrame(
                [(name,) for name in sorted(settings.inputs["new"].clusters)], "cluster string"), names)}
        held = self.hold({"objects": interned_objects(objects, names), "edges": interned_edges(edges, objects),
                          "indexes": interned_indexes(new.indexes, objects, names),
                          "forced": interned_forced(forced, names),
                          "old_clusters": interned_clusters(old.indexes, names), **defined})
        interned_ = Interned(held["objects"], held["edges"], held["indexes"], numbered.names, held["forced"],
                             held["old_clusters"], held.get("defined_clusters"))
        over_rows = all(b.local for b in (*held.values(), numbered.names))  # a round is worth trying as rows
        base = {n: Batch(f, None, over_rows=over_rows) for n, f in interned_.relations(settings.dialect.clusters).items()}
        static = self.hold({**self.dirty.static_requests({n: base[n] for n in BY_NAME}),
                            **(self.plan.static_requests({n: base[n] for n in settings.plan_checked.base
                                                          if n in base}) if self.plan else {})})
        return _Facts(base, static, dictionary(objects, names), numbered)

    def _raise(self, checks: Batch | None, problems: dict[str, DataFrame], warnings: dict[str, DataFrame]) -> None:
        """The input checks read back: a warning logged, the first problem raised (exit 2)."""
        if checks is None:
            return
        found = read_problems(checks.dicts(), {**problems, **warnings})
        for line, (details, total) in found.items():
            if line in warnings:
                log.warning("%s (warning%s)", _problem_line(line, details, total),
                            "" if APPLY_MANAGED_CHANGES in line else ": the plan orders by both")
        for line, (details, total) in found.items():
            if line in problems:
                if line == "--forced-schema":
                    raise InputError(f"--forced-schema {', '.join(sorted(details))}: no such schema in the new "
                                     f"project ({self.settings.new})")
                raise InputError(_problem_line(line, details, total))

    def named(self, resolved: _Resolved, facts: _Facts, dirty: Evaluation) -> dict[str, Batch]:
        """Strategy none: the dirty rules' tuples by name (one job), and no plan."""
        settings = self.settings
        outputs = named_outputs({"rules": (settings.checked, dirty)}, facts.dictionary,
                                object_attributes(resolved.old.objects, resolved.new.objects, resolved.changed))
        held = self.hold({"outputs": Hold(outputs, split="relation")})
        return {table: dirty_table(settings.checked, relation, held["outputs"])
                for relation, table in settings.outputs.items()}

    def planned(self, resolved: _Resolved, facts: _Facts, dirty: Evaluation, earlier: Earlier) -> dict:
        """The strategy's rules, the dependency steps, both programs' tuples by name (one job), the plan rows
        (one job), their statements (on the driver for local rows, else one job; one job whenever statements
        are reused), each subject's decision (one job), the decisions table (one job), then every check of the plan (one job).
        Returns the ``RunResult`` fields of the plan (and the counts of its statements rendered and reused
        under ``statements``)."""
        settings = self.settings
        old, new, changed, objects = resolved.old, resolved.new, resolved.changed, facts.numbered.objects
        deployed = _deployed(old)
        planned_new = objects.where(F.col("in_new")).select(
            *KEY, F.col("new_kind").alias("kind"), F.col("new_cluster").alias("cluster"),
            F.col("new_replacement").alias("replacement"), "sql", "change")
        inputs = {relation: dirty.tuples[settings.dirty_relation(table)] for relation, table in DIRTY_SETS.items()}
        plan_base = {n: facts.base[n] for n in settings.plan_checked.base if n in facts.base}
        decided = self.evaluated(self.plan, {**plan_base, **inputs}, facts.static)
        steps = self.steps(facts.base, decided, facts.dictionary)
        attributes = object_attributes(old.objects, new.objects, changed)
        outputs = named_outputs({"rules": (settings.checked, dirty), "plan": (settings.plan_checked, decided)},
                                facts.dictionary, attributes, extra=reason_columns(settings.plan_checked))
        held = self.hold({"outputs": Hold(outputs, split="relation"), "steps": steps.frame.join(
            object_names(facts.dictionary), "id").select("group", *KEY, "step")})
        tables = {table: dirty_table(settings.checked, relation, held["outputs"])
                  for relation, table in settings.outputs.items()}
        decisions = self.columnar(decision_rows(held["outputs"]), "relation")  # read a relation at a time
        planning = Planning(
            decisions=decisions,
            keys={r: [c for cols in column_names(d) for c in cols] for r, d in settings.plan_checked.derived.items()},
            steps=held["steps"].frame, deployed=deployed, new=planned_new,
            dependencies=new.dependencies, indexes=new.indexes, dialect=settings.dialect,
            suffix=deploy_suffix(settings.run_id, settings.deploy_suffix), verbatim_kinds=settings.sql.verbatim_kinds,
            cluster_definitions=self._cluster_definitions(), one_partition=self.small)
        rows, moved = planner.build_plan(planning, settings.strategy)
        held = self.hold({"rows": rows, "moved": moved})
        inputs_kept = render_inputs(held["rows"], held["moved"])  # for a later run that renders some again
        rendered, rendered_counts = self.rendered(held["rows"], held["moved"], planning.suffix, earlier)
        plan = self.columnar(rendered, "phase")  # each check reads a few columns, some one phase
        dirty_stmts, indexes = tables["dirty_stmts"].frame, old.indexes.unionByName(new.indexes)
        apply_managed_left = _reads_apply_managed(settings)
        subjects = self.holding.hold(decided_subjects(
            settings.strategy, decisions.frame, plan.frame, old.objects, new.objects, deployed.select(*KEY),
            dirty_stmts, changed, indexes, apply_managed_left), try_local=self.small)
        table = self.holding.hold(decision_table(subjects.frame, plan.frame, indexes), try_local=self.small)
        report = self.checked_plan(resolved, facts.numbered.tables, tables, decisions, table, plan)
        return {"tables": tables, "decisions": decisions, "object_decisions": table, "report": report,
                "plan_rounds": decided.rounds, "plan": plan.part(None, None, [c for c in planner.plan_columns()]),
                "render_inputs": inputs_kept, **rendered_counts}

    def checked_plan(self, resolved: _Resolved, facts: dict[str, Batch], tables: dict[str, Batch], decisions: Batch,
                     table: Batch, plan: Batch) -> PlanReport:
        """Every check of the plan and the digests of the tables a later run may take with it (one job), a
        selective run's first; the report, enforced (exit 2 or 3)."""
        settings = self.settings
        if settings.selection is not None:
            self._check_selection(table.frame, {**{facts_table(n): b.frame for n, b in facts.items()},
                                                **{t: b.frame for t, b in tables.items()}}, decisions.frame)
        context = PlanContext(old=resolved.old, new=resolved.new, deployed=_deployed(resolved.old),
                              changed=resolved.changed, dirty_stmts=tables["dirty_stmts"].frame,
                              strategy=settings.strategy, max_identifier_length=settings.dialect.max_identifier_length,
                              apply_managed_left=_reads_apply_managed(settings), decisions=table.frame)
        if self.hooks.on_plan_checks:
            self.hooks.on_plan_checks(context)
        checks, invariants = plan_checks(plan.frame, context)
        report = plan_report(checks.union(self._digests(tables, decisions, table, plan)).collect(), invariants)
        report.enforce(settings.allow_destructive)
        return report

    def checked_statements(self, tables: dict[str, Batch], decisions: Batch, table: Batch, plan: Batch) -> list[dict]:
        """The checks of the plan's statements (``plan.checks.statement_checks``) and the digests of the tables a
        later run may take with it (one job): a plan that differs from a checked one in its statements only."""
        checks = statement_checks(plan.frame, self.settings.dialect.max_identifier_length)
        return [row.asDict() for row in checks.union(self._digests(tables, decisions, table, plan)).collect()]

    def _digests(self, tables: dict[str, Batch], decisions: Batch, table: Batch, plan: Batch) -> DataFrame:
        """The digest of each table a later run may take with this plan (``store.taken.row_digests``)."""
        taken = _taken_tables({t: b.frame for t, b in tables.items()}, plan.frame.select(*planner.plan_columns()),
                              decisions.frame, table.frame)
        return row_digests(taken, deploy_suffix(self.settings.run_id, self.settings.deploy_suffix))

    def rendered(self, rows: Batch, moved: Batch, suffix: str, earlier: Earlier) -> tuple[Batch, dict]:
        """The plan rows with their statements. From ``sql.reuse_from_objects`` objects, the statements
        succeeded runs rendered are taken (``plan.rendered_before``; one hold) and what this run rendered is
        kept for later ones; the ``RunResult`` fields of that."""
        settings = self.settings
        sql, dialect = settings.sql, settings.dialect
        if not self.reuses_analysis:
            return render(rows, moved, dialect, sql.verbatim_kinds, self.holding), {}
        rendered_before = earlier.rendered()
        try:
            plan, kept, counts = render_reusing(rows, moved, dialect, sql.verbatim_kinds, self.holding,
                                                rendered_before, suffix, try_local=self.small)
        except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
            if rendered_before is None:
                raise
            log.info("%s under %s could not be read (%s): every statement is rendered", RENDERED_STATEMENTS,
                     settings.out, first_line(error))
            plan, kept, counts = render_reusing(rows, moved, dialect, sql.verbatim_kinds, self.holding, None,
                                                suffix, try_local=self.small)
        log.info("plan: %s rendered, %d as earlier runs rendered them", counted(counts["rendered"], "statement"),
                 counts["render_reused"])
        return plan, {"rendered": kept, "render_counts": counts}

    def _check_selection(self, decisions: DataFrame, tables: dict[str, DataFrame], plan_decisions: DataFrame) -> None:
        """A selective run moves no object whose change was excluded (``plan.excluded``; exit 2)."""
        settings = self.settings
        relations = {r["relation"]: r["table"] for r in relation_rows(
            settings.checked, settings.plan_checked, settings.outputs, {}, [], [])}
        excluded_moved(settings.selection, decisions,
                       HeldTables(settings.run_id, {**tables, PLAN_DECISIONS: plan_decisions}), relations)

    def _clusters(self) -> dict[str, str]:
        """The new project's cluster definitions (mz-deploy's clusters/*.sql) by name."""
        new = self.settings.inputs.get("new")
        return dict(new.clusters) if isinstance(new, Document) and new.clusters else {}

    def _cluster_definitions(self) -> DataFrame | None:
        """The new project's cluster definitions, a local relation: no job."""
        definitions = sorted(self._clusters().items())
        if not definitions:
            return None
        return self.spark.createDataFrame(definitions, "name string, definition string")

    def steps(self, base: dict[str, Batch], decided: Evaluation, dictionary_: DataFrame) -> Batch:
        """``group, id, step`` of every object a phase orders by dependency."""
        reads = base["Reads"].frame
        edges = {"depends_on": base["DependsOn"].frame,
                 "reads_reversed": reads.select(F.col("c1").alias("c0"), F.col("c0").alias("c1"))}
        groups = {group: (concat([decided.tuples[r] for r in relations], decided.tuples[relations[0]].schema,
                                 self.spark).frame, edges[order])
                  for group, (relations, order) in PLANNERS[self.settings.strategy].groups.items()}
        return layered(groups, self.holding, object_names(dictionary_), try_local=self.small)


def _taken_tables(tables: dict[str, DataFrame], plan: DataFrame, decisions: DataFrame,
                  table: DataFrame) -> dict[str, DataFrame]:
    """Every table a run that starts from this one takes (``store.taken``), by name: the dirty sets, the plan
    rows, the plan's decisions and the decisions table."""
    return {**tables, "ddl_plan": plan, PLAN_DECISIONS: decisions, DECISIONS: table}


def _deployed(old: Snapshot) -> DataFrame:
    """``database, schema, name, kind, cluster`` of every deployed object: the old project's."""
    return old.objects.select(*KEY, "kind", "cluster")


def _snapshot_frames(side: str, snapshot: Snapshot) -> dict[str, DataFrame]:
    return {f"{side}:objects": snapshot.objects, f"{side}:dependencies": snapshot.dependencies,
            f"{side}:indexes": snapshot.indexes}


def _snapshot_of(held: dict[str, Batch], side: str, path: str) -> Snapshot:
    return Snapshot(path, held[f"{side}:objects"].frame, held[f"{side}:dependencies"].frame,
                    held[f"{side}:indexes"].frame)


def _problem_line(line: str, details: list[str], total: int) -> str:
    from .errors import summarize

    return summarize(details, line.replace("{total}", str(total)), total=total)


def _reads_apply_managed(settings: RunSettings) -> bool:
    """Whether the dirty rules tell apply-managed objects apart (mz-deploy's): their changes are then left
    to mz-deploy's apply, with a warning, and not required to be dirty."""
    return any(a.relation == "IsApplyManaged" for r in settings.checked.program.rules for a in r.body)


APPLY_MANAGED_CHANGES = ("apply-managed objects changed or deleted, which a deploy neither alters nor drops "
                         "(mz-deploy's apply does)")


def _apply_managed_changes(old: Snapshot, new: Snapshot) -> DataFrame:
    """``detail`` of each modified or deleted table, source, connection or secret: what the deploy leaves as is."""
    kinds = (new.objects.select(*KEY, "kind").unionByName(old.objects.select(*KEY, "kind"))
             .where(F.col("kind").isin(*APPLY_MANAGED)).dropDuplicates(list(KEY)))
    changed = changed_stmt(old.objects, new.objects).where(F.col("change") != "added")
    return changed.join(kinds, list(KEY)).select(F.concat(F.concat_ws(".", *KEY), F.lit(" ("), F.col("kind"),
                                                          F.lit(", "), F.col("change"), F.lit(")")).alias("detail"))


def _absent_forced_schemas(spark: SparkSession, new: Snapshot, forced: list[tuple[str, str]]) -> DataFrame | None:
    if not forced:
        return None
    wanted = spark.createDataFrame(sorted(set(forced)), "database string, schema string")
    return (wanted.join(new.objects.select("database", "schema"), ["database", "schema"], "left_anti")
            .select(F.concat_ws(".", "database", "schema").alias("detail")))


def earlier_of(store: "DeltaStore", settings: RunSettings) -> Earlier:
    """What earlier runs under ``--out`` left that this run may start from (nothing under ``--full``), read
    when the run asks for it."""
    if settings.full:
        return Earlier(read_units=lambda: (BaseRun(why="--full"), None))
    return Earlier(read_units=lambda: _units_before(store, settings),
                   read_run_table=lambda table, run_id: store.read_run(table, run_id).drop("run_id"),
                   read_checks=lambda run_id: (store.read_run(PLAN_CHECKS, run_id).select(*PLAN_CHECK_ROWS.names)
                                               if store.exists(PLAN_CHECKS) else None),
                   read_analysis=lambda: _kept_before(store, settings, SQL_ANALYSIS, ANALYSED.names, earlier_rows,
                                                      "every statement is parsed"),
                   read_rendered=lambda: _kept_before(store, settings, RENDERED_STATEMENTS, RENDERED_ROWS.names,
                                                      earlier_rendered, "every plan statement is rendered"))


def _wanted_base(settings: RunSettings) -> dict[str, str]:
    """What the run a run starts from must have been computed with (``store.base_run.MATCHED``)."""
    return {"rules_fingerprint": settings.fingerprints["rules_fingerprint"],
            "config_fingerprint": settings.fingerprints["config_fingerprint"], "version": installed("dirtiness")}


def _units_before(store: "DeltaStore", settings: RunSettings) -> tuple[BaseRun, DataFrame | None]:
    """The run this one starts from and its units (a lazy frame), or why there is none."""
    if not store.exists("runs"):
        return BaseRun(why="no earlier run"), None
    try:
        base = base_run(store.latest_succeeded("runs"), store.succeeded_runs, _wanted_base(settings), settings.run_id)
    except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
        return BaseRun(why=f"runs could not be read ({first_line(error)})"), None
    if base.run_id is None:
        return base, None
    if not store.exists(UNITS):
        return BaseRun(why=f"run {base.run_id} left no {UNITS}"), None
    try:
        table = store.read_run(UNITS, base.run_id)
        if "shape" not in table.columns:  # kept by an earlier version: its units are edited, never restated
            table = table.withColumn("shape", F.lit(None).cast("binary"))
        missing = sorted(set(UNIT_ROWS.names) - set(table.columns))
        if missing:
            raise ValueError(f"no column {', '.join(missing)}")
    except Exception as error:  # noqa: BLE001
        return BaseRun(why=f"{UNITS} under {settings.out} could not be read ({first_line(error)})"), None
    return base, table.select(*UNIT_ROWS.names)


def _kept_before(store: "DeltaStore", settings: RunSettings, name: str, columns: list[str], rows_of,
                 otherwise: str) -> DataFrame | None:
    """What succeeded runs kept in table ``name`` for later ones (a lazy frame, ``rows_of(table, runs)``);
    None where there is none, or with a line saying why (and ``otherwise``) when it cannot be read."""
    if not store.exists(name) or not store.exists("runs"):
        return None
    try:
        table, runs = store.read(name), store.read("runs")
        missing = sorted({*columns, "run_id"} - set(table.columns))
        if missing:
            raise ValueError(f"no column {', '.join(missing)}")
        return rows_of(table, runs)
    except Exception as error:  # noqa: BLE001 - what earlier runs left is never what fails a run
        log.info("%s under %s could not be read (%s): %s", name, settings.out, first_line(error), otherwise)
        return None


def run(spark: SparkSession, settings: RunSettings, hooks: Hooks | None = None) -> dict:
    """``compute`` then ``publish``; a failure at any point leaves a ``failed`` (or ``refused``) row."""
    from .publish import publish, record_failure
    from .store.delta import DeltaStore, choose_backend

    store = DeltaStore(spark, settings.out, choose_backend(spark, settings.delta_backend))
    started_at = dt.datetime.now(dt.timezone.utc)
    try:
        result = compute(settings, spark, hooks, started_at, earlier_of(store, settings))
    except Exception as error:
        record_failure(store, settings, started_at, error)
        raise
    try:
        return publish(result, store, hooks)
    finally:
        result.release()

