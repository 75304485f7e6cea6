"""Where a benchmark writes its catalogs and outputs."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator


@contextlib.contextmanager
def work_folder(keep: str | None, prefix: str) -> Iterator[str]:
    """``keep`` (made if missing, left afterwards), or a temporary folder removed however the benchmark ends:
    a failed or interrupted run leaves nothing behind either."""
    if keep:
        os.makedirs(keep, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as work:
        yield work
