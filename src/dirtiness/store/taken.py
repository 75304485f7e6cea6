"""What a run takes from the run it starts from when none of its units changed: that run's outputs, as this
run would compute them.

Every output of a run is a function of its units (``changeset.units``), the
rules, the configuration, the version of dirtiness (all matched by
``store.base_run``) and the run's staging suffix (``plan.operations.deploy_suffix``),
which names a blue-green run's staged schemas and clusters. So when no unit
changed, the earlier run's rows with its suffix replaced by this run's are
the rows a full run would write, provided the suffix appears in them only
where the plan put it: a run whose inputs hold the earlier suffix (a staged
schema a failed deploy left, read back from the database) computes in full.
"""

from __future__ import annotations

from collections import defaultdict
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.engine import RoundLog


def with_suffix(frame: DataFrame, then: str, now: str) -> DataFrame:
    """``frame`` with ``then`` replaced by ``now`` in every string column (as is when they are the same: a
    ``--deploy-id`` names every run's staged objects alike)."""
    if then == now:
        return frame
    return frame.select(*(F.replace(F.col(f.name), F.lit(then), F.lit(now)).alias(f.name)
                          if isinstance(f.dataType, T.StringType) else F.col(f.name) for f in frame.schema.fields))


def suffix_in(frames: list[DataFrame], texts: list[str], suffix: str) -> DataFrame:
    """One row, ``count``: the rows of ``frames`` (and the ``texts``) with ``suffix`` in a string column."""
    def hits(frame: DataFrame) -> DataFrame:
        strings = [F.coalesce(F.col(f.name), F.lit("")) for f in frame.schema.fields
                   if isinstance(f.dataType, T.StringType)]
        return frame.where(F.concat_ws("\u0000", *strings).contains(suffix)).select(F.lit(1).alias("hit"))

    found = reduce(DataFrame.unionByName, [hits(frame) for frame in frames])
    return found.groupBy().agg((F.count(F.lit(1)) + F.lit(sum(suffix in t for t in texts))).alias("count"))


def rounds_of(rows: list[dict]) -> dict[str, list[RoundLog]]:
    """Each program's round log (``rules``, ``plan``) from the ``run_rounds`` rows of a run."""
    found: dict[str, dict[tuple[int, int], RoundLog]] = defaultdict(dict)
    for row in sorted(rows, key=lambda r: (r["program"], r["round"], r["stratum"], r["relation"])):
        entry = found[row["program"]].setdefault((row["round"], row["stratum"]),
                                                 RoundLog(row["round"], row["stratum"], {}, row["seconds"]))
        entry.new[row["relation"]] = row["derived"]
    return {program: list(entries.values()) for program, entries in found.items()}
