"""One database's catalog as ``inputs.live`` (PostgreSQL) and ``inputs.live_materialize`` read it: the shape
both readers give, below them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

KEYWORDS = {"table": "TABLE", "view": "VIEW", "materialized-view": "MATERIALIZED VIEW"}


@dataclass(frozen=True)
class LiveObject:
    """One relation as the database holds it."""

    schema: str
    name: str
    kind: str                                     # table | view | materialized-view
    definition: str                               # pg_get_viewdef; a table's columns and constraints
    dependencies: tuple[tuple[str, str], ...] = ()  # (schema, name) of what it reads, sorted
    indexes: tuple[tuple[str, str, str | None], ...] = ()  # (index name, its key expressions, cluster), sorted
    quoted: str = ""                                # its name as quote_ident writes it
    cluster: str | None = None                      # Materialize: the cluster it runs on

    @property
    def definition_hash(self) -> str:
        return hashlib.sha256(f"{self.kind}\0{self.cluster or ''}\0{self.definition}".encode()).hexdigest()[:32]

    def sql(self) -> str | None:
        """A statement that creates it again (what a snapshot carries); None where the catalog gives no
        definition (Materialize's tables, sources, sinks, connections, secrets)."""
        if self.kind == "table" and self.cluster is None and self.definition:
            return f"CREATE TABLE {self.quoted or self.name} ({self.definition})"
        if self.kind not in ("view", "materialized-view"):
            return None
        where = f" IN CLUSTER {self.cluster}" if self.cluster else ""
        return (f"CREATE {KEYWORDS[self.kind]} {self.quoted or self.name}{where} AS "
                f"{self.definition.strip().rstrip(';')}")


@dataclass
class LiveCatalog:
    database: str
    schemas: tuple[str, ...]
    objects: dict[tuple[str, str], LiveObject] = field(default_factory=dict)  # (schema, name) -> object


def surroundings(names: dict, reads, indexes) -> tuple[dict, dict]:
    """By object id: the (schema, name) of what it reads among ``names`` (id -> (schema, name)), and its
    indexes (owner id, index name, key, cluster rows) as (name, key, cluster)."""
    reading: dict = {}
    for reader, read in reads:
        if reader in names and read in names:
            reading.setdefault(reader, set()).add(names[read])
    indexed: dict = {}
    for owner, name, key, cluster in indexes:
        indexed.setdefault(owner, []).append((name, key or "", cluster))
    return reading, indexed
