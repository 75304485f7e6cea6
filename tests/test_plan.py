"""The phased DDL plan in the Materialize dialect: both strategies on batched scenarios.

Steps, cycles, quoting and policy; the SQL rewriting of staged statements
(staging schemas, staging clusters, indexes, replacements left in place);
the safe-drop closure; schemas created before their first object; deploy
records that omit untracked objects; invariants. (PostgreSQL plans are
applied to a real server in ``test_postgres.py``.)
"""

import re

import pytest
from catalogs import Scenario, changed, obj, run_scenarios, seed_scenarios
from pyspark.sql import functions as F

from dirtiness.datalog.holding import Holding
from dirtiness.errors import PolicyError
from dirtiness.plan.checks import InvariantError, plan_checks, plan_report
from dirtiness.plan.statements import quote
from dirtiness.plan.steps import CycleError, layered
from dirtiness.session import session_settings

HOSTILE = 'x"; DROP TABLE t; --'
HOSTILE_SCHEMA, HOSTILE_CLUSTER, HOSTILE_INDEX = ('s"; DROP SCHEMA x; --', 'c"; DROP CLUSTER y; --',
                                                  'i"; DROP INDEX z; --')
QUOTED = re.compile(r'"(?:[^"]|"")*"')


def mv(ref, cluster, sql, deps=(), **extra):
    """A materialized view whose SQL names no cluster (the batch prefixes cluster names): the plan adds it."""
    name = ref.split(".")[-1]
    return obj(ref, "materialized-view", cluster=cluster, deps=deps,
               sql=f"CREATE MATERIALIZED VIEW {name} AS {sql}", **extra)


def view(ref, sql, deps=(), **extra):
    return obj(ref, "view", deps=deps, sql=f"CREATE VIEW {ref.split('.')[-1]} AS {sql}", **extra)


