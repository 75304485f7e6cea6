"""The run a run starts from: the latest succeeded run under the output root computed with the same rules,
configuration and version of dirtiness (its inputs are what may differ).

What such a run left (its units and their digests, ``changeset.units``) is
comparable with what this run computes; a run computed otherwise is not (the
same project can give other facts under other rules or another dialect). When
there is none, the reason is one line a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .run_reads import latest_of

# what must match, and how a run that differs is named in the reason
MATCHED = {"rules_fingerprint": "rule program", "config_fingerprint": "configuration",
           "version": "version of dirtiness"}


@dataclass(frozen=True)
class BaseRun:
    """The run a run starts from (``run_id``, its ``runs`` row), or why there is none (``why``)."""

    run_id: str | None = None
    why: str | None = None
    row: dict | None = field(default=None, compare=False)


def base_run(latest: dict | None, succeeded: Callable[[], list[dict]], wanted: dict[str, str],
             this_run: str | None = None) -> BaseRun:
    """The latest succeeded run other than ``this_run`` (a retry never starts from itself) whose ``MATCHED``
    values are ``wanted``'s. ``latest``: the latest succeeded run's ``runs`` row (None: there is none);
    ``succeeded()``: every succeeded run's row, read only when the latest one does not do."""
    if latest is not None and latest["run_id"] == this_run:
        latest = latest_of([r for r in succeeded() if r["run_id"] != this_run])
        if latest is None:
            return BaseRun(why=f"no succeeded run but {this_run} itself")
    if latest is None:
        return BaseRun(why="no succeeded run")
    if _matches(latest, wanted):
        return BaseRun(latest["run_id"], row=latest)
    matching = latest_of([r for r in succeeded() if _matches(r, wanted) and r["run_id"] != this_run])
    if matching:
        return BaseRun(matching["run_id"], row=matching)
    differs = [name for key, name in MATCHED.items() if latest.get(key) != wanted[key]]
    return BaseRun(why=f"no succeeded run with these rules, configuration and version of dirtiness: the latest, "
                       f"{latest['run_id']}, was computed with another {' and another '.join(differs)}")


def _matches(run: dict, wanted: dict[str, str]) -> bool:
    return all(run.get(key) == wanted[key] for key in MATCHED)
