"""Plans applied to a real PostgreSQL server: the database must equal a fresh deploy of the new project.

One batch holds the PostgreSQL example, the issue's scenario (a changed MV
read by an MV in another schema), a slow project for the kill test, and 30
random projects with random edits, each in its own database. The job runs
once per strategy; every database is then deployed from the old project,
the plan applied to it (`dirtiness apply`, or the same code with the
operations of every step shuffled), and compared with a database deployed
afresh from the new project: every view and materialized view by
``pg_get_viewdef``, every table by its columns, the schemas, and the OIDs of
everything the plan does not touch.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import polars as pl
import pyarrow as pa
import psycopg
import pytest
import yaml
from deltalake import DeltaTable, write_deltalake
from postgres import catalog, deploy, without_oids
from projects import random_project

from dirtiness.apply.log import APPLY_LOG, ApplyLog, Event
from dirtiness.apply.runner import ApplyError, Settings, apply_plan
from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT, load_config
from dirtiness.config import read_settings
from dirtiness.plan.operations import deploy_suffix

EXAMPLE = PROJECT_ROOT / "examples" / "postgres"
PG_CONFIG = str(EXAMPLE / "dirtiness.yaml")
RANDOM_PROJECTS = 30
STRATEGIES = {"blue-green": "bg", "in-place": "ip"}
SEED = int(os.environ.get("DIRTINESS_PROPERTY_SEED", "20261122"))  # another seed, other projects


def scenario() -> tuple[list, list]:
    """The issue's case: only core.clean's WHERE changes; mart.daily reads it from another schema."""
    events = {"database": "shop", "schema": "raw", "name": "events", "kind": "table", "hash": "t1",
              "sql": "CREATE TABLE events (id int PRIMARY KEY, ok boolean, v int, day date)"}
    clean = {"database": "shop", "schema": "core", "name": "clean", "kind": "materialized-view", "hash": "c1",
             "sql": "CREATE MATERIALIZED VIEW clean AS SELECT * FROM raw.events WHERE ok"}
    daily = {"database": "shop", "schema": "mart", "name": "daily", "kind": "materialized-view", "hash": "d1",
             "sql": "CREATE MATERIALIZED VIEW daily AS SELECT day, count(*) AS n FROM core.clean GROUP BY day"}
    changed = {**clean, "hash": "c2", "sql": "CREATE MATERIALIZED VIEW clean AS SELECT * FROM raw.events "
                                            "WHERE ok AND v > 0"}
    return [events, clean, daily], [events, changed, daily]


def slow() -> tuple[list, list]:
    """Sixteen materialized views that each take a moment to create: something to kill apply in."""
    table = {"database": "slow", "schema": "raw", "name": "t", "kind": "table", "hash": "t",
             "sql": "CREATE TABLE t (id int)"}

    def mv(i, version):
        return {"database": "slow", "schema": f"s{i % 2}", "name": f"m{i}", "kind": "materialized-view",
                "hash": f"m{i}-{version}",
                "sql": f"CREATE MATERIALIZED VIEW m{i} AS SELECT t.id, {version} AS version "
                       f"FROM raw.t AS t CROSS JOIN pg_sleep(0.2)"}
    return [table] + [mv(i, 1) for i in range(16)], [table] + [mv(i, 2) for i in range(16)]


@pytest.fixture(scope="module")
def batch(spark, tmp_path_factory):
    """Every project of this module as one old and one new snapshot, and the plans of both strategies."""
    rng = random.Random(SEED)
    projects = [random_project(rng, f"p{k}") for k in range(RANDOM_PROJECTS)]
    example_old = yaml.safe_load(open(EXAMPLE / "old.yaml"))["objects"]
    example_new = yaml.safe_load(open(EXAMPLE / "new.yaml"))["objects"]
    fixed = {"flipper": (example_old, example_new), "shop": scenario(), "slow": slow()}
    old = [o for pair in fixed.values() for o in pair[0]] + [o for p in projects for o in p.document("old")["objects"]]
    new = [o for pair in fixed.values() for o in pair[1]] + [o for p in projects for o in p.document("new")["objects"]]
    folder = tmp_path_factory.mktemp("pg")
    (folder / "old.yaml").write_text(yaml.safe_dump({"objects": old}))
    (folder / "new.yaml").write_text(yaml.safe_dump({"objects": new}))
    forced = [f for p in projects for f in p.forced]
    out = folder / "out"
    for strategy, run_id in STRATEGIES.items():
        code = main(["run", "--old", str(folder / "old.yaml"), "--new", str(folder / "new.yaml"), "--out", str(out),
                     "--config", PG_CONFIG, "--strategy", strategy, "--run-id", run_id,
                     *(a for f in forced for a in ("--forced-schema", f))])
        assert code == 0
    deployed = {name: ({"objects": pair[0]}, {"objects": pair[1]}) for name, pair in fixed.items()}
    deployed.update({p.database: (p.document("old", deployed=True), p.document("new")) for p in projects})
    return {"out": str(out), "projects": projects, "documents": deployed, "fresh": {}}


def own_out(batch, tmp_path) -> str:
    """The batch's runs and plans, with an apply log of this test's own."""
    out = tmp_path / "out"
    for table in ("runs", "ddl_plan"):
        shutil.copytree(os.path.join(batch["out"], table), out / table)
    return str(out)


def fresh_state(postgres, batch, database: str) -> dict:
    """The catalog of ``database``'s new project deployed into an empty database: made once a module, since
    every test and both strategies compare with the same state."""
    if database not in batch["fresh"]:
        dsn = postgres.fresh_database(f"fresh_{database}")
        deploy(dsn, batch["documents"][database][1])
        batch["fresh"][database] = catalog(dsn)
    return batch["fresh"][database]


def deployed_database(postgres, batch, database: str) -> str:
    dsn = postgres.fresh_database(database)
    deploy(dsn, batch["documents"][database][0])
    return dsn


def touched(out: str, run_id: str, database: str) -> tuple[set, set]:
    """Objects with an operation in the plan, and swapped schemas: everything else must keep its OID."""
    plan = pl.read_delta(os.path.join(out, "ddl_plan")).filter(
        (pl.col("run_id") == run_id) & (pl.col("database") == database))
    objects = {(r["schema"], r["name"]) for r in plan.filter(pl.col("object_type") == "object").to_dicts()}
    swapped = {r["schema"] for r in plan.filter(pl.col("action") == "SWAP").to_dicts()}
    return objects, swapped


def decisions(out: str, run_id: str, database: str) -> dict[tuple[str, str], str]:
    """(schema, name) -> decision of every object of ``database`` in the run's decisions table."""
    rows = pl.read_delta(os.path.join(out, "decisions")).filter(
        (pl.col("run_id") == run_id) & (pl.col("database") == database) & (pl.col("subject") == "object"))
    return {(r["schema"], r["name"]): r["decision"] for r in rows.to_dicts()}


