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
the case of an unquoted name is not a change. An index keeps its key
(``ON obj (a, lower(b))``) as the plan creates it again. A file's unit tests
(``EXECUTE UNIT TEST ... FOR ...``) belong to its object: counted, never
part of its hash, never deployed.

What mz-deploy refuses is refused here, before Spark starts, naming the file
(and line): a reference to an object no file defines (outside the dialect's
system schemas, which are the database's catalogs, and
``external_databases``), and a schema mixing storage objects (tables,
sources, sinks, connections, secrets) with views and materialized views.

    clusters/<cluster>.sql                    CREATE CLUSTER with its options and GRANTs: what a
                                              staged or added cluster is created with
"""

from __future__ import annotations

import os
import re

from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ...errors import InputError
from ...fingerprints import of_text
from ...model import CLUSTER_NAME
from ...sql import secrets
from ...sql.materialize import ClusterDefinition, Index, MaterializeDeploy
from ...sql.statement import SqlError, created_kind, parse, parse_statements, show

QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""")  # split keeps the quoted parts
STABLE_API = re.compile(r"^\s*SET\s+api\s*=\s*'?stable'?\s*;?\s*$", re.IGNORECASE | re.MULTILINE)


STORAGE = ("table", "table-from-source", "source", "sink", "secret", "connection")  # never beside computation


def to_document(path: str, system_schemas=(), external_databases=()) -> dict:
    models = os.path.join(path, "models")
    if not os.path.isdir(models):
        raise InputError(f"{path}: not an mz-deploy project (no models/ folder)")
    objects, files, unit_tests = [], {}, {}
    for database in _folders(models):
        for schema in _folders(os.path.join(models, database)):
            stable = _stable(os.path.join(models, database, f"{schema}.sql"))
            folder = os.path.join(models, database, schema)
            for file in sorted(f for f in os.listdir(folder) if f.endswith(".sql")):
                key = (database, schema, file[:-4])
                files[key] = os.path.join(folder, file)
                entry, tests = _object(files[key], key, stable, tuple(system_schemas))
                objects.append(entry)
                if tests:
                    unit_tests[show(key)] = tests
    _check_schemas(objects, files)
    _check_references(objects, files, set(external_databases))
    return {"objects": objects, "unit_tests": unit_tests, "clusters": _clusters(os.path.join(path, "clusters"))}


IDENT = r'("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
GRANT_ON_CLUSTER = re.compile(r"^(GRANT\s+.+?\s+ON\s+CLUSTER\s+)" + IDENT + r"(\s+TO\s+.+)$", re.IGNORECASE | re.DOTALL)


def _clusters(folder: str) -> dict[str, str]:
    """``clusters/<name>.sql``: each cluster's definition as the plan creates it (its options as written, in
    any form Materialize takes, and its grants, which a swap would otherwise leave behind), with
    ``CLUSTER_NAME`` where the name goes (a staged copy's or its own). Comments (a licence header, notes
    among the options) and comments on clusters are not carried."""
    if not os.path.isdir(folder):
        return {}
    clusters = {}
    for file in sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".sql")):
        try:
            trees = parse_statements(_read(file), "materialize")
        except SqlError as error:
            raise InputError(f"{file}: {error}") from None
        name, options, grants = None, None, []
        for tree in trees:
            sql = _uncommented(tree).sql(dialect=MaterializeDeploy).strip()
            if isinstance(tree, ClusterDefinition) and name is None:
                name = normalize_identifiers(tree.copy(), dialect=MaterializeDeploy).this.name
                options = tree.args["options"].name if tree.args.get("options") else ""
            elif granted := GRANT_ON_CLUSTER.match(sql):
                grants.append((_identifier(granted.group(2)), granted.group(1) + CLUSTER_NAME + granted.group(3)))
            elif not re.match(r"COMMENT\s+ON\s+CLUSTER\b", sql, re.IGNORECASE):
                raise InputError(f"{file}: expected one CREATE CLUSTER and its GRANT ... ON CLUSTER statements, "
                                 f"found {sql[:60]!r}")
        if name is None:
            raise InputError(f"{file}: no CREATE CLUSTER in a cluster's file")
        others = sorted({g for g, _ in grants} - {name})
        if others:
            raise InputError(f"{file}: a grant on cluster {others[0]}, not on {name} (each file defines one cluster)")
        if name in clusters:
            raise InputError(f"{file}: cluster {name} is defined twice")
        clusters[name] = "; ".join([f"CREATE CLUSTER {CLUSTER_NAME} {options}".rstrip(), *(g for _, g in grants)])
    return clusters


