"""An mz-deploy project folder as a snapshot document.

    models/<database>/<schema>/<object>.sql   one CREATE of the object (view, materialized view,
                                              sink, table, table from source, source, connection,
                                              secret), plus CREATE INDEX ... IN CLUSTER ... on it
    models/<database>/<schema>.sql            schema settings: SET api = stable makes every object
                                              of the schema a replacement object

Statements are read with the parser the plan uses (sqlglot's Materialize
dialect, extended in ``sql/materialize.py``): the object's kind, its
``IN CLUSTER``, its indexes and their clusters, and what its query reads
(qualified against its own database and schema). The statement hash is
taken over the normalised statement and its indexes (identifiers folded and
quoted, whitespace and comments gone), so reformatting a file or changing
the case of an unquoted name is not a change. A snapshot keeps an index's
name and cluster, not its key: an index on chosen columns is noted in a
warning, since a plan creates it as a default index.
"""

from __future__ import annotations

import logging
import os
import re

from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ...errors import InputError
from ...fingerprints import of_text
from ...sql.materialize import Index, MaterializeDeploy
from ...sql.statement import SqlError, created_kind, parse, parse_statements, show

QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""")  # split keeps the quoted parts
STABLE_API = re.compile(r"^\s*SET\s+api\s*=\s*'?stable'?\s*;?\s*$", re.IGNORECASE | re.MULTILINE)


def to_document(path: str) -> dict:
    models = os.path.join(path, "models")
    if not os.path.isdir(models):
        raise InputError(f"{path}: not an mz-deploy project (no models/ folder)")
    objects = []
    for database in _folders(models):
        for schema in _folders(os.path.join(models, database)):
            stable = _stable(os.path.join(models, database, f"{schema}.sql"))
            folder = os.path.join(models, database, schema)
            for file in sorted(f for f in os.listdir(folder) if f.endswith(".sql")):
                objects.append(_object(os.path.join(folder, file), (database, schema, file[:-4]), stable))
    return {"objects": objects}


def _folders(path: str) -> list[str]:
    return sorted(f for f in os.listdir(path) if os.path.isdir(os.path.join(path, f)) and not f.startswith("."))


def _stable(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8") as handle:
        return bool(STABLE_API.search(handle.read()))


def _object(file: str, key: tuple[str, str, str], replacement: bool) -> dict:
    with open(file, encoding="utf-8") as handle:
        text = handle.read()
    try:
        trees = parse_statements(text, "materialize")
    except SqlError as error:
        raise InputError(f"{file}: {error}") from None
    creates = [t for t in trees if not isinstance(t, Index)]
    if len(creates) != 1:
        raise InputError(f"{file}: expected one CREATE of {show(key)} (and its indexes), found {len(creates)} "
                         f"other statements")
    kind = created_kind(creates[0])
    if kind is None:
        raise InputError(f"{file}: cannot tell what this statement creates ({creates[0].sql()[:60]!r}...)")
    sql = _uncommented(creates[0]).sql(dialect=MaterializeDeploy)  # comments would reach connector options
    try:
        statement = parse(sql, "materialize", key, kind)
    except SqlError as error:
        raise InputError(f"{file}: {error}") from None
    indexes, normalised = [], []
    for tree in trees:
        if isinstance(tree, Index):
            tree = normalize_identifiers(tree.copy(), dialect=MaterializeDeploy)
            indexes.append(_index(tree, key, file))
            normalised.append(_canonical(tree))
    body = "\n".join([_canonical(statement.tree), *sorted(normalised)])
    entry = {"database": key[0], "schema": key[1], "name": key[2], "kind": kind,
             "hash": of_text(body), "cluster": statement.cluster,
             "replacement": replacement or None, "depends_on": [show(r) for r in statement.references],
             "indexes": indexes, "sql": sql}
    return {k: v for k, v in entry.items() if v not in (None, [])}


def _canonical(tree) -> str:
    """The statement as compared: no comments, every identifier quoted, the rest (keywords, connector
    options kept as text) in lower case with single spaces; quoted text untouched."""
    text = _uncommented(tree).sql(dialect=MaterializeDeploy, identify=True)
    return "".join(part if part[:1] in ("'", '"') else re.sub(r"\s+", " ", part.lower())
                   for part in QUOTED.split(text))


def _uncommented(tree):
    tree = tree.copy()
    for node in tree.walk():
        node.comments = None
    return tree


def _index(tree: Index, key: tuple[str, str, str], file: str) -> dict:
    """The index entry of a normalised ``CREATE INDEX`` on the file's own object."""
    table = tree.args["table"]
    on = (table.catalog or key[0], table.db or key[1], table.name)
    if on != key:
        raise InputError(f"{file}: an index on {show(on)}, not on {show(key)} (each file indexes its own object)")
    name = tree.this.name if tree.this is not None else f"{key[2]}_primary_idx"
    cluster = tree.args.get("cluster")
    if tree.expressions:
        logging.getLogger("dirtiness").warning(
            "%s: index %s keys on (%s); a snapshot keeps an index's name and cluster, not its key, so a plan "
            "creates it as a default index", file, name, ", ".join(e.sql() for e in tree.expressions))
    return {"name": name, "cluster": cluster.name if cluster is not None else None}