def plan_scenarios():
    s = []
    a, b, c = obj("db.s.a"), obj("db.s.b", deps=["db.s.a"]), obj("db.s.c", deps=["db.s.b"])
    s.append(Scenario("line", [a, b, c], [changed(a), changed(b), changed(c)]))
    top, left, right = obj("db.s.top"), obj("db.s.left", deps=["db.s.top"]), obj("db.s.right", deps=["db.s.top"])
    bottom = obj("db.s.bottom", deps=["db.s.left", "db.s.right"])
    s.append(Scenario("diamond", [top, left, right, bottom],
                      [changed(top), changed(left), changed(right), changed(bottom)]))
    # x reads a replacement MV and stays clean: it must impose no order on a and b.
    ra = obj("db.api.a", "materialized-view", replacement=True)
    x, rb = obj("db.mid.x", deps=["db.api.a"]), obj("db.top.b", deps=["db.mid.x"])
    s.append(Scenario("unplanned_middle", [ra, x, rb], [changed(ra), x, changed(rb)]))
    # A replacement MV alone in its schema, read by an object that is not dirty.
    stable = mv("db.api.stable", "serving", "SELECT 1 AS a FROM core.src", deps=["db.core.src"], replacement=True)
    src, user = obj("db.core.src", "table"), view("db.reports.user", "SELECT * FROM api.stable", ["db.api.stable"])
    s.append(Scenario("replacement_alone", [src, stable, user], [src, changed(stable), user]))
    # The issue's case: core.clean changes on compute; mart.daily reads it on serving, indexed on compute.
    events = obj("db.raw.events", "table", sql="CREATE TABLE events (id int, ok bool, v int, day date)")
    clean = mv("db.core.clean", "compute", "SELECT * FROM raw.events WHERE ok", ["db.raw.events"])
    daily = mv("db.mart.daily", "serving", "SELECT day, count(*) AS n FROM core.clean GROUP BY day",
               ["db.core.clean"], indexes=[("daily_idx", "compute")])
    kept = view("db.other.kept", "SELECT 1 AS one", indexes=[("kept_idx", "compute")])
    new_clean = {**clean, "hash": "h2", "sql": clean["sql"].replace("WHERE ok", "WHERE ok AND v > 0")}
    s.append(Scenario("issue", [events, clean, daily, kept], [events, new_clean, daily, kept]))
    # A view added in a schema the deployed project does not have.
    base, fresh = obj("db.s.base"), view("db.fresh.v", "SELECT * FROM s.base", ["db.s.base"])
    s.append(Scenario("new_schema", [base], [base, fresh]))
    # A deploy record: only the views; the table is not listed (nor hashed) where it is deployed.
    table = obj("db.raw.t", "table", hash=None)
    reader = view("db.app.v", "SELECT * FROM raw.t", ["db.raw.t"])
    s.append(Scenario("deploy_record", [reader], [table, reader]))
    s.append(Scenario("deploy_record_forced", [reader], [table, reader], forced=["db.app"]))
    untracked, tracked = obj("db.u.gone", hash=None), obj("db.u.stays")
    s.append(Scenario("untracked_gone", [untracked, tracked], [tracked]))
    # The only object of a schema is deleted: the schema goes too.
    gone, stays = obj("db.gone.x"), obj("db.here.y")
    s.append(Scenario("emptied", [gone, stays], [stays]))
    hostile = obj(("db", "s", HOSTILE), "view", sql=f'CREATE VIEW {quote(HOSTILE)} AS SELECT 1 AS a')
    s.append(Scenario("hostile", [hostile], [changed(hostile)]))
    # Schema, cluster and index names as hostile as the object's: staged, swapped and dropped by blue-green.
    hostile_mv = obj(("db", HOSTILE_SCHEMA, HOSTILE), "materialized-view", cluster=HOSTILE_CLUSTER,
                     indexes=[(HOSTILE_INDEX, HOSTILE_CLUSTER)],
                     sql=f"CREATE MATERIALIZED VIEW {quote(HOSTILE)} AS SELECT 1 AS a")
    s.append(Scenario("hostile_everywhere", [hostile_mv], [changed(hostile_mv)]))
    sink_mv = mv("db.core.mv", "compute", "SELECT 1 AS a")
    conn = obj("db.conn.kc", "connection")
    sink = obj("db.out.sink", "sink", cluster="sinks", deps=["db.core.mv", "db.conn.kc"],
               sql="CREATE SINK sink FROM core.mv INTO KAFKA CONNECTION conn.kc (TOPIC 't') "
                   "FORMAT JSON ENVELOPE DEBEZIUM")
    s.append(Scenario("sink_behind_mv", [conn, sink_mv, sink], [conn, changed(sink_mv), sink]))
    table = obj("db.raw.events", "table", sql="CREATE TABLE events (id int)")
    recent = view("db.raw.recent", "SELECT * FROM raw.events", ["db.raw.events"])
    s.append(Scenario("changed_table", [table, recent], [changed(table), recent]))
    elsewhere = view("db.mart.recent", "SELECT * FROM raw.events", ["db.raw.events"])
    s.append(Scenario("table_needing_attention", [table, elsewhere], [changed(table), elsewhere]))
    # The project moves an MV to a cluster that does not exist yet, and adds one there.
    moved = mv("db.m.moved", "old_c", "SELECT 1 AS a")
    added = mv("db.m.added", "new_c", "SELECT 2 AS b")
    s.append(Scenario("new_cluster", [moved], [{**changed(moved), "cluster": "new_c"}, added]))
    return s + seed_scenarios()


@pytest.fixture(scope="module")
def batches(spark):
    """The scenarios planned by each strategy (the plan's invariants are checked as each run computes)."""
    return {strategy: run_scenarios(spark, plan_scenarios(), "dirty", strategy=strategy, deploy_suffix="stg")
            for strategy in ("blue-green", "in-place")}


@pytest.fixture(scope="module")
def batch(batches):
    return batches["blue-green"]


@pytest.fixture(scope="module")
def plans(batches):
    return {strategy: (b.result.plan.frame, sorted((dict(zip(b.result.plan.columns, r)) for r in b.result.plan.rows),
                                                   key=lambda r: r["seq"]))
            for strategy, b in batches.items()}


def rows_of(plans, batch, strategy, scenario):
    prefix = batch.prefixes[scenario]
    strip = lambda text: text.replace(prefix, "") if text else text  # noqa: E731
    return [{**r, "database": strip(r["database"]), "statement": strip(r["statement"]), "reason": strip(r["reason"]),
             "name": strip(r["name"]) if r["object_type"] == "cluster" else r["name"]}
            for r in plans[strategy][1]
            if (r["database"] or "").startswith(prefix) or (r["object_type"] == "cluster" and r["name"].startswith(prefix))]


def steps(rows, phase):
    return {r["name"]: r["step"] for r in rows if r["phase"] == phase and r["object_type"] == "object"}


def ops(rows):
    return [(r["phase"], r["step"], r["action"], r["object_type"], r["name"] or r["target_schema"]) for r in rows]