def _identifier(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def _check_schemas(objects: list[dict], files: dict) -> None:
    """mz-deploy's rule: a schema holds storage objects or views and materialized views, not both (a swap of
    the schema would take its tables with it)."""
    by_schema: dict[tuple, dict[bool, list]] = {}
    for o in objects:
        by_schema.setdefault((o["database"], o["schema"]), {}).setdefault(o["kind"] in STORAGE, []).append(o)
    for (database, schema), groups in sorted(by_schema.items()):
        if len(groups) == 2:
            storage, computation = groups[True][0], groups[False][0]
            raise InputError(
                f"{os.path.dirname(files[(database, schema, storage['name'])])}: schema {show((database, schema))} "
                f"mixes storage objects ({storage['name']}, a {storage['kind']}) with views and materialized views "
                f"({computation['name']}, a {computation['kind']}): mz-deploy swaps such a schema whole; put them "
                f"in separate schemas")


def _check_references(objects: list[dict], files: dict, external: set) -> None:
    """Every relation an object reads is one the project defines (or lives in an external database)."""
    defined = {show((o["database"], o["schema"], o["name"])) for o in objects}
    for o in objects:
        key = (o["database"], o["schema"], o["name"])
        for reference in o.get("depends_on", ()):
            if reference not in defined and reference.split(".")[0] not in external:
                file = files[key]
                raise InputError(f"{file}:{_line_of(file, key, reference)}: {show(key)} reads {reference}, which no "
                                 f"file of the project defines (models/<database>/<schema>/<name>.sql; a database "
                                 f"the project does not own goes in external_databases)")


def _folders(path: str) -> list[str]:
    return sorted(f for f in os.listdir(path) if os.path.isdir(os.path.join(path, f)) and not f.startswith("."))


def _stable(path: str) -> bool:
    return os.path.isfile(path) and bool(STABLE_API.search(_read(path)))


def _object(file: str, key: tuple[str, str, str], replacement: bool, system_schemas: tuple) -> tuple[dict, int]:
    """The file's object as a snapshot entry, and how many unit tests it carries."""
    text = _read(file)
    try:
        trees = parse_statements(text, "materialize")
    except SqlError as error:
        raise InputError(f"{file}: {_unquoted(error, text)}") from None
    tests = [t for t in trees if _is_unit_test(t)]
    creates = [t for t in trees if not isinstance(t, Index) and not _is_unit_test(t)]
    if len(creates) != 1:
        raise InputError(f"{file}: expected one CREATE of {show(key)} (and its indexes), found {len(creates)} "
                         f"other statements")
    kind = created_kind(creates[0])
    if kind is None:
        raise InputError(f"{file}: cannot tell what this statement creates ({creates[0].sql()[:60]!r}...)")
    create = _uncommented(creates[0])  # comments would reach connector options
    if kind == "secret":  # its value stays in its file (sql/secrets.py)
        create.set("options", [exp.var(f"AS {secrets.placeholder(file)}")])
    sql = create.sql(dialect=MaterializeDeploy)
    try:
        statement = parse(sql, "materialize", key, kind, system_schemas)
    except SqlError as error:
        raise InputError(f"{file}: {_unquoted(error, text)}") from None
    indexes, normalised = [], []
    for tree in trees:
        if isinstance(tree, Index):
            tree = normalize_identifiers(tree.copy(), dialect=MaterializeDeploy)
            indexes.append(_index(tree, key, file))
            normalised.append(_canonical(tree))
    hashed = statement.tree
    if kind == "secret":  # the hash sees no value, not even the placeholder's path
        hashed = hashed.copy()
        hashed.set("options", [exp.var(f"AS {secrets.HIDDEN}")])
    body = "\n".join([_canonical(hashed), *sorted(normalised)])
    entry = {"database": key[0], "schema": key[1], "name": key[2], "kind": kind,
             "hash": of_text(body), "cluster": statement.cluster,
             "replacement": replacement or None, "depends_on": [show(r) for r in statement.references],
             "indexes": indexes, "sql": sql}
    return {k: v for k, v in entry.items() if v not in (None, [])}, len(tests)


def _unquoted(error: SqlError, text: str) -> str:
    """A parse error about a secret's file says where, never what (the text near it may be the value)."""
    if not secrets.is_secret_text(text):
        return str(error)
    where = re.match(r"line [^,:]+, column [^,:]+", str(error))
    return f"{where.group(0) if where else 'somewhere'}: cannot read this CREATE SECRET (its text is not shown)"


def _read(file: str) -> str:
    try:
        with open(file, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as error:
        raise InputError(f"{file}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except OSError as error:
        raise InputError(f"{file}: cannot read: {error.strerror}") from None


def _is_unit_test(tree) -> bool:
    """mz-deploy's ``EXECUTE UNIT TEST name FOR object MOCK ... EXPECTED ...`` (sqlglot keeps it as a command)."""
    return (isinstance(tree, exp.Command) and str(tree.this).upper() == "EXECUTE"
            and re.match(r"\s*UNIT\s+TEST\b", tree.expression.name if tree.expression else "", re.IGNORECASE) is not None)


def _line_of(file: str, key: tuple[str, str, str], reference: str) -> int | str:
    """The line of ``file`` where its statement names ``reference`` (as written: one, two or three parts)."""
    for tree in parse_statements(_read(file), "materialize"):
        if isinstance(tree, Index) or _is_unit_test(tree):
            continue
        for table in normalize_identifiers(tree, dialect=MaterializeDeploy).find_all(exp.Table):
            parts = (table.catalog or key[0], table.db or key[1], table.name)
            if show(parts) == reference and table.this is not None:
                return table.this.meta.get("line", "?")
    return "?"


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
    key = [e.sql(dialect=MaterializeDeploy, identify=True) for e in tree.expressions]  # kept exactly
    entry = {"name": name, "cluster": cluster.name if cluster is not None else None, "key": key or None}
    return {k: v for k, v in entry.items() if v is not None}
