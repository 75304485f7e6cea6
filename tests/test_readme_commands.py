"""Every command the README's tour shows runs as written, in order, against the real parts.

The tour's `dirtiness` paths are kept but moved under this test's folder
(``out/example`` is the suite's run of the bundled example); `make postgres`
and `make postgres-stop` run as written, from the checkout, so the tour's
connection string is the one the README exports. ``make run`` and ``make
test``, the two commands at the top, are what CI and a fresh clone run.
"""

import re
import shlex
import subprocess

import psycopg
import pytest
import yaml
from cli_output import error_lines

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT

PREFIX = ".venv/bin/dirtiness "
MAKE = "make postgres"


def readme_commands() -> list[str]:
    """The README's commands, in order: each ``.venv/bin/dirtiness`` line (with its continuation lines, and
    with or without a ``$`` prompt), each ``export`` and each ``make postgres`` (or ``postgres-stop``)."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", readme, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith((PREFIX, "export ", MAKE)):
                commands.append(line.split("  #")[0].strip())
    return commands


def test_the_readme_shows_the_tour_commands():
    commands = readme_commands()
    verbs = [c.removeprefix(PREFIX).split()[0] if c.startswith(PREFIX) else c.split()[0 if c.startswith("export")
                                                                                      else 1]
             for c in commands]
    assert verbs == ["explain", "report", "postgres", "export", "run", "apply", "run", "apply", "apply", "snapshot",
                     "run", "postgres-stop", "run"]


def make(target: str) -> None:
    done = subprocess.run(["make", "-s", target], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.processes
def test_every_readme_command_runs_as_written(example_run, tmp_path, monkeypatch, capsys):
    paths = {"out/example": str(example_run.out), "out/postgres/": str(tmp_path / "postgres") + "/",
             "out/selective": str(tmp_path / "selective"), "examples/": str(PROJECT_ROOT / "examples") + "/"}
    said, dsn = {}, None
    make("postgres-stop")  # a server a test run left behind, with its data, is no tour's
    try:
        for command in readme_commands():
            if command.startswith(MAKE):
                make(command.split()[1])
                continue
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                dsn = value.strip('"').replace("$PWD", str(PROJECT_ROOT))
                monkeypatch.setenv(name, dsn)
                continue
            argv = shlex.split(command.removeprefix(PREFIX))
            for at, arg in enumerate(argv):
                for written, here in paths.items():
                    if arg == written.rstrip("/") or arg.startswith(written):
                        argv[at] = here.rstrip("/") if arg == written.rstrip("/") else here + arg[len(written):]
            if argv[0] == "report":  # the page goes beside this test, not into the shared run's folder
                argv[argv.index("--html") + 1] = str(tmp_path / "report.html")
            assert main(argv) == 0, command
            printed = capsys.readouterr()
            said[" ".join(argv[:1] + [a for a in argv if a.startswith(("first", "change", "again", "reporting"))])] = \
                printed.out
            assert dsn is None or dsn not in printed.out + printed.err
            if argv[0] == "explain":
                assert printed.out.startswith("object materialize.public.flippers is dirty in run example")
    finally:
        make("postgres-stop")
    assert dsn == f"host={PROJECT_ROOT}/out/postgres-server dbname=flipper user=postgres"
    assert not (PROJECT_ROOT / "out" / "postgres-server").exists()  # stopped, and its folder gone
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert "applied run change: 14 operations run, 0 already done" in said["apply change"]
    assert "plan (blue-green): 0 operations" in said["run again"]  # the database is the new project
    assert "drift: 0 differences" in said["run again"]
    assert yaml.safe_load((tmp_path / "postgres" / "deployed.yaml").read_text())["objects"]
    assert "selection (--only materialize.reporting): 1 of 3 changes deployed" in said["run reporting-only"]


def test_a_plan_for_another_server_is_refused_before_anything_runs(postgres, example_run, capsys):
    """The bundled example's plan is Materialize's: applied to PostgreSQL, it names both and runs nothing."""
    dsn = postgres.fresh_database("not_materialize")
    assert main(["apply", "--out", str(example_run.out), "--dsn", dsn]) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith(
        "dirtiness: run example was planned for the materialize dialect (Materialize), but the database apply "
        "connects to is PostgreSQL 1"), err
    assert "nothing applied" in err[0] and dsn not in err[0]
    with psycopg.connect(dsn) as connection:  # not even apply's own deploy record
        assert connection.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'dirtiness'").fetchone() == (0,)
    assert not (example_run.out / "apply_log").exists()

