"""Stale and conflicting plans are refused: apply's deploy record, on its own and against the real PostgreSQL."""

import datetime as dt
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from cli_output import error_lines
from postgres import RECORD_SCHEMA, catalog, deploy, without_oids

from dirtiness.apply.record import Deployment, refusal
from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT

PG_CONFIG = str(PROJECT_ROOT / "examples" / "postgres" / "dirtiness.yaml")
AT = dt.datetime(2026, 11, 26, 6, 0, tzinfo=dt.timezone.utc)


def deployment(run_id, old, new, schemas=(), clusters=()) -> Deployment:
    return Deployment(run_id, old, new, frozenset(schemas), frozenset(clusters), AT)


def test_a_plan_from_the_state_last_applied_runs():
    mine = deployment("b", "s1", "s2", ["db.x"])
    assert refusal(mine, []) is None  # nothing recorded yet: the first apply
    assert refusal(mine, [deployment("a", "s0", "s1", ["db.x"])]) is None


def test_a_plan_from_an_older_state_is_refused_where_it_overlaps_what_ran_since():
    mine = deployment("c", "s1", "s3", ["db.x", "db.y"], ["quick"])
    history = [deployment("a", "s0", "s1", ["db.x"]), deployment("b", "s1", "s2", ["db.y", "db.z"], ["quick"])]
    assert refusal(mine, history) == (
        "run c is stale: it was planned from a deployed state the database no longer has (run b was applied since "
        "at 2026-11-26 06:00:00 UTC), and both touch schema db.y; cluster quick; nothing applied: plan again from "
        "what run b deployed")
    disjoint = deployment("c", "s1", "s3", ["db.x"], ["other"])
    assert refusal(disjoint, history) is None  # run b touched neither db.x nor cluster other
    unknown = deployment("d", "elsewhere", "s9", ["db.x"])  # from a state no recorded run deployed
    assert "run a was applied since" in refusal(unknown, history)


def test_a_run_already_recorded_only_resumes():
    mine = deployment("a", "s0", "s1", ["db.x"])
    assert refusal(mine, [mine, deployment("b", "s1", "s2", ["db.x"])]) is None


# --- against PostgreSQL ------------------------------------------------------

def objects(v1: str, v2: str) -> list[dict]:
    """A table and two views in two schemas; ``v1``/``v2`` are the views' filters."""
    table = {"database": "rival", "schema": "raw", "name": "t", "kind": "table", "hash": "t",
             "sql": "CREATE TABLE t (id int, v int)"}

    def view(schema, name, where):
        return {"database": "rival", "schema": schema, "name": name, "kind": "view", "hash": where,
                "sql": f"CREATE VIEW {name} AS SELECT id FROM raw.t WHERE {where}"}
    return [table, view("left", "l", v1), view("right", "r", v2)]


STATES = {"old": objects("v > 0", "v > 0"), "a": objects("v > 1", "v > 0"), "b": objects("v > 2", "v > 0"),
          "c": objects("v > 0", "v > 3"), "a+c": objects("v > 1", "v > 3")}


@pytest.fixture(scope="module")
def rival_runs(spark, tmp_path_factory):
    """Three runs from one deployed state: a and b both change schema left, c changes schema right."""
    folder = tmp_path_factory.mktemp("rival")
    for name, state in STATES.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({"objects": state}))
    out = folder / "out"
    for run_id in ("a", "b", "c"):
        assert main(["run", "--old", str(folder / "old.yaml"), "--new", str(folder / f"{run_id}.yaml"),
                     "--out", str(out), "--config", PG_CONFIG, "--run-id", run_id]) == 0
    return out


def fresh(postgres, name: str, state: str) -> str:
    dsn = postgres.fresh_database(name)
    deploy(dsn, {"objects": STATES[state]})
    return dsn


def own_out(runs, folder):
    """The runs and their plans with an apply log of their own (a log says what ran, whichever database)."""
    for table in ("runs", "ddl_plan"):
        shutil.copytree(runs / table, folder / table)
    return folder


def apply(out, run_id: str, dsn: str) -> int:
    return main(["apply", "--out", str(out), "--run-id", run_id, "--dsn", dsn, "--config", PG_CONFIG])


def test_two_plans_from_one_state_in_both_orders(postgres, rival_runs, capsys, tmp_path):
    for first, second in (("a", "b"), ("b", "a")):
        dsn = fresh(postgres, "rival", "old")  # the plans name database rival
        out = own_out(rival_runs, tmp_path / f"{first}{second}")
        assert apply(out, first, dsn) == 0
        after_first = catalog(dsn)
        assert without_oids(after_first) == without_oids(catalog(fresh(postgres, f"want_{first}", first)))
        capsys.readouterr()
        assert apply(out, second, dsn) == 3  # refused: both change schema left
        (line,) = error_lines(capsys.readouterr().err)
        assert line == (f"dirtiness: run {second} is stale: it was planned from a deployed state the database no "
                        f"longer has (run {first} was applied since at {_applied_at(dsn, first)}), and both touch "
                        f"schema rival.left; nothing applied: plan again from what run {first} deployed")
        assert catalog(dsn) == after_first  # nothing ran, not even a staging schema
    dsn, out = fresh(postgres, "rival", "old"), own_out(rival_runs, tmp_path / "ac")
    assert apply(out, "a", dsn) == 0
    assert apply(out, "c", dsn) == 0  # disjoint: c touches only schema right
    assert without_oids(catalog(dsn)) == without_oids(catalog(fresh(postgres, "want_ac", "a+c")))
    assert apply(out, "a", dsn) == 0  # applied already: nothing to do, not refused
    with postgres.connect("rival") as connection:
        recorded = connection.execute(f"SELECT run_id, schemas FROM {RECORD_SCHEMA}.deployments "
                                      "ORDER BY applied_at").fetchall()
    assert recorded == [("a", '["rival.left"]'), ("c", '["rival.right"]')]


def test_two_applies_started_at_once(postgres, rival_runs, tmp_path):
    dsn, out = fresh(postgres, "rival", "old"), own_out(rival_runs, tmp_path / "race")
    env = {**os.environ, "DIRTINESS_DSN": dsn}
    started = {run_id: subprocess.Popen([sys.executable, "-m", "dirtiness", "apply", "--out", str(out),
                                         "--run-id", run_id, "--config", PG_CONFIG], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for run_id in ("a", "b")}
    finished = {run_id: (p.wait(timeout=120), p.stderr.read()) for run_id, p in started.items()}
    codes = sorted(code for code, _ in finished.values())
    assert codes == [0, 3], finished
    (winner,) = [r for r, (code, _) in finished.items() if code == 0]
    (loser,) = [r for r, (code, _) in finished.items() if code == 3]
    assert f"run {loser} is stale" in finished[loser][1] and f"run {winner} was applied since" in finished[loser][1]
    assert without_oids(catalog(dsn)) == without_oids(catalog(fresh(postgres, "want_race", winner)))


def _applied_at(dsn: str, run_id: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as connection:
        (at,) = connection.execute(f"SELECT applied_at FROM {RECORD_SCHEMA}.deployments WHERE run_id = %s",
                                   (run_id,)).fetchone()
    return at.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
