"""The output root, checked before any work: a run that cannot write learns it in its first second."""

from __future__ import annotations

import os
import tempfile

from ..errors import InputError


def check_writable(out: str) -> None:
    """A local output root exists as a folder, or can be created, and takes a file (a probe, created and
    removed in the folder itself or the nearest one above it that exists: nothing is left behind).
    An object store's root (``s3a://``, ``abfss://``, ...) is its session's business."""
    if "://" in out and not out.startswith("file://"):
        return
    path = os.path.abspath(out[len("file://"):] if out.startswith("file://") else out)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"--out {out}: not a folder (a file of that name is in the way)")
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise InputError(f"--out {out}: cannot be created: {existing} is a file, not a folder")
    try:
        handle, probe = tempfile.mkstemp(prefix=".dirtiness-probe-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise InputError(f"--out {out}: cannot write in {existing} ({error.strerror})") from None