def assert_like_fresh(dsn: str, expected: dict, before: dict, untouched: tuple[set, set]) -> None:
    after = catalog(dsn)
    assert without_oids(after) == without_oids(expected)
    objects, swapped = untouched
    kept = [k for k in before["relations"] if k in after["relations"] and k not in objects and k[0] not in swapped]
    assert kept, "some objects are left alone by every plan here"
    assert {k: after["relations"][k]["oid"] for k in kept} == {k: before["relations"][k]["oid"] for k in kept}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_example_applies_like_a_fresh_deploy(postgres, batch, strategy, capsys, tmp_path):
    run_id, out = STRATEGIES[strategy], own_out(batch, tmp_path)
    expected = fresh_state(postgres, batch, "flipper")
    dsn = deployed_database(postgres, batch, "flipper")
    before = catalog(dsn)
    argv = ["apply", "--out", out, "--run-id", run_id, "--database", "flipper", "--parallel", "4"]
    assert main([*argv, "--dsn", dsn]) == 0
    printed = capsys.readouterr()
    assert "operations run, 0 already done" in printed.out
    assert dsn not in printed.out + printed.err
    assert_like_fresh(dsn, expected, before, touched(batch["out"], run_id, "flipper"))
    os.environ["DIRTINESS_DSN"] = dsn
    try:
        assert main(argv) == 0  # again: nothing runs twice
    finally:
        del os.environ["DIRTINESS_DSN"]
    assert " 0 operations run" in capsys.readouterr().out
    log = pl.read_delta(os.path.join(out, "apply_log")).filter(pl.col("run_id") == run_id)
    succeeded = log.filter(pl.col("status") == "succeeded")
    assert succeeded.height == succeeded["seq"].n_unique() > 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_changed_mv_read_from_another_schema(postgres, batch, strategy, tmp_path):
    run_id = STRATEGIES[strategy]
    plan = pl.read_delta(os.path.join(batch["out"], "ddl_plan")).filter(
        (pl.col("run_id") == run_id) & (pl.col("database") == "shop") & (pl.col("object_type") == "object"))
    statements = {(r["phase"], r["name"]): r["statement"] for r in plan.to_dicts()}
    if strategy == "blue-green":
        staging = "core" + deploy_suffix(run_id)
        assert f'FROM "shop"."{staging}"."clean"' in statements[("stage", "daily")]  # the staged copy, not production
        assert statements[("stage", "clean")].startswith(f'CREATE MATERIALIZED VIEW "shop"."{staging}"."clean"')
    else:
        assert set(statements) == {("teardown", "clean"), ("teardown", "daily"), ("setup", "clean"),
                                   ("setup", "daily")}
    expected = fresh_state(postgres, batch, "shop")
    dsn = deployed_database(postgres, batch, "shop")
    before = catalog(dsn)
    apply_plan(read_settings(own_out(batch, tmp_path), run_id, load_config(PG_CONFIG)), dsn,
               Settings(databases=("shop",)))
    assert_like_fresh(dsn, expected, before, touched(batch["out"], run_id, "shop"))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_random_projects_apply_in_any_order_within_a_step(postgres, batch, strategy, tmp_path):
    run_id, config, out = STRATEGIES[strategy], load_config(PG_CONFIG), own_out(batch, tmp_path)
    shuffle = random.Random(SEED + len(strategy))
    applied = 0
    for project in batch["projects"]:
        database = project.database
        expected = fresh_state(postgres, batch, database)
        dsn = deployed_database(postgres, batch, database)
        before = catalog(dsn)

        def order(operations):
            return shuffle.sample(operations, len(operations))
        try:
            summary = apply_plan(read_settings(out, run_id, config), dsn,
                                 Settings(parallel=1, databases=(database,), order=order))
        except ApplyError as error:
            pytest.fail(f"{database} ({strategy}): {error}")
        except Exception as error:  # a project with nothing to do has no operations
            if "no operation on database" not in str(error):
                raise
            summary = {"ran": 0}
        applied += summary["ran"]
        after = catalog(dsn)
        assert without_oids(after) == without_oids(expected), f"{database} ({strategy}) differs from a fresh deploy"
        objects, swapped = touched(batch["out"], run_id, database)
        kept = [k for k in before["relations"]
                if k in after["relations"] and k not in objects and k[0] not in swapped]
        assert {k: after["relations"][k]["oid"] for k in kept} == {k: before["relations"][k]["oid"] for k in kept}
        decided = decisions(batch["out"], run_id, database)  # what the decisions table says happened
        kept_by_table = [k for k, d in decided.items() if d == "kept" and k in before["relations"]]
        assert {k: after["relations"].get(k, {}).get("oid") for k in kept_by_table} == {
            k: before["relations"][k]["oid"] for k in kept_by_table}, f"{database} ({strategy}): a kept object moved"
        assert not [k for k, d in decided.items() if d == "dropped" and k in after["relations"]]
    assert applied > 10 * RANDOM_PROJECTS  # plans that did something
    journal = DeltaTable(os.path.join(out, "apply_log"))
    assert len(journal.file_uris()) == 1  # each apply compacts its log
    # one commit an operation (its start, with the outcome of the one before), and each apply's last outcome and
    # compaction: not two commits an operation
    assert journal.version() + 1 <= applied + 2 * RANDOM_PROJECTS
    print(f"\n{strategy}: {RANDOM_PROJECTS} random projects, {applied} operations applied in shuffled order")


