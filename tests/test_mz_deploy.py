"""mz-deploy project folders in (tests/data/mz_deploy: v1 and v2 of a small project, see its README)."""

import json

import pytest

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT, load_config
from dirtiness.errors import InputError
from dirtiness.inputs.formats import detect
from dirtiness.inputs.formats.mz_deploy import to_document
from dirtiness.model import CLUSTER_NAME

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
    assert v1["core.winning_bids"]["indexes"] == [{"name": "winning_bids_idx", "cluster": "serving",
                                                   "key": ['"auction_id"']}]
    assert v1["core.bid_counts"]["indexes"] == [{"name": "bid_counts_primary_idx", "cluster": "serving"}]
    assert v1["out.wins_sink"]["depends_on"] == ["materialize.core.winning_bids", "materialize.sources.kafka_conn"]
    assert v1["api.top_buyers"]["depends_on"] == ["materialize.core.bid_counts"]  # qualified from its schema
    # SET api = stable in models/materialize/api.sql: the schema's objects are replacements, no other
    assert sorted(n for n, o in v1.items() if o.get("replacement")) == ["api.buyer_report", "api.top_buyers"]


def test_an_index_keeps_its_key():
    v2 = objects("v2")
    assert v2["core.winning_bids"]["indexes"] == [
        {"name": "winning_bids_idx", "cluster": "serving", "key": ['"auction_id"']}]
    assert "key" not in v2["core.bid_counts"]["indexes"][0]  # a default index has none


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


def test_mz_deploys_rules_on_the_auction_checkouts(spark, tmp_path):
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
    # serving_large is new in v2 and no file defines it: it exists outside the project (mz-deploy's apply or
    # a person made it), so, dirty, it is staged and swapped like any cluster, never created as itself
    assert [op[:4] for op in clusters_ops if op[3] == "serving_large"] == [
        ("stage", 0, "CREATE", "serving_large"), ("swap", 1, "SWAP", "serving_large"),
        ("cleanup", 0, "DROP", "serving_large")]
    assert {op[3] for op in clusters_ops if op[2] == "SWAP"} == {"compute", "serving", "serving_large"}
    # compute's staged copy is created as clusters/compute.sql defines compute, grant included; the others
    # (no definition) with the dialect's template
    staged = {op[3]: op[4] for op in clusters_ops if op[2] == "CREATE"}
    assert staged == {
        "compute": f'CREATE CLUSTER "compute{suffix}" (SIZE = \'100cc\', REPLICATION FACTOR = 2); '
                   f'GRANT USAGE ON CLUSTER "compute{suffix}" TO analyst',
        "serving": f'CREATE CLUSTER "serving{suffix}" (SIZE = \'25cc\')',
        "serving_large": f'CREATE CLUSTER "serving_large{suffix}" (SIZE = \'25cc\')'}
    keyed = next(r["statement"] for r in plan.iter_rows(named=True) if r["name"] == "winning_bids_idx")
    assert keyed == (f'CREATE INDEX "winning_bids_idx" IN CLUSTER "serving{suffix}" '
                     f'ON "materialize"."core{suffix}"."winning_bids" ("auction_id")')  # its key, kept exactly
    index = next(r["statement"] for r in plan.iter_rows(named=True) if r["name"] == "bid_counts_primary_idx")
    assert f'IN CLUSTER "serving_large{suffix}" ON "materialize"."core{suffix}"."bid_counts"' in index


# --- mz-deploy's semantics, on checkouts of tests/mz_projects.py ------------------------------------------------

MATERIALIZE_SYSTEM = ("mz_catalog", "mz_internal", "pg_catalog", "information_schema")


def project_objects(folder) -> tuple[dict[str, dict], dict[str, int]]:
    document = to_document(str(folder), system_schemas=MATERIALIZE_SYSTEM)
    return {f"{o['schema']}.{o['name']}": o for o in document["objects"]}, document["unit_tests"]


