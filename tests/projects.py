"""Random PostgreSQL projects with random edits, for the property test of plans applied to a real database.

A project (its own database) has tables in ``raw`` and views and
materialized views in two to four other schemas, reading one or two earlier
objects, across schemas or not (same-schema references unqualified, so the
planner's qualification is exercised). Some objects are not hash-tracked,
some tables are not even listed in the deployed state (managed elsewhere,
as deploy records do), some materialized views are replacement MVs, and
dependencies are declared or left for the SQL to say. The new project
changes statements, rewires readers, deletes and adds objects (also in a
brand-new schema and a new table), turns a view into a materialized view or
back, and may force a schema.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass, field

SCHEMAS = ("core", "mart", "api", "rpt")


@dataclass
class Spec:
    schema: str
    name: str
    kind: str              # table | view | materialized-view
    order: int             # reads only objects of a lower order: no cycles
    reads: list = field(default_factory=list)  # (schema, name)
    shift: int = 0         # changes the statement when edited
    tracked: bool = True   # has a hash
    listed: bool = True    # in the deployed state's record
    replacement: bool = False
    declared: bool = True  # depends_on given (else inferred from the SQL)

    def sql(self) -> str:
        if self.kind == "table":
            return f"CREATE TABLE {self.name} (id integer PRIMARY KEY, v integer, ok boolean, day date)"
        keyword = "MATERIALIZED VIEW" if self.kind == "materialized-view" else "VIEW"
        first = self._ref(self.reads[0])
        join = f" JOIN {self._ref(self.reads[1])} b ON a.id = b.id" if len(self.reads) > 1 else ""
        return (f"CREATE {keyword} {self.name} AS SELECT a.id, a.v + {self.shift} AS v, a.ok, a.day "
                f"FROM {first} a{join} WHERE a.v > {self.shift % 7}")

    def _ref(self, read) -> str:
        schema, name = read
        return name if schema == self.schema and self.order % 2 else f"{schema}.{name}"


@dataclass
class Project:
    database: str
    old: dict[tuple, Spec]
    new: dict[tuple, Spec]
    forced: list[str]

    def document(self, which: str, deployed: bool = False) -> dict:
        """The old or new snapshot; ``deployed``: every object the database holds, listed or not."""
        specs = self.old if which == "old" else self.new
        return {"objects": [self._entry(s) for s in sorted(specs.values(), key=lambda s: s.order)
                            if deployed or which == "new" or s.listed]}

    def _entry(self, spec: Spec) -> dict:
        sql = spec.sql()
        entry = {"database": self.database, "schema": spec.schema, "name": spec.name, "kind": spec.kind,
                 "hash": "sha256:" + hashlib.sha256(sql.encode()).hexdigest()[:16] if spec.tracked else None,
                 "replacement": spec.replacement, "sql": sql}
        if spec.declared:
            entry["depends_on"] = [[self.database, s, n] for s, n in spec.reads]
        return entry


def random_project(rng: random.Random, database: str) -> Project:
    schemas = rng.sample(SCHEMAS, rng.randint(2, 4))
    specs: dict[tuple, Spec] = {}
    for i in range(rng.randint(2, 3)):
        listed = rng.random() < 0.7
        spec = Spec("raw", f"t{i}", "table", order=i, tracked=listed and rng.random() < 0.8, listed=listed)
        specs[("raw", spec.name)] = spec
    for i in range(rng.randint(5, 10)):
        kind = rng.choice(("view", "materialized-view"))
        spec = Spec(rng.choice(schemas), f"o{i}", kind, order=10 + i, reads=_reads(rng, specs),
                    shift=rng.randint(0, 50), tracked=rng.random() < 0.85,
                    replacement=kind == "materialized-view" and rng.random() < 0.35, declared=rng.random() < 0.6)
        specs[(spec.schema, spec.name)] = spec
    new = copy.deepcopy(specs)
    derived = [k for k, s in new.items() if s.kind != "table" and s.tracked]
    for key in rng.sample(derived, min(len(derived), rng.randint(1, 2))):  # changed statements
        new[key].shift += rng.randint(1, 9)
    if derived and rng.random() < 0.25:  # a view becomes a materialized view, or the other way round
        flipped = new[rng.choice(derived)]
        flipped.kind = "view" if flipped.kind == "materialized-view" else "materialized-view"
        flipped.replacement = False
    if derived and rng.random() < 0.5:  # a rewired reader
        key = rng.choice(derived)
        below = {k: s for k, s in new.items() if s.order < new[key].order}
        new[key].reads = _reads(rng, below)
    if derived and rng.random() < 0.6:  # a deleted object: its tracked readers read a table instead
        key = rng.choice(derived)
        readers = [s for s in new.values() if key in s.reads]
        if all(r.tracked for r in readers):
            del new[key]
            for reader in readers:
                reader.reads = [r if r != key else ("raw", "t0") for r in reader.reads]
                reader.reads = list(dict.fromkeys(reader.reads))
    if rng.random() < 0.25:  # a new table, and a view reading it
        new[("raw", "t9")] = Spec("raw", "t9", "table", order=9)
    for i in range(rng.randint(0, 2)):  # added objects, perhaps in a brand-new schema
        schema = "fresh" if rng.random() < 0.3 else rng.choice(schemas)
        pool = {k: s for k, s in new.items()}
        spec = Spec(schema, f"n{i}", rng.choice(("view", "materialized-view")), order=40 + i,
                    reads=_reads(rng, pool), shift=rng.randint(0, 50), declared=rng.random() < 0.5)
        new[(schema, spec.name)] = spec
    forced = []
    if rng.random() < 0.3:
        present = sorted({s.schema for s in new.values() if s.schema != "raw"})
        forced.append(f"{database}.{rng.choice(present)}")
    return Project(database, specs, new, forced)


def _reads(rng: random.Random, pool: dict[tuple, Spec]) -> list:
    candidates = sorted(pool)
    return list(dict.fromkeys(rng.sample(candidates, min(len(candidates), rng.randint(1, 2)))))
