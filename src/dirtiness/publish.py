"""Publishing a computed run: its tables, its records and, last, its ``runs`` row.

Outputs are tagged with the run id; the row in ``runs`` comes last, so a
reader that follows ``runs`` only ever sees finished runs. A failure leaves
a ``failed`` (or ``refused``) row with the one-line reason, and publishing
again (a retry with the same run id) replaces everything the failed attempt
wrote.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from .errors import PolicyError, PublishError, first_line
from .changeset.units import changed_total, changed_units_line
from .inputs.analysed_before import SQL_ANALYSIS
from .plan.rendered_again import RENDER_INPUTS
from .plan.rendered_before import RENDERED_STATEMENTS
from .model import BY_NAME, DESIRED_OBJECTS, SELECTED_CHANGES, UNITS
from .computed import INCREMENTAL, Hooks, RunResult, Stages, named_stages
from .session import session_settings
from .settings import FINGERPRINTS, RunSettings
from .wording import counted
from .work_kept import installed
from .store.delta import DeltaStore
from .store.run_reads import latest_succeeded
from .store.run_log import (
    DECISIONS,
    DRIFT,
    DRIFT_ROWS,
    PLAN_CHECK_ROWS,
    PLAN_CHECKS,
    PLAN_DECISIONS,
    RUN_RELATIONS,
    ROUNDS_TABLE,
    RUN_ROUNDS,
    RUN_STAGES,
    RUNS,
    SELECTED_CHANGE_ROWS,
    records,
    relation_rows,
    round_rows,
    stage_rows,
)

log = logging.getLogger("dirtiness")


def publish(result: RunResult, store: DeltaStore, hooks: Hooks | None = None) -> dict:
    """Write a computed run's tables, its records and, last, its ``runs`` row; returns the summary."""
    computed_with = result.settings.computed_with(result.objects)  # the tables are views of what it held
    with session_settings(store.spark, computed_with), \
            named_stages(store.spark, result.settings, (hooks or Hooks()).on_stage) as clock:
        return _publish(result, store, clock)


