"""Plan steps from dependencies: the longest path from the roots, peeled round by round.

Kahn's algorithm, level by level: step 0 is every node that waits for
nothing in the set; a node gets step ``k`` once everything it waits for has
a step below ``k``, so its step is one more than the largest step it waits
for. Each round joins only the nodes released by the previous one, and holds
its result the way the rule engine holds a round (``datalog.iteration.Holding``):
a local relation while it is small, checkpointed blocks when it is not. When
a round releases nothing while nodes still wait, those nodes sit on or
behind a cycle: the error names the objects of one cycle.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..datalog.iteration import Batch, Holding
from ..errors import InputError
from ..model import KEY

CYCLE_EDGES_LIMIT = 200_000  # edges among the blocked nodes fetched to name one cycle
WAITS = "waits_for_"         # prefix of the key columns of what a node waits for


class CycleError(InputError):
    """A dependency cycle among the objects to plan (exit 2)."""


def dependency_steps(nodes: DataFrame, edges: DataFrame, keys: list[str], holding: Holding) -> DataFrame:
    """``keys + [step]`` for every node.

    ``nodes`` has the ``keys`` columns; ``edges`` has ``keys`` (the node) and
    the same columns prefixed ``waits_for_``: the node must come after that
    one. Edges with an end outside ``nodes`` impose nothing.
    """
    waits = [WAITS + k for k in keys]
    held = holding.hold(nodes.select(*keys).distinct())
    inside = holding.hold(edges.select(*keys, *waits).distinct()
                  .join(held.frame, keys, "left_semi")
                          .join(held.frame.select(*(F.col(k).alias(w) for k, w in zip(keys, waits))), waits,
                                "left_semi"), held.local)
    waiting = holding.hold(inside.frame.groupBy(*keys).agg(F.count(F.lit(1)).alias("missing")), inside.local)
    ready = held.frame.join(waiting.frame, keys, "left_anti").select(*keys, F.lit(0).alias("step"))
    steps, step, local = [ready], 0, waiting.local
    while waiting.count:
        step += 1
        released = (inside.frame.join(ready.select(*(F.col(k).alias(w) for k, w in zip(keys, waits))), waits)
                    .groupBy(*keys).agg(F.count(F.lit(1)).alias("released")))
        updated = holding.hold(waiting.frame.join(released, keys, "left")
                               .select(*keys, (F.col("missing") - F.coalesce("released", F.lit(0))).alias("missing")),
                               waiting.local)
        done = _count_done(updated)
        if not done:
            raise CycleError(f"dependency cycle: {' -> '.join(_one_cycle(inside.frame, updated.frame, keys))}")
        ready = updated.frame.where(F.col("missing") == 0).select(*keys, F.lit(step).alias("step"))
        steps.append(ready)
        waiting = Batch(updated.frame.where(F.col("missing") > 0), updated.count - done)
        local = local and updated.local
    return holding.hold(reduce(DataFrame.unionByName, steps), local).frame


def _count_done(batch: Batch) -> int:
    if batch.local:
        return sum(1 for row in batch.rows if row["missing"] == 0)
    return batch.frame.where(F.col("missing") == 0).count()


def _one_cycle(edges: DataFrame, waiting: DataFrame, keys: list[str]) -> list[str]:
    """A cycle among the blocked nodes: each waits for another blocked node, so walking must loop."""
    waits = [WAITS + k for k in keys]
    blocked = waiting.select(*keys)
    among = (edges.join(blocked, keys, "left_semi")
             .join(blocked.select(*(F.col(k).alias(w) for k, w in zip(keys, waits))), waits, "left_semi")
             .orderBy(*keys, *waits).limit(CYCLE_EDGES_LIMIT).collect())
    shown = [k for k in keys if k != "group"]
    successors: dict = {}
    for row in among:
        successors.setdefault(".".join(row[k] for k in shown), []).append(".".join(row[WAITS + k] for k in shown))
    path, seen = [], {}
    current = min(successors)
    while current not in seen and current in successors:
        seen[current] = len(path)
        path.append(current)
        current = successors[current][0]
    cycle = path[seen[current]:] if current in seen else path
    return cycle + [current]


def dependency_edges(dependencies: DataFrame, dependents_first: bool = False) -> DataFrame:
    """``database, schema, name`` and ``waits_for_*`` from a snapshot's dependencies: an object waits
    for what it reads from, or, with ``dependents_first`` (dropping), for what reads from it."""
    reader, source = list(KEY), [f"dep_{k}" for k in KEY]
    if dependents_first:
        reader, source = source, reader
    return dependencies.select(*(F.col(c).alias(k) for c, k in zip(reader, KEY)),
                               *(F.col(c).alias(WAITS + k) for c, k in zip(source, KEY)))


def with_steps(groups: dict[str, tuple[DataFrame, DataFrame]], holding: Holding) -> dict[str, DataFrame]:
    """For each group ``name: (objects, edges)``, the objects plus their ``step`` among themselves.

    All groups share one loop: nodes and edges are tagged with their group,
    so no edge crosses groups.
    """
    keys = ["group", *KEY]

    def tagged(frame: DataFrame, group: str, columns: list[str]) -> DataFrame:
        return frame.select(F.lit(group).alias("group"), *columns)

    nodes = reduce(DataFrame.unionByName, [tagged(objects, group, list(KEY)) for group, (objects, _) in groups.items()])
    edges = reduce(DataFrame.unionByName, [
        tagged(edges, group, [*KEY, *(WAITS + k for k in KEY)]).withColumn(WAITS + "group", F.col("group"))
        for group, (_, edges) in groups.items()])
    steps = dependency_steps(nodes, edges, keys, holding)
    return {group: objects.join(steps.where(F.col("group") == group).drop("group"), list(KEY))
            for group, (objects, _) in groups.items()}
