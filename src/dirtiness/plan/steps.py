"""Plan steps from dependencies: the longest path from the roots, one Spark job per layer.

Kahn's algorithm, layer by layer, on the engine's integer ids: step 0 is
every node that waits for nothing in its group; a node gets step ``k`` once
everything it waits for has a step below ``k``, so its step is one more
than the largest step it waits for. A layer is not a fixed point of a set
(it needs "everything it waits for is placed", which no monotone rule
says): it is the one loop of the planner outside the rule engine, and it
costs one Spark job a layer, holding what still waits the way the engine
holds a round. When a layer releases nothing while nodes still wait, those
nodes sit on or behind a cycle: the error names the objects of one cycle.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..datalog.holding import Batch, Hold, Holding, concat, in_one_partition
from ..errors import InputError
from ..model import KEY

CYCLE_EDGES_LIMIT = 200_000  # edges among the blocked nodes fetched to name one cycle
STEPS = T.StructType([T.StructField("group", T.StringType()), T.StructField("id", T.LongType()),
                      T.StructField("step", T.IntegerType())])


class CycleError(InputError):
    """A dependency cycle among the objects to plan (exit 2)."""


def layered(groups: dict[str, tuple[DataFrame, DataFrame]], holding: Holding, names: DataFrame,
            try_local: bool = True) -> Batch:
    """``group, id, step`` of every node of every group.

    Each group is ``(nodes, edges)``: node ids in a column ``c0``; edges
    ``c0`` (the node) and ``c1`` (what it must come after). Edges with an
    end outside their group's nodes impose nothing. All groups share the loop.
    """
    nodes = reduce(DataFrame.unionByName, [frame.select(F.lit(group).alias("group"), F.col("c0").alias("id"))
                                           for group, (frame, _) in groups.items()]).distinct()
    # Not deduplicated (a shuffle of every group's edges, two million each at a million objects): an edge
    # given twice counts twice both in what a node waits for and in what releases it, so it is placed alike.
    edges = reduce(DataFrame.unionByName, [
        frame.select(F.lit(group).alias("group"), F.col("c0").alias("id"), F.col("c1").alias("waits"))
        for group, (_, frame) in groups.items()])
    inside = (edges.join(nodes, ["group", "id"], "left_semi")
              .join(nodes.select("group", F.col("id").alias("waits")), ["group", "waits"], "left_semi"))
    missing = inside.groupBy("group", "id").agg(F.count(F.lit(1)).alias("missing"))
    start = holding.hold_all({
        "inside": Hold(inside, ("group", "waits")),  # as each layer's join reads it
        "waiting": missing,
        "ready": nodes.join(missing, ["group", "id"], "left_anti").select("group", "id", F.lit(0).alias("step")),
    }, try_local)
    inside, waiting, ready = start["inside"], start["waiting"], start["ready"]
    layers, step = [ready], 0
    while waiting.count:  # one job a layer
        step += 1
        reached = inside.frame.join(ready.frame.select("group", F.col("id").alias("waits")), ["group", "waits"])
        released = (in_one_partition(reached, waiting.local or holding.single)
                    .groupBy("group", "id").agg(F.count(F.lit(1)).alias("released")))
        updated = (waiting.frame.join(released, ["group", "id"], "left")
                   .select("group", "id", (F.col("missing") - F.coalesce("released", F.lit(0))).alias("missing")))
        held = holding.hold_all({
            "waiting": updated.where(F.col("missing") > 0),
            "ready": updated.where(F.col("missing") == 0).select("group", "id", F.lit(step).alias("step")),
        }, try_local=waiting.local)
        if not held["ready"].count:
            raise CycleError(f"dependency cycle: {' -> '.join(_one_cycle(inside.frame, held['waiting'].frame, names))}")
        waiting, ready = held["waiting"], held["ready"]
        layers.append(ready)
    return concat(layers, STEPS, nodes.sparkSession)


def _one_cycle(edges: DataFrame, waiting: DataFrame, objects: DataFrame) -> list[str]:
    """A cycle among the blocked nodes: each waits for another blocked node, so walking must loop.
    ``objects``: ``id, database, schema, name``."""
    blocked = waiting.select("group", "id")
    names = objects.select("id", F.concat_ws(".", *KEY).alias("name"))
    among = (edges.join(blocked, ["group", "id"], "left_semi")
             .join(blocked.select("group", F.col("id").alias("waits")), ["group", "waits"], "left_semi")
             .join(names, "id").join(names.select(F.col("id").alias("waits"), F.col("name").alias("waits_name")),
                                     "waits")
             .orderBy("name", "waits_name").limit(CYCLE_EDGES_LIMIT).collect())
    successors: dict[str, list[str]] = {}
    for row in among:
        successors.setdefault(row["name"], []).append(row["waits_name"])
    path, seen = [], {}
    current = min(successors)
    while current not in seen and current in successors:
        seen[current] = len(path)
        path.append(current)
        current = successors[current][0]
    cycle = path[seen[current]:] if current in seen else path
    return cycle + [current]