def test_chain_and_diamond_steps(plans, batch):
    chain = rows_of(plans, batch, "in-place", "line")
    assert steps(chain, "setup") == {"a": 1, "b": 2, "c": 3}  # step 0 creates schemas the old project lacks
    assert steps(chain, "teardown") == {"c": 0, "b": 1, "a": 2}  # dependents first
    diamond = rows_of(plans, batch, "in-place", "diamond")
    assert steps(diamond, "setup") == {"top": 1, "left": 2, "right": 2, "bottom": 3}
    staged = rows_of(plans, batch, "blue-green", "line")
    assert steps(staged, "stage") == {"a": 1, "b": 2, "c": 3}  # step 0 creates the staging schema


def test_objects_not_in_the_plan_impose_no_order(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "unplanned_middle")
    assert steps(rows, "stage") == {"a": 1, "b": 1}  # x reads a replacement applied in place: it stays
    assert "x" not in {r["name"] for r in rows}


def test_the_issue_case_stages_on_staging_schemas_and_clusters(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "issue")
    by_name = {(r["phase"], r["object_type"], r["name"]): r for r in rows}
    assert by_name[("stage", "object", "clean")]["statement"] == (
        'CREATE MATERIALIZED VIEW "db"."core_stg"."clean" IN CLUSTER "compute_stg" AS '
        'SELECT * FROM "db"."raw"."events" WHERE "ok" AND "v" > 0')
    assert by_name[("stage", "object", "daily")]["statement"] == (
        'CREATE MATERIALIZED VIEW "db"."mart_stg"."daily" IN CLUSTER "serving" AS '
        'SELECT "day", COUNT(*) AS "n" FROM "db"."core_stg"."clean" GROUP BY "day"')
    assert by_name[("stage", "index", "daily_idx")]["statement"] == \
        'CREATE DEFAULT INDEX "daily_idx" IN CLUSTER "compute_stg" ON "db"."mart_stg"."daily"'
    assert by_name[("stage", "index", "kept_idx")]["statement"] == \
        'CREATE DEFAULT INDEX "kept_idx" IN CLUSTER "compute_stg" ON "db"."other"."kept"'
    assert {(r["object_type"], r["name"] or r["schema"]) for r in rows if r["action"] == "SWAP"} == {
        ("schema", "core"), ("schema", "mart"), ("cluster", "compute")}
    assert not any(r["action"] == "CREATE" and r["name"] == "events" for r in rows)  # the table stays
    setup = {r["name"]: r["statement"] for r in rows_of(plans, batch, "in-place", "issue") if r["phase"] == "setup"
             and r["object_type"] == "object"}
    assert setup["daily"].endswith('FROM "db"."core"."clean" GROUP BY "day"')  # in place: production names


def test_a_replacement_alone_is_applied_in_place_and_its_readers_stay(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "replacement_alone")
    assert ops(rows) == [  # its change dirties its cluster: the replacement runs on the staging one
        ("stage", 0, "CREATE", "schema", "api_stg"),
        ("stage", 0, "CREATE", "cluster", "serving"),
        ("stage", 1, "CREATE REPLACEMENT", "object", "stable"),
        ("swap", 1, "SWAP", "cluster", "serving"),
        ("swap", 1, "APPLY REPLACEMENT", "object", "stable"),
        ("cleanup", 0, "DROP", "schema", "api_stg"),
        ("cleanup", 0, "DROP", "cluster", "serving"),
    ]
    assert rows[2]["statement"] == ('CREATE REPLACEMENT MATERIALIZED VIEW "db"."api_stg"."stable" FOR '
                                    '"db"."api"."stable" IN CLUSTER "serving_stg" AS SELECT 1 AS "a" FROM '
                                    '"db"."core"."src"')
    assert rows[4]["statement"] == \
        'ALTER MATERIALIZED VIEW "db"."api"."stable" APPLY REPLACEMENT "db"."api_stg"."stable"'
    # in place, the MV is dropped and created again: its reader with it, though it is not dirty
    in_place = rows_of(plans, batch, "in-place", "replacement_alone")
    assert steps(in_place, "teardown") == {"user": 0, "stable": 1}
    assert steps(in_place, "setup") == {"stable": 1, "user": 2}
    user = next(r for r in in_place if r["name"] == "user" and r["phase"] == "teardown")
    assert user["reason"] == "reads db.api.stable, which the plan drops"
    assert not batch.outcomes["replacement_alone"].stmts.get("db.reports.user")


