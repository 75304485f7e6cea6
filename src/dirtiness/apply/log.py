"""``apply_log``: every operation's outcome, as a Delta table beside the run's other tables.

One row per event, appended with delta-rs (no Spark): ``started`` before an
operation runs (with the database transaction that holds it, where the
dialect has one), then ``succeeded``, ``failed`` or ``rolled back``. The
latest row of a ``(run_id, seq)`` is that operation's state; a ``started``
row with nothing after it is an operation an earlier apply did not see
finish.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..store.run_reads import run_dataset

APPLY_LOG = pa.schema([
    pa.field("run_id", pa.string()),
    pa.field("seq", pa.int32()),
    pa.field("status", pa.string()),      # started | succeeded | failed | rolled back
    pa.field("started_at", pa.timestamp("us", tz="UTC")),
    pa.field("finished_at", pa.timestamp("us", tz="UTC")),
    pa.field("message", pa.string()),
    pa.field("phase", pa.string()),
    pa.field("step", pa.int32()),
    pa.field("attempt", pa.string()),     # the apply invocation that wrote the row
    pa.field("transaction", pa.string()),  # the database transaction id, where the dialect has transactions
])

log = logging.getLogger(__name__)

# Set when an apply creates the log (a table's own setting, changed by its owner, stays). Every commit reads
# the log's folder, so a commit costs more the more commits the folder holds (measured on a local disk: 28 ms
# at 1,000, 49 ms at 3,000); Delta's default keeps commits 30 days, some 14,000 for an hourly apply of 20
# operations. With a week, Delta drops older commits at each checkpoint (every 100 commits). A week outlasts
# any one apply, whose open table must still find the commits made since it last wrote.
LOG_TABLE_PROPERTIES = {"delta.logRetentionDuration": "interval 7 days"}


@dataclass
class Event:
    seq: int
    status: str
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    message: str | None = None
    phase: str | None = None
    step: int | None = None
    transaction: str | None = None


class ApplyLog:
    """The log of one apply. Operations' outcomes wait for the commit of the next operations' start
    (``finished``): each is durable before anything after it runs, as if committed on its own, in half the
    commits (each commit lists the log's folder, so on a local disk it costs more the more commits there are)."""

    def __init__(self, out: str, run_id: str, attempt: str) -> None:
        self.path = os.path.join(out, "apply_log")
        self.run_id, self.attempt = run_id, attempt
        self._table = None  # the log as this apply last wrote it
        self._finished: list[Event] = []  # outcomes not committed yet

    def states(self) -> dict[int, dict]:
        """The latest row of each operation of this run that has one."""
        dataset = run_dataset(self.path, self.run_id)
        if dataset is None:
            return {}
        table = dataset.to_table(filter=pc.field("run_id") == self.run_id)
        latest: dict[int, dict] = {}
        for row in table.to_pylist():
            key = (row["finished_at"] or row["started_at"], _RANK[row["status"]])
            if row["seq"] not in latest or key >= latest[row["seq"]]["_key"]:
                latest[row["seq"]] = {**row, "_key": key}
        return latest

    def finished(self, events: list[Event]) -> None:
        """Outcomes committed with the next ``write``, or by ``flush``: call one of them before anything else
        happens to the database."""
        self._finished += events

    def flush(self) -> None:
        self.write([])

    def write(self, events: list[Event]) -> None:
        """One Delta commit for all of ``events``, after the outcomes still waiting."""
        from deltalake import DeltaTable, write_deltalake

        events, self._finished = self._finished + events, []
        if not events:
            return
        rows = pa.Table.from_pylist([{"run_id": self.run_id, "attempt": self.attempt, **e.__dict__} for e in events],
                                    schema=APPLY_LOG)
        if self._table is None:  # creates the table with its properties, or appends to it
            write_deltalake(self.path, rows, mode="append", configuration=LOG_TABLE_PROPERTIES)
            self._table = DeltaTable(self.path)
        else:  # the open table reads only the commits since its last one: half the cost of a write by path
            write_deltalake(self._table, rows, mode="append")

    def compact(self) -> None:
        """The many one-commit files of an apply rewritten as one: reading the log costs a file each, so
        without this every apply would read the log more slowly than the last (1,000 files: 2 s, 1: 0.06 s).
        Then the files compactions replaced more than a week ago (the table's deleted-file retention) are
        deleted, so the folder holds a week of them, not every one since the first apply. Housekeeping: a
        failure (another apply compacting at the same time) is logged, not raised."""
        from deltalake import DeltaTable

        self.flush()
        try:
            if DeltaTable.is_deltatable(self.path):
                table = DeltaTable(self.path)
                table.optimize.compact()
                table.vacuum(dry_run=False, full=True)  # every unreferenced file, not only those the log still
                # lists: a checkpoint drops a replaced file from the log once its week is over
        except Exception as error:  # noqa: BLE001 - the log is complete either way
            first = str(error).splitlines()[0] if str(error) else error
            log.warning("apply_log not compacted or not vacuumed: %s", first)


# A later state wins over an earlier one written at the same instant.
_RANK = {"started": 0, "rolled back": 1, "failed": 1, "succeeded": 2}
