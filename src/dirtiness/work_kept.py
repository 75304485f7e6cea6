"""Work a run keeps for later runs into the same ``--out`` (``inputs.analysed_before``, ``plan.rendered_before``):
rows keyed by a hash of everything they depend on, the versions that made them included, read back only from
succeeded runs."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def installed(package: str) -> str:
    """A package's version, as keys of kept work record it."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def succeeded_rows(table: DataFrame, runs: DataFrame, key: str, columns: list[str]) -> DataFrame:
    """The rows of ``table`` that succeeded runs wrote, each key's from one run (the least run id): a failed or
    killed run's rows are never read."""
    succeeded = runs.where(F.col("status") == "succeeded").select("run_id").distinct()
    rows = table.join(succeeded, "run_id")
    first = rows.groupBy(key).agg(F.min("run_id").alias("run_id"))
    return rows.join(first, [key, "run_id"]).select(*columns)
