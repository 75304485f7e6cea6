"""`dirtiness explain`: chains read back from a real run of the seed scenarios (the ``seeds`` fixture)."""

import json
import re

from catalogs import prefix_of
from seeds import HOSTILE

from dirtiness.cli import main
from dirtiness.config import load_config
from dirtiness.readback.explain import explain, format_text
from dirtiness.readback.run_tables import RunTables


def chain_of(seeds, scenario, kind, *parts):
    out, scenarios = seeds
    p = prefix_of(scenarios, scenario)
    prefixed = (p + parts[0], *parts[1:])
    e = explain(RunTables.open(out), kind, prefixed)
    return e, [(link.fact.replace(p, ""), link.rule, link.round) for link in e.chain]


def test_schema_chain_back_to_the_changed_table(seeds):
    e, chain = chain_of(seeds, "schema_atomic", "object", "db", "app", "view1")
    assert e.dirty and e.kind == "object"
    assert chain == [("DirtyStmt(db.app.view1)", "schema", 3), ("DirtySchema(db, app)", "member", 2),
                     ("DirtyStmt(db.app.table1)", "changed", 1), ("ChangedStmt(db.app.table1)", None, None)]
    assert e.chain[-1].seed and e.chain[-1].change == "modified"
    assert e.change is None


def test_dependency_chain_and_the_second_reason_around_it(seeds):
    e, chain = chain_of(seeds, "chain", "object", "materialize", "public", "flippers")
    assert [c[:2] for c in chain] == [
        ("DirtyStmt(materialize.public.flippers)", "dependency"),
        ("DirtyStmt(materialize.public.flip_activities)", "dependency"),
        ("DirtyStmt(materialize.internal.winning_bids)", "changed"),
        ("ChangedStmt(materialize.internal.winning_bids)", None)]
    assert [c[2] for c in chain[:3]] == [3, 2, 1]
    schema = next(n for n in e.surroundings if n.role == "schema")
    assert (schema.state, schema.rule) == ("dirty", "member")  # also dirty through its schema, one round later


def test_two_reasons_in_one_round_the_first_rule_wins_and_the_other_is_shown(seeds):
    e, chain = chain_of(seeds, "two_reasons", "object", "db", "both", "x")
    assert chain == [("DirtyStmt(db.both.x)", "dependency", 2), ("DirtyStmt(db.up.src)", "changed", 1),
                     ("ChangedStmt(db.up.src)", None, None)]
    schema = next(n for n in e.surroundings if n.role == "schema")
    assert (schema.state, schema.rule, schema.round) == ("dirty", "forced", 1)
    text = format_text(e)
    assert "depends on  " in text and ": dirty by rule changed, round 1" in text


def test_forced_schema_is_a_seed(seeds):
    e, chain = chain_of(seeds, "forced", "object", "db", "forced", "a")
    assert chain == [("DirtyStmt(db.forced.a)", "schema", 2), ("DirtySchema(db, forced)", "forced", 1),
                     ("ForcedSchema(db, forced)", None, None)]
    assert e.chain[-1].seed and e.chain[-1].relation == "ForcedSchema"


def test_cluster_rule_is_explained_through_the_dirty_cluster(seeds):
    _, chain = chain_of(seeds, "on_dirty_cluster", "object", "db", "d", "b")
    assert chain == [("DirtyStmt(db.d.b)", "cluster", 2), ("DirtyCluster(c1)", "stmt_cluster", 1),
                     ("ChangedStmt(db.c.a)", None, None)]
    e, chain = chain_of(seeds, "index_cluster", "cluster", "quickstart")
    assert chain == [("DirtyCluster(quickstart)", "stmt_cluster", 1),
                     ("ChangedStmt(materialize.public.other)", None, None)]
    assert {(n.name.replace(prefix_of(seeds[1], "index_cluster"), ""), n.state) for n in e.surroundings} == {
        ("materialize.internal.winning_bids", "unchanged"), ("materialize.public.other", "changed (modified)")}