def test_unit_tests_are_counted_and_are_not_part_of_the_hash(tmp_path):
    from mz_projects import write

    v1, tests1 = project_objects(write(tmp_path / "v1", "v1"))
    v2, tests2 = project_objects(write(tmp_path / "v2", "v2"))
    assert tests1 == {"materialize.core.user_events": 1} and tests2 == {"materialize.core.user_events": 2}
    assert v1["core.user_events"]["hash"] == v2["core.user_events"]["hash"]  # a second test changes no statement
    assert "EXECUTE" not in v2["core.user_events"]["sql"]  # a test is never deployed
    assert sorted(n for n in v1 if v1[n]["hash"] != v2[n]["hash"]) == [
        "core.top_bids", "sources.kafka_conn", "storage.users"]


def test_system_catalogs_are_read_not_depended_on(tmp_path):
    from mz_projects import write

    objects, _ = project_objects(write(tmp_path / "v1", "v1"))
    assert "depends_on" not in objects["core.catalog_size"]
    assert objects["core.user_events"]["depends_on"] == ["materialize.storage.events", "materialize.storage.users"]
    # without the dialect's system schemas, mz_catalog is an object nobody defines: named with its file and line
    with pytest.raises(InputError, match=r"catalog_size\.sql:3: materialize\.core\.catalog_size reads "
                                         r"materialize\.mz_catalog\.mz_objects, which no file of the project defines"):
        to_document(str(tmp_path / "v1"))


@pytest.mark.parametrize("files, message", [
    ({"core/a.sql": "CREATE VIEW a AS\nSELECT 1 AS x\nFROM core.ghost;"},
     r"core/a\.sql:3: materialize\.core\.a reads materialize\.core\.ghost, which no file of the project defines"),
    ({"core/a.sql": "CREATE VIEW a AS SELECT 1 AS x;", "core/t.sql": "CREATE TABLE t (id integer);"},
     r"models/materialize/core: schema materialize\.core mixes storage objects \(t, a table\) with views and "
     r"materialized views \(a, a view\)"),
    ({"core/a.sql": "CREATE VIEW a AS SELECT 1 AS x;\n\xff"}, None),  # written as bytes below
])
def test_a_project_problem_is_one_line_naming_the_file(tmp_path, files, message):
    from mz_projects import write

    if message is None:  # an invalid UTF-8 byte
        folder = write(tmp_path, {"core/a.sql": "CREATE VIEW a AS SELECT 1 AS x;"})
        (folder / "models" / "materialize" / "core" / "a.sql").write_bytes(b"CREATE VIEW a AS SELECT 1 AS x; -- \xff")
        message = r"core/a\.sql: not UTF-8 text \(byte 35: invalid start byte\)"
    else:
        folder = write(tmp_path, files)
    with pytest.raises(InputError, match=message) as error:
        to_document(str(folder), system_schemas=MATERIALIZE_SYSTEM)
    assert "\n" not in str(error.value)


def test_a_project_takes_mz_deploys_rules_and_every_check_before_spark(tmp_path, monkeypatch):
    from mz_projects import write

    from dirtiness import session
    from dirtiness.config import load_config
    from dirtiness.plan.operations import deploy_suffix
    from dirtiness.settings import RunParams, resolve

    monkeypatch.setattr(session, "build_session", lambda *a, **k: pytest.fail("Spark started"))
    old, new = write(tmp_path / "v1", "v1"), write(tmp_path / "v2", "v2")
    config = load_config()
    settings = resolve(RunParams(old=str(old), new=str(new), out=str(tmp_path / "out"), redeploy_all=True), config)
    assert settings.checked.path.endswith("mz_deploy.dl")
    assert settings.inputs["new"].unit_tests == {"materialize.core.user_events": 2}
    assert set(settings.forced) == {("materialize", s) for s in ("api", "core", "out", "sources", "storage")}
    assert resolve(RunParams(old=str(old), new=str(new), out=str(tmp_path / "out"), rules=str(PROJECT_ROOT / "conf" / "rules" / "dirty.dl")),
                   config).checked.path.endswith("dirty.dl")  # --rules overrides
    named = resolve(RunParams(old=str(old), new=str(new), out=str(tmp_path / "out"), deploy_id="a1b2c3d"), config)
    assert deploy_suffix(named.run_id, named.deploy_suffix) == "_a1b2c3d"  # mz-deploy's <name>_<deploy_id>
    plain = resolve(RunParams(old=str(old), new=str(new), out=str(tmp_path / "out")), config)
    assert named.fingerprints["config_fingerprint"] != plain.fingerprints["config_fingerprint"]
    with pytest.raises(InputError, match=r"--deploy-id 'A-1': expected 1 to 126 lower-case letters"):
        resolve(RunParams(old=str(old), new=str(new), out=str(tmp_path / "out"), deploy_id="A-1"), config)
    # a name PostgreSQL would truncate to 63 bytes is refused, not planned
    # every such name is named (the first five, and how many more)
    long = write(tmp_path / "long", {f"core/{c * 64}.sql": f"CREATE VIEW {c * 64} AS SELECT 1 AS x;" for c in "uvwxyz"})
    config["plan"]["dialect"] = "postgres"
    with pytest.raises(InputError, match=r"6 names longer than the postgres dialect allows \(63 bytes; the database "
                                         r"would truncate them\): materialize\.core\.u{64}: the name 'u{20}'\.\.\. is "
                                         r"64 bytes; materialize\.core\.v{64}: .* \(and 1 more\)"):
        resolve(RunParams(old=str(long), new=str(long), out=str(tmp_path / "out")), config)


