"""Seeded fuzzing of the job's inputs: mutations of the bundled example's snapshots (document and table form)
and of the default rule program. Every mutation must end in exit 0, 2 or 3, with one ``dirtiness:`` line for
2 and 3, no traceback, and nothing published by a run that did not succeed.

Most mutations are refused before Spark starts (``build_session`` is replaced by a function that defers the
mutation instead), so they cost milliseconds; those that pass every early check are run for real in the
shared session, a few of them (``SPARK_RUNS``), as the seed picks. ``DIRTINESS_FUZZ_SEED`` changes the seed.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from dirtiness import session
from dirtiness.cli import main
from dirtiness.config import CONF, PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"
SEED = int(os.environ.get("DIRTINESS_FUZZ_SEED", "20261126"))
MUTATIONS = 120
SPARK_RUNS = 2
WRONG = [7, 3.5, True, None, [], {}, ["x"], {"a": 1}, "", "x" * 300]


class NeedsSpark(BaseException):
    """Raised instead of starting Spark: the mutation passed every early check (not an Exception: the
    command line's own handler must not turn it into an exit code)."""


def _document_mutation(rng: random.Random, text: str) -> tuple[str, bytes]:
    """(what was done, the new project's bytes)."""
    how = rng.choice(["truncate", "encoding", "wrong_type", "duplicate", "cycle", "huge_name", "control",
                      "drop_field", "unknown_dependency"])
    data = text.encode()
    if how == "truncate":
        return how, data[:rng.randrange(len(data))]
    if how == "encoding":
        return how, rng.choice([text.encode("utf-16"), data.replace(b"a", b"\xe9", 1), b"\xff\xfe" + data,
                                b"\xef\xbb\xbf" + data])
    if how == "control":
        at = rng.randrange(len(text))
        return how, (text[:at] + rng.choice(["\x00", "\x1b", "\x07", "\u202e", "\r"]) + text[at:]).encode()
    document = yaml.safe_load(text)
    objects = document["objects"]
    victim = rng.randrange(len(objects))
    if how == "wrong_type":
        field = rng.choice(["database", "schema", "name", "kind", "hash", "cluster", "replacement", "depends_on",
                            "indexes", "sql"])
        objects[victim][field] = rng.choice(WRONG)
    elif how == "duplicate":
        objects.append(dict(objects[victim]))
    elif how == "cycle":
        other = rng.randrange(len(objects))
        a, b = objects[victim], objects[other]
        a.setdefault("depends_on", []).append(f"{b['database']}.{b['schema']}.{b['name']}")
        b.setdefault("depends_on", []).append(f"{a['database']}.{a['schema']}.{a['name']}")
        a.pop("sql", None), b.pop("sql", None)  # dependencies as declared, not read from the SQL
    elif how == "huge_name":
        objects[victim]["name"] = "n" * rng.choice([256, 5000])
    elif how == "drop_field":
        objects[victim].pop(rng.choice(["database", "schema", "name", "kind"]))
    else:
        objects[victim].setdefault("depends_on", []).append("nowhere.at.all")
        objects[victim].pop("sql", None)
    return how, yaml.safe_dump(document, allow_unicode=True).encode()


def _rules_mutation(rng: random.Random, text: str) -> tuple[str, bytes]:
    how = rng.choice(["truncate", "encoding", "drop_token", "duplicate_line", "swap_relation"])
    data = text.encode()
    if how == "truncate":
        return how, data[:rng.randrange(len(data))]
    if how == "encoding":
        return how, rng.choice([text.encode("utf-16"), data.replace(b"Dirty", b"D\xefrty", 1)])
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if ":-" in line]
    i = rng.choice(rules)
    if how == "drop_token":
        tokens = lines[i].split(" ")
        del tokens[rng.randrange(len(tokens))]
        lines[i] = " ".join(tokens)
    elif how == "duplicate_line":
        lines.insert(i, lines[i])
    else:
        lines[i] = lines[i].replace("DirtyStmt", rng.choice(["Dirtystmt", "ChangedStmt", "Nope", "IsSink"]), 1)
    return how, "\n".join(lines).encode()


