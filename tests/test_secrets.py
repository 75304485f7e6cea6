"""A secret's value, planted in every input form, reaches no output under either strategy.

Each form carries the planted values where that form keeps what a user writes: a snapshot document's and a
table-form snapshot's ``sql`` (``CREATE SECRET ... AS 'planted-...'``), an mz-deploy project's files, a dbt
model's code and hooks, a Moose map's engine settings, a database catalog's rows. Every run (both sides read,
one form each) is made through the command line with its report and summary, then read back with
``explain``, ``select``, ``apply --dry-run`` and ``snapshot``: no table file, page, log line or printed line
may hold ``planted-``. Where the form carries SQL, the plan must still create the secret (with its
placeholder), and ``apply`` puts the value back from the environment only.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
from pathlib import Path

import polars as pl
import pytest
import yaml
from mz_projects import PLANTED
from mz_projects import write as write_mz_project

from dirtiness.cli import main
from dirtiness.errors import InputError
from dirtiness.inputs.live_materialize import catalog_from_rows
from dirtiness.inputs.live import snapshot_document
from dirtiness.sql.secrets import reveal

SECRET_KINDS = {"documents": "shop.keys.token", "tables": "shop.keys.token", "mz-deploy": "materialize.sources.token"}


def _secret(name: str, value: str, version: str) -> dict:
    return {"database": "shop", "schema": "keys", "name": name, "kind": "secret", "hash": f"{name}-{version}",
            "sql": f"CREATE SECRET {name} AS '{value}'"}


def _connection(name: str, secret: str) -> dict:
    return {"database": "shop", "schema": "keys", "name": name, "kind": "connection", "hash": f"{name}-1",
            "depends_on": [f"shop.keys.{secret}"],
            "sql": f"CREATE CONNECTION {name} TO KAFKA (BROKER 'b:9092', SASL PASSWORD = SECRET {secret})"}


def _view() -> dict:
    return {"database": "shop", "schema": "app", "name": "counts", "kind": "view", "hash": "v1",
            "sql": "CREATE VIEW counts AS SELECT 1 AS n"}


def project(side: str) -> list[dict]:
    """A secret read by a connection; the new side changes its value and adds a second secret and connection."""
    if side == "old":
        return [_view(), _secret("api_key", f"{PLANTED}old-key", "1"), _connection("pull", "api_key")]
    return [_view(), _secret("api_key", f"{PLANTED}new-key", "2"), _connection("pull", "api_key"),
            _secret("token", f"{PLANTED}new-token", "1"), _connection("push", "token")]


def _documents(folder: Path) -> tuple[str, str]:
    (folder / "old.json").write_text(json.dumps({"objects": project("old")}))  # JSON on one side, YAML on the other
    (folder / "new.yaml").write_text(yaml.safe_dump({"objects": project("new")}))
    return str(folder / "old.json"), str(folder / "new.yaml")


def _tables(folder: Path) -> tuple[str, str]:
    for side in ("old", "new"):
        objects = project(side)
        (folder / side / "objects").mkdir(parents=True)
        (folder / side / "dependencies").mkdir()
        columns = ["database", "schema", "name", "kind", "hash", "sql"]
        pl.DataFrame([{c: o.get(c) for c in columns} for o in objects], schema={c: pl.String for c in columns}) \
            .write_parquet(folder / side / "objects" / "part.parquet")
        deps = [(o["database"], o["schema"], o["name"], *d.split("."))
                for o in objects for d in o.get("depends_on", ())]
        pl.DataFrame(deps, schema=["database", "schema", "name", "dep_database", "dep_schema", "dep_name"],
                     orient="row").write_parquet(folder / side / "dependencies" / "part.parquet")
    return str(folder / "old"), str(folder / "new")


def _mz_deploy(folder: Path) -> tuple[str, str]:
    return str(write_mz_project(folder / "v1", "v1")), str(write_mz_project(folder / "v2", "v2"))


def dbt_manifest(value: str, code: str = "select 1 as k") -> dict:
    """A model whose code and hook create a secret (and one of its columns is a literal that is no secret)."""
    hook = f"CREATE SECRET IF NOT EXISTS api_key AS '{PLANTED}{value}-hook'"
    node = {"unique_id": "model.shop.orders", "resource_type": "model", "name": "orders", "database": "shop",
            "schema": "app", "alias": "orders",
            "raw_code": f"{{{{ create_secret() }}}} CREATE SECRET k AS '{PLANTED}{value}-code'; {code}",
            "config": {"materialized": "view", "pre_hook": [{"sql": hook}]},
            "unrendered_config": {"pre_hook": hook}, "depends_on": {"nodes": []}}
    return {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
            "nodes": {node["unique_id"]: node}, "sources": {}}


def _dbt(folder: Path) -> tuple[str, str]:
    def manifest(value: str) -> dict:
        return dbt_manifest(value, code=f"select '{value}' as k")  # the code changes too: a change to deploy
    (folder / "prod.json").write_text(json.dumps(manifest("old")))
    (folder / "manifest.json.gz").write_bytes(gzip.compress(json.dumps(manifest("new")).encode()))
    return str(folder / "prod.json"), str(folder / "manifest.json.gz")


def _moose(folder: Path) -> tuple[str, str]:
    def infra(value: str) -> dict:
        engine = {"S3": {"path": "s3://bucket/events", "aws_secret_access_key": f"{PLANTED}{value}"}}
        return {"tables": {"events": {"name": "events", "database": "raw", "engine": engine,
                                      "columns": [{"name": "id", "data_type": "UInt64"}]}},
                "views": {"recent": {"name": "recent", "database": "raw", "selectSql": "SELECT * FROM raw.events",
                                     "sourceTables": ["events"]}}}
    for name, value in (("old", "old-moose"), ("new", "new-moose")):
        (folder / f"{name}.json").write_text(json.dumps(infra(value)))
    return str(folder / "old.json"), str(folder / "new.json")


FORMS = {"documents": _documents, "tables": _tables, "mz-deploy": _mz_deploy, "dbt": _dbt, "moose": _moose}


class Said(logging.Handler):
    """Every log line of the ``dirtiness`` logger, as formatted (the command's own handler writes to stderr)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


# every form once, and both strategies for one whose secret reaches the plan as a statement: a form is masked as
# it is read, before any strategy plans it (six runs)
RUNS = [("documents", "blue-green"), ("documents", "in-place"), ("tables", "in-place"), ("mz-deploy", "blue-green"),
        ("dbt", "blue-green"), ("moose", "in-place")]


@pytest.fixture(scope="module", params=RUNS, ids=lambda p: f"{p[0]}-{p[1]}")
def planted_run(request, spark, tmp_path_factory):
    """One form's projects run with one strategy, and everything the commands wrote or said about it."""
    form, strategy = request.param
    folder = tmp_path_factory.mktemp(f"{form}-{strategy}")
    (folder / "inputs").mkdir()
    old, new = FORMS[form](folder / "inputs")
    # statements analysed through sql_analysis and rendered through rendered_statements, as a large catalog's
    # are: those tables are read for values too
    (folder / "inputs" / "reuse.yaml").write_text(yaml.safe_dump({"sql": {"reuse_from_objects": 0}}))
    out = folder / "out"
    said, logger = Said(), logging.getLogger("dirtiness")
    stdout, stderr = io.StringIO(), io.StringIO()
    logger.addHandler(said)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["run", "--old", old, "--new", new, "--out", str(out), "--run-id", "planted", "--strategy",
                         strategy, "--report", str(folder / "report.html"), "--summary-json", str(folder / "s.json"),
                         "--config", str(folder / "inputs" / "reuse.yaml"), "--allow-destructive"])  # a Moose table whose engine changed is staged again
            for argv in (["explain", "--out", str(out), "api_key"], ["explain", "--out", str(out), "--format", "json",
                                                                     "token"],
                         ["apply", "--out", str(out), "--dry-run"], ["select", "--out", str(out)],
                         ["report", "--out", str(out), "--html", str(folder / "again.html")], ["snapshot", new]):
                main(argv)  # whatever each says (explain of a name a form lacks, select of a run without dbt ids)
    finally:
        logger.removeHandler(said)
    files = {str(p.relative_to(folder)): p.read_bytes().decode("utf-8", "replace")
             for p in folder.rglob("*") if p.is_file() and "inputs" not in p.parts}
    plan = pl.read_delta(str(out / "ddl_plan")) if (out / "ddl_plan").exists() else None
    return {"form": form, "strategy": strategy, "code": code, "plan": plan,
            "texts": {"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "log": "\n".join(said.lines), **files}}


def test_no_output_of_a_run_holds_a_planted_value(planted_run):
    assert planted_run["code"] == 0, planted_run["texts"]["stderr"][-2000:]
    texts = planted_run["texts"]
    assert len([name for name in texts if name.startswith("out/")]) > 20  # the run's tables were all read
    assert "report.html" in texts and "again.html" in texts and texts["stdout"]
    if planted_run["form"] in SECRET_KINDS:  # a form with statements: their analysis was kept, and read here
        assert any(name.startswith("out/sql_analysis/") and name.endswith(".parquet") for name in texts)
        assert any(name.startswith("out/rendered_statements/") and name.endswith(".parquet") for name in texts)
    leaked = sorted(name for name, text in texts.items() if PLANTED in text)
    assert leaked == [], leaked


def test_the_plan_creates_the_secret_without_its_value(planted_run, monkeypatch):
    """The secret still reaches the plan (the test could fail), and apply puts back the environment's value;
    a form without SQL (dbt, Moose) plans operations without statements."""
    if planted_run["form"] not in SECRET_KINDS:
        plan = planted_run["plan"]
        created = plan.filter((pl.col("action") == "CREATE") & (pl.col("object_type") == "object"))["statement"]
        assert len(created) > 0 and created.null_count() == len(created)
        return
    database, schema, name = SECRET_KINDS[planted_run["form"]].split(".")
    plan = planted_run["plan"].filter((pl.col("name") == name) & (pl.col("action") == "CREATE"))
    (statement,) = plan["statement"].to_list()
    assert statement.startswith(f'CREATE SECRET "{database}"."{schema}"."{name}" AS \'dirtiness-secret:')
    variable = f"DIRTINESS_SECRET_{database.upper()}_{schema.upper()}_{name.upper()}"
    monkeypatch.setenv(variable, "from-the-environment")
    assert reveal(statement, database, schema, name).endswith("AS 'from-the-environment'")
    if planted_run["form"] != "mz-deploy":  # a snapshot's value was dropped as it was read: no file to ask
        monkeypatch.delenv(variable)
        with pytest.raises(InputError, match=rf"secret {database}\.{schema}\.{name}: no value: set {variable}"):
            reveal(statement, database, schema, name)


def test_a_dbt_models_hash_sees_no_secrets_value(tmp_path):
    """A secret created in a model's code or hook: a new value is no change to the model; new code is."""
    from dirtiness.inputs.formats.dbt import to_document

    def hashed(manifest: dict, name: str) -> str:
        (tmp_path / name).write_text(json.dumps(manifest))
        return to_document(str(tmp_path / name))["objects"][0]["hash"]

    assert hashed(dbt_manifest("one"), "a.json") == hashed(dbt_manifest("two"), "b.json")
    assert hashed(dbt_manifest("one"), "a.json") != hashed(dbt_manifest("one", code="select 2 as k"), "c.json")


def test_a_catalog_never_gives_a_secrets_value():
    """The live catalog: Materialize's rows carry no secret's definition; one that did would not be kept."""
    rows = [("u1", "keys", "token", "secret", False, f"CREATE SECRET token AS '{PLANTED}catalog'", None),
            ("u2", "keys", "push", "connection", False, None, None)]
    catalog = catalog_from_rows("shop", ["keys"], rows, [("u2", "u1")], [])
    document = snapshot_document(catalog, None)
    assert PLANTED not in json.dumps(document)
    assert {o["name"]: o.get("sql") for o in document["objects"]} == {"token": None, "push": None}