def test_a_replacement_in_a_swapped_schema_is_staged_with_its_readers(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "replacement")  # the seed: api.stable beside a dirty view
    staged = {r["name"]: r for r in rows if r["phase"] == "stage" and r["object_type"] == "object"}
    assert {n: r["action"] for n, r in staged.items()} == {"stable": "CREATE", "sibling": "CREATE", "user": "CREATE"}
    assert staged["user"]["reason"] == "reads db.api.stable, which the plan removes"
    assert staged["stable"]["reason"] == "dirty"
    assert not any(r["action"] == "APPLY REPLACEMENT" for r in rows)


def test_a_new_schema_exists_before_its_first_object(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "new_schema")
    assert ops(rows)[:3] == [("stage", 0, "CREATE", "schema", "fresh"), ("stage", 0, "CREATE", "schema", "fresh_stg"),
                             ("stage", 1, "CREATE", "object", "v")]
    assert rows[0]["statement"] == 'CREATE SCHEMA IF NOT EXISTS "db"."fresh"'
    in_place = rows_of(plans, batch, "in-place", "new_schema")
    assert ops(in_place) == [("setup", 0, "CREATE", "schema", "fresh"), ("setup", 1, "CREATE", "object", "v")]


def test_a_deploy_record_that_omits_untracked_objects_plans_nothing(plans, batch):
    for strategy in ("blue-green", "in-place"):
        assert rows_of(plans, batch, strategy, "deploy_record") == []
        assert rows_of(plans, batch, strategy, "untracked_gone") == []
    assert batch.outcomes["deploy_record"].stmts == {} and batch.outcomes["untracked_gone"].stmts == {}
    forced = batch.outcomes["deploy_record_forced"]
    assert set(forced.stmts) == {"db.app.v"} and set(forced.schemas) == {"db.app"}  # not its upstream


def test_a_schema_the_new_project_no_longer_has_is_dropped_last(plans, batch):
    rows = rows_of(plans, batch, "in-place", "emptied")
    assert ops(rows) == [("teardown", 0, "DROP", "object", "x"), ("teardown", 1, "DROP", "schema", "gone")]
    assert rows[1]["statement"] == 'DROP SCHEMA IF EXISTS "db"."gone"'  # no CASCADE: it must be empty
    blue_green = rows_of(plans, batch, "blue-green", "emptied")
    assert ops(blue_green) == [("cleanup", 0, "DROP", "object", "x"), ("cleanup", 1, "DROP", "schema", "gone")]


def test_blue_green_phases_of_a_sink_behind_a_dirty_mv(plans, batch):
    rows = rows_of(plans, batch, "blue-green", "sink_behind_mv")
    assert ops(rows) == [
        ("stage", 0, "CREATE", "schema", "core_stg"),
        ("stage", 0, "CREATE", "cluster", "compute"),
        ("stage", 1, "CREATE", "object", "mv"),
        ("swap", 1, "SWAP", "schema", "core_stg"),
        ("swap", 1, "SWAP", "cluster", "compute"),
        ("post-swap", 0, "REPOINT", "object", "sink"),
        ("cleanup", 0, "DROP", "schema", "core_stg"),
        ("cleanup", 0, "DROP", "cluster", "compute"),
    ]
    assert rows[5]["statement"] == 'ALTER SINK "db"."out"."sink" SET FROM "db"."core"."mv"'


def test_in_place_sink_behind_a_dirty_mv(plans, batch):
    rows = rows_of(plans, batch, "in-place", "sink_behind_mv")
    assert steps(rows, "teardown") == {"sink": 0, "mv": 1}
    assert steps(rows, "setup") == {"mv": 1, "sink": 2}
    sink = next(r for r in rows if r["phase"] == "setup" and r["name"] == "sink")
    assert sink["statement"] == ('CREATE SINK "db"."out"."sink" IN CLUSTER "sinks" FROM "db"."core"."mv" INTO KAFKA '
                                 'CONNECTION "db"."conn"."kc" (TOPIC \'t\') FORMAT JSON ENVELOPE DEBEZIUM')


