"""One object's ``CREATE`` statement, parsed with sqlglot: what it reads, where it runs, how to rewrite it.

A statement is parsed in the configured dialect, its identifiers folded as
the database folds them (unquoted names are lower case in PostgreSQL and
Materialize), and every relation it reads qualified against the object's own
database and schema, so no statement depends on a search path. The plan then
renders it under another name (a staging schema), with some references
pointing at staging copies and its cluster swapped for a staging cluster;
generated text quotes every identifier.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.scope import traverse_scope

from .materialize import (
    CatalogObject,
    InCluster,
    MaterializeDeploy,
    Replacement,
    ReplacementFor,
)

Key = tuple[str, str, str]

DIALECTS = {"materialize": MaterializeDeploy, "postgres": Postgres}
CATALOG_KINDS = {"SINK": "sink", "SOURCE": "source", "CONNECTION": "connection", "SECRET": "secret",
                 "TABLE": "table-from-source"}
RUNS_ON_CLUSTER = ("materialized-view", "sink", "source")  # kinds whose statement takes IN CLUSTER

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings: reported as errors


class SqlError(ValueError):
    """The statement cannot be used: the message says where and why."""


@dataclass(frozen=True)
class Statement:
    tree: exp.Expr
    dialect: str
    key: Key
    kind: str
    references: tuple[Key, ...]  # qualified, sorted, without duplicates
    cluster: str | None          # the IN CLUSTER of the statement, if any


def parse(sql: str, dialect: str, key: Key, kind: str, system_schemas=()) -> Statement:
    """The statement of object ``key`` (of ``kind``); ``SqlError`` if it is not one CREATE of that object.
    What it reads in ``system_schemas`` (the database's catalogs) is not among its references."""
    reader = DIALECTS[dialect]
    trees = parse_statements(sql, dialect)
    if len(trees) != 1:
        raise SqlError(f"expected one CREATE statement, found {len(trees)} statements")
    tree = normalize_identifiers(trees[0], dialect=reader)
    created = created_kind(tree)
    if created is None:
        text = tree.sql(reader)[:60] if not isinstance(tree, exp.Command) else f"{tree.this} {tree.expression}"[:60]
        raise SqlError(f"line 1: the {dialect} dialect cannot parse this statement ({text!r}...)")
    if created != kind:
        raise SqlError(f"the statement creates a {created}, but the object is a {kind}")
    name = _name_table(tree)
    _qualify(name, key)
    if _key(name) != key:
        raise SqlError(f"the statement creates {show(_key(name))}, not {show(key)}")
    tables = _reference_tables(tree)
    for table in tables:
        _qualify(table, key)
    references = tuple(sorted({_key(t) for t in tables if _key(t)[1] not in system_schemas} - {key}))
    cluster = _cluster_node(tree)
    return Statement(tree=tree, dialect=dialect, key=key, kind=kind, references=references,
                     cluster=cluster.name if cluster is not None else None)


def parse_statements(sql: str, dialect: str) -> list[exp.Expr]:
    """Every statement of ``sql``, parsed; ``SqlError`` saying where the text cannot be read."""
    try:
        return [t for t in sqlglot.parse(sql, read=DIALECTS[dialect]) if t is not None]
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        description = str(first.get("description", error)).split(" <Token")[0]
        highlight = first.get("highlight") or ""
        if highlight and description.endswith(" but got"):
            description += f" {highlight!r}"
        column = first.get("col", 0) - len(highlight) + 1 if highlight else first.get("col", "?")  # where it starts
        raise SqlError(f"line {first.get('line', '?')}, column {column}: {description}") from None
    except TokenError as error:
        at = min(error.end if error.end is not None else len(sql), len(sql))
        line, column = sql.count("\n", 0, at) + 1, at - (sql.rfind("\n", 0, at) + 1) + 1
        near = sql[max(0, at - 20):at + 1].replace("\n", " ")
        raise SqlError(f"line {line}, column {column}: cannot tokenize near {near!r} "
                       f"(an unterminated string or quoted name?)") from None
    except SqlglotError as error:
        raise SqlError(str(error).splitlines()[0]) from None


def render(statement: Statement, *, name: Key | None = None, references: dict[Key, Key] | None = None,
           cluster: str | None = None, replacement_for: Key | None = None) -> str:
    """The statement's text, every identifier quoted.

    ``name``: create it under this name instead; ``references``: read these
    objects under other names; ``cluster``: run on this cluster (added when
    the statement names none and its kind runs on one); ``replacement_for``:
    a Materialize replacement of that production materialized view.
    """
    tree = statement.tree.copy()
    if name is not None:
        _set_key(_name_table(tree), name)
    references = references or {}
    for table in _reference_tables(tree):
        target = references.get(_key(table))
        if target is not None:
            _set_key(table, target)
    if cluster is not None:
        node = _cluster_node(tree)
        if node is not None:
            node.replace(exp.to_identifier(cluster))
        elif statement.kind in RUNS_ON_CLUSTER and statement.dialect == "materialize":
            _add_cluster(tree, cluster)
    if replacement_for is not None:
        if statement.kind != "materialized-view" or statement.dialect != "materialize":
            raise SqlError(f"{show(statement.key)}: only a Materialize materialized view has replacements")
        properties = tree.args["properties"]
        properties.set("expressions", [Replacement(), ReplacementFor(this=_table(replacement_for)),
                                       *properties.expressions])
    return tree.sql(dialect=DIALECTS[statement.dialect], identify=True)


def show(key: Key) -> str:
    return ".".join(key)


# --- reading the tree ----------------------------------------------------------


def created_kind(tree: exp.Expr) -> str | None:
    """The kind of object a parsed statement creates (``view``, ``sink``, ...), or ``None``."""
    if isinstance(tree, CatalogObject):
        return CATALOG_KINDS.get(tree.args["kind"])
    if not isinstance(tree, exp.Create):
        return None
    kind = str(tree.args.get("kind") or "").upper()
    if kind == "TABLE":
        return "table" if tree.expression is None else None
    if kind != "VIEW" or not isinstance(tree.expression, exp.Query):
        return None
    properties = tree.args.get("properties")
    materialized = properties is not None and any(isinstance(p, exp.MaterializedProperty)
                                                  for p in properties.expressions)
    return "materialized-view" if materialized else "view"


def _name_table(tree: exp.Expr) -> exp.Table:
    this = tree.this
    return this.this if isinstance(this, exp.Schema) else this


def _reference_tables(tree: exp.Expr) -> list[exp.Table]:
    """The table nodes naming objects the statement reads (not CTEs, not table functions)."""
    if isinstance(tree, exp.Create) and isinstance(tree.expression, exp.Query):
        tables = []
        for scope in traverse_scope(tree.expression):
            tables += [s for s in scope.sources.values()
                       if isinstance(s, exp.Table) and isinstance(s.this, exp.Identifier)]
        return list({id(t): t for t in tables}.values())
    name = _name_table(tree)
    return [t for t in tree.find_all(exp.Table) if t is not name and isinstance(t.this, exp.Identifier)]


def _cluster_node(tree: exp.Expr) -> exp.Identifier | None:
    if isinstance(tree, CatalogObject):
        return tree.args.get("cluster")
    properties = tree.args.get("properties")
    found = [p for p in (properties.expressions if properties else []) if isinstance(p, InCluster)]
    return found[0].this if found else None


def _add_cluster(tree: exp.Expr, cluster: str) -> None:
    if isinstance(tree, CatalogObject):
        tree.set("cluster", exp.to_identifier(cluster))
        return
    properties = tree.args.get("properties") or exp.Properties(expressions=[])
    properties.set("expressions", [*properties.expressions, InCluster(this=exp.to_identifier(cluster))])
    tree.set("properties", properties)


def _key(table: exp.Table) -> Key:
    return (table.catalog, table.db, table.name)


def _qualify(table: exp.Table, key: Key) -> None:
    if not table.args.get("db"):
        table.set("db", exp.to_identifier(key[1]))
    if not table.args.get("catalog"):
        table.set("catalog", exp.to_identifier(key[0]))


def _set_key(table: exp.Table, key: Key) -> None:
    for part, value in zip(("catalog", "db", "this"), key):
        table.set(part, exp.to_identifier(value))


def _table(key: Key) -> exp.Table:
    return exp.Table(catalog=exp.to_identifier(key[0]), db=exp.to_identifier(key[1]),
                     this=exp.to_identifier(key[2]))


def render_row(sql: str | None, kind: str, key: Key, target_schema: str, references, cluster: str | None,
               staged_cluster: str | None, replacing: bool, dialect: str,
               verbatim_kinds=()) -> tuple[str | None, bool, str | None]:
    """One plan row's statement, inside a Spark task: (statement, verbatim, error).

    ``references``: (database, schema, name, target schema) of the objects
    read under another schema; ``cluster``: the object's cluster, added when
    the statement names none; ``staged_cluster``: run there instead;
    ``replacing``: a replacement of the object itself, created under
    ``target_schema``. A statement the dialect cannot parse is carried
    verbatim if its kind allows it, and only where nothing in it must change.
    """
    if sql is None:
        return (None, False, None)
    target = (key[0], target_schema, key[2])
    moved = {(r[0], r[1], r[2]): (r[0], r[3], r[2]) for r in references or ()}
    try:
        statement = parse(sql, dialect, key, kind)
    except SqlError as error:
        if kind not in verbatim_kinds:
            return (None, False, f"{show(key)}: {error}")
        if target != key or moved or replacing or staged_cluster is not None:
            return (None, False, f"{show(key)}: cannot stage or rewrite a statement carried verbatim ({error})")
        return (sql, True, None)
    try:
        text = render(statement, name=target, references=moved, cluster=staged_cluster or cluster,
                      replacement_for=key if replacing else None)
    except SqlError as error:
        return (None, False, str(error))
    return (text, False, None)