def _table_form(folder, rng: random.Random) -> str:
    """The new example as parquet tables, mutated: a file cut short, or a column of the wrong type."""
    document = yaml.safe_load((EXAMPLE / "new.yaml").read_text())
    rows = [{"database": o["database"], "schema": o["schema"], "name": o["name"], "kind": o["kind"],
             "hash": o.get("hash"), "cluster": o.get("cluster")} for o in document["objects"]]
    table = pa.Table.from_pylist(rows)
    how = rng.choice(["truncate", "wrong_type"])
    (folder / "objects").mkdir(parents=True)
    if how == "wrong_type":
        table = table.set_column(table.schema.get_field_index("kind"), "kind",
                                 pa.array(list(range(table.num_rows)), pa.int64()))
    pq.write_table(table, folder / "objects" / "part-0.parquet")
    if how == "truncate":
        data = (folder / "objects" / "part-0.parquet").read_bytes()
        (folder / "objects" / "part-0.parquet").write_bytes(data[:rng.randrange(len(data))])
    return f"table_{how}"


def _cases(tmp_path):
    rng = random.Random(SEED)
    new_text, rules_text = (EXAMPLE / "new.yaml").read_text(), (CONF / "rules" / "dirty.dl").read_text()
    for n in range(MUTATIONS):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        argv = ["run", "--old", str(EXAMPLE / "old.yaml"), "--out", str(folder / "out"), "--run-id", f"m{n}"]
        target = rng.random()
        if target < 0.6:
            how, data = _document_mutation(rng, new_text)
            (folder / "new.yaml").write_bytes(data)
            argv += ["--new", str(folder / "new.yaml")]
        elif target < 0.85:
            how, data = _rules_mutation(rng, rules_text)
            (folder / "rules.dl").write_bytes(data)
            argv += ["--new", str(EXAMPLE / "new.yaml"), "--rules", str(folder / "rules.dl")]
        else:
            how = _table_form(folder / "new", rng)
            argv += ["--new", str(folder / "new")]
        yield n, how, argv, folder / "out"


def _check(code: int, err: str, out, what: str) -> None:
    assert code in (0, 2, 3), (what, code, err[-2000:])
    assert "Traceback" not in err, (what, err[-2000:])
    if code:
        said = [line for line in err.splitlines() if line.startswith("dirtiness:")]
        assert len(said) == 1, (what, err[-2000:])
        assert not (out / "dirty_stmts").exists(), what  # no output table
        if (out / "runs").exists():  # at most the run's own failed or refused row
            from deltalake import DeltaTable

            statuses = {r["status"] for r in DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()}
            assert statuses <= {"failed", "refused", "running"}, (what, statuses)


def test_mutated_inputs_end_in_one_line(tmp_path, capsys, monkeypatch):
    """Pre-Spark: every mutation is refused with one line, or deferred to the Spark test below."""
    def deferred(*args, **kwargs):
        raise NeedsSpark()

    monkeypatch.setattr(session, "build_session", deferred)
    early, kinds = 0, set()
    for n, how, argv, out in _cases(tmp_path):
        try:
            code = main(argv)
        except NeedsSpark:
            continue
        _check(code, capsys.readouterr().err, out, f"mutation {n} ({how})")
        early, kinds = early + 1, kinds | {how}
    print(f"{early} of {MUTATIONS} mutations ended before Spark: {sorted(kinds)}")
    assert early > MUTATIONS // 2  # most are refused before Spark starts
    assert {"truncate", "encoding", "wrong_type", "duplicate", "huge_name"} <= kinds


def test_mutated_inputs_that_pass_the_early_checks_run_to_a_clear_end(spark, tmp_path, capsys, monkeypatch):
    original, deferred = session.build_session, []

    def defer(*args, **kwargs):
        raise NeedsSpark()

    monkeypatch.setattr(session, "build_session", defer)
    for case in _cases(tmp_path):
        try:
            main(case[2])
        except NeedsSpark:
            deferred.append(case)
    capsys.readouterr()
    monkeypatch.setattr(session, "build_session", original)
    assert deferred
    for n, how, argv, out in random.Random(SEED).sample(deferred, min(SPARK_RUNS, len(deferred))):
        code = main(argv)
        _check(code, capsys.readouterr().err, out, f"mutation {n} ({how}) in Spark")
