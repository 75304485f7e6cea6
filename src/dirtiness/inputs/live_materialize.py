"""Materialize's catalog read over the PostgreSQL protocol, into the same form as PostgreSQL's (``inputs.live``).

Written from Materialize's documented system catalog and **never run against
a live Materialize here** (none can be started on these machines): the
conversion from catalog rows is tested, the queries are not. What its
system tables give:

- the connected database's user schemas (``mz_schemas``) and objects
  (``mz_objects``: tables, tables from sources, sources, views, materialized
  views, sinks, connections, secrets), each with its cluster (materialized
  views, sources, sinks);
- views' and materialized views' definitions as Materialize prints them
  (``mz_views.definition``, ``mz_materialized_views.definition``: every name
  resolved and qualified), so the snapshot carries their SQL; the other
  kinds carry none (a table's columns, a source's options and a secret's
  value are not read: their drift is whether they exist, their kind and
  cluster);
- dependencies from ``mz_internal.mz_object_dependencies`` (an internal
  table: Materialize may change it between versions);
- indexes (``mz_indexes``) with their cluster and key expressions
  (``mz_index_columns``, a column's name or the expression).

Catalog tables are read without a transaction: Materialize keeps a
transaction's reads in one time domain, which the system schemas span.
"""

from __future__ import annotations

from .live_catalog import LiveCatalog, LiveObject, surroundings

SCHEMAS = """
SELECT s.name FROM mz_catalog.mz_schemas s JOIN mz_catalog.mz_databases d ON d.id = s.database_id
WHERE d.name = current_database() AND s.id LIKE 'u%%' AND s.name <> ALL(%(skip)s) ORDER BY 1
"""
OBJECTS = """
SELECT o.id, s.name, o.name, o.type, t.source_id IS NOT NULL,
       COALESCE(v.definition, mv.definition), c.name
FROM mz_catalog.mz_objects o
JOIN mz_catalog.mz_schemas s ON s.id = o.schema_id
JOIN mz_catalog.mz_databases d ON d.id = s.database_id
LEFT JOIN mz_catalog.mz_tables t ON t.id = o.id
LEFT JOIN mz_catalog.mz_views v ON v.id = o.id
LEFT JOIN mz_catalog.mz_materialized_views mv ON mv.id = o.id
LEFT JOIN mz_catalog.mz_sources so ON so.id = o.id
LEFT JOIN mz_catalog.mz_sinks sk ON sk.id = o.id
LEFT JOIN mz_catalog.mz_clusters c ON c.id = COALESCE(mv.cluster_id, so.cluster_id, sk.cluster_id)
WHERE d.name = current_database() AND o.id LIKE 'u%%' AND s.name <> ALL(%(skip)s)
  AND o.type IN ('table', 'source', 'view', 'materialized-view', 'sink', 'connection', 'secret')
  AND (so.type IS NULL OR so.type NOT IN ('subsource', 'progress'))
ORDER BY 2, 3
"""
DEPENDENCIES = """
SELECT object_id, referenced_object_id FROM mz_internal.mz_object_dependencies
WHERE object_id LIKE 'u%' AND referenced_object_id LIKE 'u%'
"""
INDEXES = """
SELECT i.on_id, i.name, c.name,
       (SELECT string_agg(COALESCE(ic.on_expression, col.name), ', ' ORDER BY ic.index_position)
          FROM mz_catalog.mz_index_columns ic
          LEFT JOIN mz_catalog.mz_columns col ON col.id = i.on_id AND col.position = ic.on_position
         WHERE ic.index_id = i.id)
FROM mz_catalog.mz_indexes i JOIN mz_catalog.mz_clusters c ON c.id = i.cluster_id
WHERE i.id LIKE 'u%'
"""


def read_catalog(connection, skip_schemas=()) -> LiveCatalog:
    """The connected Materialize database's catalog (see the module's note: not run against Materialize)."""
    skip = {"skip": list(skip_schemas)}
    database = connection.execute("SELECT current_database()").fetchone()[0]
    return catalog_from_rows(database, [r[0] for r in connection.execute(SCHEMAS, skip).fetchall()],
                             connection.execute(OBJECTS, skip).fetchall(),
                             connection.execute(DEPENDENCIES).fetchall(), connection.execute(INDEXES).fetchall())


def catalog_from_rows(database: str, schemas: list[str], objects: list[tuple], dependencies: list[tuple],
                      indexes: list[tuple]) -> LiveCatalog:
    """The catalog from the rows of the four queries above (dependencies and indexes on objects outside the
    connected database's user schemas are left out)."""
    reading, indexed = surroundings({row[0]: (row[1], row[2]) for row in objects}, dependencies,
                                    [(owner, name, key, cluster) for owner, name, cluster, key in indexes])
    found = {}
    for object_id, schema, name, kind, from_source, definition, cluster in objects:
        kind = "table-from-source" if kind == "table" and from_source else kind
        found[(schema, name)] = LiveObject(schema, name, kind, (definition or "").strip(),
                                           tuple(sorted(reading.get(object_id, ()))),
                                           tuple(sorted(indexed.get(object_id, ()))), _quoted(name), cluster)
    return LiveCatalog(database, tuple(sorted(schemas)), found)


def _quoted(name: str) -> str:
    """A name as Materialize would read it back: plain lower-case names as they are, others double-quoted."""
    plain = name.isidentifier() and name == name.lower() and name.isascii()
    return name if plain else '"' + name.replace('"', '""') + '"'
