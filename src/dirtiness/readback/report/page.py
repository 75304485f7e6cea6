"""The report: one self-contained HTML page (inline CSS, SVG and a few lines of JS; no network).

Rendered with Jinja2 with autoescaping on, so names from the catalog (which
may hold ``<``, quotes, anything) are always text, never markup. The page
depends only on the run's rows (no clock), so the same run gives the same page.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from importlib import resources

import jinja2

from ...model import NO_PLAN
from ...wording import noun_for
from ..fact_text import show_name
from ..run_tables import RunTables
from .data import ReportData, collect
from .picture import NODE_HEIGHT, NODE_WIDTH, PALETTE


def write_report(tables: RunTables, path: str, settings: dict | None = None) -> None:
    """Writes the page of ``tables``' run to ``path``, atomically (a reader never sees half a page)."""
    html = render(collect(tables, settings))
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(html)
        os.chmod(temporary, 0o666 & ~_umask())  # as an ordinary file, not mkstemp's private 0600
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def render(data: ReportData) -> str:
    template = _environment().from_string(
        resources.files(__package__).joinpath("page.html.j2").read_text(encoding="utf-8"))
    stage_total = sum(s["seconds"] for s in data.stages) or 1.0
    return template.render(
        planned=data.run.get("strategy") != NO_PLAN, destructive=sum(s["destructive"] for s in data.plan_steps),
        decision_counts=data.decision_counts,
        run=data.run, succeeded=data.run["status"] == "succeeded", stages=data.stages, stage_total=stage_total,
        stage_colours=[PALETTE[i % len(PALETTE)] for i in range(len(data.stages))], relations=data.relations,
        rounds=data.rounds, chart=data.chart, picture=data.picture, node_width=NODE_WIDTH, node_height=NODE_HEIGHT,
        objects=data.objects, objects_total=data.objects_total, colours=data.colours, clusters=data.clusters,
        clusters_total=data.clusters_total, schemas=data.schemas, schemas_total=data.schemas_total, phases=_phases(data), plan=data.plan, plan_total=data.plan_total,
        decisions=data.decisions, decisions_total=data.decisions_total, decision_kinds=data.decision_kinds)


def _phases(data: ReportData) -> list[dict]:
    """Phases in order, each with its steps (counted) and the listed operations of each step."""
    rows: dict[tuple[str, int], list[dict]] = {}
    for op in data.plan:
        rows.setdefault((op["phase"], op["step"]), []).append(op)
    phases: dict[str, dict] = {}
    for step in data.plan_steps:
        phase = phases.setdefault(step["phase"], {"name": step["phase"], "operations": 0, "steps": []})
        phase["operations"] += step["operations"]
        phase["steps"].append({**step, "rows": rows.get((step["phase"], step["step"]), [])})
    return list(phases.values())


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["n"] = lambda value: "" if value is None else f"{value:,}"
    env.filters["noun"] = lambda value, noun: noun_for(value, noun)  # 1 cluster, 3 clusters
    env.filters["when"] = _when
    env.filters["object_key"] = lambda row: show_name((row["database"], row["schema"], row["name"]))
    env.filters["subject_key"] = lambda row: show_name(tuple(row[k] for k in ("database", "schema", "name")
                                                             if row[k] is not None))
    return env


def _when(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value)
