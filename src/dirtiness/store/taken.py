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

The checks of such a plan find what they found in the earlier run, but
for the length of the suffix (a staging name too long for the database): a
run's checks record what they found and a digest of every table they
vouch for (``plan_checks``), and a run that takes those rows, read back
with the same digests, takes the checks' findings too.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..changeset.units import hash_sum
from ..datalog.engine import RoundLog
from ..plan.checks import OF_STATEMENTS, PlanReport, plan_report

DIGEST = "digest:"  # a check row holding, as its total, the digest of a table's rows (``row_digests``)
PRIME = Decimal(9223372036854775783)  # the largest prime below 2^63: a digest as a check row's total (a long)


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


def row_digests(frames: dict[str, DataFrame], suffix: str) -> DataFrame:
    """A check row (``problem, n, detail, total``) per frame: ``digest:<table>``, its total the ``hash_sum`` of
    its rows with ``suffix`` taken out (so a run and one that takes its rows, its suffix replaced, record the
    same), whatever the order of its rows and of its columns, modulo a prime below 2^63."""
    def digest(name: str, frame: DataFrame) -> DataFrame:
        values = [F.replace(F.col(f.name), F.lit(suffix), F.lit("\u0000")) if isinstance(f.dataType, T.StringType)
                  else F.col(f.name).cast("string") for f in sorted(frame.schema.fields, key=lambda f: f.name)]
        return frame.groupBy().agg(F.lit(DIGEST + name).alias("problem"), F.lit(None).cast("int").alias("n"),
                                   F.lit(None).cast("string").alias("detail"),
                                   F.pmod(hash_sum(*values), F.lit(PRIME)).cast("long").alias("total"))

    return reduce(DataFrame.union, [digest(name, frame) for name, frame in sorted(frames.items())])


def digests_differ(recorded: list[dict], read: list[dict]) -> str | None:
    """The first table whose rows, as read, differ from those the earlier run's checks recorded (None: all
    the same); a table it recorded no digest of differs."""
    said = {r["problem"]: r["total"] for r in recorded if r["problem"].startswith(DIGEST)}
    for row in sorted(read, key=lambda r: r["problem"]):
        if said.get(row["problem"]) != row["total"]:
            return row["problem"][len(DIGEST):]
    return None


def taken_report(recorded: list[dict], then: str, now: str, fresh: list[dict] | None = None) -> PlanReport:
    """What the earlier run's checks found (``recorded``: its ``plan_checks`` rows), as this run's: the
    details with its suffix replaced by this run's. ``fresh``: the rows of this run's own checks of its
    statements and digests (a plan whose rows differ from that run's in their statements only), in place of
    the recorded ones."""
    if fresh is not None:
        recorded = [r for r in recorded if r["problem"] not in OF_STATEMENTS and not r["problem"].startswith(DIGEST)]
    rows = [{**r, "detail": r["detail"].replace(then, now) if r["detail"] is not None else None}
            for r in recorded] + (fresh or [])
    invariants = sorted({r["problem"].split(":", 1)[1] for r in rows if r["problem"].startswith("invariant:")})
    return plan_report(rows, invariants)


def facts_differ(now: dict[str, DataFrame], then: dict[str, DataFrame]) -> DataFrame:
    """One row, ``relations``: the base relations whose facts-table rows in ``now`` (this run's) and ``then`` (the
    run it starts from) differ by count or ``hash_sum``, comma-separated (empty when none): what a run whose
    only changes are restated units checks before it takes that run's fixed points."""
    def digest(frame: DataFrame, relation: str, side: str) -> DataFrame:
        columns = sorted(frame.columns)
        return frame.groupBy().agg(F.lit(relation).alias("relation"), F.lit(side).alias("side"),
                                   F.concat_ws(":", F.count(F.lit(1)).cast("string"),
                                               hash_sum(*columns).cast("string")).alias("digest"))

    digests = reduce(DataFrame.unionByName, [digest(frames[n], n, side) for side, frames in (("now", now), ("then", then))
                                             for n in sorted(now)])
    differing = (digests.groupBy("relation").agg(F.count_distinct("digest").alias("digests"))
                 .where(F.col("digests") > 1))
    return differing.groupBy().agg(F.concat_ws(", ", F.array_sort(F.collect_list("relation"))).alias("relations"))