def _publish(result: RunResult, store: DeltaStore, clock: Stages) -> dict:
    settings, run_id = result.settings, result.settings.run_id

    def write(table: str, rows) -> int:
        clock.enter(f"write:{table}")
        try:
            return store.replace_run(table, rows, run_id)
        except Exception as error:  # noqa: BLE001 - a disk full, a permission, a store's refusal: named
            raise PublishError(f"writing table {table} under {settings.out} failed: {first_line(error)}") from error

    try:
        with clock("write"):
            store.replace_run("runs", records(RUNS, [runs_row(settings, "running", result.started_at)]), run_id)
            facts_written = {name: write(f"facts/{BY_NAME[name].table}", batch) for name, batch in result.facts.items()}
            counts = {table: write(table, batch) for table, batch in result.tables.items()}
            if settings.plan_checked is not None:  # strategy none plans nothing: no plan rows to write
                counts["ddl_plan"] = write("ddl_plan", result.plan)
                write(PLAN_DECISIONS, result.decisions)
                write(DECISIONS, result.object_decisions)
                write(PLAN_CHECKS, records(PLAN_CHECK_ROWS, result.report.rows))  # for a later run that takes them
            write(DESIRED_OBJECTS, result.desired)
            if result.units is not None:  # for later runs: what this one's facts came from
                write(UNITS, result.units)
            if result.analysed is not None:  # for later runs: the statements this one parsed
                write(SQL_ANALYSIS, result.analysed)
            if result.rendered is not None:  # and the plan statements it rendered
                write(RENDERED_STATEMENTS, result.rendered)
            if result.render_inputs is not None:  # and what its plan's statements were rendered from
                write(RENDER_INPUTS, result.render_inputs)
            if settings.drift is not None:
                write(DRIFT, records(DRIFT_ROWS, list(settings.drift)))
            if settings.selection is not None:
                write(SELECTED_CHANGES, records(SELECTED_CHANGE_ROWS, [c.row() for c in settings.selection.changes]))
            write("run_relations", records(RUN_RELATIONS, relation_rows(
                settings.checked, settings.plan_checked, settings.outputs, facts_written, result.rounds,
                result.plan_rounds)))
            write(ROUNDS_TABLE, records(RUN_ROUNDS, round_rows(result.rounds, "rules")
                                        + round_rows(result.plan_rounds, "plan")))
        seconds = {**result.seconds, **clock.seconds}
        finished_at = dt.datetime.now(dt.timezone.utc)
        with clock("publish"):
            write("run_stages", records(RUN_STAGES, stage_rows(seconds)))
            row = runs_row(settings, "succeeded", result.started_at, finished_at, rounds=len(result.rounds),
                           plan_rounds=len(result.plan_rounds), counts=counts, statements=result.statements,
                           started_from=result.started_from.run_id, unit_changes=result.unit_changes,
                           mode=result.mode, digests=(result.units_digest, result.shapes_digest))
            store.replace_run("runs", records(RUNS, [row]), run_id)
    except Exception as error:
        record_failure(store, settings, result.started_at, error)
        raise
    seconds["publish"] = clock.seconds["publish"]
    report = result.report
    return {
        "run_id": run_id,
        "status": "succeeded",
        "out": os.path.abspath(settings.out),
        "rules": settings.checked.path,
        "plan_rules": settings.plan_checked.path if settings.plan_checked else None,
        "strategy": settings.strategy,
        "delta_backend": store.backend,
        "small_catalog": result.small_catalog,
        "objects": result.objects,
        "counts": counts,
        "plan": result.phases,
        "needing_attention": report.needing_attention if report else [],
        "unit_tests": dict(getattr(settings.inputs.get("new"), "unit_tests", None) or {}),  # mz-deploy's, per object
        "verbatim": report.verbatim if report else [],
        "facts": {BY_NAME[name].table: n for name, n in facts_written.items()},
        "statements": result.statements,  # statements parsed and rendered, and reused from earlier runs
        "units": _units_summary(result),
        "mode": result.mode,  # incremental: this run's outputs are those of units.started_from
        "full_because": result.full_because,
        # the plan's checks: computed, or taken with the plan (``store.taken``), but those of the statements it
        # rendered again (a restated run's: ``statements``); None: no plan
        "plan_checks": (("statements" if result.restated else "taken") if result.checks_taken else "computed")
        if result.report else None,
        "fingerprints": settings.fingerprints,
        "selection": _selection_summary(settings),
        "drift": len(settings.drift) if settings.drift is not None else None,
        "rounds": len(result.rounds),
        "round_log": [{"round": r.round, "stratum": r.stratum, "new": r.new, "seconds": round(r.seconds, 3)}
                      for r in result.rounds],
        "plan_rounds": len(result.plan_rounds),
        "seconds": {**seconds, "total": round(sum(seconds.values()), 3)},
    }


def _units_summary(result: RunResult) -> dict:
    """The run the units were compared with and what changed since (``changes``: per side and change), or
    why there was no such run (``why``)."""
    started_from = result.started_from
    return {"total": result.units.count if result.units is not None else None, "started_from": started_from.run_id,
            **({"changes": result.unit_changes, "restated": result.restated} if started_from.run_id
               else {"why": started_from.why})}


def _selection_summary(settings: RunSettings) -> dict | None:
    selection = settings.selection
    if selection is None:
        return None
    return {"flags": selection.text(), "changes": len(selection.changes),
            "selected": sorted(".".join(c.key) for c in selection.changes if c.selected),
            "excluded": sorted(".".join(c.key) for c in selection.changes if not c.selected)}