def test_mz_deploy_semantics_on_two_checkouts(spark, tmp_path, caplog, capsys, monkeypatch):
    """Apply's objects changed and added, a unit test added, one view changed: only the view's closure is
    deployed; the new table is created in production; the changed table and connection are warned about;
    no secret value reaches any output, and apply finds the value where it is."""
    import polars as pl
    from mz_projects import PLANTED, write

    from dirtiness.sql.secrets import reveal

    out, page = tmp_path / "out", tmp_path / "report.html"
    old, new = write(tmp_path / "v1", "v1"), write(tmp_path / "v2", "v2")
    with caplog.at_level("INFO", logger="dirtiness"):
        assert main(["run", "--old", str(old), "--new", str(new), "--out", str(out), "--run-id", "mzd",
                     "--report", str(page), "--summary-json", str(tmp_path / "summary.json")]) == 0
        assert main(["explain", "--out", str(out), "materialize.sources.token"]) == 0
        assert main(["snapshot", str(new)]) == 0
    stmts = pl.read_delta(str(out / "dirty_stmts"))
    found = {f"{r['schema']}.{r['name']}": r["rule"] for r in stmts.iter_rows(named=True)}
    assert found == {"core.top_bids": "changed", "core.hot_bids": "changed", "core.user_events": "schema",
                     "core.catalog_size": "schema", "out.events_sink": "dependency", "api.summary": "dependency"}
    assert pl.read_delta(str(out / "dirty_clusters")).get_column("cluster").to_list() == ["hot"]
    assert set(pl.read_delta(str(out / "dirty_schemas")).get_column("schema").to_list()) == {"core", "api"}
    plan = pl.read_delta(str(out / "ddl_plan")).sort("seq")
    touched = {(r["schema"], r["name"]) for r in plan.iter_rows(named=True) if r["object_type"] != "schema"}
    assert not {t for t in touched if t[0] in ("storage", "sources")} - {("storage", "accounts"), ("sources", "token")}
    created = [r for r in plan.iter_rows(named=True) if r["name"] == "accounts"]
    assert [(r["action"], r["schema"], r["target_schema"], r["reason"]) for r in created] == [
        ("CREATE", "storage", "storage", "added")]
    assert created[0]["phase"] == "stage"  # in production before the staged objects (nothing of it is staged)
    warned = [r.getMessage() for r in caplog.records if "apply-managed" in r.getMessage()]
    assert len(warned) == 1 and "materialize.sources.kafka_conn (connection, modified)" in warned[0]
    assert "materialize.storage.users (table, modified)" in warned[0]
    assert "api_key" not in warned[0]  # a secret's value is not hashed: a new value is apply's, unseen here

    # a cluster definition is a unit: the next run after only hot's size changed computes again (it would
    # otherwise take run mzd's answer, the old size and all)
    (new / "clusters" / "hot.sql").write_text("CREATE CLUSTER hot (SIZE = '100cc');\nGRANT USAGE ON CLUSTER hot "
                                             "TO analyst;")
    with caplog.at_level("INFO", logger="dirtiness"):
        assert main(["run", "--old", str(old), "--new", str(new), "--out", str(out), "--run-id", "mzd-resized",
                     "--summary-json", str(tmp_path / "resized.json")]) == 0
    resized = json.loads((tmp_path / "resized.json").read_text())
    assert (resized["mode"], resized["full_because"]) == ("full", "1 unit changed (new: 1 edited) since run mzd")
    created = pl.read_delta(str(out / "ddl_plan")).filter((pl.col("run_id") == "mzd-resized")
                                                          & (pl.col("object_type") == "cluster"))
    assert created.get_column("statement").to_list() == [
        "CREATE CLUSTER \"hot\" (SIZE = '100cc'); GRANT USAGE ON CLUSTER \"hot\" TO analyst"]
    plan = plan.filter(pl.col("run_id") == "mzd")

    # the planted values: in no table, file, page, log line or printed line
    printed = capsys.readouterr()
    texts = [printed.out, printed.err, "\n".join(r.getMessage() for r in caplog.records)]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*")
              if p.is_file() and "models" not in p.parts]
    assert len(texts) > 20 and not [t for t in texts if PLANTED in t]
    assert main(["explain", "--out", str(out), "materialize.storage.users"]) == 0  # why a changed table is clean
    said = capsys.readouterr().out
    assert "is not dirty" in said and "apply-managed" in said and "changed (modified)" in said
    hot = [(r["action"], r["statement"]) for r in plan.iter_rows(named=True) if r["object_type"] == "cluster"]
    assert hot == [("CREATE", "CREATE CLUSTER \"hot\" (SIZE = '50cc'); GRANT USAGE ON CLUSTER \"hot\" TO analyst")]
    token = [r for r in plan.iter_rows(named=True) if r["name"] == "token"]
    assert [(r["action"], r["reason"]) for r in token] == [("CREATE", "added")]
    assert reveal(token[0]["statement"], "materialize", "sources", "token") == \
        'CREATE SECRET "materialize"."sources"."token" AS \'planted-new-Zq9\''
    monkeypatch.setenv("DIRTINESS_SECRET_MATERIALIZE_SOURCES_TOKEN", "from-env")
    assert reveal(token[0]["statement"], "materialize", "sources", "token").endswith("AS 'from-env'")
    monkeypatch.delenv("DIRTINESS_SECRET_MATERIALIZE_SOURCES_TOKEN")
    (new / "models" / "materialize" / "sources" / "token.sql").unlink()
    with pytest.raises(InputError, match=r"secret materialize\.sources\.token: no value: "
                                         r"DIRTINESS_SECRET_MATERIALIZE_SOURCES_TOKEN is not set and .*token\.sql holds"):
        reveal(token[0]["statement"], "materialize", "sources", "token")


