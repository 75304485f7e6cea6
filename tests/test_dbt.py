"""dbt manifests in: real jaffle_shop manifests (tests/data/dbt, dbt 1.4.3, 1.11 and 1.12), converted,
compared across a dbt upgrade, and run with dbt's own `state:modified+` rules."""

import copy
import gzip
import json

import pytest

from dirtiness.cli import main
from dirtiness.config import CONF, PROJECT_ROOT
from dirtiness.errors import InputError, PolicyError
from dirtiness.inputs.formats import detect, to_document
from dirtiness.inputs.formats.dbt import to_document as dbt_document
from dirtiness.inputs.snapshot import parse_document, read_document

DATA = PROJECT_ROOT / "tests" / "data" / "dbt"
STATE_MODIFIED = str(CONF / "rules" / "dbt_state_modified.dl")


def manifest(version: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"jaffle_shop_manifest_dbt_{version}.json.gz").read_bytes()))


def written(tmp_path, document: dict, name: str = "manifest.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def objects(document: dict) -> dict[str, dict]:
    return {o["tool_id"]: o for o in document["objects"]}


def test_every_manifest_version_converts_to_a_valid_snapshot(tmp_path):
    for version in ("1.4.3", "1.11", "1.12"):
        path = written(tmp_path, manifest(version), f"m{version}.json")
        assert detect(path) == "dbt"
        document = to_document(path)
        parse_document(document, path)  # what the job validates
        ids = set(objects(document))
        raw = manifest(version)
        relations = {uid for uid, n in raw["nodes"].items() if n["resource_type"] in ("model", "seed", "snapshot")}
        assert relations <= ids  # every model and seed; no test
        assert not any(uid.startswith("test.") for uid in ids)
    seeds_and_sources = objects(to_document(written(tmp_path, manifest("1.11"))))
    # a source over a relation a seed builds is that seed: one object, the seed
    assert "seed.jaffle_shop.raw_customers" in seeds_and_sources
    assert "source.jaffle_shop.ecom.raw_customers" not in seeds_and_sources
    stg = seeds_and_sources["model.jaffle_shop.stg_customers"]
    assert stg["depends_on"] == ["jaffle_shop.raw.raw_customers"] and stg["kind"] == "view"
    assert seeds_and_sources["model.jaffle_shop.orders"]["kind"] == "materialized-view"  # a table: rebuilt
    assert seeds_and_sources["seed.jaffle_shop.raw_customers"]["kind"] == "table"


def test_a_dbt_upgrade_changes_no_hash_of_unchanged_code(tmp_path):
    """1.11 -> 1.12: 12 models have the same code and unrendered config but new checksums."""
    old, new = manifest("1.11"), manifest("1.12")
    before = objects(to_document(written(tmp_path, old, "old.json")))
    after = objects(to_document(written(tmp_path, new, "new.json")))
    models = [uid for uid in old["nodes"] if uid.startswith("model.")]
    same_code = [uid for uid in models if old["nodes"][uid]["raw_code"] == new["nodes"][uid]["raw_code"]]
    assert len(same_code) == 12
    assert all(old["nodes"][uid]["checksum"] != new["nodes"][uid]["checksum"] for uid in same_code)
    assert [uid for uid in same_code if before[uid]["hash"] != after[uid]["hash"]] == []
    assert before["model.jaffle_shop.metricflow_time_spine"]["hash"] != \
        after["model.jaffle_shop.metricflow_time_spine"]["hash"]
    assert "seed.jaffle_shop.raw_tweets" in before and "seed.jaffle_shop.raw_tweets" not in after
    # seeds are compared by dbt's checksum of the file: unchanged where dbt kept the checksum
    assert before["seed.jaffle_shop.raw_orders"]["hash"] == after["seed.jaffle_shop.raw_orders"]["hash"]


def test_ephemeral_models_are_looked_through_and_materialize_configs_kept(tmp_path):
    base = {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}, "sources": {}}

    def node(name, materialized, reads=(), **config):
        return {"unique_id": f"model.p.{name}", "resource_type": "model", "name": name, "database": "db",
                "schema": "s", "alias": name, "raw_code": f"select 1 -- {name}",
                "config": {"materialized": materialized, **config}, "unrendered_config": {},
                "depends_on": {"nodes": [f"model.p.{r}" for r in reads]}}

    nodes = [node("a", "view"), node("eph", "ephemeral", ["a"]), node("deeper", "ephemeral", ["eph"]),
             node("mv", "table", ["deeper"], cluster="c1", indexes=[{"columns": ["id"]}, {"default": True}]),
             node("inc", "incremental", ["mv"]), node("snk", "sink", ["mv"]), node("odd", "some_adapter_kind")]
    document = to_document(written(tmp_path, {**base, "nodes": {n["unique_id"]: n for n in nodes}}))
    found = objects(document)
    assert "model.p.eph" not in found and "model.p.deeper" not in found
    assert found["model.p.mv"]["depends_on"] == ["db.s.a"]  # through two ephemeral models
    assert found["model.p.mv"]["cluster"] == "c1"
    assert found["model.p.mv"]["indexes"] == [{"name": "mv_id_idx", "cluster": "c1"},
                                              {"name": "mv_primary_idx", "cluster": "c1"}]
    assert {uid: o["kind"] for uid, o in found.items()} == {
        "model.p.a": "view", "model.p.mv": "materialized-view", "model.p.inc": "table", "model.p.snk": "sink",
        "model.p.odd": "table"}  # an unknown materialization keeps its rows: a drop is destructive


