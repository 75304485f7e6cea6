"""Selective deploys (`run --only/--exclude`): what is chosen, what is refused, and the plan applied to PostgreSQL.

The selection itself is pure Python (no Spark). On Spark: the bundled
example selected two ways (one refused naming the selected change that pulls
the excluded one in, one applied as a plan), and random PostgreSQL projects
selected by schema: after `apply` each database must equal a fresh deploy of
the deployed project plus the selected changes, computed here from the
projects' own specs, not by the job.
"""

from __future__ import annotations

import os
import random

import polars as pl
import pytest
import yaml
from cli_output import error_lines
from deltalake import DeltaTable
from postgres import catalog, deploy, without_oids
from projects import Project, random_project

from dirtiness.apply.runner import Settings, apply_plan
from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT, load_config, read_settings
from dirtiness.errors import InputError
from dirtiness.inputs.selection import changes, select
from dirtiness.inputs.snapshot import parse_document

EXAMPLE = PROJECT_ROOT / "examples"
PG_CONFIG = str(EXAMPLE / "postgres" / "dirtiness.yaml")


def document(*objects: dict):
    return parse_document({"objects": list(objects)}, "test.yaml")


def view(ref: str, hash: str | None, deps=(), cluster=None, kind="view") -> dict:
    database, schema, name = ref.split(".")
    return {"database": database, "schema": schema, "name": name, "kind": kind, "hash": hash, "cluster": cluster,
            "depends_on": list(deps)}


OLD = document(view("db.a.x", "x1", cluster="c1"), view("db.a.y", "y1"), view("db.b.z", "z1", ["db.a.y"]),
               view("db.b.gone", "g1"), view("db.b.untracked", None))
NEW = document(view("db.a.x", "x2", cluster="c1"), view("db.a.y", "y1"), view("db.b.z", "z2", ["db.a.y"]),
               view("db.b.fresh", "f1", ["db.a.y"]), view("db.b.untracked", None), view("db.c.w", "w1", cluster="c2"))


def keyed(selection) -> dict[str, tuple[str, bool, str]]:
    return {".".join(c.key): (c.change, c.selected, c.because) for c in selection.changes}


def test_changes_are_by_hash_as_the_run_computes_them():
    assert changes(OLD, NEW) == {("db", "a", "x"): "modified", ("db", "b", "z"): "modified",
                                 ("db", "b", "fresh"): "added", ("db", "b", "gone"): "deleted",
                                 ("db", "c", "w"): "added"}


def test_a_selector_names_an_object_a_schema_or_a_cluster():
    by_object = keyed(select(OLD, NEW, ["db.b.z"], []))
    assert [k for k, (_, chosen, _) in by_object.items() if chosen] == ["db.b.z"]
    assert by_object["db.a.x"] == ("modified", False, "not named by --only")
    by_schema = keyed(select(OLD, NEW, ["db.b"], []))
    assert sorted(k for k, (_, chosen, _) in by_schema.items() if chosen) == ["db.b.fresh", "db.b.gone", "db.b.z"]
    assert by_schema["db.b.gone"] == ("deleted", True, "--only db.b")
    # any unambiguous suffix of an object's or a schema's name, as `dirtiness select` prints names
    def chosen(*only):
        return sorted(".".join(c.key) for c in select(OLD, NEW, list(only), []).changes if c.selected)

    assert chosen("z") == chosen("b.z") == chosen("db.b.z") == ["db.b.z"]
    assert chosen("b") == chosen("db.b") == ["db.b.fresh", "db.b.gone", "db.b.z"]
    by_cluster = keyed(select(OLD, NEW, ["c2"], []))
    assert [k for k, (_, chosen, _) in by_cluster.items() if chosen] == ["db.c.w"]
    everything_but = keyed(select(OLD, NEW, [], ["db.a.x", "c2"]))
    assert everything_but["db.a.x"] == ("modified", False, "--exclude db.a.x")
    assert everything_but["db.c.w"] == ("added", False, "--exclude c2")
    assert everything_but["db.b.z"] == ("modified", True, "every change")
    assert keyed(select(OLD, NEW, ["db.b"], ["db.b.gone"]))["db.b.gone"] == ("deleted", False, "--exclude db.b.gone")


def test_the_effective_project_is_the_deployed_one_plus_the_selected_changes():
    effective = select(OLD, NEW, ["db.b"], ["db.b.gone"]).new
    rows = {".".join(o[:3]): o[4] for o in effective.objects}
    # x keeps its deployed hash, w (added, not chosen) is absent, gone (deletion excluded) stays, z and fresh move
    assert rows == {"db.a.x": "x1", "db.a.y": "y1", "db.b.z": "z2", "db.b.fresh": "f1", "db.b.untracked": None,
                    "db.b.gone": "g1"}
    assert sorted(".".join(d[:3]) for d in effective.dependencies) == ["db.b.fresh", "db.b.z"]
    assert "selected changes only" in effective.path


