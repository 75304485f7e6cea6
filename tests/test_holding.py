"""How a run materializes what it computes: several frames in one job, as rows or blocks, split, mapped in Arrow."""

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dirtiness.datalog.holding import Hold, Holding, local_batch
from dirtiness.session import session_settings, spark_settings
from spark_jobs import jobs_started

SCHEMA = T.StructType([T.StructField("part", T.StringType()), T.StructField("n", T.LongType())])
ROWS = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]


@pytest.fixture
def computing(spark, config):
    """The session as a run computes: no adaptive execution, no broadcasts (``spark.compute_conf``)."""
    with session_settings(spark, spark_settings(config["spark"]["compute_conf"])):
        yield spark


# rows while small; blocks filled lazily by the counting job, or eagerly first (servers such as Sail)
@pytest.mark.parametrize("local_rows, lazy", [(100, True), (0, True), (0, False), (5, True)])
def test_frames_of_any_schema_are_held_by_one_job_and_split(computing, local_rows, lazy):
    spark = computing
    holding = Holding(local_rows, lazy_checkpoints=lazy, partitions=2)
    frame = spark.createDataFrame(ROWS, SCHEMA)
    other = spark.createDataFrame([(True, 1.5)], "flag boolean, x double")
    before = jobs_started(spark)
    held = holding.hold_all({"rows": Hold(frame, keys=("part",), split="part"), "other": other})
    jobs = jobs_started(spark) - before
    small = local_rows >= len(ROWS) + 1
    assert jobs == (1 if small or lazy else 3), jobs  # eager checkpoints are a job each
    assert held["rows"].local is small and held["rows"].count == 4 and held["other"].count == 1
    assert held["rows"].counts == {"a": 2, "b": 1, "c": 1}
    assert held["rows"].columns == ["part", "n"] and held["other"].columns == ["flag", "x"]
    a = held["rows"].part("part", "a", {"value": "n"})
    assert (a.count, a.columns, sorted(r.value for r in a.frame.collect())) == (2, ["value"], [1, 3])
    assert [tuple(r) for r in held["other"].frame.collect()] == [(True, 1.5)]


def test_blocks_read_in_parts_are_cached_in_columns_until_released(computing):
    """Blocks many queries read a part at a time: a columnar cache whose scan prunes the other parts' batches,
    with the same rows; filled by the first query, no job of its own; local rows and the server's own storage
    unchanged."""
    spark = computing
    holding = Holding(0, partitions=2)
    held = holding.hold(Hold(spark.createDataFrame(ROWS * 50, SCHEMA), split="part"), try_local=False)
    before = jobs_started(spark)
    cached, frame = holding.columnar(held, "part")
    assert jobs_started(spark) == before and frame.storageLevel.useDisk and cached.counts == held.counts
    a = cached.part("part", "a", {"value": "n"})
    plan = a.frame._jdf.queryExecution().executedPlan().toString()
    assert "InMemoryTableScan" in plan and "LocalTableScan" not in plan
    assert sorted(r.value for r in a.frame.collect()) == [1] * 50 + [3] * 50 and a.count == 100
    assert sorted(map(tuple, cached.frame.collect())) == sorted(map(tuple, held.frame.collect()))
    frame.unpersist()
    assert not frame.storageLevel.useDisk and not frame.storageLevel.useMemory
    rows = local_batch(spark, ROWS, SCHEMA)
    assert holding.columnar(rows, "part") == (rows, None)
    assert Holding(0, storage="default").columnar(held, "part") == (held, None)


def test_blocks_held_by_keys_are_joined_without_a_shuffle_of_them(computing):
    spark = computing
    holding = Holding(0, partitions=int(spark.conf.get("spark.sql.shuffle.partitions")))
    held = holding.hold(Hold(spark.createDataFrame(ROWS, SCHEMA), keys=("part",)), try_local=False)
    probe = spark.createDataFrame([("a",)], "part string")
    plan = probe.join(held.frame, "part")._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange") == 1 and plan.count("Sort [") == 1  # the probe's; the blocks are as held


@pytest.mark.parametrize("lazy", [True, False])
def test_held_blocks_do_not_compound_the_size_estimate_of_what_they_came_from(computing, lazy):
    """A chain of holds, each a three-way join of the last: Spark's checkpoint alone keeps its origin's
    estimate, a product that gains bits with each hold (6,729 bits after six); held, each claims Spark's
    default size, its rows and partitioning unchanged."""
    spark = computing
    holding = Holding(0, lazy_checkpoints=lazy, partitions=2)
    held = holding.hold(Hold(spark.range(40).select(F.col("id").alias("k"), (F.col("id") % 7).alias("v")),
                             keys=("k",)), try_local=False)
    for _ in range(6):
        frame = held.frame
        joined = (frame.alias("a").join(frame.alias("b"), "k").join(frame.alias("c"), "k")
                  .select("k", F.col("a.v").alias("v")))
        held = holding.hold(Hold(joined, keys=("k",)), try_local=False)
    default = int(spark.conf.get("spark.sql.defaultSizeInBytes").rstrip("b"))
    assert held.frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes() == default
    assert held.count == 40 and sorted(tuple(r) for r in held.frame.collect()) == [(i, i % 7) for i in range(40)]
    plan = held.frame.join(spark.range(3).select(F.col("id").alias("k")), "k")._jdf.queryExecution()
    assert plan.executedPlan().toString().count("Exchange") == 1  # the blocks' partitioning kept


def doubler():
    """An Arrow batch function (made here, so that Spark's workers get it by value, not by module)."""
    def arrow_double(batches):
        import pyarrow.compute as pc

        for batch in batches:
            yield pa.RecordBatch.from_pydict({"part": batch.column("part"), "n": pc.multiply(batch.column("n"), 2)})
    return arrow_double


@pytest.mark.parametrize("local", [True, False])
def test_an_arrow_function_runs_where_the_rows_are(spark, local):
    holding = Holding(100 if local else 0)
    held = (local_batch(spark, ROWS, SCHEMA) if local
            else holding.hold(spark.createDataFrame(ROWS, SCHEMA), try_local=False))
    before = jobs_started(spark)
    mapped = holding.map_arrow(held, doubler(), SCHEMA)
    assert mapped.local is local
    assert jobs_started(spark) == before  # here: no job; on Spark: a lazy frame
    assert sorted(tuple(r) for r in mapped.frame.where(F.col("n") > 2).collect()) == [("a", 6), ("b", 4), ("c", 8)]
