"""Runs into one ``--out`` parse only the statements no succeeded earlier run analysed, never read a state that
a run did not finish or that cannot be read, and answer as a run that parsed everything."""

from __future__ import annotations

import json
import logging
import shutil

import polars as pl
import pyarrow as pa
import pytest
import yaml

from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.cli import main
from dirtiness.config import load_config
from dirtiness.inputs.analysed_before import ANALYSED, SQL_ANALYSIS, analysed_with, statement_keys
from dirtiness.inputs.references import SqlSettings
from dirtiness.pipeline import earlier_of
from dirtiness.settings import RunParams, resolve
from dirtiness.store.delta import DeltaStore, arrow_schema_of

# what a statement's analysis becomes (its object's dependencies and cluster) and the dirty sets made of it; the
# runs plan nothing (strategy none), which keeps them short
TABLES = ("facts/depends_on", "facts/stmt_uses_cluster", "facts/changed_stmt", "dirty_stmts", "dirty_clusters",
          "dirty_schemas")
EDITED = "winning_bids"  # the statement the second project changes


def _edited(folder) -> str:
    document = yaml.safe_load(open(EXAMPLE_NEW))
    (entry,) = [o for o in document["objects"] if o["name"] == EDITED]
    entry["sql"] = entry["sql"].replace("SELECT", "SELECT /* edited */", 1)
    entry["hash"] += "-edited"
    path = folder / "new.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def _statements(*paths: str) -> set[tuple]:
    """Distinct statements of the documents: what a run analyses once each."""
    return {(o["kind"], o["database"], o["schema"], o["name"], o["sql"])
            for path in paths for o in yaml.safe_load(open(path))["objects"] if o.get("sql")}


def _plant_unfinished(spark, out: str, new: str) -> None:
    """Rows under a run that never finished: the edited statement said to read a relation nothing defines. A run
    that took them would fail its dependency check."""
    document = yaml.safe_load(open(new))
    (entry,) = [o for o in document["objects"] if o["name"] == EDITED]
    frame = spark.createDataFrame([("new", entry["database"], entry["schema"], entry["name"], entry["kind"],
                                    entry["sql"])], "side string, database string, schema string, name string, "
                                                    "kind string, sql string")
    settings = resolve(RunParams(old=EXAMPLE_OLD, new=new, out=out), load_config())
    (key,) = [r[0] for r in statement_keys(frame, settings.sql).select("statement_key").collect()]
    rows = [{"statement_key": key, "found": "statement"},
            {"statement_key": key, "found": "reads", "dep_database": "nowhere", "dep_schema": "at", "dep_name": "all"}]
    DeltaStore(spark, out).replace_run(SQL_ANALYSIS, pa.Table.from_pylist(rows, arrow_schema_of(ANALYSED)),
                                       "unfinished")


def _corrupt(out) -> None:
    for part in (out / SQL_ANALYSIS).glob("**/*.parquet"):
        part.write_bytes(b"not parquet")


@pytest.fixture(scope="module")
def chain(spark, tmp_path_factory):
    """Run ``a`` (the example), then the same old project and one statement edited: run ``b`` into the same root,
    beside a planted unfinished run's rows; run ``c`` into a copy of the root whose analysis files are corrupt."""
    folder = tmp_path_factory.mktemp("analysed-before")
    (folder / "conf.yaml").write_text(yaml.safe_dump({"sql": {"reuse_from_objects": 0}}))
    new = _edited(folder)
    first, copy = folder / "out", folder / "copy"
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logging.getLogger("dirtiness").addHandler(handler)
    try:
        def run(run_id: str, out, new_path: str) -> dict:
            code = main(["run", "--old", EXAMPLE_OLD, "--new", new_path, "--out", str(out), "--run-id", run_id,
                         "--config", str(folder / "conf.yaml"), "--summary-json", str(folder / f"{run_id}.json"),
                         "--strategy", "none"])
            assert code == 0, run_id
            return json.loads((folder / f"{run_id}.json").read_text())

        summaries = {"a": run("a", first, EXAMPLE_NEW)}
        shutil.copytree(first, copy)
        _corrupt(copy)
        _plant_unfinished(spark, str(first), new)
        summaries["b"] = run("b", first, new)
        summaries["c"] = run("c", copy, new)
    finally:
        logging.getLogger("dirtiness").removeHandler(handler)
    return {"folder": folder, "new": new, "first": first, "copy": copy, "summaries": summaries, "said": said}


def test_a_later_run_parses_only_what_no_earlier_run_analysed(chain):
    summaries = chain["summaries"]
    first = _statements(EXAMPLE_OLD, EXAMPLE_NEW)
    assert summaries["a"]["statements"] == {"parsed": len(first), "reused": 0}
    both = _statements(EXAMPLE_OLD, chain["new"])
    assert summaries["b"]["statements"] == {"parsed": 1, "reused": len(both) - 1}  # the unfinished run's rows unread
    kept = pl.read_delta(str(chain["first"] / SQL_ANALYSIS))
    assert kept.filter(pl.col("run_id") == "b").filter(pl.col("found") == "statement").height == 1
    runs = {r["run_id"]: r for r in pl.read_delta(str(chain["first"] / "runs")).to_dicts()}
    assert (runs["b"]["statements_parsed"], runs["b"]["statements_reused"]) == (1, len(both) - 1)


def test_an_analysis_that_cannot_be_read_is_parsed_again_with_a_line_saying_so(chain):
    assert chain["summaries"]["c"]["statements"] == {"parsed": len(_statements(EXAMPLE_OLD, chain["new"])),
                                                     "reused": 0}
    assert any("could not be read" in line and SQL_ANALYSIS in line for line in chain["said"]), chain["said"]


def test_reused_and_parsed_runs_give_the_same_rows(chain):
    for table in TABLES:
        reused = pl.read_delta(str(chain["first"] / table)).filter(pl.col("run_id") == "b").drop("run_id")
        parsed = pl.read_delta(str(chain["copy"] / table)).filter(pl.col("run_id") == "c").drop("run_id")
        assert reused.height > 0, table
        assert sorted(map(str, reused.rows())) == sorted(map(str, parsed.rows())), table


def test_full_reads_nothing_earlier_runs_left(chain, spark):
    store = DeltaStore(spark, str(chain["first"]))
    params = {"old": EXAMPLE_OLD, "new": chain["new"], "out": str(chain["first"])}
    assert earlier_of(store, resolve(RunParams(**params), load_config())).analysis() is not None
    assert earlier_of(store, resolve(RunParams(**params, full=True), load_config())).analysis() is None


@pytest.mark.parametrize("changed", [{"dialect": "postgres"}, {"system_schemas": ("mz_catalog",)}])
def test_what_an_analysis_depends_on_is_in_its_key(changed):
    base = SqlSettings(dialect="materialize", system_schemas=("mz_internal",))
    assert analysed_with(SqlSettings(**{**base.__dict__, **changed})) != analysed_with(base)
    assert "sqlglot" in analysed_with(base)
