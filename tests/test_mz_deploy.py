"""mz-deploy project folders in (tests/data/mz_deploy: v1 and v2 of a small project, see its README)."""

import pytest

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.errors import InputError
from dirtiness.inputs.formats import detect
from dirtiness.inputs.formats.mz_deploy import to_document

DATA = PROJECT_ROOT / "tests" / "data" / "mz_deploy"


def objects(version: str) -> dict[str, dict]:
    return {f"{o['schema']}.{o['name']}": o for o in to_document(str(DATA / version))["objects"]}


def test_a_project_folder_becomes_objects_with_kinds_clusters_indexes_and_dependencies():
    assert detect(str(DATA / "v1")) == "mz-deploy"
    v1 = objects("v1")
    assert {name: o["kind"] for name, o in v1.items()} == {
        "api.buyer_report": "view", "api.top_buyers": "materialized-view", "core.bid_counts": "view",
        "core.winning_bids": "materialized-view", "out.wins_sink": "sink", "sources.auctions": "source",
        "sources.bids": "table-from-source", "sources.kafka_conn": "connection"}
    assert v1["core.winning_bids"]["cluster"] == "compute"
    assert v1["core.winning_bids"]["indexes"] == [{"name": "winning_bids_idx", "cluster": "serving"}]
    assert v1["core.bid_counts"]["indexes"] == [{"name": "bid_counts_primary_idx", "cluster": "serving"}]
    assert v1["out.wins_sink"]["depends_on"] == ["materialize.core.winning_bids", "materialize.sources.kafka_conn"]
    assert v1["api.top_buyers"]["depends_on"] == ["materialize.core.bid_counts"]  # qualified from its schema
    # SET api = stable in models/materialize/api.sql: the schema's objects are replacements, no other
    assert sorted(n for n, o in v1.items() if o.get("replacement")) == ["api.buyer_report", "api.top_buyers"]


def test_an_index_on_columns_is_named_in_a_warning(caplog):
    with caplog.at_level("WARNING", logger="dirtiness"):
        objects("v2")
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1  # bid_counts' default index is not warned about
    assert "winning_bids.sql: index winning_bids_idx keys on (auction_id)" in warned[0]
    assert "creates it as a default index" in warned[0]


def test_hashes_see_statements_and_indexes_not_formatting():
    v1, v2 = objects("v1"), objects("v2")
    changed = sorted(n for n in v1 if v1[n]["hash"] != v2[n]["hash"])
    # the MV's query changed; the view's index moved cluster; bids.sql only reformatted, commented, upper case
    assert changed == ["core.bid_counts", "core.winning_bids"]
    assert v2["core.bid_counts"]["indexes"] == [{"name": "bid_counts_primary_idx", "cluster": "serving_large"}]


@pytest.mark.parametrize("text, message", [
    ("CREATE VIEW a AS SELECT 1; CREATE VIEW b AS SELECT 2;", r"expected one CREATE of materialize\.core\.a"),
    ("CREATE VIEW b AS SELECT 1;", r"creates materialize\.core\.b, not materialize\.core\.a"),
    ("CREATE VIEW a AS SELECT 1; CREATE INDEX i IN CLUSTER c ON b;", r"an index on materialize\.core\.b"),
    ("CREATE VIEW a AS SELECT FROM WHERE;", r"a\.sql: line 1"),
])
def test_a_bad_file_is_named(tmp_path, text, message):
    folder = tmp_path / "models" / "materialize" / "core"
    folder.mkdir(parents=True)
    (folder / "a.sql").write_text(text)
    with pytest.raises(InputError, match=message) as error:
        to_document(str(tmp_path))
    assert str(folder / "a.sql") in str(error.value)


def test_snapshot_command_shows_the_project_as_the_job_sees_it(tmp_path, capsys):
    assert main(["snapshot", str(DATA / "v2")]) == 0
    text = capsys.readouterr().out
    assert "name: bid_counts_primary_idx\n    cluster: serving_large" in text
    assert main(["snapshot", str(tmp_path)]) == 2  # an empty folder is not a project


def test_the_default_rules_on_two_checkouts(spark, tmp_path):
    import polars as pl

    out = tmp_path / "out"
    assert main(["run", "--old", str(DATA / "v1"), "--new", str(DATA / "v2"), "--out", str(out),
                 "--run-id", "mz"]) == 0
    stmts = pl.read_delta(str(out / "dirty_stmts"))
    found = {f"{r['schema']}.{r['name']}": (r["change"], r["rule"]) for r in stmts.iter_rows(named=True)}
    assert found == {
        "core.winning_bids": ("modified", "changed"), "core.bid_counts": ("modified", "changed"),
        "out.wins_sink": (None, "dependency"),        # reads winning_bids; its schema stays
        "api.top_buyers": (None, "cluster"),          # on compute, which the changed MV makes dirty
        "api.buyer_report": (None, "schema"),         # a replacement's reader: dirty with its schema only
    }
    clusters = set(pl.read_delta(str(out / "dirty_clusters")).get_column("cluster").to_list())
    assert clusters == {"compute", "serving", "serving_large"}
    schemas = set(pl.read_delta(str(out / "dirty_schemas")).get_column("schema").to_list())
    assert schemas == {"core", "api"}
    plan = pl.read_delta(str(out / "ddl_plan")).sort("seq")
    clusters_ops = [(r["phase"], r["step"], r["action"], r["name"], r["statement"])
                    for r in plan.iter_rows(named=True) if r["object_type"] == "cluster"]
    staging = next(r for r in plan.iter_rows(named=True) if r["object_type"] == "schema")
    suffix = staging["target_schema"][len(staging["schema"]):]
    # serving_large is new in v2: nothing deployed runs on it, so it is created as itself, not staged and swapped
    assert [op[:4] for op in clusters_ops if op[3] == "serving_large"] == [("stage", 0, "CREATE", "serving_large")]
    assert ("stage", 0, "CREATE", "serving_large", "CREATE CLUSTER \"serving_large\" (SIZE = '25cc')") in clusters_ops
    assert {op[3] for op in clusters_ops if op[2] == "SWAP"} == {"compute", "serving"}
    index = next(r["statement"] for r in plan.iter_rows(named=True) if r["name"] == "bid_counts_primary_idx")
    assert f'IN CLUSTER "serving_large" ON "materialize"."core{suffix}"."bid_counts"' in index
