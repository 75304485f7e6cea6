"""A Moose infrastructure map (JSON) as a snapshot document.

- ``tables``: tables (kind ``table``: a drop loses rows).
- ``views``: views; with ``selectSql`` and ``sourceTables`` when user-defined.
- ``materialized_views``: ClickHouse materialized views (``selectSql``,
  ``sourceTables``, ``targetTable``). A ClickHouse MV is a trigger writing
  into its target table: dropping it loses no rows, so it is recreatable
  (kind ``materialized-view``). It depends on what it reads and on its
  target, which must exist before it.
- ``sql_resources`` (older maps keep MVs and views there): ``setup`` and
  ``teardown`` SQL, ``pulls_data_from`` and ``pushes_data_to``; the kind is
  read from the setup SQL (``CREATE MATERIALIZED VIEW`` or a view).

Names: ClickHouse has databases and no schemas inside them. A ClickHouse
database is the snapshot's *schema* (the unit the rules make dirty and a
blue-green plan swaps), under the snapshot database ``clickhouse``; an
object without a database is in ``default``. Hashes are taken over the
object's whole definition in the map (canonical JSON), minus its name.
The SQL is ClickHouse's, which the plan's parsers do not read: objects carry
no ``sql``, so the plan lists what to redeploy and in what order, without
statements (``apply`` refuses such a plan).
"""

from __future__ import annotations

import re

from ...errors import InputError
from ...fingerprints import of_json
from .json_file import load_json

DATABASE = "clickhouse"
DEFAULT_SCHEMA = "default"
SECTIONS = ("tables", "views", "materialized_views", "sql_resources")
MATERIALIZED = re.compile(r"\bCREATE\s+MATERIALIZED\s+VIEW\b", re.IGNORECASE)


def to_document(path: str) -> dict:
    infra = load_json(path)
    if not isinstance(infra, dict) or not isinstance(infra.get("tables"), dict):
        raise InputError(f"{path}: not a Moose infrastructure map (no 'tables' mapping)")
    entries = {section: infra.get(section) or {} for section in SECTIONS}
    for section, found in entries.items():
        if not isinstance(found, dict):
            raise InputError(f"{path}: '{section}' must be a mapping of id to definition")
    names = _names(entries, path)
    objects = []
    for section in SECTIONS:
        for ident, entry in sorted(entries[section].items()):
            reads = [_resolve(ref, names, path, ident) for ref in _references(section, entry)]
            objects.append({
                "database": DATABASE, "schema": names[ident][0], "name": names[ident][1],
                "kind": _kind(section, entry), "hash": _hash(entry),
                **({"depends_on": sorted({f"{DATABASE}.{s}.{n}" for s, n in reads} - {
                    f"{DATABASE}.{names[ident][0]}.{names[ident][1]}"})} if reads else {}),
            })
    return {"objects": objects}


def _names(entries: dict, path: str) -> dict[str, tuple[str, str]]:
    """Every object's (schema, name), by its id in the map."""
    names = {}
    for section, found in entries.items():
        for ident, entry in found.items():
            if not isinstance(entry, dict):
                raise InputError(f"{path}: {section}.{ident}: expected a mapping")
            name = entry.get("name") or ident
            names[ident] = (entry.get("database") or DEFAULT_SCHEMA, name)
    return names


def _references(section: str, entry: dict) -> list:
    if section == "sql_resources":
        return [*(entry.get("pulls_data_from") or []), *(entry.get("pushes_data_to") or [])]
    found = list(entry.get("sourceTables") or entry.get("source_tables") or [])
    target = entry.get("targetTable") or entry.get("target_table")
    if target:
        found.append(target)
    view_type = entry.get("view_type") or {}
    if isinstance(view_type, dict) and isinstance(view_type.get("TableAlias"), dict):
        found.append(view_type["TableAlias"].get("source_table_name"))
    return found


def _resolve(ref, names: dict, path: str, owner: str) -> tuple[str, str]:
    """A reference (an id, ``name``, ``database.name``, or a lineage signature) to (schema, name)."""
    if isinstance(ref, dict):  # {"kind": "Table", "id": ...} or {"Table": {"id": ...}}
        inner = next((v for v in ref.values() if isinstance(v, dict)), None)
        ref = ref.get("id") if "id" in ref else (inner or {}).get("id")
    if not isinstance(ref, str) or not ref:
        raise InputError(f"{path}: {owner}: a reference that names nothing ({ref!r})")
    if ref in names:
        return names[ref]
    by_name = [key for key in names.values() if key[1] == ref or f"{key[0]}.{key[1]}" == ref]
    if len(by_name) == 1:
        return by_name[0]
    schema, _, name = ref.rpartition(".")
    return (schema or DEFAULT_SCHEMA, name)  # outside the map: the job says it is missing


def _kind(section: str, entry: dict) -> str:
    if section == "tables":
        return "table"
    if section == "materialized_views":
        return "materialized-view"
    if section == "sql_resources":
        setup = " ".join(entry.get("setup") or [])
        return "materialized-view" if MATERIALIZED.search(setup) else "view"
    return "view"


def _hash(entry: dict) -> str:
    return of_json({k: v for k, v in entry.items() if k != "name"})