def test_a_file_that_is_not_a_manifest_is_named(tmp_path):
    path = written(tmp_path, {"metadata": {"dbt_schema_version": "v12"}})
    with pytest.raises(InputError, match=r"manifest.json: not a dbt manifest"):
        dbt_document(path)
    broken = tmp_path / "broken.json"
    broken.write_text('{"metadata": {"dbt_schema_version": "v12"},\n "nodes": {,}}')
    with pytest.raises(InputError, match=r"broken.json: line 2: malformed JSON"):
        read_document(str(broken))


def test_a_manifest_newer_than_known_is_read_with_a_warning(tmp_path, caplog):
    future = manifest("1.12")
    future["metadata"]["dbt_schema_version"] = "https://schemas.getdbt.com/dbt/manifest/v13.json"
    with caplog.at_level("WARNING", logger="dirtiness"):
        read = dbt_document(written(tmp_path, future))
    assert read == dbt_document(written(tmp_path, manifest("1.12"), "known.json"))
    assert "dbt manifest schema v13 is newer than v12" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="dirtiness"):
        dbt_document(written(tmp_path, manifest("1.11"), "older.json"))
    assert caplog.text == ""


def test_snapshot_command_writes_what_the_job_reads(tmp_path, capsys):
    path = written(tmp_path, manifest("1.4.3"))
    out = tmp_path / "snapshots" / "s.yaml"
    assert main(["snapshot", path, "--out", str(out)]) == 0
    assert read_document(str(out)).objects == read_document(path).objects
    assert main(["snapshot", str(PROJECT_ROOT / "examples" / "old.yaml")]) == 2
    assert "already a snapshot" in capsys.readouterr().err


def edited(version: str = "1.12", model: str = "model.jaffle_shop.stg_orders") -> dict:
    """A hand edit of one model's code, as a developer's branch would have it."""
    changed = copy.deepcopy(manifest(version))
    changed["nodes"][model]["raw_code"] += "\n-- a comment is a change to dbt too"
    return changed


def descendants(raw: dict, start: str) -> set[str]:
    """A plain walk of dbt's own ``child_map``, relations only."""
    found, todo = {start}, [start]
    while todo:
        for child in raw["child_map"].get(todo.pop(), []):
            if child not in found and child.split(".")[0] in ("model", "seed", "snapshot"):
                found.add(child)
                todo.append(child)
    return found


def test_a_gzipped_manifest_is_read_as_it_is_kept(tmp_path):
    """``manifest.json.gz`` (as CI systems keep artefacts), told by its first bytes, not its name."""
    plain = written(tmp_path, manifest("1.12"))
    for name in ("manifest.json.gz", "manifest.json", "artefact"):
        zipped = tmp_path / "zipped" / name
        zipped.parent.mkdir(exist_ok=True)
        zipped.write_bytes(gzip.compress(open(plain, "rb").read()))
        assert detect(str(zipped)) == "dbt"
        assert read_document(str(zipped)).objects == read_document(plain).objects
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress(open(plain, "rb").read())[:500])
    with pytest.raises(InputError, match=r"broken\.json\.gz: a damaged gzip file"):
        read_document(str(broken))


def test_a_manifest_brings_dbts_rules_and_no_ddl_plan(tmp_path):
    """A dbt manifest as the new project: dbt's state:modified+ and strategy none, as an mz-deploy folder
    brings its own rules; either can be named (the bundled programs by name, from anywhere)."""
    from dirtiness.config import load_config
    from dirtiness.settings import RunParams, resolve

    old, new = written(tmp_path, manifest("1.11"), "prod.json"), written(tmp_path, manifest("1.12"), "dev.json")
    config = load_config()
    settings = resolve(RunParams(old=old, new=new, out=str(tmp_path / "out")), config)
    assert settings.checked.path == STATE_MODIFIED and settings.strategy == "none"
    assert settings.plan_checked is None  # no plan, so no destructive guard: raw_tweets' drop is dbt's business
    with pytest.raises(PolicyError, match=r"refused without --allow-destructive: jaffle_shop\.raw\.raw_tweets "
                                          r"\(table\) \(deleted from the new project"):  # a plan of one's own
        resolve(RunParams(old=old, new=new, out=str(tmp_path / "out"), rules="dirty", strategy="in-place"), config)
    chosen = resolve(RunParams(old=old, new=new, out=str(tmp_path / "out"), rules="dirty", strategy="in-place",
                               allow_destructive=True), config)
    assert chosen.checked.path == str(CONF / "rules" / "dirty.dl") and chosen.plan_checked is not None
    with pytest.raises(InputError, match="dbt_state_modifed: no such rule program .*; did you mean "
                                         "'dbt_state_modified'?"):
        resolve(RunParams(old=old, new=new, out=str(tmp_path / "out"), rules="dbt_state_modifed"), config)