def test_seed_scenarios_under_both_strategies(plans, batch):
    forced = rows_of(plans, batch, "blue-green", "forced")
    assert {r["schema"] for r in forced if r["object_type"] == "schema" and r["action"] == "SWAP"} == {"forced", "down"}
    assert not [r for r in forced if r["object_type"] == "cluster"]
    # index on a staged cluster of an object that is not redeployed is re-created on the staging cluster
    index = next(r for r in rows_of(plans, batch, "blue-green", "index_cluster") if r["object_type"] == "index")
    assert (index["phase"], index["step"], index["name"]) == ("stage", 1, "winning_bids_idx")
    assert '"quickstart_stg"' in index["statement"]
    deleted = rows_of(plans, batch, "in-place", "added_deleted")
    assert ("teardown", "gone") in {(r["phase"], r["name"]) for r in deleted if r["action"] == "DROP"}
    assert ("setup", "new") in {(r["phase"], r["name"]) for r in deleted if r["action"] == "CREATE"}
    assert not rows_of(plans, batch, "blue-green", "unchanged")


def test_hostile_names_stay_one_identifier(plans, batch):
    for strategy in ("blue-green", "in-place"):
        for row in rows_of(plans, batch, strategy, "hostile"):
            if row["object_type"] == "object":
                assert row["statement"].count(quote(HOSTILE)) == 1
            assert "; DROP TABLE t; --\"" not in row["statement"].replace(quote(HOSTILE), "")


def test_hostile_schema_cluster_and_index_names_stay_identifiers(plans, batch):
    """Every statement blue-green and in-place write for them: outside quoted identifiers, no statement
    separator, comment or payload survives."""
    seen = set()
    for strategy in ("blue-green", "in-place"):
        rows = rows_of(plans, batch, strategy, "hostile_everywhere")
        for row in rows:
            outside = QUOTED.sub("", row["statement"])
            assert ";" not in outside and "--" not in outside and "DROP SCHEMA x" not in outside, row["statement"]
            seen.add((strategy, row["object_type"], row["action"]))
    actions = {(t, a) for s, t, a in seen if s == "blue-green"}
    assert {("schema", "CREATE"), ("cluster", "CREATE"), ("object", "CREATE"), ("index", "CREATE"),
            ("schema", "SWAP"), ("cluster", "SWAP"), ("schema", "DROP"), ("cluster", "DROP")} <= actions, actions


def test_destructive_operations_need_permission(plans, batch, batches):
    rows = rows_of(plans, batch, "in-place", "changed_table")
    drop = next(r for r in rows if r["phase"] == "teardown" and r["name"] == "events")
    assert drop["destructive"] and drop["statement"].startswith("DROP TABLE IF EXISTS")
    assert not next(r for r in rows if r["phase"] == "teardown" and r["name"] == "recent")["destructive"]
    report = batches["in-place"].result.report
    with pytest.raises(PolicyError, match=r"refused without --allow-destructive: .*raw\.events \(table\)"):
        report.enforce(allow_destructive=False)
    report.enforce(allow_destructive=True)
    # blue-green swaps raw for its view: the table is created again in staging, empty
    staged = next(r for r in rows_of(plans, batch, "blue-green", "changed_table") if r["name"] == "events")
    assert (staged["phase"], staged["action"], staged["destructive"]) == ("stage", "CREATE", True)


def test_blue_green_reports_a_table_it_leaves_alone_as_needing_attention(batch, plans):
    prefix = batch.prefixes["table_needing_attention"]
    attention = [line for line in batch.result.report.needing_attention if line.startswith(prefix + "db.")]
    assert attention == [f"{prefix}db.raw.events (table, modified)"]
    staged = {r["name"] for r in rows_of(plans, batch, "blue-green", "table_needing_attention")
              if r["object_type"] == "object"}
    assert staged == {"recent"}


def test_plans_are_deterministic(spark, plans):
    again = run_scenarios(spark, plan_scenarios(), "dirty", strategy="in-place", deploy_suffix="stg").result.plan
    rows = sorted((dict(zip(again.columns, r)) for r in again.rows), key=lambda r: r["seq"])
    assert rows == plans["in-place"][1]
    for strategy in ("blue-green", "in-place"):
        assert [r["seq"] for r in plans[strategy][1]] == list(range(1, len(plans[strategy][1]) + 1))