def test_an_outcome_is_committed_with_the_next_start_or_by_a_flush(tmp_path):
    journal = ApplyLog(str(tmp_path), "r", attempt="a")
    now = dt.datetime.now(dt.timezone.utc)
    journal.write([Event(1, "started", now)])
    journal.finished([Event(1, "succeeded", now, now)])
    assert journal.states()[1]["status"] == "started"  # held until the next commit
    journal.write([Event(2, "started", now)])  # one commit: 1's outcome and 2's start
    assert {seq: row["status"] for seq, row in journal.states().items()} == {1: "succeeded", 2: "started"}
    journal.finished([Event(2, "failed", now, now, "boom")])
    journal.flush()
    assert journal.states()[2]["status"] == "failed"
    journal.flush()  # nothing waiting: no commit
    assert DeltaTable(journal.path).version() == 2


def test_the_log_keeps_a_week_of_commits_and_of_replaced_files_and_an_owners_settings_stay(tmp_path):
    now = dt.datetime.now(dt.timezone.utc)

    def apply(journal, seqs):
        for seq in seqs:
            journal.write([Event(seq, "started", now)])
            journal.finished([Event(seq, "succeeded", now, now)])
        journal.compact()

    mine = ApplyLog(str(tmp_path / "mine"), "r", attempt="a")
    apply(mine, range(3))
    table = DeltaTable(mine.path)
    assert table.metadata().configuration == {"delta.logRetentionDuration": "interval 7 days"}
    data = lambda path: sorted(f for f in os.listdir(path) if f.endswith(".parquet"))  # noqa: E731
    # four commits (three starts, the last outcome) and their compaction; the four replaced today are kept a week
    assert len(table.file_uris()) == 1 and len(data(mine.path)) == 5
    # an owner who keeps neither: each apply's replaced files and expired commits go (at each checkpoint)
    theirs = ApplyLog(str(tmp_path / "theirs"), "r", attempt="a")
    own = {"delta.logRetentionDuration": "interval 0 seconds",
           "delta.deletedFileRetentionDuration": "interval 0 seconds", "delta.checkpointInterval": "5"}
    write_deltalake(theirs.path, pa.Table.from_pylist([], schema=APPLY_LOG), configuration=own)
    apply(theirs, range(12))
    assert DeltaTable(theirs.path).metadata().configuration == own
    assert len(data(theirs.path)) == 1
    commits = [f for f in os.listdir(os.path.join(theirs.path, "_delta_log")) if f.endswith(".json")]
    assert DeltaTable(theirs.path).version() >= 14 and len(commits) < 5  # 14 commits and more, a few kept
    assert sorted(theirs.states()) == list(range(12))


