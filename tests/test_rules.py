"""Parsing and static checks of rule programs: no Spark needed."""

import re

import pytest
from catalogs import OUTPUTS, RULES

from dirtiness.changeset.rules import load_plan_rules, load_rules
from dirtiness.config import CONF
from dirtiness.datalog.check import check_program
from dirtiness.datalog.naive import evaluate_naive
from dirtiness.datalog.syntax import ProgramError, parse_program
from dirtiness.model import base_domains


def check(text: str):
    return check_program(parse_program(text, "test.dl"), base_domains())


def error_of(text: str) -> str:
    with pytest.raises(ProgramError) as info:
        check(text)
    return str(info.value)


def test_shipped_programs_check_and_stratify():
    default = load_rules(RULES["dirty"], OUTPUTS)
    assert [r.label for r in default.rules] == ["changed", "cluster", "dependency", "schema", "stmt_cluster",
                                                "index_cluster", "forced", "member"]
    assert default.derived == {"DirtyStmt": ("object",), "DirtyCluster": ("cluster",),
                               "DirtySchema": ("database", "schema")}
    assert len(default.strata) == 1  # negation only on base relations
    mz = load_rules(str(CONF / "rules" / "mz_deploy.dl"), OUTPUTS)  # mz-deploy's: apply's changes seed nothing
    assert [r.label for r in mz.rules] == ["deployed_change", *[r.label for r in default.rules]]
    assert len(mz.strata) == 1 and mz.rules[0].body[1].relation == "IsApplyManaged" and mz.rules[0].body[1].negated
    aware = load_rules(RULES["index_aware"], OUTPUTS)
    assert aware.derived["SchemaPropagatingStmt"] == ("object",)
    assert len(aware.rules) == 9


def test_labels_comments_continuations_and_wildcards():
    program = parse_program(
        "# comment\n"
        "seed: DirtyStmt(O) :- ChangedStmt(O).  % trailing comment\n"
        "DirtyStmt(O) :- IndexUsesCluster(O, _, C),\n"
        "    DirtyCluster(C)\n"
        "DirtyCluster(C) :- ClusterBoundary(C), NOT IsSink(C)\n", "x.dl")
    first, second, third = program.rules
    assert (first.label, first.line, str(first.head)) == ("seed", 2, "DirtyStmt(O)")
    assert (second.label, second.line) == ("rule2", 3)
    assert str(second.body[0]) == "IndexUsesCluster(O, _, C)"
    assert third.body[1].negated and third.body[1].relation == "IsSink"


@pytest.mark.parametrize("text, expected", [
    ("DirtyStmt(O) :- ChangedStmt(O)\nDirtyStmt(O) ChangedStmt(O)", "test.dl:2: expected 'Head(...) :- Body(...)"),
    ("DirtyStmt(O) :- ChangedStmt('x')", "test.dl:1: ChangedStmt: argument \"'x'\" is not a variable"),
    ("DirtyStmt(O) :- ChangedStmt(O), Bogus(O)", "test.dl:1: unknown relation Bogus"),
    ("\n\nDirtyStmt(O) :- DependsOn(O)", "test.dl:3: DependsOn has arity 2 (its declaration), used here with 1"),
    ("DirtyStmt(O) :- ChangedStmt(O)\nDirtyStmt(O, P) :- DependsOn(O, P)", "test.dl:2: DirtyStmt has arity 1 (line 1)"),
    ("DirtyStmt(X) :- ChangedStmt(O)", "test.dl:1: unsafe rule: head variable X is not bound"),
    ("DirtyStmt(O) :- ChangedStmt(O), NOT DependsOn(O, Q)", "test.dl:1: unsafe rule: variable Q of NOT DependsOn(O, Q)"),
    ("DirtyStmt(_) :- ChangedStmt(O)", "test.dl:1: the head DirtyStmt(_) may not contain _"),
    ("ChangedStmt(O) :- IsSink(O)", "test.dl:1: ChangedStmt is a base relation and cannot be a rule head"),
    ("DirtyStmt(O) :- NOT ChangedStmt(O)", "test.dl:1: a rule needs at least one positive body atom"),
    ("DirtyStmt(C) :- StmtUsesCluster(O, C)\nX(O) :- DirtyStmt(O), ChangedStmt(O)",
     "test.dl:2: variable O is a cluster and a object in ChangedStmt(O)"),
    ("A(O) :- ChangedStmt(O)\nA(O) :- DependsOn(O, P), B(P)\nB(O) :- A(O), NOT A(O)",
     "test.dl:3: negation through recursion: B depends on A recursively"),
    ("", "test.dl: the program has no rules"),
])
def test_errors_name_file_line_and_problem(text, expected):
    assert expected in error_of(text)


