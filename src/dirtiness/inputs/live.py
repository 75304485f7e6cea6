"""The deployed catalog read from a live PostgreSQL database: the same snapshot form, and its drift.

``read_catalog`` reads what a PostgreSQL database holds from its system catalog
(Materialize's, untested here: ``inputs.live_materialize``):
schemas; tables (their columns and constraints), views and materialized
views (their definitions as ``pg_get_viewdef`` prints them with an empty
search path, so every name is qualified and the text does not depend on the
session); the relations each view reads (``pg_depend`` through its rewrite
rule); and every index that is not a constraint's, with its key expressions.
A definition is the database's own normalised form, so two readings of the
same object agree whatever SQL created it.

Object hashes are the project's, not the database's: a project hashes its
files, the database knows none of that. ``apply`` records, per object, the
project's hash beside the definition the database printed right after the
deploy (``apply.record``). Reading the catalog again, an object whose
definition is still the recorded one takes the recorded hash (so a run from
the database compares like a run from the deployed project file); one whose
definition changed since takes a hash of its definition (``live:...``),
which no project has: the next run redeploys it (or drops it, when the
project no longer has it). An object no deploy recorded (made by hand) has
no hash: like an object a deploy record leaves out, it is never a change by
itself. Without any record every object has its ``live:`` hash (what
``snapshot --from-database`` shows); ``run --old-from-database`` refuses to
plan from such a database, since nothing says which version it holds.

Drift (``drift``) is every difference between that record and the database
now: schemas and objects on one side only, and an object's kind,
definition, dependencies and indexes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..wording import counted
from .live_catalog import LiveCatalog, LiveObject, surroundings

SYSTEM = ("pg_catalog", "information_schema")

SCHEMAS = """
SELECT nspname FROM pg_namespace
WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname <> ALL(%(skip)s)
  AND nspname NOT LIKE 'pg\\_toast%%' AND nspname NOT LIKE 'pg\\_temp%%'
ORDER BY 1
"""
RELATIONS = """
SELECT n.nspname, c.relname, quote_ident(c.relname), c.relkind, c.oid::bigint,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END,
       (SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
                          || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, ', ' ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT string_agg(pg_get_constraintdef(k.oid, true), ', ' ORDER BY k.conname)
          FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype IN ('p', 'u', 'c', 'f', 'x'))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname <> ALL(%(skip)s)
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp%%'
ORDER BY 1, 2
"""
READS = """
SELECT DISTINCT r.ev_class::bigint, d.refobjid::bigint
FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
 AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.ev_class
"""
INDEXES = """
SELECT x.indrelid::bigint, i.relname,
       (SELECT string_agg(pg_get_indexdef(x.indexrelid, k, true), ', ' ORDER BY k)
          FROM generate_series(1, x.indnkeyatts) k)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
ORDER BY 1, 2
"""
KINDS = {"r": "table", "p": "table", "v": "view", "m": "materialized-view"}
def read_catalog(connection, skip_schemas=()) -> LiveCatalog:
    """The catalog of the connected database: PostgreSQL's, or Materialize's (``inputs.live_materialize``), as
    the server says it is (Materialize lists its own ``mz_catalog`` schema)."""
    if server_of(connection) == "materialize":
        from . import live_materialize

        return live_materialize.read_catalog(connection, skip_schemas)
    return _read_postgres(connection, skip_schemas)


def server_of(connection) -> str:
    """``materialize`` or ``postgres``: what answers on this connection."""
    found = connection.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'mz_catalog'").fetchone()
    return "materialize" if found else "postgres"


def _read_postgres(connection, skip_schemas=()) -> LiveCatalog:
    """PostgreSQL's catalog, in one read-only transaction with an empty search path."""
    with connection.transaction():
        connection.execute("SET TRANSACTION READ ONLY")
        connection.execute("SET LOCAL search_path TO ''")  # pg_get_viewdef then qualifies every name
        database = connection.execute("SELECT current_database()").fetchone()[0]
        skip = {"skip": list(skip_schemas)}
        schemas = tuple(r[0] for r in connection.execute(SCHEMAS, skip).fetchall())
        rows = connection.execute(RELATIONS, skip).fetchall()
        reads = connection.execute(READS).fetchall()
        indexes = connection.execute(INDEXES).fetchall()
    reading, indexed = surroundings({r[4]: (r[0], r[1]) for r in rows}, reads,
                                    [(owner, name, key, None) for owner, name, key in indexes])
    objects = {}
    for schema, name, quoted, relkind, oid, view, columns, constraints in rows:
        kind = KINDS[relkind]
        definition = view if view is not None else ", ".join(p for p in (columns, constraints) if p)
        objects[(schema, name)] = LiveObject(schema, name, kind, (definition or "").strip(),
                                             tuple(sorted(reading.get(oid, ()))), tuple(sorted(indexed.get(oid, ()))),
                                             quoted)
    return LiveCatalog(database, schemas, objects)


@dataclass(frozen=True)
class Recorded:
    """An object as the deploy record has it: what the database held right after the last apply."""

    schema: str
    name: str | None               # None: a schema
    kind: str
    hash: str | None               # the project's hash (None: the project does not track it)
    definition_hash: str | None
    dependencies: tuple[tuple[str, str], ...] = ()
    indexes: tuple[tuple[str, str, str | None], ...] = ()
    definition: str | None = None  # as the database printed it (what drift shows)
    cluster: str | None = None


