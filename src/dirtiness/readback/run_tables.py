"""The rows of one run, read back from its Delta tables with delta-rs: no Spark, no JVM.

``explain`` and ``report`` answer in a second or two because of this, however
many runs the root holds: only the files whose statistics in the Delta log
allow the run's rows are opened (``store.run_reads``).
"""

from __future__ import annotations

import os
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..errors import InputError
from ..store.run_reads import is_table, latest_succeeded, run_dataset


class RunTables:
    """One run under an output root: ``RunTables.open(out)`` is the latest succeeded run."""

    def __init__(self, out: str, run: dict) -> None:
        self.out = out
        self.run = run
        self.run_id = run["run_id"]
        self._datasets: dict[str, pads.Dataset | None] = {}

    @classmethod
    def open(cls, out: str, run_id: str | None = None, succeeded_only: bool = True) -> "RunTables":
        runs_path = os.path.join(out, "runs")
        if not is_table(runs_path):
            what = "no such folder" if not os.path.isdir(out) else "no runs table here"
            raise InputError(f"{out}: {what} (expected the --out folder of `dirtiness run`)")
        if run_id is None:
            run = latest_succeeded(runs_path)
            if run is None:
                raise InputError(f"{out}: no succeeded run yet")
        else:
            rows = run_dataset(runs_path, run_id).to_table(filter=pc.field("run_id") == run_id).to_pylist()
            if not rows:
                raise InputError(f"run {run_id}: not found under {out}")
            run = rows[0]
            if succeeded_only and run["status"] != "succeeded":
                reason = f": {run['message']}" if run.get("message") else ""
                raise InputError(f"run {run_id} under {out} is {run['status']}, not succeeded"
                                 f" (its tables are incomplete){reason}")
        return cls(out, run)

    def has(self, table: str) -> bool:
        return self._dataset(table) is not None

    def columns(self, table: str) -> list[str]:
        dataset = self._dataset(table)
        return dataset.schema.names if dataset is not None else []

    def read(self, table: str, columns: list[str] | None = None, condition: pc.Expression | None = None,
             **where) -> pa.Table:
        """This run's rows of ``table``; ``where`` keeps rows whose column equals a value (or is in a list)."""
        dataset = self._dataset(table)
        if dataset is None:
            raise InputError(f"{os.path.join(self.out, table)}: no such table (run {self.run_id})")
        conditions = [pc.field("run_id") == self.run_id] + ([condition] if condition is not None else [])
        for column, value in where.items():
            if isinstance(value, (list, tuple, set)):
                kind = dataset.schema.field(column).type
                conditions.append(pc.field(column).isin(pa.array(sorted(value), type=kind)))
            else:
                conditions.append(pc.field(column) == value)
        if columns is not None:
            columns = [c for c in columns if c in dataset.schema.names]
        return dataset.to_table(columns=columns, filter=reduce(lambda a, b: a & b, conditions))

    def rows(self, table: str, **where) -> list[dict]:
        return self.read(table, **where).drop_columns(["run_id"]).to_pylist()

    def _dataset(self, table: str) -> pads.Dataset | None:
        if table not in self._datasets:
            self._datasets[table] = run_dataset(os.path.join(self.out, table), self.run_id)
        return self._datasets[table]