def test_broken_plans_fail_an_invariant(spark, batches, batch, plans):
    """Each broken plan, checked by the job's own checks, fails the invariant it breaks. One query per broken
    plan, as a run checks its own (measured side by side: one query of all seven, tagged by plan, took
    14.4-15.4 s, seven queries 12.9-13.2 s)."""
    plan, in_place = plans["blue-green"][0], plans["in-place"][0]
    line = F.col("database") == batch.prefixes["line"] + "db"
    user = F.col("name") == "user"
    broken = [  # (the broken plan, the invariant it breaks, its strategy)
        (plan.where(~((F.col("phase") == "swap") & (F.col("object_type") == "schema") & line)),
         "every staged schema and cluster is swapped", "blue-green"),
        (plan.withColumn("step", F.lit(0)), "every dependency between planned objects is respected", "blue-green"),
        (plan.unionByName(plan.where(F.col("object_type") == "object").limit(1)),
         "each object appears at most once per phase", "blue-green"),
        (plan.where(~F.coalesce(F.col("schema") == "reports", F.lit(False))),
         "nothing the plan removes is still read by an object that stays", "blue-green"),
        (plan.where(~((F.col("name") == "sibling") & (F.col("phase") == "stage"))),
         "everything the plan removes that the new project keeps is created again", "blue-green"),
        (plan.where(~((F.col("object_type") == "schema") & (F.col("target_schema") == "fresh"))),
         "every schema exists before an object is created in it", "blue-green"),
        (in_place.where(~(user & (F.col("phase") == "teardown"))),
         "nothing the plan removes is still read by an object that stays", "in-place"),
    ]
    checked = [plan_checks(frame.withColumn("error", F.lit(None).cast("string")), batches[strategy].plan_context)
               for frame, _, strategy in broken]
    with session_settings(spark, batch.result.settings.computed_with(batch.result.objects)):  # as a run checks
        found = [checks.collect() for checks, _ in checked]
    for rows, (_, invariants), (_, invariant, _) in zip(found, checked, broken):
        with pytest.raises(InvariantError, match=invariant):
            plan_report(rows, invariants).enforce(allow_destructive=True)


# held as local rows, or as checkpointed blocks filled lazily or eagerly
HOLDINGS = [Holding(10_000), Holding(0), Holding(0, lazy_checkpoints=False)]
IDS = {n: i for i, n in enumerate("abcdefx")}


def _graph(spark, nodes: str, edges: list[tuple[str, str]]):
    names = spark.createDataFrame([(i, "d", "s", n) for n, i in IDS.items()], "id long, database string, "
                                                                             "schema string, name string")
    return ({"g": (spark.createDataFrame([(IDS[n],) for n in nodes], "c0 long"),
                   spark.createDataFrame([(IDS[a], IDS[b]) for a, b in edges], "c0 long, c1 long"))}, names)


@pytest.mark.parametrize("holding", HOLDINGS)
def test_cycle_is_an_error_naming_the_objects(spark, holding):
    groups, names = _graph(spark, "abcde", [("b", "a"), ("c", "b"), ("d", "c"), ("b", "d"), ("e", "d")])
    with pytest.raises(CycleError, match=r"^dependency cycle: d.s.b -> d.s.d -> d.s.c -> d.s.b$"):  # not a, e
        layered(groups, holding, names, try_local=bool(holding.local_rows))


@pytest.mark.parametrize("holding", HOLDINGS)
def test_steps_are_the_longest_path_from_the_roots(spark, holding):
    groups, names = _graph(spark, "abcdef", [("b", "a"), ("c", "b"), ("d", "a"), ("d", "c"), ("e", "x"),
                                             ("d", "c")])  # an edge given twice places d alike
    held = layered(groups, holding, names, try_local=bool(holding.local_rows))  # x is no node: e waits for nothing
    steps = {r["id"]: r["step"] for r in held.frame.collect()}
    assert steps == {IDS[n]: s for n, s in {"a": 0, "b": 1, "c": 2, "d": 3, "e": 0, "f": 0}.items()}


def test_a_cluster_nothing_deployed_runs_on_is_created_as_itself(plans, batch):
    for strategy, phase in (("blue-green", "stage"), ("in-place", "setup")):
        rows = rows_of(plans, batch, strategy, "new_cluster")
        clusters = [(r["phase"], r["step"], r["action"], r["name"], r["statement"])
                    for r in rows if r["object_type"] == "cluster"]
        new_c = [c for c in clusters if c[3] == "new_c"]
        assert [c[:4] for c in new_c] == [(phase, 0, "CREATE", "new_c")], strategy  # never staged nor swapped
        assert new_c[0][4] == "CREATE CLUSTER \"new_c\" (SIZE = '25cc')"
        created = [r["statement"] for r in rows if r["object_type"] == "object" and r["action"] == "CREATE"]
        assert len(created) == 2 and all('IN CLUSTER "new_c"' in sql for sql in created), (strategy, created)
    # the cluster the MV left holds nothing of the new project: not dirty, left alone
    assert all(r["name"] != "old_c" for r in rows_of(plans, batch, "blue-green", "new_cluster"))