def test_negation_of_a_lower_stratum_is_allowed_and_ordered():
    checked = check("Seed(O) :- ChangedStmt(O)\nReach(O) :- Seed(O)\nReach(O) :- DependsOn(O, P), Reach(P)\n"
                    "Unreached(O) :- ObjectInSchema(O, D, S), NOT Reach(O)")
    assert checked.strata == (("Seed", "Reach"), ("Unreached",))


def test_output_relation_must_be_derived(tmp_path):
    rules = tmp_path / "r.dl"
    rules.write_text("DirtyStmt(O) :- ChangedStmt(O)\n")
    with pytest.raises(ProgramError, match="writes DirtyCluster, DirtySchema, which no rule derives"):
        load_rules(str(rules), OUTPUTS)


def test_naive_evaluator_by_hand():
    """The reference itself, on a chain a <- b <- c with a changed: rounds 1, 2, 3."""
    checked = load_rules(RULES["dirty"], OUTPUTS)
    a, b, c = ("d", "s", "a"), ("d", "s", "b"), ("d", "t", "c")
    base = {name: set() for name in base_domains()}
    base["ChangedStmt"] = {(a,)}
    base["DependsOn"] = {(b, a), (c, b)}
    base["ObjectInSchema"] = {(a, "d", "s"), (b, "d", "s"), (c, "d", "t")}
    derived, rounds = evaluate_naive(checked, base)
    stmts = {t[0]: (d.round, checked.rules[d.rule].label, d.causes) for t, d in derived["DirtyStmt"].items()}
    assert stmts[a] == (1, "changed", {("ChangedStmt", (a,))})
    assert stmts[b] == (2, "dependency", {("DirtyStmt", (a,))})
    assert stmts[c] == (3, "dependency", {("DirtyStmt", (b,))})
    assert set(derived["DirtySchema"]) == {("d", "s"), ("d", "t")}
    assert rounds == 5


def test_a_rule_may_carry_a_reason_with_variables_of_its_cause():
    program = parse_program('reads "reads {P} # not a comment": DirtyStmt(O) :- DependsOn(O, P), DirtyStmt(P)  # one\n'
                            'changed "changed":\n    DirtyStmt(O) :- ChangedStmt(O)\n', "x.dl")
    reads, changed = program.rules
    assert (reads.label, reads.reason, reads.reason_variables) == ("reads", "reads {P} # not a comment", ["P"])
    assert (changed.label, changed.reason, changed.line) == ("changed", "changed", 2)
    checked = check_program(program, base_domains())
    assert checked.cause_atoms(reads) == [1]  # the recursive atom is the cause; its P fills the reason


def test_a_reason_may_only_name_what_its_cause_binds():
    assert ("test.dl:1: the reason of r names {P}, which its cause DirtyStmt(O) does not bind"
            in error_of('r "reads {P}": DirtyStmt(O) :- DirtyStmt(O), DependsOn(O, P)'))


def test_shipped_plan_programs_check_and_stratify():
    blue_green = load_plan_rules(str(CONF / "rules" / "plan_blue_green.dl"), "blue-green")
    assert {"Redeployed", "Swapped", "Removed", "Gone", "Staged", "ReplacedInPlace"} <= set(blue_green.derived)
    assert blue_green.strata[0][:4] == ("Redeployed", "Swapped", "Removed", "Gone")  # one recursive closure
    assert len(blue_green.strata) == 3  # then what negates it, then the schemas it empties
    assert all(r.reason for r in blue_green.rules if r.head.relation == "Redeployed")
    in_place = load_plan_rules(str(CONF / "rules" / "plan_in_place.dl"), "in-place")
    assert set(in_place.derived) == {"Dropped", "Created", "CreatedSchema", "CreatedCluster", "StillHolds",
                                     "EmptiedSchema"}