@pytest.mark.spark
def test_state_modified_gives_the_edited_model_and_its_descendants(spark, tmp_path, capsys):
    import polars as pl

    old, new = manifest("1.12"), edited()
    out = tmp_path / "out"
    prod = tmp_path / "prod.json.gz"
    prod.write_bytes(gzip.compress(json.dumps(old).encode()))
    code = main(["run", "--old", str(prod), "--new", written(tmp_path, new, "dev.json"), "--out", str(out),
                 "--run-id", "dbt", "--report", str(tmp_path / "report.html")])
    assert code == 0
    printed = capsys.readouterr().out
    assert "plan (none): no DDL plan; `dirtiness select --out" in printed
    run = pl.read_delta(str(out / "runs")).to_dicts()[-1]
    assert (run["strategy"], run["plan_rules"], run["ddl_operations"]) == ("none", None, None)
    assert not (out / "ddl_plan").exists() and not (out / "decisions").exists()
    page = (tmp_path / "report.html").read_text()
    assert "no DDL plan (strategy none)" in page and "build order" in page
    dirty = pl.read_delta(str(out / "dirty_stmts"))
    assert set(dirty.get_column("tool_id").to_list()) == descendants(new, "model.jaffle_shop.stg_orders")
    assert dirty.filter(pl.col("change").is_not_null()).get_column("tool_id").to_list() == [
        "model.jaffle_shop.stg_orders"]
    assert pl.read_delta(str(out / "dirty_schemas")).height == pl.read_delta(str(out / "dirty_clusters")).height == 0

    capsys.readouterr()
    assert main(["select", "--out", str(out)]) == 0
    selected = capsys.readouterr().out.split()
    assert set(selected) == {uid.split(".")[-1] for uid in descendants(new, "model.jaffle_shop.stg_orders")}
    assert selected.index("stg_orders") == 0 and selected.index("orders") < selected.index("customers")
    # the same, as dbt ls --select state:modified+ --output json prints it, a node a line
    assert main(["select", "--out", str(out), "--format", "json"]) == 0
    nodes = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [n["name"] for n in nodes] == selected
    assert nodes[0] == {"name": "stg_orders", "resource_type": "model", "package_name": "jaffle_shop",
                        "unique_id": "model.jaffle_shop.stg_orders", "alias": "stg_orders",
                        "database": "jaffle_shop", "schema": "main"}
    # a name as select prints it works wherever a name is asked for
    assert main(["select", "--out", str(out), "customers", "main.stg_customers"]) == 0
    printed = capsys.readouterr()
    assert printed.out.split() == ["customers"]
    assert "jaffle_shop.main.stg_customers is not selected in run dbt" in printed.err
    assert main(["explain", "--out", str(out), "customers"]) == 0
    explained = capsys.readouterr().out
    assert explained.startswith("object jaffle_shop.main.customers is dirty in run dbt")
    assert "in the plan: the run planned no DDL (strategy none)" in explained
    assert main(["select", "--out", str(out), "custmers"]) == 2
    assert "(run dbt); did you mean jaffle_shop.main.customers or " in capsys.readouterr().err
    assert main(["apply", "--out", str(out), "--dsn", "dbname=nothing"]) == 2
    assert "run dbt planned no DDL (strategy none): nothing to apply" in capsys.readouterr().err

    # the next run of the same manifests takes run dbt's answer (no unit changed), which has no staging suffix
    # to replace: its rows are those of dbt, a full run, and select prints the same
    assert main(["run", "--old", str(prod), "--new", written(tmp_path, new, "dev.json"), "--out", str(out),
                 "--run-id", "dbt-next", "--summary-json", str(tmp_path / "next.json")]) == 0
    summary = json.loads((tmp_path / "next.json").read_text())
    assert (summary["mode"], summary["units"]["started_from"]) == ("incremental", "dbt")
    for table in ("dirty_stmts", "dirty_schemas", "dirty_clusters", "run_relations"):
        rows = pl.read_delta(str(out / table))
        assert sorted(rows.filter(pl.col("run_id") == "dbt-next").drop("run_id").rows()) == sorted(
            rows.filter(pl.col("run_id") == "dbt").drop("run_id").rows()), table
    capsys.readouterr()
    assert main(["select", "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == selected
