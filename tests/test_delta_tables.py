"""Delta I/O without the Delta jar: replace a run's rows in one commit, refuse a schema change."""

import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from dirtiness.store.delta import DeltaSchemaError, DeltaStore
from spark_jobs import jobs_started


def frame(spark, run_id, values):
    return spark.createDataFrame([(run_id, v) for v in values], "run_id string, n long")


def arrow_rows(values):
    """A run's rows on the driver (``replace_run`` tags them with the run id)."""
    return pa.table({"n": pa.array(values, pa.int64())})


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


def test_rows_from_arrow_replace_a_run_whose_files_have_no_run_id_statistics_and_carry_timestamp_ones(tmp_path):
    """No Spark: rows on the driver. A run id too long for a statistic is found by reading its file; a timestamp
    column gets the statistics delta-rs itself writes (the millisecond below), which readers prune by."""
    import datetime as dt

    from deltalake import write_deltalake

    long_id = "scheduled__" + "x" * 60  # past the 64 characters a string statistic may have
    when = [dt.datetime(2026, 11, 28, 1, 2, 3, 456789, tzinfo=dt.timezone.utc),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)]

    def rows(run_id, values):
        return pa.table({"run_id": [run_id] * len(values), "n": values, "at": [when[v % 2] for v in values]},
                        pa.schema([("run_id", pa.string()), ("n", pa.int64()), ("at", pa.timestamp("us", "UTC"))]))

    store = DeltaStore(None, str(tmp_path))
    store.replace_run("t", rows(long_id, [1, 2]), long_id)
    store.replace_run("t", rows("b", [10]), "b")
    store.replace_run("t", rows(long_id, [3]), long_id)  # a retry of the long run
    assert sorted(pl.read_delta(str(tmp_path / "t")).select("run_id", "n").rows()) == [("b", 10), (long_id, 3)]

    store.replace_run("ours", rows("c", [1, 2]), "c")
    write_deltalake(str(tmp_path / "theirs"), rows("c", [1, 2]))
    ours, theirs = ({k: v for k, v in pa.table(DeltaTable(str(tmp_path / name)).get_add_actions(flatten=True))
                     .to_pylist()[0].items() if k.endswith(".at")} for name in ("ours", "theirs"))
    assert ours == theirs and ours["min.at"] < ours["max.at"] < when[0]  # cut to the millisecond below
    table = DeltaTable(str(tmp_path / "ours"))
    assert table.file_uris(file_pruning_predicate=[("at", ">=", when[0])])
    assert not table.file_uris(file_pruning_predicate=[("at", ">", when[0] + dt.timedelta(milliseconds=1))])


def test_a_retry_after_a_compaction_replaces_the_runs_rows_in_the_compacted_file(tmp_path):
    """No Spark. A team compacts its tables (delta-rs ``optimize.compact``, Databricks' OPTIMIZE): one file then
    holds rows of several runs. A retry of one of them takes its rows out of that file (a copy without them, in
    the same commit as its new rows), and leaves every other run's rows and the files' statistics as they were."""
    store = DeltaStore(None, str(tmp_path))
    for run_id, values in (("a", [1, 2]), ("b", [3, 4]), ("c", [5])):
        store.replace_run("t", arrow_rows(values), run_id)
    DeltaTable(str(tmp_path / "t")).optimize.compact()
    store.replace_run("t", arrow_rows([6]), "d")  # a file of its own beside the compacted one
    assert len(DeltaTable(str(tmp_path / "t")).file_uris()) == 2
    store.replace_run("t", arrow_rows([30]), "b")  # a retry of run b
    table = DeltaTable(str(tmp_path / "t"))
    assert sorted(pl.read_delta(str(tmp_path / "t")).rows()) == [("a", 1), ("a", 2), ("b", 30), ("c", 5), ("d", 6)]
    assert [h["operation"] for h in table.history()][0] == "WRITE"  # one commit: the new rows and the copy
    files = {(f["min.run_id"], f["max.run_id"], f["num_records"])
             for f in pa.table(table.get_add_actions(flatten=True)).to_pylist()}
    assert files == {("a", "c", 3), ("b", "b", 1), ("d", "d", 1)}  # the copy keeps a and c, with statistics
    store.replace_run("t", arrow_rows([]), "a")  # and a retry of run a, now in the copy, with no rows
    assert sorted(pl.read_delta(str(tmp_path / "t")).rows()) == [("b", 30), ("c", 5), ("d", 6)]


def test_two_retries_at_once_over_one_compacted_file_keep_both_runs_rows(tmp_path):
    """No Spark. Two runs whose rows share a compacted file retried at the same moment: each commit removes that
    file, so one loses (delta-rs refuses it), reloads the table and copies the other's copy instead."""
    import threading

    store = DeltaStore(None, str(tmp_path))
    for run_id, values in (("a", [1, 2]), ("b", [3, 4]), ("c", [5])):
        store.replace_run("t", arrow_rows(values), run_id)
    DeltaTable(str(tmp_path / "t")).optimize.compact()
    together, failed = threading.Barrier(2), []

    def retry(run_id: str, value: int) -> None:
        together.wait()
        try:
            store.replace_run("t", arrow_rows([value]), run_id)
        except Exception as error:  # noqa: BLE001 - asserted below
            failed.append(error)

    threads = [threading.Thread(target=retry, args=args) for args in (("a", 10), ("b", 30))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert sorted(pl.read_delta(str(tmp_path / "t")).rows()) == [("a", 10), ("b", 30), ("c", 5)]