@pytest.mark.parametrize("text, message", [
    ("CREATE CLUSTER hot (SIZE = '50cc');\nCREATE VIEW v AS SELECT 1;",
     r"clusters/hot\.sql: expected one CREATE CLUSTER and its GRANT \.\.\. ON CLUSTER statements, found 'CREATE VIEW"),
    ("GRANT USAGE ON CLUSTER hot TO analyst;", r"clusters/hot\.sql: no CREATE CLUSTER in a cluster's file"),
    ("CREATE CLUSTER hot (SIZE = '50cc'); GRANT USAGE ON CLUSTER cold TO analyst;",
     r"clusters/hot\.sql: a grant on cluster cold, not on hot"),
])
def test_a_bad_cluster_definition_is_named(tmp_path, text, message):
    from mz_projects import write

    folder = write(tmp_path, {"core/a.sql": "CREATE VIEW a AS SELECT 1 AS x;"})
    (folder / "clusters").mkdir()
    (folder / "clusters" / "hot.sql").write_text(text)
    with pytest.raises(InputError, match=message):
        to_document(str(folder))


LICENCE = """-- Copyright Example Corp. All rights reserved.
--
-- Use of this software is governed by the Business Source License
-- included in the LICENSE file.

"""
# Cluster files in every form Materialize takes, as mz-deploy's own test projects write them.
CLUSTER_FILES = {
    "app.sql": LICENCE + "-- the serving cluster\nCREATE CLUSTER app SIZE = 'scale=1,workers=1';\n"
                         "GRANT USAGE ON CLUSTER app TO analyst;\nCOMMENT ON CLUSTER app IS 'serving';",
    "big.sql": LICENCE + "CREATE CLUSTER big (\n    SIZE = 'scale=1,workers=1', -- small for now\n"
                         "    INTROSPECTION DEBUGGING\n);",
    "manual.sql": "CREATE CLUSTER manual REPLICAS (r1 (SIZE = 'scale=1,workers=1'), \"R 2\" (SIZE '25cc'));",
    "quiet.sql": "/* block comment */ CREATE CLUSTER quiet SIZE '25cc', REPLICATION FACTOR 1 WITH (WAIT FOR '1s');",
}
# A project whose materialized view runs on a cluster no file defines (managed outside the project).
OUTSIDE = {
    "public/orders.sql": "CREATE TABLE orders (id integer, amount integer);",
    "serving/totals.sql": "CREATE MATERIALIZED VIEW totals IN CLUSTER scaled AS SELECT sum(amount) AS total "
                          "FROM public.orders;\nCREATE INDEX totals_idx IN CLUSTER big ON totals (total);",
    "serving/counts.sql": "CREATE MATERIALIZED VIEW counts IN CLUSTER app AS SELECT count(*) AS n FROM public.orders;",
}


