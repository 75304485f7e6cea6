"""The run a run starts from: the latest succeeded run under the output root computed with the same rules,
configuration and version of dirtiness (its inputs are what may differ).

What such a run left (its units and their digests, ``changeset.units``) is
comparable with what this run computes; a run computed otherwise is not (the
same project can give other facts under other rules or another dialect). When
there is none, the reason is one line a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .run_reads import latest_of

# what must match, and how a run that differs is named in the reason
MATCHED = {"rules_fingerprint": "rule program", "config_fingerprint": "configuration",
           "version": "version of dirtiness"}


@dataclass(frozen=True)
class BaseRun:
    """The run a run starts from (``run_id``), or why there is none (``why``)."""

    run_id: str | None = None
    why: str | None = None


def base_run(latest: dict | None, succeeded: Callable[[], list[dict]], wanted: dict[str, str]) -> BaseRun:
    """The latest succeeded run whose ``MATCHED`` values are ``wanted``'s. ``latest``: the latest succeeded
    run's ``runs`` row (None: there is none); ``succeeded()``: every succeeded run's row, read only when the
    latest one does not match."""
    if latest is None:
        return BaseRun(why="no succeeded run")
    if _matches(latest, wanted):
        return BaseRun(latest["run_id"])
    matching = latest_of([r for r in succeeded() if _matches(r, wanted)])
    if matching:
        return BaseRun(matching["run_id"])
    differs = [name for key, name in MATCHED.items() if latest.get(key) != wanted[key]]
    return BaseRun(why=f"no succeeded run with these rules, configuration and version of dirtiness: the latest, "
                       f"{latest['run_id']}, was computed with another {' and another '.join(differs)}")


def _matches(run: dict, wanted: dict[str, str]) -> bool:
    return all(run.get(key) == wanted[key] for key in MATCHED)
