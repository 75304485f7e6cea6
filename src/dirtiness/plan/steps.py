"""Plan steps from dependencies, on Spark: the longest path from the roots.

Peeling in rounds (Kahn's algorithm, level by level): step 0 is every node
that waits for nothing in the set; a node gets step ``k`` once everything it
waits for has a step below ``k``, so its step is one more than the largest
step it waits for. Each round only joins the nodes released in the previous
round, cuts the lineage, and counts in one Spark job. When a round releases
nothing while nodes still wait, those nodes sit on or behind a cycle: the
error names the objects of one cycle.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..errors import InputError
from ..model import KEY

CYCLE_EDGES_LIMIT = 200_000  # edges among the blocked nodes fetched to name one cycle


class CycleError(InputError):
    """A dependency cycle among the objects to plan (exit 2)."""


def dependency_steps(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``node, step`` for every node.

    ``nodes`` has a ``node`` column (any comparable type); ``edges`` has
    ``node`` and ``waits_for``: ``node`` must come after ``waits_for``. Edges
    with an end outside ``nodes`` impose nothing.
    """
    nodes = nodes.select("node").distinct().localCheckpoint()  # read by several jobs below
    inside = (edges.select("node", "waits_for").distinct()
              .join(nodes, "node", "left_semi")
              .join(nodes.withColumnRenamed("node", "waits_for"), "waits_for", "left_semi")
              .localCheckpoint())
    waiting = inside.groupBy("node").agg(F.count(F.lit(1)).alias("missing"))
    ready = nodes.join(waiting, "node", "left_anti").withColumn("step", F.lit(0)).localCheckpoint()
    steps, step = [ready], 0
    while True:
        step += 1
        released = (inside.join(ready.select(F.col("node").alias("waits_for")), "waits_for")
                    .groupBy("node").agg(F.count(F.lit(1)).alias("released")))
        updated = (waiting.join(released, "node", "left")
                   .select("node", (F.col("missing") - F.coalesce("released", F.lit(0))).alias("missing"))
                   .localCheckpoint(eager=False))
        counts = {row["done"]: row["count"] for row in
                  updated.groupBy((F.col("missing") == 0).alias("done")).count().collect()}
        ready = updated.where(F.col("missing") == 0).select("node", F.lit(step).alias("step"))
        waiting = updated.where(F.col("missing") > 0)
        if counts.get(True):
            steps.append(ready)
        if not counts.get(False):
            return reduce(DataFrame.unionByName, steps)
        if not counts.get(True):
            raise CycleError(f"dependency cycle: {' -> '.join(_one_cycle(inside, waiting))}")


def _one_cycle(edges: DataFrame, waiting: DataFrame) -> list[str]:
    """A cycle among the blocked nodes: each waits for another blocked node, so walking must loop."""
    blocked = waiting.select("node")
    among = (edges.join(blocked, "node", "left_semi")
             .join(blocked.withColumnRenamed("node", "waits_for"), "waits_for", "left_semi")
             .orderBy("node", "waits_for").limit(CYCLE_EDGES_LIMIT).collect())
    successors: dict = {}
    for row in among:
        successors.setdefault(_show(row["node"]), []).append(_show(row["waits_for"]))
    path, seen = [], {}
    current = min(successors)
    while current not in seen and current in successors:
        seen[current] = len(path)
        path.append(current)
        current = successors[current][0]
    cycle = path[seen[current]:] if current in seen else path
    return cycle + [current]


def _show(node) -> str:
    if hasattr(node, "asDict"):
        return ".".join(str(v) for k, v in node.asDict().items() if k != "group")
    return str(node)


def dependency_edges(dependencies: DataFrame, dependents_first: bool = False) -> DataFrame:
    """``node, waits_for`` from a snapshot's dependencies: an object waits for what it reads from,
    or, with ``dependents_first`` (dropping), for what reads from it."""
    reader = F.struct(*(F.col(k).alias(k) for k in KEY))
    source = F.struct(*(F.col(f"dep_{k}").alias(k) for k in KEY))
    if dependents_first:
        reader, source = source, reader
    return dependencies.select(reader.alias("node"), source.alias("waits_for"))


def with_steps(groups: dict[str, tuple[DataFrame, DataFrame]]) -> dict[str, DataFrame]:
    """For each group ``name: (objects, edges)``, the objects plus their ``step`` among themselves.

    All groups share one loop: nodes and edges are tagged with their group,
    so no edge crosses groups.
    """
    def tagged(group: str, value: str) -> Column:
        return F.struct(F.lit(group).alias("group"), *(F.col(f"{value}.{k}").alias(k) for k in KEY))

    nodes = reduce(DataFrame.unionByName, [
        objects.select(F.struct(F.lit(group).alias("group"), *KEY).alias("node"))
        for group, (objects, _) in groups.items()])
    edges = reduce(DataFrame.unionByName, [
        edges.select(tagged(group, "node").alias("node"), tagged(group, "waits_for").alias("waits_for"))
        for group, (_, edges) in groups.items()])
    steps = dependency_steps(nodes, edges).select(
        F.col("node.group").alias("group"), *(F.col(f"node.{k}").alias(k) for k in KEY), "step").localCheckpoint()
    return {group: objects.join(steps.where(F.col("group") == group).drop("group"), list(KEY))
            for group, (objects, _) in groups.items()}