def test_every_form_of_a_cluster_file_is_read_with_its_options(tmp_path):
    from mz_projects import write

    folder = write(tmp_path, OUTSIDE)
    (folder / "clusters").mkdir()
    for name, text in CLUSTER_FILES.items():
        (folder / "clusters" / name).write_text(text)
    clusters = {name: text.replace(CLUSTER_NAME, "<name>")
                for name, text in to_document(str(folder))["clusters"].items()}
    assert clusters == {
        "app": "CREATE CLUSTER <name> SIZE = 'scale=1,workers=1'; GRANT USAGE ON CLUSTER <name> TO analyst",
        "big": "CREATE CLUSTER <name> (SIZE = 'scale=1,workers=1', INTROSPECTION DEBUGGING)",
        "manual": "CREATE CLUSTER <name> REPLICAS (r1 (SIZE = 'scale=1,workers=1'), \"R 2\" (SIZE '25cc'))",
        "quiet": "CREATE CLUSTER <name> SIZE '25cc', REPLICATION FACTOR 1 WITH (WAIT FOR '1s')"}


def test_a_cluster_no_file_defines_is_staged_and_swapped_on_a_first_deploy(spark, tmp_path):
    """mz-deploy stages every dirty cluster as <name>_<deploy id> and swaps it; one the project does not
    define exists already (managed outside it), so it is never created in production; one it defines and
    the database lacks is created from its file."""
    import polars as pl
    from mz_projects import write

    new = write(tmp_path / "project", OUTSIDE)
    (new / "clusters").mkdir()
    for name in ("app.sql", "big.sql"):
        (new / "clusters" / name).write_text(CLUSTER_FILES[name])
    empty = tmp_path / "empty.yaml"
    empty.write_text("objects: []\n")
    out = tmp_path / "out"
    assert main(["run", "--old", str(empty), "--new", str(new), "--out", str(out), "--deploy-id", "d1",
                 "--run-id", "first"]) == 0
    plan = pl.read_delta(str(out / "ddl_plan")).sort("seq")
    clusters = [(r["phase"], r["action"], r["statement"]) for r in plan.iter_rows(named=True)
                if r["object_type"] == "cluster"]
    template = load_config()["plan"]["dialects"]["materialize"]["create_cluster"]
    assert clusters == [
        ("stage", "CREATE", "CREATE CLUSTER \"app\" SIZE = 'scale=1,workers=1'; GRANT USAGE ON CLUSTER \"app\" "
                            "TO analyst"),
        ("stage", "CREATE", "CREATE CLUSTER \"big\" (SIZE = 'scale=1,workers=1', INTROSPECTION DEBUGGING)"),
        ("stage", "CREATE", template.replace("{cluster}", '"scaled_d1"')),
        ("swap", "SWAP", 'ALTER CLUSTER "scaled" SWAP WITH "scaled_d1"'),
        ("cleanup", "DROP", 'DROP CLUSTER IF EXISTS "scaled_d1" CASCADE')]
    totals = plan.filter(pl.col("name") == "totals")["statement"].to_list()
    assert totals[0].startswith('CREATE MATERIALIZED VIEW "materialize"."serving_d1"."totals" IN CLUSTER "scaled_d1"')
    decided = {r["name"]: r["decision"] for r in pl.read_delta(str(out / "decisions")).iter_rows(named=True)
               if r["subject"] == "cluster"}
    assert decided == {"app": "created", "big": "created", "scaled": "swapped"}


