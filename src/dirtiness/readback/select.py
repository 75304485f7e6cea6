"""A run's dirty objects as a dbt selector: ``dbt build --select "$(dirtiness select --out DIR)"``.

dbt selects a node by its name (models, seeds and snapshots share one
namespace in a project; a versioned model is ``name.vN``). The names come
from the ``tool_id`` (dbt's ``unique_id``) the manifest adapter gave each
object; objects that dbt does not build (sources) or that the new project no
longer has (deleted) are left out. Order: the plan's, by dependency step
(what an object reads comes first, from the run's ``DependsOn`` facts),
then by the object's first operation in ``ddl_plan``, then by name.
"""

from __future__ import annotations

import re

from ..errors import InputError
from .run_tables import RunTables

BUILT = ("model", "seed", "snapshot")
VERSION = re.compile(r"^v\d+$")


def dbt_selection(tables: RunTables, dirty_table: str = "dirty_stmts") -> list[str]:
    """The dbt node names of the run's dirty objects, in dependency order."""
    return [node_name(unique_id) for _, unique_id in selected_nodes(tables, dirty_table)]


def selected_nodes(tables: RunTables, dirty_table: str = "dirty_stmts") -> list[tuple[tuple, str]]:
    """``(object key, dbt unique_id)`` of the run's dirty objects that dbt builds, in dependency order."""
    rows = tables.read(dirty_table, columns=["database", "schema", "name", "change", "tool_id"]).to_pylist()
    if rows and not any(r.get("tool_id") for r in rows):
        raise InputError(f"run {tables.run_id}: its objects carry no dbt unique_id "
                         f"(dirtiness select needs a run whose snapshots were dbt manifests)")
    nodes = {(r["database"], r["schema"], r["name"]): r["tool_id"] for r in rows
             if (r.get("tool_id") or "").split(".")[0] in BUILT and r.get("change") != "deleted"}
    first: dict[tuple, int] = {}
    if tables.has("ddl_plan"):
        for op in tables.read("ddl_plan", columns=["database", "schema", "name", "seq"]).to_pylist():
            key = (op["database"], op["schema"], op["name"])
            if key in nodes:
                first[key] = min(first.get(key, op["seq"]), op["seq"])
    step = dependency_steps(nodes, tables)
    ordered = sorted(nodes, key=lambda k: (step[k], k not in first, first.get(k, 0), node_name(nodes[k])))
    return [(key, nodes[key]) for key in ordered]


def ls_json(key: tuple, unique_id: str) -> dict:
    """A node as ``dbt ls --select state:modified+ --output json`` prints it, with the keys that name it
    (a run holds no more of the manifest: not its config, tags or file path)."""
    parts = unique_id.split(".")
    return {"name": node_name(unique_id), "resource_type": parts[0], "package_name": parts[1] if len(parts) > 2
            else None, "unique_id": unique_id, "alias": key[2], "database": key[0], "schema": key[1]}


def dependency_steps(nodes, tables: RunTables) -> dict[tuple, int]:
    """Each of ``nodes`` (object keys) its step among them: one more than the largest step of what it
    reads (as the plan orders its operations), from the run's ``DependsOn`` facts."""
    reads: dict[tuple, set] = {key: set() for key in nodes}
    if tables.has("facts/depends_on"):
        names = sorted({key[2] for key in nodes})
        for row in tables.read("facts/depends_on", name=names).to_pylist():
            key, dep = (row["database"], row["schema"], row["name"]), (row["dep_database"], row["dep_schema"],
                                                                       row["dep_name"])
            if key in nodes and dep in nodes and dep != key:
                reads[key].add(dep)
    step: dict[tuple, int] = {}
    while len(step) < len(nodes):
        ready = [k for k in nodes if k not in step and all(d in step for d in reads[k])]
        if not ready:  # a cycle (the run would have failed): the rest in plan order
            ready = [k for k in nodes if k not in step]
        for key in ready:
            step[key] = 1 + max((step.get(d, -1) for d in reads[key]), default=-1)
    return step


def node_name(unique_id: str) -> str:
    """``model.package.orders`` -> ``orders``; ``model.package.dim.v2`` -> ``dim.v2``."""
    parts = unique_id.split(".")
    if len(parts) >= 4 and VERSION.match(parts[-1]):
        return f"{parts[2]}.{parts[-1]}"
    return parts[2] if len(parts) >= 3 else unique_id
