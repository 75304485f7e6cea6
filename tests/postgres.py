"""A real PostgreSQL server for the tests: Debian's package, a temporary folder, a Unix socket only.

``make test`` and ``.ci/run`` install the package when it is missing. The
server is the tour's (``make postgres``: ``examples/postgres/local_server.py``)
in a temporary folder: it runs as a non-root user (``initdb`` refuses root:
as root, the ``postgres`` user the package creates), listens on no TCP port,
and is stopped at the end of the test session. Also here: a project deployed the
way a person would (each object's own SQL, in dependency order, its schema
on the search path), and a database's catalog read back for comparison.
"""

from __future__ import annotations

import sys
import tempfile

import psycopg

from dirtiness.config import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "examples" / "postgres"))
from local_server import PostgresServer as LocalServer  # noqa: E402  (the tour's server, `make postgres`)

RECORD_SCHEMA = "dirtiness"  # apply's deploy record (apply.record_schema): bookkeeping, not the project

CATALOG = """
SELECT n.nspname AS schema, c.relname AS name, c.relkind AS kind, c.oid::bigint AS oid,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS definition,
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'dirtiness')
  AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY 1, 2
"""
SCHEMAS = """
SELECT nspname FROM pg_namespace
WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'dirtiness') AND nspname NOT LIKE 'pg_toast%'
  AND nspname NOT LIKE 'pg_temp%' ORDER BY 1
"""


class PostgresServer(LocalServer):
    """The suite's server, in a temporary folder of its own (``examples/postgres/local_server.py``)."""

    def __init__(self) -> None:
        super().__init__(tempfile.mkdtemp(prefix="dirtiness-pg-"))

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.dsn(database), autocommit=True)

    def fresh_database(self, name: str) -> str:
        """An empty database called ``name`` (dropped first if it exists); its DSN."""
        with self.connect() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)


def deploy(dsn: str, document: dict) -> None:
    """Create every object of a snapshot with its own SQL, in the order listed (dependencies first), as a
    person would: its schema created if need be and put on the search path."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        for entry in document["objects"]:
            if not entry.get("sql"):
                continue
            connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{entry["schema"]}"')
            connection.execute(f'SET search_path TO "{entry["schema"]}"')
            connection.execute(entry["sql"])
            connection.execute("RESET search_path")


def catalog(dsn: str) -> dict:
    """Schemas, and every table, view and materialized view with its columns and definition (and oid)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        relations = connection.execute(CATALOG).fetchall()
        schemas = [r[0] for r in connection.execute(SCHEMAS).fetchall()]
    return {"schemas": schemas,
            "relations": {(r[0], r[1]): {"kind": r[2], "oid": r[3], "definition": r[4], "columns": r[5]}
                          for r in relations}}


def without_oids(state: dict) -> dict:
    return {"schemas": state["schemas"],
            "relations": {k: {f: v for f, v in r.items() if f != "oid"} for k, r in state["relations"].items()}}