PG_V1 = {
    "raw/events.sql": "CREATE TABLE events (id integer PRIMARY KEY, ok boolean, v integer, day date);",
    "core/clean.sql": "CREATE MATERIALIZED VIEW clean AS SELECT * FROM raw.events WHERE ok;\n"
                      "EXECUTE UNIT TEST test_clean FOR shop.core.clean\n"
                      "MOCK shop.raw.events(id integer, ok boolean, v integer, day date) AS (\n"
                      "  SELECT * FROM (VALUES (1, true, 1, DATE '2026-01-01'))\n),\n"
                      "EXPECTED(id integer, ok boolean, v integer, day date) AS (\n"
                      "  SELECT * FROM (VALUES (1, true, 1, DATE '2026-01-01'))\n);",
    "core/relations.sql": "CREATE VIEW relations AS SELECT count(*) AS n FROM information_schema.tables;",
    "mart/daily.sql": "CREATE MATERIALIZED VIEW daily AS SELECT day, count(*) AS n FROM core.clean GROUP BY day;",
    "mart/positive.sql": "CREATE VIEW positive AS SELECT id, v FROM core.clean WHERE v > 0;",
}
PG_V2 = {
    **PG_V1,
    "core/clean.sql": PG_V1["core/clean.sql"].replace("WHERE ok;", "WHERE ok AND v IS NOT NULL;"),
    "raw/accounts.sql": "CREATE TABLE accounts (id integer PRIMARY KEY, owner integer);",
    "mart/owners.sql": "CREATE VIEW owners AS SELECT owner, count(*) AS n FROM raw.accounts GROUP BY owner;",
}


def _in_dependency_order(document: dict) -> dict:
    """The document's objects, each after what it reads (how a person deploys a project by hand)."""
    objects = {".".join((o["database"], o["schema"], o["name"])): o for o in document["objects"]}
    ordered, seen = [], set()

    def visit(key):
        if key in seen or key not in objects:
            return
        seen.add(key)
        for dependency in objects[key].get("depends_on", ()):
            visit(dependency)
        ordered.append(objects[key])

    for key in sorted(objects):
        visit(key)
    return {"objects": ordered}


@pytest.mark.processes
def test_a_project_folder_plan_applies_to_postgresql_like_a_fresh_deploy(spark, postgres, tmp_path):
    """Two checkouts in mz-deploy's layout, of SQL PostgreSQL runs too: the changed MV's closure is
    redeployed, the new table and view created, the unit test and the information_schema read kept out,
    and the database then equals one deployed afresh from the new checkout."""
    import polars as pl
    from mz_projects import write
    from postgres import catalog, deploy, without_oids

    pg_config = str(PROJECT_ROOT / "examples" / "postgres" / "dirtiness.yaml")
    old, new = write(tmp_path / "v1", PG_V1, database="shop"), write(tmp_path / "v2", PG_V2, database="shop")
    out = tmp_path / "out"
    assert main(["run", "--old", str(old), "--new", str(new), "--out", str(out), "--config", pg_config,
                 "--run-id", "pg"]) == 0
    stmts = {r["name"]: r["rule"] for r in pl.read_delta(str(out / "dirty_stmts")).iter_rows(named=True)}
    assert stmts == {"clean": "changed", "relations": "schema", "daily": "dependency", "positive": "dependency",
                     "owners": "changed"}  # the new table is apply's: created, not dirty
    system = ("pg_catalog", "information_schema")
    dsn = postgres.fresh_database("shop")
    deploy(dsn, _in_dependency_order(to_document(str(old), system_schemas=system)))
    before = catalog(dsn)
    assert main(["apply", "--out", str(out), "--run-id", "pg", "--dsn", dsn]) == 0
    fresh = postgres.fresh_database("fresh_shop")
    deploy(fresh, _in_dependency_order(to_document(str(new), system_schemas=system)))
    after = catalog(dsn)
    assert without_oids(after) == without_oids(catalog(fresh))
    assert after["relations"][("raw", "events")]["oid"] == before["relations"][("raw", "events")]["oid"]