def _killed_mid_statement(argv: list[str], env: dict, dsn: str, statements: int) -> bool:
    """``dirtiness apply`` started, and killed as soon as this watch has seen the database run ``statements`` of
    its statements (a kill that follows what apply does, not a guessed delay); False when it ended first."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen, deadline = set(), time.monotonic() + 60
    with psycopg.connect(dsn, autocommit=True) as watch:
        while process.poll() is None and len(seen) < statements:
            seen.update(q for (q,) in watch.execute(
                "SELECT query FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
                "AND query LIKE 'CREATE MATERIALIZED VIEW%'").fetchall())
            assert time.monotonic() < deadline, "apply ran too few of its statements"
            time.sleep(0.01)  # polled: the kill follows what the database does
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait()
    return True


def test_apply_killed_part_way_resumes_and_runs_nothing_twice(postgres, batch, tmp_path):
    expected = fresh_state(postgres, batch, "slow")
    dsn = deployed_database(postgres, batch, "slow")
    out = own_out(batch, tmp_path)
    argv = [sys.executable, "-m", "dirtiness.cli", "apply", "--out", out, "--run-id", "bg",
            "--database", "slow", "--parallel", "2"]
    env = {**os.environ, "DIRTINESS_DSN": dsn}
    kills, draws = 0, random.Random(SEED)
    for _ in range(12):  # each attempt killed while the database runs its first, second or third statement
        if not _killed_mid_statement(argv, env, dsn, draws.randint(1, 3)):
            break
        kills += 1
    finished = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert kills >= 2
    assert without_oids(catalog(dsn)) == without_oids(expected)
    log = pl.read_delta(os.path.join(out, "apply_log")).filter(pl.col("run_id") == "bg")
    plan = pl.read_delta(os.path.join(out, "ddl_plan")).filter(
        (pl.col("run_id") == "bg") & (pl.col("database") == "slow"))
    succeeded = log.filter((pl.col("status") == "succeeded") & pl.col("seq").is_in(plan["seq"].to_list()))
    assert sorted(succeeded["seq"].to_list()) == sorted(plan["seq"].to_list())  # each exactly once


def test_an_operation_committed_but_not_logged_is_not_run_again(postgres, batch, tmp_path):
    """The window a kill rarely hits: the database committed, the log never heard. Its transaction id says."""
    dsn = deployed_database(postgres, batch, "shop")
    out = own_out(batch, tmp_path)
    plan = pl.read_delta(os.path.join(batch["out"], "ddl_plan")).filter(
        (pl.col("run_id") == "ip") & (pl.col("database") == "shop")).sort("seq").to_dicts()
    first, second = plan[0], plan[1]  # teardown: DROP daily, then DROP clean
    journal = ApplyLog(out, "ip", attempt="crashed")
    with psycopg.connect(dsn) as connection:  # a crashed apply: committed, logged as started only
        committed = connection.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        connection.execute(first["statement"])
        connection.commit()
        aborted = connection.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        connection.rollback()
    earlier = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    journal.write([Event(first["seq"], "started", earlier, transaction=committed, phase="teardown", step=0),
                   Event(second["seq"], "started", earlier, transaction=aborted, phase="teardown", step=1)])
    summary = apply_plan(read_settings(out, "ip", load_config(PG_CONFIG)), dsn, Settings(databases=("shop",)))
    assert summary["ran"] == len(plan) - 1  # all but the committed one; the aborted one ran again
    log = pl.read_delta(os.path.join(out, "apply_log")).filter(pl.col("run_id") == "ip")
    settled = log.filter((pl.col("seq") == first["seq"]) & (pl.col("status") == "succeeded")).to_dicts()
    assert [r["message"] for r in settled][-1] == "committed by an earlier apply that was cut off"
    assert without_oids(catalog(dsn)) == without_oids(fresh_state(postgres, batch, "shop"))


def test_a_dead_applys_statement_still_running_is_ended_and_settled_by_the_database(postgres, batch, tmp_path):
    """An apply killed while its DROP waited on a lock a long report query held: its statement still runs in
    the server. The next apply holds the run's lock, so that session is a dead apply's: it is ended, the
    database says its transaction aborted, and the operation runs again (no --resolve, no 60 s wait)."""
    import threading

    dsn = deployed_database(postgres, batch, "shop")
    out = own_out(batch, tmp_path)
    plan = pl.read_delta(os.path.join(batch["out"], "ddl_plan")).filter(
        (pl.col("run_id") == "ip") & (pl.col("database") == "shop")).sort("seq").to_dicts()
    first = plan[0]  # teardown: DROP MATERIALIZED VIEW mart.daily
    report = psycopg.connect(dsn)  # the long report query: its transaction holds daily
    report.execute("SELECT count(*) FROM mart.daily").fetchone()
    dead = psycopg.connect(dsn, application_name="dirtiness apply")  # the killed apply's session
    transaction = dead.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
    pid = dead.execute("SELECT pg_backend_pid()").fetchone()[0]
    waiting = threading.Thread(target=lambda: _ignoring(psycopg.Error, dead.execute, first["statement"]))
    waiting.start()  # blocks on the report's lock, as the dead apply's statement did
    journal = ApplyLog(out, "ip", attempt="killed")
    journal.write([Event(first["seq"], "started", dt.datetime.now(dt.timezone.utc), transaction=transaction,
                         phase="teardown", step=0)])
    result = {}
    applying = threading.Thread(target=lambda: result.update(apply_plan(
        read_settings(out, "ip", load_config(PG_CONFIG)), dsn, Settings(databases=("shop",)))))
    started = time.monotonic()
    applying.start()
    with psycopg.connect(dsn, autocommit=True) as watch:  # once the dead session is gone, the report ends
        while watch.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]:
            assert time.monotonic() - started < 30, "the dead apply's session was not ended"
            time.sleep(0.05)
    report.rollback()
    applying.join(timeout=60)
    waiting.join(timeout=10)
    assert result["ran"] == len(plan) and time.monotonic() - started < 30
    log = pl.read_delta(os.path.join(out, "apply_log")).filter(
        (pl.col("run_id") == "ip") & (pl.col("seq") == first["seq"]))
    assert "ended with the session of an earlier apply that was cut off" in log["message"].to_list()
    assert without_oids(catalog(dsn)) == without_oids(fresh_state(postgres, batch, "shop"))
    report.close()
    dead.close()


def _ignoring(errors, function, *args):
    try:
        function(*args)
    except errors:
        pass


def test_a_rejected_statement_stops_apply_naming_the_operation(postgres, batch, capsys, tmp_path):
    expected = fresh_state(postgres, batch, "flipper")
    dsn = deployed_database(postgres, batch, "flipper")
    staging = "public" + deploy_suffix("bg")
    with psycopg.connect(dsn, autocommit=True) as connection:  # someone left an object where the plan stages one
        connection.execute(f'CREATE SCHEMA "{staging}"; CREATE TABLE "{staging}".flippers (x int)')
    out = own_out(batch, tmp_path)
    argv = ["apply", "--out", out, "--run-id", "bg", "--database", "flipper", "--dsn", dsn]
    assert main(argv) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("dirtiness: operation seq ")
    assert "(stage step 2, CREATE object flipper.public.flippers) failed:" in line
    assert 'relation "flippers" already exists' in line and dsn not in line
    seq = int(line.split("seq ")[1].split(" ")[0])
    log = pl.read_delta(os.path.join(out, "apply_log")).filter(pl.col("run_id") == "bg")
    states = log.sort("finished_at").group_by("seq").agg(pl.col("status").last())
    status = dict(zip(states["seq"].to_list(), states["status"].to_list()))
    assert status[seq] == "failed"
    assert all(status[s] == "succeeded" for s in status if s < seq and s in status)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'DROP TABLE "{staging}".flippers')
    assert main(argv) == 0  # fixed by hand: apply resumes where it stopped
    assert without_oids(catalog(dsn)) == without_oids(expected)


def test_without_transactions_an_unfinished_operation_is_in_doubt_until_resolved(postgres, batch, tmp_path, capsys):
    """Materialize runs DDL outside transactions: apply cannot ask the database, so it asks the user."""
    dsn = deployed_database(postgres, batch, "shop")
    out = own_out(batch, tmp_path)
    config = tmp_path / "no-transactions.yaml"
    config.write_text(yaml.safe_dump({"plan": {"dialect": "postgres",
                                               "dialects": {"postgres": {"transactional_ddl": False}}}}))
    plan = pl.read_delta(os.path.join(out, "ddl_plan")).filter(
        (pl.col("run_id") == "ip") & (pl.col("database") == "shop")).sort("seq").to_dicts()
    with psycopg.connect(dsn, autocommit=True) as connection:  # it ran, then the apply was cut off
        connection.execute(plan[0]["statement"])
    earlier = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    ApplyLog(out, "ip", attempt="cut-off").write([Event(plan[0]["seq"], "started", earlier, phase="teardown", step=0)])
    argv = ["apply", "--out", out, "--run-id", "ip", "--database", "shop", "--dsn", dsn, "--config", str(config)]
    assert main(argv) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"operation seq {plan[0]['seq']} (teardown step 0, DROP object shop.mart.daily) was started by an " \
           f"earlier apply" in line and f"--resolve {plan[0]['seq']}=succeeded" in line
    assert "(its DDL runs outside transactions, as Materialize's does" in line  # which case it is
    assert main([*argv, "--resolve", f"{plan[0]['seq']}=succeeded"]) == 0
    assert " 3 operations run, 1 already done" in capsys.readouterr().out
    assert without_oids(catalog(dsn)) == without_oids(fresh_state(postgres, batch, "shop"))


def test_apply_usage_errors_and_a_connection_that_fails(batch, tmp_path, capsys, monkeypatch):
    out = own_out(batch, tmp_path)
    monkeypatch.delenv("DIRTINESS_DSN", raising=False)
    cases = [
        (["--run-id", "bg"], 2, "apply needs a database: --dsn URL or the DIRTINESS_DSN environment variable"),
        (["--run-id", "nope", "--dsn", "dbname=x"], 2, "run nope: not found under"),
        (["--run-id", "bg", "--database", "nowhere", "--dsn", "dbname=x"], 2, "no operation on database nowhere"),
        (["--run-id", "bg", "--parallel", "0", "--dsn", "dbname=x"], 2, "--parallel 0: expected 1 or more"),
        (["--run-id", "bg", "--resolve", "7=maybe", "--dsn", "dbname=x"], 2, "expected SEQ=succeeded or SEQ=retry"),
        (["--run-id", "bg", "--database", "shop", "--dsn", "postgresql://bob:s3cr3t@127.0.0.1:1/shop"], 1,
         "cannot connect to the database: connection failed"),
    ]
    for args, code, message in cases:
        assert main(["apply", "--out", out, *args]) == code, args
        err = capsys.readouterr().err
        assert message in err and "s3cr3t" not in err, err