@pytest.mark.parametrize("only, exclude, message", [
    (["nowhere"], [], "--only nowhere: no such object, schema or cluster in either project"),
    ([], ["db.zz"], "--exclude db.zz: no such object, schema or cluster in either project"),
    (["reader"], ["rader"], "--exclude rader: no such object, schema or cluster in either project; did you mean "
                            "db.b.reader?"),
    (["b"], [], "--only b: names 2 object or schemas: db.a.b, db.b; give more of the name"),
    # a selected view reading an added table the selection leaves out
    (["db.b.reader"], [], "selection: db.b.reader (selected change: added) reads db.a.t, an excluded change "
                          "(added, not named by --only) that the deployed project does not have; select db.a.t "
                          "too, or exclude db.b.reader"),
    # a kept view (its change excluded) reading a table whose deletion is selected
    (["db.a.old"], [], "selection: db.b.user (excluded change, kept as deployed) reads db.a.old, which the selected "
                       "change db.a.old (deleted, --only db.a.old) deletes; select db.b.user too, or exclude db.a.old"),
])
def test_a_selection_that_leaves_the_project_broken_is_one_line(only, exclude, message):
    old = document(view("db.a.old", "o1", kind="table"), view("db.b.user", "u1", ["db.a.old"]))
    new = document(view("db.a.t", "t1", kind="table"), view("db.b.reader", "r1", ["db.a.t"]),
                   view("db.b.user", "u2", ["db.a.t"]), view("db.a.b", None))
    with pytest.raises(InputError) as raised:
        select(old, new, only, exclude)
    assert str(raised.value).startswith(message)


def test_dependencies_read_from_sql_count_when_none_are_declared():
    old = document(view("db.a.t", "t1", kind="table"))
    new = document(view("db.a.t", "t1", kind="table"), view("db.a.u", "u1", kind="table"),
                   {**view("db.b.r", "r1"), "sql": "CREATE VIEW r AS SELECT * FROM db.a.u"})
    with pytest.raises(InputError, match="db.b.r .* reads db.a.u, an excluded change"):
        select(old, new, ["db.b.r"], [], reads=lambda row: [("db", "a", "u")] if row[2] == "r" else [])


# --- on Spark: the bundled example ------------------------------------------

def test_a_selection_that_would_move_an_excluded_change_is_refused(spark, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "--old", str(EXAMPLE / "old.yaml"), "--new", str(EXAMPLE / "new.yaml"), "--out", str(out),
                 "--only", "materialize.public.flipper_stats", "--run-id", "refused"])
    assert code == 2
    assert error_lines(capsys.readouterr().err) == [
        "dirtiness: selection: the selected change materialize.public.flipper_stats (added) pulls in "
        "materialize.public.flip_activities, a change the selection leaves out (modified, not named by --only): "
        "the plan would have it redeployed by staging (and materialize.reporting.legacy_flippers with it); to "
        "deploy them too, add --only materialize.public.flip_activities --only materialize.reporting.legacy_flippers"]
    written = sorted(p for p in os.listdir(out) if not p.startswith("_"))
    assert written == ["runs"], "only the failed run's row is visible"
    assert DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()[0]["status"] == "failed"


def test_a_selected_schema_deploys_its_changes_and_what_moves_with_them(spark, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "--old", str(EXAMPLE / "old.yaml"), "--new", str(EXAMPLE / "new.yaml"), "--out", str(out),
                 "--only", "materialize.reporting", "--run-id", "chosen", "--allow-destructive"])
    assert code == 0
    printed = capsys.readouterr().out
    assert ("selection (--only materialize.reporting): 1 of 3 changes deployed; left as deployed: "
            "materialize.public.flip_activities, materialize.public.flipper_stats") in printed
    chosen = pl.read_delta(str(out / "selected_changes")).sort("name").to_dicts()
    assert [(r["name"], r["change"], r["selected"], r["because"]) for r in chosen] == [
        ("flip_activities", "modified", False, "not named by --only"),
        ("flipper_stats", "added", False, "not named by --only"),
        ("legacy_flippers", "deleted", True, "--only materialize.reporting")]
    decided = {r["name"]: r["decision"] for r in pl.read_delta(str(out / "decisions")).filter(
        pl.col("subject") == "object").to_dicts()}
    assert decided["legacy_flippers"] == "dropped" and decided["weekly_report"] == "redeployed by staging"
    assert decided["flip_activities"] == "kept" and "flipper_stats" not in decided
    plan = pl.read_delta(str(out / "ddl_plan")).to_dicts()
    assert {r["schema"] for r in plan if r["object_type"] == "object"} == {"reporting"}
    for name, said in (("weekly_report", "selection: not a change of its own: pulled in by the selected change "
                                         "materialize.reporting.legacy_flippers (deleted)"),
                       ("legacy_flippers", "selection: a selected change (deleted; --only materialize.reporting)"),
                       ("flip_activities", "selection: an excluded change (modified; not named by --only): left "
                                           "as deployed")):
        assert main(["explain", "--out", str(out), f"materialize.reporting.{name}"
                     if name != "flip_activities" else f"materialize.public.{name}"]) == 0
        assert said in capsys.readouterr().out


