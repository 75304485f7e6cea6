"""Fingerprints of a run's inputs: tie a plan to the exact states it was computed from.

A snapshot file is hashed by its bytes; a snapshot folder by the relative
path, size and bytes of every file below it (sorted, so the walk order does
not matter); a tool's artefact (a dbt manifest, an mz-deploy folder, a Moose
map) by the snapshot rows it converts to. The rule program is hashed by its text, the configuration by
its canonical JSON together with the flags that change the result.
"""

from __future__ import annotations

import hashlib
import json
import os

_CHUNK = 1 << 20


def of_path(path: str) -> str:
    digest = hashlib.sha256()
    if os.path.isfile(path):
        _add_file(digest, path)
    else:
        for root, folders, files in os.walk(path):
            folders.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                relative = os.path.relpath(full, path).replace(os.sep, "/")
                digest.update(f"{relative}\0{os.path.getsize(full)}\0".encode())
                _add_file(digest, full)
    return "sha256:" + digest.hexdigest()


def of_document(document) -> str:
    """A snapshot converted from a tool's artefact, by its rows: a dbt manifest rewritten with a new
    ``generated_at`` and nothing else is the same input."""
    rows = {"objects": document.objects, "dependencies": document.dependencies, "indexes": document.indexes}
    if getattr(document, "clusters", None):  # cluster definitions make the plan's statements
        rows["clusters"] = document.clusters
    return of_text(json.dumps(rows, sort_keys=True, default=str))


def of_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def of_json(value) -> str:
    """A value by its compact canonical JSON (keys sorted): the statement hash of a tool's definition."""
    return of_text(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))


def of_settings(config: dict, **flags) -> str:
    """The effective configuration plus the run's result-changing flags, as canonical JSON."""
    return of_text(json.dumps({"config": config, "flags": flags}, sort_keys=True, default=str))


def _add_file(digest, path: str) -> None:
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
