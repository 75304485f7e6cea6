"""A dbt ``manifest.json`` (schema v7 to v12, dbt 1.3 to 1.12) as a snapshot document.

The JSON is read directly: dbt's published parser classes reject any field
newer than their release, so every dbt upgrade would break this job.

- Objects: models, seeds and snapshots (``nodes``), and sources (a source
  naming a relation the project builds, such as a seed, is that node). Tests,
  analyses, operations and other nodes that are not relations are left out.
  Ephemeral models are not relations either: their readers depend on what
  they read, transitively.
- Name: ``database.schema.alias`` (``name`` when there is no alias); an
  adapter without databases (Spark) gets the database ``default``.
- Kind, from what dropping the relation does: ``view`` is a view; ``table``
  and ``materialized_view`` are rebuilt from their inputs (kind
  ``materialized-view``: recreatable); ``incremental`` models, snapshots and
  unknown materializations hold rows a rebuild cannot give back (``table``:
  a drop is destructive); seeds are tables; sources are sources (never
  dropped). dbt-materialize's ``source``, ``source_table`` and ``sink`` are
  its own kinds; its ``table`` creates a materialized view.
- Hash: SHA-256 of the model's language, code (``raw_code``; ``raw_sql``
  before v7) and unrendered configuration, as dbt's ``state:modified``
  compares body and configs. Not dbt's ``checksum``: dbt 1.12 computes it
  differently, so the same code would count as changed across the upgrade.
  Seeds have no code: their hash is dbt's checksum of the file with their
  unrendered configuration (see the README for what that means across dbt
  versions). Sources carry no hash: they are not deployed by the project.
- dbt-materialize's ``config.cluster`` and ``config.indexes`` give the
  cluster and the indexes.
- ``tool_id``: the node's ``unique_id``, for ``dirtiness select``.
"""

from __future__ import annotations

import logging
import re

from ...errors import InputError
from ...fingerprints import of_json
from ...sql import secrets
from .json_file import load_json

RELATION_NODES = ("model", "seed", "snapshot")
KIND_OF = {
    "view": "view",
    "table": "materialized-view",          # rebuilt from its inputs (dbt-materialize: a materialized view)
    "materialized_view": "materialized-view",
    "dynamic_table": "materialized-view",  # Snowflake: refreshed from its inputs
    "incremental": "table",                # keeps rows a rebuild cannot give back
    "snapshot": "table",
    "seed": "table",
    "source": "source",                    # dbt-materialize
    "source_table": "table-from-source",
    "sink": "sink",
}
DEFAULT_DATABASE = "default"  # adapters without databases (Spark)
NEWEST_KNOWN = 12  # manifest schema version; a newer one is read the same way, with a warning


def to_document(path: str) -> dict:
    manifest = load_json(path)
    version = (manifest.get("metadata") or {}).get("dbt_schema_version", "") if isinstance(manifest, dict) else ""
    if not version or not isinstance(manifest.get("nodes"), dict):
        raise InputError(f"{path}: not a dbt manifest (no metadata.dbt_schema_version or no nodes)")
    number = re.search(r"/v(\d+)\.json$", str(version))
    if number and int(number.group(1)) > NEWEST_KNOWN:
        logging.getLogger("dirtiness").warning(
            "%s: dbt manifest schema v%s is newer than v%d, the newest this job knows: read the same way; "
            "check `dirtiness snapshot` on it", path, number.group(1), NEWEST_KNOWN)
    nodes = {**manifest["nodes"], **(manifest.get("sources") or {})}
    relations = {uid: node for uid, node in nodes.items() if _is_relation(node)}
    keys = {uid: _key(node, path) for uid, node in relations.items()}
    built = {keys[uid] for uid, node in relations.items() if node["resource_type"] != "source"}
    objects = []
    for uid in sorted(relations):
        if relations[uid]["resource_type"] == "source" and keys[uid] in built:
            continue  # a source over what the project itself builds (a seed): the node is the object
        node = relations[uid]
        config = node.get("config") or {}
        entry = {
            "database": keys[uid][0], "schema": keys[uid][1], "name": keys[uid][2],
            "kind": _kind(node),
            "hash": _hash(node),
            "cluster": config.get("cluster"),
            "depends_on": sorted({".".join(keys[d]) for d in _reads(uid, nodes, relations)}),
            "indexes": _indexes(node, keys[uid][2]),
            "tool_id": uid,
        }
        objects.append({k: v for k, v in entry.items() if v not in (None, [])})
    return {"objects": objects}


def _is_relation(node: dict) -> bool:
    kind = node.get("resource_type")
    if kind == "source":
        return True
    if kind not in RELATION_NODES:
        return False
    return (node.get("config") or {}).get("materialized") != "ephemeral"


def _key(node: dict, path: str) -> tuple[str, str, str]:
    name = node.get("identifier") if node.get("resource_type") == "source" else node.get("alias")
    key = (node.get("database") or DEFAULT_DATABASE, node.get("schema"), name or node.get("name"))
    if not all(isinstance(part, str) and part for part in key):
        raise InputError(f"{path}: {node.get('unique_id')}: no relation name (database, schema, alias)")
    return key


def _kind(node: dict) -> str:
    if node["resource_type"] in ("source", "seed", "snapshot"):
        return KIND_OF[node["resource_type"]]
    return KIND_OF.get((node.get("config") or {}).get("materialized"), "table")  # unknown: keep its rows


def _hash(node: dict) -> str | None:
    if node["resource_type"] == "source":
        return None
    if node["resource_type"] == "seed":
        body = {"checksum": node.get("checksum"), "config": node.get("unrendered_config") or {}}
    else:
        code = node.get("raw_code", node.get("raw_sql"))
        body = {"language": node.get("language") or "sql", "code": code,
                "config": node.get("unrendered_config") or {}}
    return of_json(_without_secret_values(body))


def _without_secret_values(value):
    """The hashed body with every CREATE SECRET's value hidden (in code or a hook): a secret's value is not the
    model's, and a hash must not depend on it."""
    if isinstance(value, str):
        return secrets.values_hidden(value)
    if isinstance(value, dict):
        return {k: _without_secret_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secret_values(v) for v in value]
    return value


def _reads(uid: str, nodes: dict, relations: dict) -> set[str]:
    """The relations ``uid`` reads, looking through ephemeral models (which are inlined, not built)."""
    found, seen, todo = set(), {uid}, list((nodes[uid].get("depends_on") or {}).get("nodes") or [])
    while todo:
        parent = todo.pop()
        if parent in seen or parent not in nodes:
            continue
        seen.add(parent)
        if parent in relations:
            found.add(parent)
        elif (nodes[parent].get("config") or {}).get("materialized") == "ephemeral":
            todo.extend((nodes[parent].get("depends_on") or {}).get("nodes") or [])
    return found


def _indexes(node: dict, relation: str) -> list[dict]:
    """dbt-materialize's ``indexes``: named as the adapter names them when the config does not."""
    indexes = []
    for index in (node.get("config") or {}).get("indexes") or []:
        if not isinstance(index, dict):
            continue
        name = index.get("name")
        if not name:
            columns = index.get("columns") or []
            name = f"{relation}_{'_'.join(columns)}_idx" if columns else f"{relation}_primary_idx"
        indexes.append({"name": name, "cluster": index.get("cluster") or (node.get("config") or {}).get("cluster")})
    return indexes
