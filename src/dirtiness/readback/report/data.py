"""Everything the report page shows about one run, read from its tables.

Bounded whatever the run's size: lists stop at ``max_rows`` (the page says how
many more there are), and beyond ``max_graph_nodes`` dirty objects the picture
shows schemas instead, at most ``max_graph_nodes`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from ...model import KEY, NO_PLAN, facts_table
from ..fact_text import show_name
from ..run_tables import RunTables
from ..select import dependency_steps
from .chart import Chart, rounds_chart
from .picture import NOT_IN_PLAN, NodeSpec, Picture, lay_out, reason_colours

DEFAULTS = {"max_graph_nodes": 150, "max_rows": 2000}
STEP_COLUMNS = pa.schema([*((k, pa.string()) for k in KEY), ("object_type", pa.string()), ("phase", pa.string()),
                          ("phase_order", pa.int32()), ("step", pa.int32()), ("destructive", pa.bool_())])
_RANK = 1_000_000  # phase_order * _RANK + step orders the plan's steps


@dataclass
class ReportData:
    run: dict
    settings: dict
    stages: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)
    chart: Chart | None = None
    colours: dict[str, str] = field(default_factory=dict)
    objects: list[dict] = field(default_factory=list)
    objects_total: int = 0
    clusters: list[dict] = field(default_factory=list)
    clusters_total: int = 0
    schemas: list[dict] = field(default_factory=list)
    schemas_total: int = 0
    plan_steps: list[dict] = field(default_factory=list)
    plan: list[dict] = field(default_factory=list)
    plan_total: int = 0
    picture: Picture | None = None
    decisions: list[dict] = field(default_factory=list)   # the first max_rows, objects, schemas, then clusters
    decisions_total: int = 0
    decision_kinds: list[str] = field(default_factory=list)  # every decision the run made, for the filter
    decision_counts: list[tuple[str, int]] = field(default_factory=list)  # objects per decision, kept last


SUBJECT_ORDER = {"object": 0, "schema": 1, "cluster": 2}


def report_settings(settings: dict | None) -> dict:
    """The ``report`` section of the configuration, checked: unknown keys and bad sizes are input errors."""
    settings = settings or {}
    if not isinstance(settings, dict):
        raise InputError("configuration: report must be a mapping")
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise InputError(f"configuration: report.{unknown[0]} is not a setting (known: {', '.join(DEFAULTS)})")
    for key, value in settings.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"configuration: report.{key} must be a positive integer, not {value!r}")
    return {**DEFAULTS, **settings}


def collect(tables: RunTables, settings: dict | None = None) -> ReportData:
    settings = report_settings(settings)
    data = ReportData(run=tables.run, settings=settings)
    if tables.run["status"] != "succeeded":
        return data  # a failed or refused run wrote nothing else worth showing
    data.stages = _rows(tables, "run_stages", "position")
    data.relations = _rows(tables, "run_relations")
    data.rounds = [r for r in _rows(tables, "run_rounds", "round") if r.get("program") != "plan"]  # the dirty rules
    data.chart = rounds_chart(data.rounds)
    objects = tables.read("dirty_stmts").drop_columns(["run_id"]).sort_by(
        [("round", "ascending"), *((k, "ascending") for k in KEY)])
    data.objects_total = objects.num_rows
    data.clusters = _rows(tables, "dirty_clusters", "round", "cluster")
    data.schemas = _rows(tables, "dirty_schemas", "round", "database", "schema")
    first_rounds = objects.group_by("rule").aggregate([("round", "min")]).rename_columns(["rule", "round"])
    data.colours = reason_colours(_reasons([first_rounds.to_pylist(), data.schemas, data.clusters]))
    data.objects = objects.slice(0, settings["max_rows"]).to_pylist()
    planned = tables.run.get("strategy") != NO_PLAN and tables.has("ddl_plan")
    steps = tables.read("ddl_plan", columns=list(STEP_COLUMNS.names)) if planned else STEP_COLUMNS.empty_table()
    data.plan_steps, data.plan_total = _plan_steps(steps), steps.num_rows
    data.plan = _rows(tables, "ddl_plan", "seq", condition=pc.field("seq") <= settings["max_rows"]) if planned else []
    data.picture = _picture(tables, objects, steps, data.schemas, data.colours, settings["max_graph_nodes"])
    data.schemas_total, data.clusters_total = len(data.schemas), len(data.clusters)
    decisions = sorted(_rows(tables, "decisions"), key=lambda r: (
        SUBJECT_ORDER.get(r["subject"], 3), *(r[k] or "" for k in KEY)))
    data.decisions, data.decisions_total = decisions[:settings["max_rows"]], len(decisions)
    data.decision_kinds = sorted({r["decision"] for r in decisions})
    counts: dict[str, int] = {}
    for row in decisions:
        if row["subject"] == "object":
            counts[row["decision"]] = counts.get(row["decision"], 0) + 1
    data.decision_counts = sorted(counts.items(), key=lambda item: (item[0] == "kept", -item[1], item[0]))
    data.schemas, data.clusters = data.schemas[:settings["max_rows"]], data.clusters[:settings["max_rows"]]
    return data


def _rows(tables: RunTables, table: str, *order: str, condition=None) -> list[dict]:
    if not tables.has(table):
        return []  # a run written before this table existed
    rows = tables.read(table, condition=condition).drop_columns(["run_id"])
    return rows.sort_by([(c, "ascending") for c in order]).to_pylist() if order else rows.to_pylist()


def _reasons(groups: list[list[dict]]) -> list[str]:
    """Rule labels by the first round they derived something in, then by name."""
    first: dict[str, int] = {}
    for rows in groups:
        for row in rows:
            first[row["rule"]] = min(first.get(row["rule"], row["round"]), row["round"])
    return sorted(first, key=lambda label: (first[label], label))


def _plan_steps(plan: pa.Table) -> list[dict]:
    """Operations (and destructive ones) per phase and step, in order."""
    plan = plan.append_column("dangerous", pc.cast(plan["destructive"], pa.int64()))
    steps = (plan.group_by(["phase_order", "phase", "step"])
             .aggregate([([], "count_all"), ("dangerous", "sum")])
             .sort_by([("phase_order", "ascending"), ("step", "ascending")]))
    return [{"phase": r["phase"], "step": r["step"], "operations": r["count_all"], "destructive": r["dangerous_sum"]}
            for r in steps.to_pylist()]


def _layers(steps: pa.Table) -> tuple[pa.Table, dict[tuple[int, int], str]]:
    """Per object its first plan step as a rank; and the heading of each step."""
    plan = steps.filter(pc.field("object_type") == "object")
    ranks = pc.add(pc.multiply(pc.cast(plan["phase_order"], pa.int64()), _RANK), pc.cast(plan["step"], pa.int64()))
    plan = plan.append_column("rank", ranks)
    first = plan.group_by(list(KEY)).aggregate([("rank", "min")]).rename_columns([*KEY, "rank"])
    headings = {}
    for row in plan.group_by(["phase_order", "phase", "step"]).aggregate([]).to_pylist():
        headings[(row["phase_order"], row["step"])] = f"{row['phase']} \u00b7 step {row['step']}"
    return first, headings


def _layer(rank: int | None) -> tuple[int, int]:
    return NOT_IN_PLAN if rank is None else (rank // _RANK, rank % _RANK)


def _picture(tables: RunTables, objects: pa.Table, steps: pa.Table, schemas: list[dict], colours: dict[str, str],
             limit: int) -> Picture | None:
    if objects.num_rows == 0:
        return None
    if objects.num_rows <= limit:
        return _object_picture(tables, objects, steps, colours)
    return _schema_picture(tables, objects, steps, schemas, colours, limit)


def _object_picture(tables: RunTables, objects: pa.Table, steps: pa.Table, colours: dict[str, str]) -> Picture:
    names = sorted(set(objects["name"].to_pylist()))
    if steps.num_rows:
        first, headings = _layers(steps)
        ranks = {(r["database"], r["schema"], r["name"]): r["rank"] for r in first.to_pylist()}
    else:  # no plan (strategy none): columns in build order, what an object reads to its left
        order = dependency_steps([tuple(r[k] for k in KEY) for r in objects.select(list(KEY)).to_pylist()], tables)
        ranks = {key: _RANK + step for key, step in order.items()}  # as if all of phase 1
        headings = {(1, step): f"build order \u00b7 {step + 1}" for step in set(order.values())}
    specs = []
    for row in objects.to_pylist():
        key = (row["database"], row["schema"], row["name"])
        layer = _layer(ranks.get(key))
        change = f", {row['change']}" if row["change"] else ""
        specs.append(NodeSpec(
            key=show_name(key), label=row["name"], sublabel=f"{row['database']}.{row['schema']} \u00b7 {row['kind']}",
            layer=layer, layer_name=headings.get(layer, "no operation of its own"), reason=row["rule"],
            change=row["change"],
            title=f"{show_name(key)} ({row['kind']}{change})\nround {row['round']}, rule {row['rule']}\n"
                  f"because {row['cause']}"))
    keys = {s.key for s in specs}
    edges = []
    for dep in tables.rows(facts_table("DependsOn"), name=names):
        source = show_name((dep["dep_database"], dep["dep_schema"], dep["dep_name"]))
        target = show_name((dep["database"], dep["schema"], dep["name"]))
        if source in keys and target in keys:
            edges.append((source, target, f"{target} depends on {source}"))
    return lay_out("objects", specs, edges, colours)


def _schema_picture(tables: RunTables, objects: pa.Table, steps: pa.Table, schemas: list[dict],
                    colours: dict[str, str], limit: int) -> Picture:
    first, headings = _layers(steps)
    placed = objects.select([*KEY, "change"]).join(first, list(KEY), join_type="left outer")
    placed = placed.append_column("changed", pc.cast(pc.is_valid(placed["change"]), pa.int64()))
    per_schema = placed.group_by(["database", "schema"]).aggregate(
        [([], "count_all"), ("changed", "sum"), ("rank", "min")])
    held = {(r["database"], r["schema"]): {"objects": r["count_all"], "changed": r["changed_sum"],
                                           "rank": r["rank_min"]} for r in per_schema.to_pylist()}
    dirty = {(s["database"], s["schema"]): s for s in schemas}
    for key in dirty:
        held.setdefault(key, {"objects": 0, "changed": 0, "rank": None})
    shown = sorted(held, key=lambda k: (-held[k]["objects"], k))[:limit]
    note = (f"{objects.num_rows:,} dirty objects: shown as the {len(held):,} schemas holding them"
            + (f" (the {limit} with the most dirty objects)" if len(held) > limit else ""))
    specs = []
    for key in shown:
        entry, schema = held[key], dirty.get(key)
        layer = _layer(entry["rank"])
        reason = schema["rule"] if schema else None
        state = f"dirty: rule {schema['rule']}, round {schema['round']}, because {schema['cause']}" if schema \
            else "schema clean, holds dirty objects"
        specs.append(NodeSpec(
            key=show_name(key), label=show_name(key), sublabel=f"{entry['objects']:,} dirty, {entry['changed']:,} changed",
            layer=layer, layer_name=headings.get(layer, "no operation of its own"), reason=reason,
            change="modified" if entry["changed"] else None, badge=_count_badge(entry["changed"]),
            title=f"schema {show_name(key)}\n{state}\n{entry['objects']:,} dirty objects, {entry['changed']:,} changed"))
    keys = {s.key for s in specs}
    edges = [e for e in _schema_edges(tables, objects) if e[1] in keys and e[2] in keys]
    drawn = sorted(edges, key=lambda e: (-e[0], e[1], e[2]))[:2 * len(specs)]  # the heaviest, to stay legible
    if len(drawn) < len(edges):
        note += f"; the {len(drawn):,} heaviest of {len(edges):,} schema-to-schema dependencies are drawn"
    return lay_out("schemas", specs, [e[1:] for e in drawn], colours, note=note)


def _count_badge(count: int) -> str | None:
    return None if not count else str(count) if count < 100 else "99+"


def _schema_edges(tables: RunTables, objects: pa.Table) -> list[tuple[int, str, str, str]]:
    """Dependencies between dirty objects, counted per pair of distinct schemas: (count, from, to, title)."""
    dirty = objects.select(list(KEY))
    deps = tables.read(facts_table("DependsOn"), columns=[*KEY, "dep_database", "dep_schema", "dep_name"])
    deps = deps.join(dirty, list(KEY), join_type="inner")
    deps = deps.join(dirty.rename_columns(["dep_database", "dep_schema", "dep_name"]),
                     ["dep_database", "dep_schema", "dep_name"], join_type="inner")
    pairs = deps.group_by(["dep_database", "dep_schema", "database", "schema"]).aggregate([([], "count_all")])
    edges = []
    for row in pairs.to_pylist():
        source, target = (row["dep_database"], row["dep_schema"]), (row["database"], row["schema"])
        if source != target:
            edges.append((row["count_all"], show_name(source), show_name(target),
                          f"{row['count_all']:,} dependencies of {show_name(target)} on {show_name(source)}"))
    return edges
