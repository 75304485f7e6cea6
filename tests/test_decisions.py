"""The decisions table: one decision per object, schema and cluster, complete before anything is published."""

import yaml
from chispa import assert_df_equality
from cli_output import error_lines
from deltalake import DeltaTable
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.plan.decision_table import INVARIANTS, invariants

SUBJECTS = {"object": 0, "schema": 1, "cluster": 2}


def shown(row: dict) -> str:
    name = ".".join(p for p in (row["database"], row["schema"], row["name"]) if p)
    return f"{row['subject']} {name}: {row['decision']}" + (f" [{row['steps']}]" if row["steps"] else "")


def decisions(out, run_id: str) -> list[dict]:
    rows = [r for r in DeltaTable(str(out / "decisions")).to_pyarrow_table().to_pylist() if r["run_id"] == run_id]
    return sorted(rows, key=lambda r: (SUBJECTS[r["subject"]], shown(r)))


def test_the_example_decides_once_for_every_object_schema_and_cluster(example_run, expected):
    rows = decisions(example_run.out, "example")
    assert [shown(r) for r in rows] == expected["decisions"]
    objects = {(o["database"], o["schema"], o["name"]) for side in (EXAMPLE_OLD, EXAMPLE_NEW)
               for o in yaml.safe_load(open(side))["objects"]}
    decided = [(r["database"], r["schema"], r["name"]) for r in rows if r["subject"] == "object"]
    assert sorted(decided) == sorted(objects)  # every object of either project, once
    plan = DeltaTable(str(example_run.out / "ddl_plan")).to_pyarrow_table().to_pylist()
    steps = [int(s) for r in rows if r["decision"] != "kept" for s in r["steps"].split(",")]
    assert set(steps) == {r["seq"] for r in plan if r["run_id"] == "example"}  # every plan row carries one out
    by_name = {(r["schema"], r["name"]): r for r in rows if r["subject"] == "object"}
    staged = by_name[("public", "flippers")]
    assert (staged["relation"], staged["rule"], staged["reason"]) == ("Staged", "staged", "dirty")
    assert by_name[("reporting", "legacy_flippers")]["relation"] == "Gone"  # dropped with its swapped schema


def test_a_rule_program_that_decides_twice_fails_the_run_and_publishes_nothing(spark, tmp_path, capsys):
    rules = (PROJECT_ROOT / "conf" / "rules" / "plan_blue_green.dl").read_text()
    contradiction = "contradiction: SinkRepointed(O) :- Staged(O), NewKind(O, K), NOT SinkKind(K)\n"
    (tmp_path / "plan.dl").write_text(rules + contradiction)
    (tmp_path / "conf.yaml").write_text(yaml.safe_dump({"plan": {"rules": {"blue-green": str(tmp_path / "plan.dl")}}}))
    out = tmp_path / "out"
    code = main(["run", "--old", str(EXAMPLE_OLD), "--new", str(EXAMPLE_NEW), "--out", str(out),
                 "--config", str(tmp_path / "conf.yaml"), "--run-id", "twice"])
    assert code == 1
    (line,) = error_lines(capsys.readouterr().err)
    assert "every object has one decision" in line
    assert "object materialize.public.flippers: redeployed by staging and repointed" in line
    assert sorted(p.name for p in out.iterdir()) == ["runs"]  # nothing but the failed run's row
    (run,) = DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()
    assert run["status"] == "failed" and "every object has one decision" in run["message"]


def test_each_completeness_check_finds_its_violation(spark):
    table = spark.createDataFrame([
        ("object", "db", "s", "kept_one", "kept", None),
        ("object", "db", "s", "created", "created", "1"),
        ("object", "db", "s", "undone", "dropped", None),
        ("object", "db", "s", "twice", "created|dropped", "2"),
        ("schema", "db", "s", None, "kept", None),
    ], "subject string, database string, schema string, name string, decision string, steps string")
    plan = spark.createDataFrame([(1, "CREATE", "object", "db", "s", "created"),
                                  (2, "DROP", "object", "db", "s", "twice"),
                                  (3, "CREATE", "index", "db", "s", "orphan_idx")],
                                 "seq int, action string, object_type string, database string, schema string, "
                                 "name string")
    found = invariants(table, plan)
    assert list(found) == list(INVARIANTS)
    expected = {
        "every object has one decision": ["object db.s.twice: created and dropped"],
        "every plan row carries out a decision": ["row 3 (CREATE index db.s.orphan_idx) carries out no decision"],
        "every decision but kept has a plan row": ["object db.s.undone is dropped by no plan row"],
    }
    for name, details in expected.items():
        assert_df_equality(found[name], spark.createDataFrame([(d,) for d in details], "detail string"),
                           ignore_nullable=True)