@pytest.mark.parametrize("encode, message", [
    (lambda text: b"\xef\xbb\xbf" + text.encode(), None),                 # UTF-8 with a byte-order mark: read
    (lambda text: text.encode("utf-16"), r"rules\.dl: the rule program is UTF-16 \(it starts with a UTF-16 "
                                         r"byte-order mark\); save it as UTF-8"),
    (lambda text: text.encode().replace(b"Statement", b"St\xe9tement", 1),
     r"rules\.dl: line 10, byte 495: not UTF-8 \(invalid continuation byte\); save the rule program as UTF-8"),
])
def test_a_rule_program_is_utf8_or_one_line_naming_the_byte(tmp_path, capsys, monkeypatch, encode, message):
    from dirtiness import session
    from dirtiness.cli import main
    from dirtiness.config import PROJECT_ROOT

    monkeypatch.setattr(session, "build_session", lambda *a, **k: pytest.fail("Spark started"))
    path = tmp_path / "rules.dl"
    path.write_bytes(encode((CONF / "rules" / "dirty.dl").read_text(encoding="utf-8")))
    if message is None:
        assert len(load_rules(str(path), OUTPUTS).program.rules) == 8
        return
    example = PROJECT_ROOT / "examples"
    code = main(["run", "--old", str(example / "old.yaml"), "--new", str(example / "new.yaml"),
                 "--out", str(tmp_path / "out"), "--rules", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert re.search(message, err[0]), err[0]
    assert not (tmp_path / "out").exists()  # nothing written


def test_every_bundled_program_declares_what_it_reads_and_derives():
    """Each shipped program's .input and .output are exactly what its rules read and derive (checked as it is
    loaded; here: that each declares them at all)."""
    for path in sorted((CONF / "rules").glob("*.dl")):
        program = parse_program(path.read_text(), str(path))
        assert program.declared("input") and program.declared("output"), path.name


@pytest.mark.parametrize("text, message", [
    (".input ChangedStmt\n.output DirtyStmt\na: DirtyStmt(O) :- ChangedStmt(O)\n"
     "b: DirtyStmt(O) :- DependsOn(O, P), DirtyStmt(P)\n",
     "test.dl:4: the program reads DependsOn, which its .input (line 1) does not declare"),
    (".input ChangedStmt, IsSink\n.output DirtyStmt\na: DirtyStmt(O) :- ChangedStmt(O)\n",
     "test.dl:1: .input IsSink: the program never reads it (a base relation)"),
    (".input ChangedStmt\n.output DirtyStmt\na: DirtyStmt(O) :- ChangedStmt(O)\nb: Extra(O) :- DirtyStmt(O)\n",
     "test.dl:4: the program derives Extra, which its .output (line 2) does not declare"),
    (".input ChangedStmt\n.output DirtyStmt, Gone\na: DirtyStmt(O) :- ChangedStmt(O)\n",
     "test.dl:2: .output Gone: the program never derives it (no relation it knows)"),
    (".input ChangedStmt,\n       DependsOn\n.input IsSink\na: DirtyStmt(O) :- ChangedStmt(O)\n",
     "test.dl:3: .input is declared twice (first on line 1)"),
    (".reads ChangedStmt\na: DirtyStmt(O) :- ChangedStmt(O)\n",
     "test.dl:1: expected '.input Relation, ...' or '.output Relation, ...', got '.reads ChangedStmt'"),
])
def test_a_declaration_is_checked_exactly_naming_its_line(text, message):
    assert error_of(text) == message


def test_the_planned_relations_are_what_the_planner_reads():
    """A strategy's ``planned`` lists every relation its planner and decisions table read (read off the
    planner's source, so a new read cannot go unchecked at load time)."""
    import inspect

    from dirtiness.plan.strategies import PLANNERS

    for strategy in PLANNERS.values():
        source = inspect.getsource(inspect.getmodule(strategy.operations))
        read = set(re.findall(r'decided\("(\w+)"', source))
        read |= {r for relations, _ in strategy.groups.values() for r in relations}
        read |= {entry[0] for table in (strategy.objects, strategy.schemas, strategy.clusters) for entry in table}
        assert read == set(strategy.planned), strategy.name


def test_every_strategy_is_one_the_command_offers_and_plans_with_its_own_planner_or_not_at_all():
    from dirtiness.config import load_config
    from dirtiness.model import NO_PLAN, STRATEGIES
    from dirtiness.plan.strategies import PLANNERS

    assert set(STRATEGIES) == {*PLANNERS, NO_PLAN}
    assert all(name == strategy.name for name, strategy in PLANNERS.items())
    bundled = load_config()["plan"]["rules"]  # what the configuration names is the strategy's bundled program
    assert {name: str(path) for name, path in bundled.items()} == {n: s.rules for n, s in PLANNERS.items()}


def test_a_plan_program_without_a_relation_the_planner_reads_is_exit_2(tmp_path, capsys, monkeypatch):
    """A strategy's program of one's own (plan.rules) that lacks a relation the planner reads: one line naming
    the file and the relation, before Spark starts, never an internal error."""
    from dirtiness import session
    from dirtiness.cli import main
    from dirtiness.config import PROJECT_ROOT

    monkeypatch.setattr(session, "build_session", lambda *a, **k: pytest.fail("Spark started"))
    bundled = (CONF / "rules" / "plan_in_place.dl").read_text()
    mine = tmp_path / "plan.dl"  # in-place without its created schemas (and so without the declaration of them)
    mine.write_text("\n".join(line for line in bundled.splitlines()
                              if not line.startswith((".", " ", "create_schema:"))))
    overlay = tmp_path / "config.yaml"
    overlay.write_text(f"plan:\n  rules:\n    in-place: {mine}\n")
    example = PROJECT_ROOT / "examples"
    assert main(["run", "--old", str(example / "old.yaml"), "--new", str(example / "new.yaml"), "--out",
                 str(tmp_path / "out"), "--config", str(overlay), "--strategy", "in-place"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dirtiness: {mine}: the in-place planner reads CreatedSchema, which no rule of this program derives")
