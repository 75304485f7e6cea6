"""The loop machinery every fixed point shares: growing sets merged as datafrog merges, rounds held once."""

import pytest
from pyspark.sql import types as T

from dirtiness.datalog.iteration import Growing, Holding, local_batch

SCHEMA = T.StructType([T.StructField("part", T.StringType()), T.StructField("n", T.LongType())])
ONE = T.StructType([T.StructField("n", T.LongType())])


def test_a_growing_set_keeps_logarithmically_many_batches_and_every_tuple(spark):
    grown, start = Growing(ONE), 0
    for size in (1, 1, 2, 4, 8, 3, 1, 1, 16, 2):
        grown.advance(local_batch(spark, [(n,) for n in range(start, start + size)], ONE))
        start += size
        sizes = [b.count for b in grown.stable]
        # datafrog's rule: a stable batch is more than twice the size of the next one
        assert all(older > 2 * newer for older, newer in zip(sizes, sizes[1:])), sizes
    grown.advance(None)  # a round that found nothing: the last batch becomes stable, nothing is recent
    assert grown.recent is None and grown.count == start
    assert sorted(r.n for r in grown.full(spark).collect()) == list(range(start))
    assert len(grown.stable) <= 4


@pytest.mark.parametrize("local_rows, lazy", [(0, True), (0, False), (2, True), (2, False), (100, True)])
def test_a_round_is_held_once_and_split_per_part(spark, local_rows, lazy):  # eager: servers such as Sail
    rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    frame = spark.createDataFrame(rows, SCHEMA)
    holding = Holding(local_rows, lazy_checkpoints=lazy)
    parts = holding.hold_parts(frame, "part")
    assert {p: sorted(r.n for r in b.frame.collect()) for p, b in parts.items()} == {"a": [1, 3], "b": [2], "c": [4]}
    assert {p: b.count for p, b in parts.items()} == {"a": 2, "b": 1, "c": 1}
    assert all(b.local == (local_rows >= len(rows)) for b in parts.values())  # rows only while the round is small
    assert all(b.frame.columns == ["n"] for b in parts.values())
    held = holding.hold(frame)
    assert held.count == 4 and held.local == (local_rows >= len(rows))
    assert sorted(held.project(["n"]).frame.collect()) == sorted(spark.createDataFrame(rows, SCHEMA)
                                                                 .select("n").collect())
