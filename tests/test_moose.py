"""Moose infrastructure maps in (tests/data/moose: v1 and v2, see its README); no Spark needed."""

import json

import pytest

from dirtiness.config import PROJECT_ROOT
from dirtiness.errors import InputError
from dirtiness.inputs.formats import detect
from dirtiness.inputs.formats.moose import to_document
from dirtiness.inputs.snapshot import read_document

DATA = PROJECT_ROOT / "tests" / "data" / "moose"


def objects(version: str) -> dict[str, dict]:
    return {f"{o['schema']}.{o['name']}": o for o in to_document(str(DATA / f"{version}.json"))["objects"]}


def test_a_map_becomes_tables_views_and_materialized_views_with_their_lineage():
    assert detect(str(DATA / "v1.json")) == "moose"
    v1 = objects("v1")
    assert {name: o["kind"] for name, o in v1.items()} == {
        "raw.events": "table", "analytics.daily_counts": "table", "analytics.top_users": "table",
        "raw.recent_events": "view", "analytics.daily_counts_mv": "materialized-view",
        "default.top_users_mv": "materialized-view"}  # a sql_resource without a database: in default
    # an MV reads its sources and needs its target: sourceTables by id, targetTable by name
    assert v1["analytics.daily_counts_mv"]["depends_on"] == ["clickhouse.analytics.daily_counts",
                                                             "clickhouse.raw.events"]
    # older maps: pulls_data_from / pushes_data_to, signatures tagged either way
    assert v1["default.top_users_mv"]["depends_on"] == ["clickhouse.analytics.top_users", "clickhouse.raw.events"]
    assert all(o["database"] == "clickhouse" and "sql" not in o for o in v1.values())
    read_document(str(DATA / "v1.json"))  # valid for the job: every dependency is in the map


def test_only_the_changed_definition_has_a_new_hash():
    v1, v2 = objects("v1"), objects("v2")
    assert [n for n in v1 if v1[n]["hash"] != v2[n]["hash"]] == ["analytics.daily_counts_mv"]


def test_a_map_that_is_not_one_is_named(tmp_path):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"tables": [], "views": {}}))
    with pytest.raises(InputError, match=r"map.json: not a Moose infrastructure map"):
        to_document(str(path))
    path.write_text(json.dumps({"tables": {}, "views": {}, "materialized_views": {
        "mv": {"selectSql": "SELECT 1", "sourceTables": ["nowhere"], "targetTable": "gone"}}}))
    # a reference outside the map is kept: the job names it as a dependency that is not in the snapshot
    assert to_document(str(path))["objects"][0]["depends_on"] == ["clickhouse.default.gone",
                                                                  "clickhouse.default.nowhere"]
