"""The floor: a minimal semi-naive reachability loop on the same catalog, in the same session.

Everything downstream of the objects that depend on nothing, along
``depends_on`` (as many rounds as the catalog is deep, with deltas of
hundreds to thousands of nodes: the changed statements alone may reach
nothing in a round or two, which would say little about a round): per
round one join of the recent nodes with the edges, one anti-join against
what is known, a cut of the lineage and a count. No provenance, no strata,
no planning: what a fixed point costs on Spark at the least, to compare
the engine's rounds with.
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

KEY = ("database", "schema", "name")


def _id(*columns: str):
    return F.xxhash64(*columns)


def reachability_rounds(depends_on: DataFrame) -> list[dict]:
    """Seconds and new nodes per round, until no new node is found."""
    edges = depends_on.select(_id("dep_database", "dep_schema", "dep_name").alias("src"),
                              _id(*KEY).alias("node")).cache()
    edges.count()
    roots = edges.select(F.col("src").alias("node")).distinct().join(edges.select("node"), "node", "left_anti")
    known = roots.localCheckpoint()
    recent = known
    rounds = []
    while True:
        started = time.perf_counter()
        new = (recent.withColumnRenamed("node", "src").join(edges, "src").select("node").distinct()
               .join(known, "node", "left_anti").localCheckpoint())
        count = new.count()
        if count:
            known = known.unionByName(new).localCheckpoint()
            recent = new
        rounds.append({"round": len(rounds) + 1, "new": count, "seconds": round(time.perf_counter() - started, 3)})
        if not count:
            break
    edges.unpersist()
    return rounds
