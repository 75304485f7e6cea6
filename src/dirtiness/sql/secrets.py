"""A secret's value never leaves its input: the job carries a placeholder, `apply` puts the value back.

A ``CREATE SECRET name AS <value>`` is read, whatever the input form, with
its value replaced by ``'dirtiness-secret:<file>'`` (``placeholder``): an
mz-deploy project's file names where the value is; a snapshot document's or
a table-form snapshot's secret is carried as ``CREATE SECRET <its name> AS
'dirtiness-secret:'`` (``masked_statement``), its value dropped as it is
read. That is what the snapshot's ``sql``, the facts tables, the plan's
statements, explain and the report hold, and an mz-deploy hash is taken
without the value at all (a changed value is mz-deploy's ``apply`` business,
not a deploy's). The other forms carry no SQL (dbt, Moose) or are never
given a value (a database's catalog does not show one). At apply time
``reveal`` puts the value back into the statement it executes, read from the
environment variable the operation names (``DIRTINESS_SECRET_<DB>_<SCHEMA>_<NAME>``)
or else from the project's file; a value found in neither stops apply before
it runs anything, with one line that names where it looked.
"""

from __future__ import annotations

import os
import re

from ..errors import InputError

MARK = "dirtiness-secret:"
HIDDEN = "'<secret>'"  # what the hash sees in place of any value
PLACEHOLDER = re.compile(r"'" + re.escape(MARK) + r"((?:[^']|'')*)'")
CREATE_SECRET = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*CREATE\s+SECRET\b", re.IGNORECASE | re.DOTALL)


def placeholder(file: str | None = None) -> str:
    """The SQL literal standing for the value of the secret defined in ``file`` (None: in no file the job
    knows; its value comes from the environment)."""
    return "'" + (MARK + (os.path.abspath(file) if file else "")).replace("'", "''") + "'"


def masked_statement(database: str, schema: str, name: str) -> str:
    """What a snapshot carries for a secret given with its statement: its name, and no value."""
    quoted = ".".join('"' + part.replace('"', '""') + '"' for part in (database, schema, name))
    return f"CREATE SECRET {quoted} AS {placeholder()}"


HIDDEN_VALUE = re.compile(r"^\s*CREATE\s+SECRET\s+.+?\s+AS\s+" + PLACEHOLDER.pattern + r"\s*;?\s*$",
                          re.IGNORECASE | re.DOTALL)


def value_hidden(statement: str) -> bool:
    """Whether a CREATE SECRET's value is already a placeholder (as an mz-deploy project's is read)."""
    return HIDDEN_VALUE.match(statement) is not None


# A CREATE SECRET's value where it sits in text that is not one statement the parser reads (dbt's Jinja code,
# its hooks): the value, up to the statement's end, quoted strings taken whole.
_VALUE_IN_TEXT = re.compile(r"(\bCREATE\s+SECRET\s+(?:IF\s+NOT\s+EXISTS\s+)?[^\s;]+\s+AS\s+)"
                            r"(?:'(?:[^']|'')*'|[^;'])+", re.IGNORECASE)


def values_hidden(text: str) -> str:
    """``text`` with the value of every CREATE SECRET in it replaced by what a hash sees (``HIDDEN``)."""
    return _VALUE_IN_TEXT.sub(lambda found: found.group(1) + HIDDEN, text)


def is_secret_text(text: str) -> bool:
    """Whether a file's text defines a secret (so a message about it must not quote it)."""
    return CREATE_SECRET.match(text) is not None


def env_name(database: str, schema: str, name: str) -> str:
    return "DIRTINESS_SECRET_" + "_".join(re.sub(r"[^A-Za-z0-9]", "_", p).upper() for p in (database, schema, name))


def value_in_file(file: str) -> str | None:
    """The value expression (``'...'``, ``decode(...)``) of the ``CREATE SECRET`` in ``file``, as written."""
    from .materialize import CatalogObject
    from .statement import SqlError, parse_statements

    try:
        with open(file, encoding="utf-8") as handle:
            trees = parse_statements(handle.read(), "materialize")
    except (OSError, UnicodeDecodeError, SqlError):
        return None
    for tree in trees:
        if isinstance(tree, CatalogObject) and tree.args.get("kind") == "SECRET":
            text = "".join(str(p.name) for p in tree.args.get("options") or []).strip()
            match = re.match(r"AS\s+(.+)$", text, re.IGNORECASE | re.DOTALL)
            return match.group(1).strip() if match else None
    return None


def reveal(statement: str, database: str, schema: str, name: str, environ=os.environ) -> str:
    """``statement`` with its secret's placeholder replaced by the value; ``InputError`` (never quoting a
    value) when neither the environment nor the file has one."""
    found = PLACEHOLDER.search(statement)
    if found is None:
        return statement
    variable = env_name(database, schema, name)
    if environ.get(variable) is not None:
        value = "'" + environ[variable].replace("'", "''") + "'"
    else:
        file = found.group(1).replace("''", "'")
        if not file:  # given in a snapshot, whose value was dropped as it was read
            raise InputError(f"secret {database}.{schema}.{name}: no value: set {variable} (the snapshot carries "
                             f"no secret's value)")
        value = value_in_file(file)
        if value is None:
            raise InputError(f"secret {database}.{schema}.{name}: no value: {variable} is not set and {file} "
                             f"holds no readable CREATE SECRET ... AS ...")
    return statement[:found.start()] + value + statement[found.end():]


def scrub_dsn(text: str, dsn: str) -> str:
    """``text`` without the connection string or its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(dsn).get("password")
    except Exception:  # noqa: BLE001 - a DSN psycopg cannot read fails at connect; scrubbed whole
        password = None
    for secret in (dsn, password):
        if secret:
            text = text.replace(secret, "***")
    return text
