"""Delta I/O without the Delta jar: replace a run's rows in one commit, refuse a schema change."""

import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from dirtiness.store.delta import DeltaSchemaError, DeltaStore
from spark_jobs import jobs_started


def frame(spark, run_id, values):
    return spark.createDataFrame([(run_id, v) for v in values], "run_id string, n long")


def test_replace_run_keeps_other_runs_and_removes_old_files(spark, tmp_path):
    store = DeltaStore(spark, str(tmp_path))
    assert store.replace_run("t", frame(spark, "a", [1, 2, 3]), "a") == 3
    store.replace_run("t", frame(spark, "b", [10]), "b")
    store.replace_run("t", frame(spark, "a", [4]), "a")  # a retry of run a
    rows = sorted(tuple(r) for r in store.read("t").collect())
    assert rows == [("a", 4), ("b", 10)]
    assert sorted(pl.read_delta(str(tmp_path / "t")).rows()) == rows
    table = DeltaTable(str(tmp_path / "t"))
    assert table.version() == 2
    history = [h["operation"] for h in table.history()]
    assert len(history) == 3


def test_empty_run_and_reading_an_empty_table(spark, tmp_path):
    store = DeltaStore(spark, str(tmp_path))
    assert store.replace_run("t", frame(spark, "a", []), "a") == 0
    assert store.read("t").count() == 0
    assert store.read("t").columns == ["run_id", "n"]


def test_schema_change_is_refused_before_anything_is_written(spark, tmp_path):
    store = DeltaStore(spark, str(tmp_path))
    store.replace_run("t", frame(spark, "a", [1]), "a")
    folders = sorted(p.name for p in (tmp_path / "t").iterdir())
    other = spark.createDataFrame([("b", "x")], "run_id string, n string")
    with pytest.raises(DeltaSchemaError, match="differs from the rows written"):
        store.replace_run("t", other, "b")
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == folders
    assert [tuple(r) for r in store.read("t").collect()] == [("a", 1)]


def test_file_statistics_let_readers_skip_files(spark, tmp_path):
    store = DeltaStore(spark, str(tmp_path))
    store.replace_run("t", frame(spark, "a", [1, 5]), "a")
    actions = pa.table(DeltaTable(str(tmp_path / "t")).get_add_actions(flatten=True)).to_pylist()
    stats = [(a["num_records"], a["min.run_id"], a["max.run_id"]) for a in actions if a["num_records"]]
    assert sum(s[0] for s in stats) == 2 and {s[1] for s in stats} == {"a"}


def test_added_columns_widen_the_table(spark, tmp_path):
    store = DeltaStore(spark, str(tmp_path))
    store.replace_run("t", frame(spark, "a", [1]), "a")
    wider = spark.createDataFrame([("b", 2, "x")], "run_id string, n long, note string")
    store.replace_run("t", wider, "b")
    assert sorted(tuple(r) for r in store.read("t").collect()) == [("a", 1, None), ("b", 2, "x")]
    assert pl.read_delta(str(tmp_path / "t")).columns == ["run_id", "n", "note"]


def test_rows_held_on_the_driver_are_written_without_a_spark_job(spark, tmp_path):
    from dirtiness.datalog.holding import local_batch

    store = DeltaStore(spark, str(tmp_path))
    store.replace_run("t", frame(spark, "a", [1]), "a")  # the table exists, written by Spark
    held = local_batch(spark, [(2,), (3,)], frame(spark, "x", []).drop("run_id").schema)
    before = jobs_started(spark)
    assert store.replace_run("t", held, "b") == 2  # tagged with its run id here
    assert store.replace_run("t", held, "b") == 2  # a retry replaces them
    assert jobs_started(spark) == before
    assert sorted(pl.read_delta(str(tmp_path / "t")).rows()) == [("a", 1), ("b", 2), ("b", 3)]