# --- on PostgreSQL: random projects selected by schema -----------------------

PROJECTS = 12
SEED = int(os.environ.get("DIRTINESS_PROPERTY_SEED", "20261126"))


def closed_schemas(rng: random.Random, project: Project) -> set[str]:
    """A schema with a change, then every schema that must come with it: those reading what is selected (in
    either project), those holding an added object a selected object reads, and any forced schema (of the
    schemas with a change, one whose closure is among the two smallest: selections that leave most out)."""
    starts = sorted({k[0] for k in project.old.keys() | project.new.keys() if _changed(project, k)})
    closures = sorted((_closure(project, start) for start in starts), key=lambda c: (len(c), sorted(c)))
    return rng.choice(closures[:2])


def _closure(project: Project, start: str) -> set[str]:
    old, new = project.old, project.new
    chosen = {start} | {f.split(".")[1] for f in project.forced}
    while True:
        grown = set(chosen)
        for specs in (old, new):
            grown |= {s.schema for s in specs.values() if any(r[0] in chosen for r in s.reads)}
        for key, spec in new.items():
            if key[0] in chosen:
                grown |= {r[0] for r in spec.reads if r not in old and _changed(project, r)}
        if grown == chosen:
            return chosen
        chosen = grown


def _changed(project: Project, key) -> bool:
    old, new = project.document("old"), project.document("new")
    hashes = [{(o["schema"], o["name"]): o["hash"] for o in d["objects"]} for d in (old, new)]
    before, after = (h.get(key, "absent") for h in hashes)
    return (before == "absent" and after not in ("absent", None)) or (after == "absent" and before not in
                                                                       ("absent", None)) or (
        None not in (before, after) and "absent" not in (before, after) and before != after)


def deployed_plus_selected(project: Project, schemas: set[str]) -> dict:
    """What a fresh deploy of the deployed project plus the selected schemas' changes holds."""
    specs = {k: s for k, s in project.new.items() if k[0] in schemas}
    specs.update({k: s for k, s in project.old.items() if k[0] not in schemas})
    return Project(project.database, specs, specs, []).document("new")


@pytest.fixture(scope="module")
def selected(spark, tmp_path_factory):
    rng = random.Random(SEED)
    projects = [random_project(rng, f"sel{k}") for k in range(PROJECTS)]
    chosen = {p.database: closed_schemas(rng, p) for p in projects}
    partial = [p for p in projects if deployed_plus_selected(p, chosen[p.database]) != p.document("new")]
    assert len(partial) > PROJECTS // 3, "most selections leave some change out"
    folder = tmp_path_factory.mktemp("selective")
    for side in ("old", "new"):
        objects = [o for p in projects for o in p.document(side)["objects"]]
        (folder / f"{side}.yaml").write_text(yaml.safe_dump({"objects": objects}))
    forced = [f for p in projects for f in p.forced]
    only = [f"{p.database}.{s}" for p in projects for s in sorted(chosen[p.database])]
    out = folder / "out"
    for strategy in ("blue-green", "in-place"):
        code = main(["run", "--old", str(folder / "old.yaml"), "--new", str(folder / "new.yaml"), "--out", str(out),
                     "--config", PG_CONFIG, "--strategy", strategy, "--run-id", strategy,
                     *(a for f in forced for a in ("--forced-schema", f)), *(a for s in only for a in ("--only", s))])
        assert code == 0, f"{strategy}: a selection closed by schema was refused"
    return {"out": str(out), "projects": projects, "chosen": chosen}


@pytest.mark.parametrize("strategy", ("blue-green", "in-place"))
def test_selections_applied_equal_a_fresh_deploy_of_the_deployed_project_plus_the_selected_changes(
        postgres, selected, strategy):
    config, out, moved = load_config(PG_CONFIG), selected["out"], 0
    for project in selected["projects"]:
        database = project.database
        fresh = postgres.fresh_database(f"fresh_{database}")
        deploy(fresh, deployed_plus_selected(project, selected["chosen"][database]))
        dsn = postgres.fresh_database(database)
        deploy(dsn, project.document("old", deployed=True))
        try:
            moved += apply_plan(read_settings(out, strategy, config), dsn,
                                Settings(parallel=2, databases=(database,)))["ran"]
        except Exception as error:  # noqa: BLE001 - a selection with nothing to do has no operations
            if "no operation on database" not in str(error):
                raise
        assert without_oids(catalog(dsn)) == without_oids(catalog(fresh)), (
            f"{database} ({strategy}, --only {sorted(selected['chosen'][database])}) differs from a fresh deploy of "
            f"the deployed project plus the selected changes")
    excluded = pl.read_delta(os.path.join(out, "selected_changes")).filter(
        (pl.col("run_id") == strategy) & ~pl.col("selected")).height
    assert moved > PROJECTS and excluded > 0, "the selections deployed something and left something out"
    print(f"\n{strategy}: {PROJECTS} projects, {moved} operations applied, {excluded} changes left as deployed")