def record_failure(store: DeltaStore, settings: RunSettings, started_at, error: Exception) -> None:
    """Best effort: a ``failed`` (or ``refused``) row with the one-line reason; never hides the error."""
    status = "refused" if isinstance(error, PolicyError) else "failed"
    message = " ".join(str(error).split())[:2000] or type(error).__name__
    try:
        row = runs_row(settings, status, started_at, dt.datetime.now(dt.timezone.utc), message)
        store.replace_run("runs", records(RUNS, [row]), settings.run_id)
    except Exception as secondary:  # noqa: BLE001 - the original error is what the caller must see
        log.warning("could not record the failed run: %s", secondary)


def runs_row(settings: RunSettings, status: str, started_at, finished_at=None, message: str | None = None,
             rounds: int | None = None, plan_rounds: int | None = None, counts: dict | None = None,
             statements: dict | None = None, started_from: str | None = None,
             unit_changes: dict | None = None, mode: str | None = None,
             digests: tuple[str | None, str | None] = (None, None)) -> dict:
    """The ``runs`` row of a run, by column."""
    counts, statements = counts or {}, statements or {}
    return {
        "run_id": settings.run_id, "status": status, "started_at": started_at, "finished_at": finished_at,
        "old_snapshot": settings.old, "new_snapshot": settings.new, "rules": settings.checked.path,
        "rounds": rounds, "dirty_stmts": counts.get("dirty_stmts"), "dirty_clusters": counts.get("dirty_clusters"),
        "dirty_schemas": counts.get("dirty_schemas"),
        "seconds": round((finished_at - started_at).total_seconds(), 3) if finished_at else None,
        "message": message, "strategy": settings.strategy,
        "forced_schemas": ",".join(f"{d}.{s}" for d, s in settings.forced) or None,
        **{k: settings.fingerprints[k] for k in FINGERPRINTS},
        "ddl_operations": counts.get("ddl_plan"), "dialect": settings.dialect.name,
        "plan_rules": settings.plan_checked.path if settings.plan_checked else None, "plan_rounds": plan_rounds,
        "statements_parsed": statements.get("parsed"), "statements_reused": statements.get("reused"),
        "statements_rendered": statements.get("rendered"), "renders_reused": statements.get("render_reused"),
        "version": installed("dirtiness"), "started_from": started_from,
        "units_changed": None if unit_changes is None else changed_total(unit_changes), "mode": mode,
        "units_digest": digests[0], "shapes_digest": digests[1],
    }


def _statements_line(statements: dict) -> str:
    """What a run parsed and rendered, and what it took from earlier runs instead."""
    parts = []
    if "parsed" in statements:
        parts.append(f"{counted(statements['parsed'], 'statement')} parsed, {statements['reused']} as earlier "
                     f"runs analysed them")
    if "rendered" in statements:
        parts.append(f"{counted(statements['rendered'], 'plan statement')} rendered, "
                     f"{statements['render_reused']} as earlier runs rendered them")
    return "  SQL: " + "; ".join(parts)


def _units_line(units: dict) -> str:
    """What changed in the units since the run this one started from, or why there was none."""
    if units["started_from"] is None:
        return f"  units: {counted(units['total'] or 0, 'unit')}, not compared ({units['why']})"
    return f"  units: {changed_units_line(units['changes'])} since run {units['started_from']}"


def _mode_line(summary: dict) -> str:
    """How the run got its answer: computed in full (and why), or taken from the run it started from."""
    if summary["mode"] == INCREMENTAL:
        checked = {"taken": "and what its checks found", "statements": "its statements checked again, the rest of "
                   "what its checks found taken"}.get(summary["plan_checks"], "checked again")
        restated = summary["units"].get("restated")
        changed = f"{counted(restated, 'unit')} restated" if restated else "no unit changed"
        again = ", the plan rows of their statements rendered again" if restated else ""
        return (f"  mode: incremental ({changed}: the dirty sets and the plan of run "
                f"{summary['units']['started_from']}{again}, {checked})")
    return f"  mode: full ({summary['full_because']})"


