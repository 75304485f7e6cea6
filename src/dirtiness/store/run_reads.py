"""One run's rows, and the latest succeeded run, read with delta-rs at a cost the run history does not set.

Every table under an output root holds every run's rows, a file or a few per run. A pyarrow dataset
of a whole table opens and describes each file: measured at 3,000 runs, a second a table, and 15 s to
find the latest run in ``runs``. The Delta log's statistics (each file's min and max per column) say
which files can hold a run's rows, or the latest record, so only those are opened. A file without
statistics (written by an earlier version or another tool) is always read: the same answer, slower.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

RUN_ID = "run_id"
SUCCEEDED = [("status", "=", "succeeded")]
LATEST_FILES = 8  # the runs files read first for the latest succeeded run: those that finished last


def is_table(path: str) -> bool:
    from deltalake import DeltaTable

    # a local path that is no folder is no table (delta-rs raises there instead of saying so)
    return ("://" in path or os.path.isdir(path)) and DeltaTable.is_deltatable(path)


def run_dataset(path: str, run_id: str) -> pads.Dataset | None:
    """The table at ``path`` as a dataset of the files that may hold ``run_id``'s rows; None where there is
    no Delta table."""
    from deltalake import DeltaTable

    if not is_table(path):
        return None
    return DeltaTable(path).to_pyarrow_dataset(file_pruning_predicate=[(RUN_ID, "=", run_id)])


def latest_succeeded(runs_path: str) -> dict | None:
    """The ``runs`` row of the latest succeeded run (latest ``finished_at``, then greatest run id), or None.

    First only the files whose latest ``finished_at`` is among the ``LATEST_FILES`` latest: a row found
    there at or after the earliest of those times is later than every row of the other files (their
    statistics, cut to the millisecond below, are earlier still). Otherwise every succeeded run's file."""
    from deltalake import DeltaTable

    table = DeltaTable(runs_path)
    since = _nth_latest_finish(table, LATEST_FILES)
    if since is not None:
        found = _succeeded_rows(table, SUCCEEDED + [("finished_at", ">=", since)])
        latest = latest_of(found)
        if latest is not None and latest["finished_at"] >= since:
            return latest
    return latest_of(_succeeded_rows(table, SUCCEEDED))


def succeeded_runs(runs_path: str) -> list[dict]:
    """Every succeeded run's ``runs`` row."""
    from deltalake import DeltaTable

    return _succeeded_rows(DeltaTable(runs_path), SUCCEEDED)


def latest_of(rows: list[dict]) -> dict | None:
    """The latest succeeded run among ``runs`` rows."""
    done = [r for r in rows if r["status"] == "succeeded"]
    return max(done, key=lambda r: (r["finished_at"], r[RUN_ID])) if done else None


def _succeeded_rows(table, predicate: list) -> list[dict]:
    dataset = table.to_pyarrow_dataset(file_pruning_predicate=predicate)
    return dataset.to_table(filter=pc.field("status") == "succeeded").to_pylist()


def _nth_latest_finish(table, n: int):
    """The ``n``-th latest of the files' latest ``finished_at`` among files that may hold a succeeded run;
    None when fewer than ``n`` files say (then every file is read anyway)."""
    files = pa.table(table.get_add_actions(flatten=True))
    wanted = {"min.status", "max.status", "max.finished_at"}
    if not wanted <= set(files.column_names):
        return None
    low, high = files.column("min.status"), files.column("max.status")
    may_succeed = pc.and_kleene(pc.fill_null(pc.less_equal(low, "succeeded"), True),
                                pc.fill_null(pc.greater_equal(high, "succeeded"), True))
    finishes = pc.drop_null(files.column("max.finished_at").filter(may_succeed))
    if len(finishes) < n:
        return None
    return sorted(finishes.to_pylist(), reverse=True)[n - 1]
