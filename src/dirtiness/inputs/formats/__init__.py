"""The artefacts users already have, turned into the job's snapshot document (``{"objects": [...]}``).

Each format is one module with ``to_document(path) -> dict``; the job then
validates that document exactly as it validates a hand-written snapshot.
``auto`` tells the formats apart by content, never by file name alone.
"""

from __future__ import annotations

import os
import zlib

from ...errors import InputError
from .json_file import is_gzip, load_json, open_text

FORMATS = ("auto", "snapshot", "dbt", "mz-deploy", "moose")


def detect(path: str) -> str:
    """The format of ``path``: ``dbt`` (a manifest), ``mz-deploy`` (a project folder with ``models/``),
    ``moose`` (an infrastructure map), or ``snapshot`` (this job's own document or table folders)."""
    if os.path.isdir(path):
        return "mz-deploy" if os.path.isdir(os.path.join(path, "models")) else "snapshot"
    compressed = is_gzip(path)
    if not compressed and not path.endswith((".json", ".JSON")):
        return "snapshot"  # YAML: only this job's own documents are YAML
    try:
        with open_text(path, compressed) as handle:
            head = handle.read(1 << 16)
    except (OSError, UnicodeDecodeError, EOFError, zlib.error):
        return "dbt" if compressed else "snapshot"  # the reader of that form says what is wrong with it
    if '"dbt_schema_version"' in head:
        return "dbt"
    document = load_json(path) if '"tables"' in head or '"views"' in head else None
    if isinstance(document, dict) and "tables" in document and "views" in document and "objects" not in document:
        return "moose"
    return "snapshot"


def to_document(path: str, format: str = "auto", system_schemas=(), external_databases=()) -> dict | None:
    """The snapshot document of the artefact at ``path``; ``None`` when it is already a snapshot. A project
    folder's references are checked here: to its own objects, or into ``system_schemas`` (dropped: the
    database's catalogs) or ``external_databases``."""
    if format not in FORMATS:
        raise InputError(f"{path}: unknown format {format!r} (expected one of {', '.join(FORMATS)})")
    found = detect(path) if format == "auto" else format
    if found == "snapshot":
        return None
    if found == "dbt":
        from . import dbt

        return dbt.to_document(path)
    if found == "mz-deploy":
        from . import mz_deploy

        return mz_deploy.to_document(path, system_schemas, external_databases)
    from . import moose

    return moose.to_document(path)
