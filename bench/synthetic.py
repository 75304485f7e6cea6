"""Realistic synthetic catalogs for the benchmark, written as table-form snapshots (parquet).

Shape: tenants of ~2,000 objects, each with a few clusters of its own; objects
in ~30 dependency layers (sources and tables at the bottom, views and
materialized views above, sinks on top), ~2 dependencies each on the few
layers below (now and then across tenants), schemas of ~30 objects grouped by
layer, indexes on a fifth of the views and materialized views. The new
snapshot changes a small fraction of statement hashes and adds and deletes a
few objects.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

TENANT_SIZE = 2000
LAYERS = 30
SCHEMA_SIZE = 30
CLUSTERS_PER_TENANT = 3


def generate(objects: int, seed: int, changed: float) -> tuple[dict, dict]:
    """(old, new) as {table: columns dict}."""
    rng = random.Random(seed)
    tenants = max(1, objects // TENANT_SIZE)
    rows = []
    by_tenant_layer: dict[tuple[int, int], list[int]] = {}
    for i in range(objects):
        tenant = i % tenants
        layer = min(LAYERS - 1, int(rng.random() ** 0.8 * LAYERS))
        kind = _kind(rng, layer)
        peers = by_tenant_layer.setdefault((tenant, layer), [])
        rows.append({
            "database": f"tenant{tenant:04d}",
            "schema": f"l{layer:02d}_s{len(peers) // SCHEMA_SIZE}",
            "name": f"obj{i:07d}",
            "kind": kind,
            "hash": f"h{rng.getrandbits(40):010x}",
            "cluster": (f"t{tenant:04d}_c{rng.randrange(CLUSTERS_PER_TENANT)}"
                        if kind in ("materialized-view", "source", "sink") else None),
            "replacement": kind == "materialized-view" and rng.random() < 0.02,
            "sql": None,
            "_layer": layer, "_tenant": tenant,
        })
        peers.append(i)
    deps, indexes = [], []
    for i, row in enumerate(rows):
        layer, tenant = row["_layer"], row["_tenant"]
        if layer == 0:
            continue
        for _ in range(_poisson2(rng)):
            dep_tenant = tenant if rng.random() > 0.02 else rng.randrange(tenants)
            candidates = None
            for back in range(1, 4):
                candidates = by_tenant_layer.get((dep_tenant, max(0, layer - rng.randint(1, back))))
                if candidates:
                    break
            if candidates:
                target = rows[rng.choice(candidates)]
                if target is not row:
                    deps.append((row["database"], row["schema"], row["name"],
                                 target["database"], target["schema"], target["name"]))
        if row["kind"] in ("view", "materialized-view") and rng.random() < 0.2:
            indexes.append((row["database"], row["schema"], row["name"], f"{row['name']}_idx",
                            f"t{tenant:04d}_c{rng.randrange(CLUSTERS_PER_TENANT)}"))
    deps = sorted(set(deps))
    old = _tables(rows, deps, indexes)

    new_rows = []
    deleted = set()
    for row in rows:
        roll = rng.random()
        if roll < changed * 0.05:
            deleted.add((row["database"], row["schema"], row["name"]))
            continue
        if roll < changed:
            row = {**row, "hash": row["hash"] + "x"}
        new_rows.append(row)
    added = max(1, int(objects * changed * 0.05))
    for j in range(added):
        anchor = rows[rng.randrange(len(rows))]
        new_rows.append({**anchor, "name": f"added{j:06d}", "hash": f"h-added-{j}"})
    new_deps = [d for d in deps if d[:3] not in deleted and d[3:] not in deleted]
    new_indexes = [x for x in indexes if x[:3] not in deleted]
    return old, _tables(new_rows, new_deps, new_indexes)


def _kind(rng: random.Random, layer: int) -> str:
    if layer == 0:
        return rng.choice(["source", "table", "table-from-source"])
    if layer >= LAYERS - 2 and rng.random() < 0.3:
        return "sink"
    return "materialized-view" if rng.random() < 0.4 else "view"


def _poisson2(rng: random.Random) -> int:
    """Dependencies per object: 1 to 3, mean 2."""
    return rng.choice([1, 2, 2, 3])


SCHEMAS = {
    "objects": pa.schema([*(pa.field(c, pa.string()) for c in ("database", "schema", "name", "kind", "hash", "cluster")),
                          pa.field("replacement", pa.bool_()), pa.field("sql", pa.string())]),
    "dependencies": pa.schema([pa.field(c, pa.string()) for c in ("database", "schema", "name", "dep_database",
                                                                  "dep_schema", "dep_name")]),
    "indexes": pa.schema([pa.field(c, pa.string()) for c in ("database", "schema", "name", "index_name", "cluster")]),
}


def _tables(rows: list[dict], deps: list[tuple], indexes: list[tuple]) -> dict:
    return tables_of({"objects": rows,
                      "dependencies": [dict(zip(SCHEMAS["dependencies"].names, d)) for d in deps],
                      "indexes": [dict(zip(SCHEMAS["indexes"].names, x)) for x in indexes]})


def tables_of(rows: dict[str, list[dict]]) -> dict:
    """Each snapshot table's rows (dicts by column; other keys ignored) as an Arrow table."""
    return {name: pa.Table.from_pylist([{c: r[c] for c in schema.names} for r in rows[name]], schema=schema)
            for name, schema in SCHEMAS.items()}


def write_snapshot(tables: dict, folder: str) -> str:
    for name, table in tables.items():
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        pq.write_table(table, os.path.join(folder, name, "part-0.parquet"))
    return folder