def recorded_state(catalog: LiveCatalog, hashes: dict[tuple[str, str], str | None]) -> list[Recorded]:
    """What apply records right after a deploy: every schema and object the database holds, each object with
    the hash the run's project gives it (``hashes``: (schema, name) -> hash)."""
    rows = [Recorded(schema, None, "schema", None, None) for schema in catalog.schemas]
    rows += [Recorded(o.schema, o.name, o.kind, hashes.get(key), o.definition_hash, o.dependencies, o.indexes,
                      o.definition, o.cluster) for key, o in sorted(catalog.objects.items())]
    return rows


def snapshot_document(catalog: LiveCatalog, record: list[Recorded] | None) -> dict:
    """The catalog as a snapshot document; hashes from the record where the definition is still the recorded
    one, else ``live:<hash of the definition>``."""
    recorded = {(r.schema, r.name): r for r in record or () if r.name is not None}
    objects = []
    for key, o in sorted(catalog.objects.items()):
        mine = recorded.get(key)
        if mine is not None and mine.kind == o.kind and mine.definition_hash == o.definition_hash:
            hash_ = mine.hash                     # as deployed: the project's hash
        elif mine is not None or record is None:
            hash_ = f"live:{o.definition_hash}"   # changed since the deploy (or nothing recorded)
        else:
            hash_ = None                          # not deployed by apply: made by hand, not tracked
        entry = {"database": catalog.database, "schema": o.schema, "name": o.name, "kind": o.kind,
                 "hash": hash_, **({"cluster": o.cluster} if o.cluster else {}), "sql": o.sql(),
                 "depends_on": [[catalog.database, s, n] for s, n in o.dependencies]}
        if o.indexes:
            entry["indexes"] = [{"name": name, "key": [key_], **({"cluster": cluster} if cluster else {})}
                                for name, key_, cluster in o.indexes]
        objects.append(entry)
    return {"objects": objects}


DRIFT_ASPECTS = ("schema", "object", "kind", "cluster", "definition", "dependencies", "indexes")


def drift(catalog: LiveCatalog, record: list[Recorded]) -> list[dict]:
    """Every difference between the deploy record and the database now, one row each: ``schema, name,
    aspect, recorded, live`` (a schema's rows have no name)."""
    found = []
    recorded_schemas = {r.schema for r in record if r.name is None}
    for schema in sorted(recorded_schemas | set(catalog.schemas)):
        if (schema in recorded_schemas) != (schema in catalog.schemas):
            found.append(_row(schema, None, "schema", schema in recorded_schemas, schema in catalog.schemas))
    recorded = {(r.schema, r.name): r for r in record if r.name is not None}
    for key in sorted(recorded.keys() | catalog.objects.keys()):
        mine, live = recorded.get(key), catalog.objects.get(key)
        if mine is None or live is None:
            found.append(_row(*key, "object", mine and mine.kind, live and live.kind))
        elif mine.kind != live.kind:
            found.append(_row(*key, "kind", mine.kind, live.kind))
        else:
            if mine.cluster != live.cluster:
                found.append(_row(*key, "cluster", mine.cluster, live.cluster))
            if (mine.definition != live.definition if mine.definition is not None
                    else mine.definition_hash != live.definition_hash):
                found.append(_row(*key, "definition", mine.definition or mine.definition_hash, live.definition))
            if mine.dependencies != live.dependencies:
                found.append(_row(*key, "dependencies", _names(mine.dependencies), _names(live.dependencies)))
            if mine.indexes != live.indexes:
                found.append(_row(*key, "indexes", _indexes(mine.indexes), _indexes(live.indexes)))
    return [{"database": catalog.database, **row} for row in found]


def drift_line(rows: list[dict], shown: int = 5) -> str:
    """The warning a run or a snapshot prints: how many differences, the first few."""
    parts = [f"{r['schema']}{'.' + r['name'] if r['name'] else ''} {r['aspect']} "
             f"({r['recorded'] or 'absent'} -> {r['live'] or 'absent'})" if r["aspect"] in ("schema", "object", "kind")
             else f"{r['schema']}.{r['name']} {r['aspect']}" for r in rows]
    more = f" (and {len(parts) - shown} more)" if len(parts) > shown else ""
    return (f"database {rows[0]['database']} differs from its deploy record in {counted(len(rows), 'place')}: "
            f"{'; '.join(parts[:shown])}{more}")


def _row(schema, name, aspect, recorded, live) -> dict:
    show = (lambda v: ("present" if v else None) if isinstance(v, bool) else v)  # noqa: E731
    return {"schema": schema, "name": name, "aspect": aspect, "recorded": show(recorded), "live": show(live)}


def _names(pairs) -> str | None:
    return ", ".join(f"{s}.{n}" for s, n in pairs) or None


def _indexes(triples) -> str | None:
    return ", ".join(f"{n} ({k})" + (f" in cluster {c}" if c else "") for n, k, c in triples) or None


def to_json(pairs) -> str:
    return json.dumps([list(p) for p in pairs])


def from_json(text: str | None) -> tuple:
    return tuple(tuple(p) for p in json.loads(text)) if text else ()