def test_added_and_deleted_seeds(seeds):
    e, _ = chain_of(seeds, "added_deleted", "object", "db", "dels", "gone")
    assert e.change == "deleted" and e.chain[-1].change == "deleted"
    e, _ = chain_of(seeds, "added_deleted", "object", "db", "adds", "new")
    assert e.change == "added" and e.chain[-1].change == "added"


def test_not_dirty_object_says_what_around_it_is_clean(seeds):
    e, chain = chain_of(seeds, "index_cluster", "object", "materialize", "internal", "winning_bids")
    assert not e.dirty and chain == []
    states = {(n.role, n.state) for n in e.surroundings}
    assert states == {("schema", "clean"), ("cluster", "clean"), ("index", "dirty")}
    assert [(op["phase"], op["action"]) for op in e.plan] == [("stage", "CREATE")]  # its index, restaged
    assert '"winning_bids_idx"' in e.plan[0]["statement"]
    e, _ = chain_of(seeds, "replacement", "object", "db", "reports", "user")
    dependency = next(n for n in e.surroundings if n.role == "depends on")
    assert dependency.state == "dirty" and "replacement" in dependency.note
    assert "is not dirty in run seeds" in format_text(e) and "not changed" in format_text(e)


def test_cli_text_json_and_errors(seeds, capsys):
    out, scenarios = seeds
    p = prefix_of(scenarios, "chain")
    assert main(["explain", "--out", out, f"{p}materialize.public.flippers"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == f"object {p}materialize.public.flippers is dirty in run seeds " \
                                   f"(rules: {load_config()['rules']})"
    assert re.search(rf"\n  seed +ChangedStmt\({p}materialize\.internal\.winning_bids\) +modified\n", text)

    assert main(["explain", "--out", out, "--run-id", "seeds", "--format", "json",
                 "--schema", f"{p}materialize.public"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dirty"] and document["kind"] == "schema" and document["run_id"] == "seeds"
    assert [link["rule"] for link in document["chain"]] == ["member", "dependency", "changed", None]
    assert document["chain"][-1] == {**document["chain"][-1], "seed": True, "change": "modified",
                                     "table": "facts/changed_stmt"}
    assert {op["phase"] for op in document["plan"]} == {"stage", "swap", "cleanup"}

    q = prefix_of(scenarios, "replacement")
    assert main(["explain", "--out", out, "--format", "json", f"{q}db.reports.user"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dirty"] is False and document["chain"] == [] and document["change"] is None

    assert main(["explain", "--out", out, f"{q}db.reports.nope"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dirtiness: {q}db.reports.nope: no such object in the old or the new project (run seeds)")
    assert main(["explain", "--out", out, "--cluster", "nope"]) == 2
    assert "nope: no such cluster" in capsys.readouterr().err
    assert main(["explain", "--out", out, "--schema", "db.nope"]) == 2
    assert "db.nope: no such schema" in capsys.readouterr().err
    assert main(["explain", "--out", out, "a.b"]) == 2
    assert "a.b: no such object in the old or the new project (run seeds)" in capsys.readouterr().err
    assert main(["explain", "--out", out, "a.b.c.d"]) == 2
    assert "a.b.c.d: an object has at most 3 name parts" in capsys.readouterr().err
    # any unambiguous suffix, as `select` prints names; the closest names when nothing matches
    both = prefix_of(scenarios, "two_reasons")
    assert main(["explain", "--out", out, "both.x"]) == 0
    assert capsys.readouterr().out.startswith(f"object {both}db.both.x is dirty in run seeds")
    assert main(["explain", "--out", out, "flippers"]) == 2  # every scenario has one
    assert "flippers: names" in capsys.readouterr().err
    assert main(["explain", "--out", out, f"{p}materialize.public.flipers"]) == 2
    assert f"(run seeds); did you mean {p}materialize.public.flippers or " in capsys.readouterr().err
    assert main(["explain", "--out", out, "a.b.c", "--cluster", "x"]) == 2
    assert "exactly one of" in capsys.readouterr().err
    assert main(["explain", "--out", out, "--run-id", "nope", "a.b.c"]) == 2
    assert f"run nope: not found under {out}" in capsys.readouterr().err


def test_quoted_names_round_trip(seeds, capsys):
    out, scenarios = seeds
    p = prefix_of(scenarios, "hostile")
    database, schema, name = HOSTILE
    typed = f'{p}{database}."{schema}"."{name.replace(chr(34), chr(34) * 2)}"'
    assert main(["explain", "--out", out, "--format", "json", typed]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dirty"] and document["chain"][-1]["change"] == "modified"
    assert document["name"] == typed


def test_why_an_object_is_in_the_plan_walks_the_plans_rules_back_to_a_change(seeds):
    """A plan decision is explained as a dirty object is: rule by rule, through the dirty sets, to a seed."""
    e, _ = chain_of(seeds, "schema_atomic", "object", "db", "app", "view1")
    p = prefix_of(seeds[1], "schema_atomic")
    decided = {d["relation"]: (d["rule"], d["reason"]) for d in e.decisions}
    assert decided["Redeployed"] == ("dirty", "dirty") and decided["Staged"] == ("staged", None)
    assert [(link.fact.replace(p, ""), link.rule, link.table) for link in e.decision_chain] == [
        ("Redeployed(db.app.view1)", "dirty", "plan_decisions"),
        ("DirtyStmt(db.app.view1)", "schema", "dirty_stmts"),
        ("DirtySchema(db, app)", "member", "dirty_schemas"),
        ("DirtyStmt(db.app.table1)", "changed", "dirty_stmts"),
        ("ChangedStmt(db.app.table1)", None, "facts/changed_stmt")]
    text = format_text(e)
    assert e.decision["decision"] == "redeployed by staging" and e.decision["relation"] == "Staged"
    steps = ", ".join(e.decision["steps"].split(","))
    assert f"\n  decision: redeployed by staging (Staged, rule staged; plan rows {steps}; dirty)\n" in text
    assert "the plan's decisions:\n  Redeployed (rule dirty, round 1): dirty" in text
    assert f"why Redeployed({p}db.app.view1):" in text and "  plan 1  Redeployed(" in text


def test_why_a_schema_is_swapped_and_an_object_it_held_is_removed(seeds):
    out, scenarios = seeds
    p = prefix_of(scenarios, "chain")
    e = explain(RunTables.open(out), "schema", (p + "materialize", "public"))
    decided = {d["relation"]: d for d in e.decisions}
    assert {"Swapped", "StagingSchema"} <= set(decided)
    assert (e.decision["decision"], e.decision["rule"]) == ("swapped", "swapped") and e.decision["steps"]
    assert e.decision_chain[0].fact == f"Swapped({p}materialize, public)" and e.decision_chain[0].rule == "swapped"
    assert e.decision_chain[1].fact.startswith(f"Redeployed({p}materialize.public.")  # one of the schema's dirty
    assert e.decision_chain[-1].seed and e.decision_chain[-1].relation == "ChangedStmt"
    flippers = explain(RunTables.open(out), "object", (p + "materialize", "public", "flippers"))
    removed = next(d for d in flippers.decisions if d["relation"] == "Removed")
    assert (removed["rule"], removed["cause"]) == ("in_swapped_schema", f"Swapped({p}materialize, public)")
    # one story: the staged object's deployed copy is removed by the swap that puts the staged one in
    assert flippers.decision["decision"] == "redeployed by staging"
    assert (f"  Removed (rule in_swapped_schema, round {removed['round']}): the deployed copy leaves production "
            f"with its schema {p}materialize.public, which the swap takes out; the new copy takes its place\n"
            in format_text(flippers))
