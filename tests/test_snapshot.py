"""Snapshots in both forms: a document and folders of tables give the same rows and facts."""

import os

import pytest
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD
from chispa import assert_df_equality

from dirtiness.changeset.base_facts import extract_base_facts
from dirtiness.changeset.diff import changed_stmt
from dirtiness.inputs.snapshot import load_snapshots, snapshot_from_document
from dirtiness.store.delta import DeltaStore



def rows(frame):
    return sorted(tuple(r) for r in frame.collect())


def load_snapshot(spark, path):
    return load_snapshots(spark, {"one": path}).snapshots["one"]


def base_facts(spark, old, new, forced):
    return extract_base_facts(spark, old, new, changed_stmt(old.objects, new.objects), forced)


def snapshot_rows(snapshot):
    return {t: rows(getattr(snapshot, t)) for t in ("objects", "dependencies", "indexes")}


def write_table_form(spark, snapshot, folder, fmt):
    for table in ("objects", "dependencies", "indexes"):
        frame = getattr(snapshot, table)
        if fmt == "delta":
            DeltaStore(spark, folder, backend="deltalake").append(table, frame)
        elif fmt == "csv":
            frame.write.option("header", True).csv(os.path.join(folder, table))
        else:
            frame.write.format(fmt).save(os.path.join(folder, table))
    return folder


@pytest.fixture(scope="module")
def document(spark):
    return load_snapshot(spark, EXAMPLE_NEW)


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv", "delta"])
def test_table_form_loads_the_same_rows(spark, document, tmp_path, fmt):
    loaded = load_snapshot(spark, write_table_form(spark, document, str(tmp_path / fmt), fmt))
    for table in ("objects", "dependencies", "indexes"):
        assert_df_equality(getattr(loaded, table), getattr(document, table), ignore_row_order=True,
                           ignore_nullable=True)


def test_both_forms_give_identical_facts(spark, tmp_path):
    old_doc, new_doc = load_snapshot(spark, EXAMPLE_OLD), load_snapshot(spark, EXAMPLE_NEW)
    old_tab = load_snapshot(spark, write_table_form(spark, old_doc, str(tmp_path / "old"), "delta"))
    new_tab = load_snapshot(spark, write_table_form(spark, new_doc, str(tmp_path / "new"), "parquet"))
    from_docs = base_facts(spark, old_doc, new_doc, [("materialize", "api")])
    from_tables = base_facts(spark, old_tab, new_tab, [("materialize", "api")])
    for name, frame in from_docs.items():
        assert_df_equality(frame, from_tables[name], ignore_row_order=True, ignore_nullable=True)
    assert rows(from_docs["ChangedStmt"]) == [
        ("materialize", "public", "flip_activities", "modified"),
        ("materialize", "public", "flipper_stats", "added"),
        ("materialize", "reporting", "legacy_flippers", "deleted"),
    ]
    assert ("materialize", "quickstart") not in rows(from_docs["ClusterBoundary"])
    assert rows(from_docs["ClusterBoundary"]) == [("compute",), ("ingest",), ("quickstart",), ("serving",),
                                                         ("sinks",)]


def test_changed_stmt_from_hashes_only(spark):
    """modified: two hashes differ; added/deleted: listed with a hash on one side only; no hash: never a change."""
    columns = "database string, schema string, name string, hash string"
    old = spark.createDataFrame([("d", "s", "same", "h1"), ("d", "s", "edited", "h1"), ("d", "s", "gone", "h1"),
                                 ("d", "s", "untracked_gone", None), ("d", "s", "loses_hash", "h1")], columns)
    new = spark.createDataFrame([("d", "s", "same", "h1"), ("d", "s", "edited", "h2"), ("d", "s", "fresh", "h1"),
                                 ("d", "s", "untracked_new", None), ("d", "s", "loses_hash", None)], columns)
    expected = spark.createDataFrame([("d", "s", "edited", "modified"), ("d", "s", "fresh", "added"),
                                      ("d", "s", "gone", "deleted")],
                                     "database string, schema string, name string, change string")
    assert_df_equality(changed_stmt(old, new).select(*expected.columns), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_references_as_lists_or_strings_are_the_same(spark):
    base = {"database": "d", "schema": "s", "kind": "view"}
    as_list = {"objects": [{**base, "name": "a"}, {**base, "name": "b", "depends_on": [["d", "s", "a"]]}]}
    as_text = {"objects": [{**base, "name": "a"}, {**base, "name": "b", "depends_on": ["d.s.a"]}]}
    assert rows(snapshot_from_document(spark, as_list).dependencies) == \
        rows(snapshot_from_document(spark, as_text).dependencies) == [("d", "s", "b", "d", "s", "a")]


def test_json_document(spark, tmp_path):
    path = tmp_path / "snap.json"
    path.write_text('{"objects": [{"database": "d", "schema": "s", "name": "n", "kind": "table", "hash": null}]}')
    assert rows(load_snapshot(spark, str(path)).objects) == [("d", "s", "n", "table", None, None, False, None, None)]
