"""A deployed project read from the database it is deployed to (``snapshot --from-database``,
``run --old-from-database``): its catalog as a snapshot document, and the drift from the deploy record.

The connection string is never printed: errors are scrubbed of it, and the
snapshot is named after the database (``database flipper``), not the DSN.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import InputError
from ..sql.secrets import scrub_dsn
from .live import drift, read_catalog, server_of, snapshot_document
from .snapshot import Document, parse_document

DSN_VARIABLE = "DIRTINESS_DSN"


@dataclass
class DatabaseSnapshot:
    database: str
    document: dict                    # the snapshot, as `dirtiness snapshot` writes it
    drift: list[dict] = field(default_factory=list)  # differences from the deploy record (none without one)
    recorded_by: str | None = None    # the run that last recorded the deployed state (None: no record)

    @property
    def path(self) -> str:
        return f"database {self.database}"

    def parsed(self) -> Document:
        return parse_document(self.document, self.path)


def dsn_from(given: str | None, flag: str) -> str:
    """The DSN given with the flag, else ``$DIRTINESS_DSN``."""
    dsn = given or os.environ.get(DSN_VARIABLE)
    if not dsn:
        raise InputError(f"{flag} needs a database: a libpq connection string or URL, or the {DSN_VARIABLE} "
                         f"environment variable")
    return dsn


def read_database(dsn: str, record_schema: str) -> DatabaseSnapshot:
    """The connected database's catalog as a snapshot, hashes mapped through its deploy record."""
    import psycopg

    from ..apply import record

    try:
        with psycopg.connect(dsn, autocommit=True, application_name="dirtiness snapshot") as connection:
            catalog = read_catalog(connection, skip_schemas=(record_schema,))
            state, last = None, None
            present = None if server_of(connection) == "materialize" else connection.execute(  # no state there
                "SELECT to_regclass(%s)", (f'"{record_schema}".{record.STATE}',)).fetchone()[0]
            if present is not None:
                rows = connection.execute(record.state_select(record_schema)).fetchall()
                state = [record.state_from_row(r) for r in rows] if rows else None
                last = rows[0][0] if rows else None
    except psycopg.Error as error:
        text = " ".join(str(error).split()) or type(error).__name__
        raise InputError(f"cannot read the database's catalog: {scrub_dsn(text, dsn)[:300]}") from None
    return DatabaseSnapshot(catalog.database, snapshot_document(catalog, state),
                            drift(catalog, state) if state is not None else [], last)