def unchanged_in(store: DeltaStore, fingerprints: dict[str, str]) -> dict | None:
    """The ``runs`` row of the latest succeeded run under the output root if it had these fingerprints."""
    return _same(store.latest_succeeded("runs"), fingerprints) if store.exists("runs") else None


def unchanged_since(out: str, fingerprints: dict[str, str]) -> dict | None:
    """The latest succeeded run under ``out`` if it had these fingerprints, read with delta-rs before any
    Spark session starts (a skipped run starts no JVM). None also where delta-rs cannot tell (no runs
    table, a store or table feature it cannot read): the run then checks again through its session."""
    try:
        latest = latest_succeeded(os.path.join(out, "runs"))
    except Exception:  # noqa: BLE001 - unknown here is not an error: the session's check decides
        return None
    return _same(latest, fingerprints)


def _same(run: dict | None, fingerprints: dict[str, str]) -> dict | None:
    return run if run and all(run.get(k) == v for k, v in fingerprints.items()) else None


def format_summary(summary: dict) -> str:
    counts = {t: n for t, n in summary["counts"].items() if t != "ddl_plan"}
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in summary["seconds"].items() if k != "total")
    phases = ", ".join(f"{n} {p}" for p, n in summary["plan"].items()) or "nothing to do"
    planned = summary["plan_rules"] is not None
    lines = [
        f"run {summary['run_id']}: {summary['status']} in {summary['seconds']['total']:.1f} s",
        "  dirty: " + ", ".join(f"{n} {t}" for t, n in counts.items()),
        f"  plan ({summary['strategy']}): {counted(summary['counts'].get('ddl_plan', 0), 'operation')}: {phases}"
        if planned else f"  plan (none): no DDL plan; `dirtiness select --out {summary['out']}` prints what to "
                        f"build (as dbt build --select takes it)",
        f"  base facts: {counted(sum(summary['facts'].values()), 'row')} in "
        f"{counted(len(summary['facts']), 'relation')}",
        *([_statements_line(summary["statements"])] if summary.get("statements") else []),
        *([_units_line(summary["units"])] if summary.get("units") else []),
        *([_mode_line(summary)] if summary.get("mode") else []),
        f"  rules: {summary['rules']} ({counted(summary['rounds'], 'round')} to the fixed point)"
        + (f", {summary['plan_rules']} ({counted(summary['plan_rounds'], 'round')})" if planned else ""),
        f"  stages: {stages}",
        f"  tables: {summary['out']} ({summary['delta_backend']} backend)",
    ]
    if summary.get("selection"):
        chosen = summary["selection"]
        flags = chosen["flags"] if len(chosen["flags"]) <= 120 else f"{chosen['flags'].count('--')} selectors"
        left = chosen["excluded"][:10] + ([f"and {len(chosen['excluded']) - 10} more"]
                                          if len(chosen["excluded"]) > 10 else [])
        lines.append(f"  selection ({flags}): {len(chosen['selected'])} of {counted(chosen['changes'], 'change')} "
                     f"deployed; left as deployed: {', '.join(left) or 'none'}")
    if summary.get("drift") is not None:
        lines.append(f"  drift: {counted(summary['drift'], 'difference')} between the database and its deploy "
                     f"record (table drift)")
    if summary.get("needing_attention"):
        lines.append("  needing attention (dirty, not redeployed by blue-green): "
                     + ", ".join(summary["needing_attention"]))
    if summary.get("unit_tests"):
        tests = summary["unit_tests"]
        lines.append(f"  unit tests (mz-deploy's; never deployed): {sum(tests.values())} in "
                     f"{counted(len(tests), 'object')}")
    if summary.get("verbatim"):
        lines.append("  statements carried verbatim (not qualified or rewritten): " + ", ".join(summary["verbatim"]))
    return "\n".join(lines)
