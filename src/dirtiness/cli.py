"""The ``dirtiness`` command line. Exit codes: 0 success, 1 internal failure,
2 bad input or usage, 3 plan refused by policy."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
import logging
import os
import sys
import traceback
from typing import NoReturn

from .apply.runner import ApplyError

from .datalog.syntax import ProgramError
from .errors import InputError, InputProblems, PolicyError, PublishError, RunError
from .inputs.formats import FORMATS
from .config import ReadSettings, load_config, read_settings
from .model import STRATEGIES
from .wording import counted

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_POLICY = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: one line, exit 2
        raise InputError(f"usage: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dirtiness", description="Dirty objects, clusters and schemas of a SQL project redeploy.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="compute the dirty sets of a change and write them as Delta tables")
    add_run_arguments(run)
    changed = commands.add_parser("changed", help="whether `run --if-changed` would compute, decided without Spark "
                                                  "(one JSON line)")
    add_input_arguments(changed)
    explain = commands.add_parser("explain", help="why an object, cluster or schema is dirty (or not) in a run")
    explain.add_argument("object", nargs="?", metavar="DB.SCHEMA.NAME", help="the object to explain")
    explain.add_argument("--cluster", metavar="CLUSTER", help="explain a cluster instead")
    explain.add_argument("--schema", metavar="DB.SCHEMA", help="explain a schema instead")
    explain.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json for tools")
    add_read_arguments(explain)
    report = commands.add_parser("report", help="write one self-contained HTML page about a run")
    report.add_argument("--html", required=True, metavar="FILE", help="the page to write")
    add_read_arguments(report)
    apply = commands.add_parser("apply", help="execute a succeeded run's plan against a database (Postgres protocol)")
    apply.add_argument("--dsn", help="libpq connection string or URL (default: $DIRTINESS_DSN; never printed)")
    apply.add_argument("--parallel", type=int, metavar="N",
                       help="operations of one step run on up to N connections (default: apply.parallel)")
    apply.add_argument("--dry-run", action="store_true", help="print the statements in order, run nothing")
    apply.add_argument("--resolve", action="append", default=[], metavar="SEQ=succeeded|retry",
                       help="settle an operation an earlier apply left in doubt (repeatable)")
    apply.add_argument("--database", action="append", default=[], metavar="NAME",
                       help="only the operations on this database (repeatable; PostgreSQL connects to one)")
    add_read_arguments(apply)
    snapshot = commands.add_parser("snapshot", help="write the snapshot the job reads from a tool's artefact (YAML)")
    snapshot.add_argument("path", nargs="?",
                          help="a dbt manifest.json, an mz-deploy project folder, a Moose infrastructure map")
    snapshot.add_argument("--from-database", nargs="?", const="", metavar="DSN",
                          help="read the deployed project from a PostgreSQL database instead (default DSN: "
                               "$DIRTINESS_DSN; never printed); its drift from the deploy record is a warning")
    snapshot.add_argument("--format", choices=FORMATS, default="auto", help="the artefact's format (default: detected)")
    snapshot.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    snapshot.add_argument("--config", help="YAML overlay of conf/job.yaml (its dialect's system schemas, "
                                           "external_databases)")
    snapshot.add_argument("--debug", action="store_true", help="show tracebacks")
    select = commands.add_parser("select", help="a run's dirty objects as a dbt selector, in plan order")
    select.add_argument("objects", nargs="*", metavar="NAME",
                        help="only these objects, if they are selected (any unambiguous suffix of a name)")
    select.add_argument("--format", choices=("names", "json"), default="names",
                        help="names (default: what dbt build --select takes) or json (a line per node, as "
                             "dbt ls --select state:modified+ --output json prints it)")
    add_read_arguments(select)
    return parser


def add_read_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--out", required=True, help="output root of `dirtiness run`")
    command.add_argument("--run-id", help="the run (default: the latest succeeded one)")
    command.add_argument("--config", help="YAML overlaid on conf/job.yaml")
    command.add_argument("--debug", action="store_true", help="show tracebacks")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    add_input_arguments(run)
    run.add_argument("--full", action="store_true",
                     help="start from nothing earlier runs under --out left: compute everything, parse and render every statement again")
    run.add_argument("--if-changed", action="store_true",
                     help="skip the run when the latest succeeded run had the same input fingerprints")
    run.add_argument("--report", metavar="FILE", help="also write the run's HTML report (as `dirtiness report`)")
    run.add_argument("--remote", metavar="sc://HOST:PORT",
                     help="run through a Spark Connect server (default: $SPARK_REMOTE, as PySpark reads it)")


def add_input_arguments(run: argparse.ArgumentParser) -> None:
    """What a run's fingerprints are made of, and where it writes: shared by ``run`` and ``changed``."""
    run.add_argument("--old", help="deployed project: a snapshot (YAML/JSON document or folder of "
                                    "tables), a dbt manifest, an mz-deploy folder or a Moose map")
    run.add_argument("--old-from-database", nargs="?", const="", metavar="DSN",
                     help="read the deployed project from the database instead (PostgreSQL; default DSN: "
                          "$DIRTINESS_DSN; never printed), and report its drift from the deploy record")
    run.add_argument("--new", required=True, help="desired project, in any of the same forms")
    run.add_argument("--old-format", choices=FORMATS, default="auto", help="the form of --old (default: detected)")
    run.add_argument("--new-format", choices=FORMATS, default="auto", help="the form of --new (default: detected)")
    run.add_argument("--out", required=True, help="output root of the Delta tables")
    run.add_argument("--forced-schema", "--redeploy-schema", dest="forced_schema", action="append", default=[],
                     metavar="DB.SCHEMA", help="redeploy this schema anyway (repeatable)")
    run.add_argument("--deploy-id", metavar="ID", help="name staged schemas and clusters <name>_<ID> (mz-deploy's "
                                                    "deploy id; default: plan.deploy_suffix from the run id)")
    run.add_argument("--redeploy-all", action="store_true",
                     help="redeploy every schema of the new project (mz-deploy's stage --redeploy-all)")
    run.add_argument("--only", action="append", default=[], metavar="SEL",
                     help="deploy only the changes of this object (DB.SCHEMA.NAME), schema (DB.SCHEMA) or cluster "
                          "(NAME), and what must move with them (repeatable)")
    run.add_argument("--exclude", action="append", default=[], metavar="SEL",
                     help="leave the changes of this object, schema or cluster as deployed (repeatable)")
    run.add_argument("--run-id", help="id tagging every output row (default: UTC time + random suffix)")
    run.add_argument("--rules", help="rule program: a .dl file, or a bundled one by name (dirty, index_aware, "
                                     "mz_deploy, dbt_state_modified); default from the configuration")
    run.add_argument("--config", help="YAML overlaid on conf/job.yaml")
    run.add_argument("--strategy", choices=STRATEGIES,
                     help="plan strategy: blue-green, in-place, or none (no DDL plan: a dbt manifest's default); "
                          "default from the configuration")
    run.add_argument("--allow-destructive", action="store_true",
                     help="allow a plan that drops stateful objects (tables, sources)")
    run.add_argument("--summary-json", metavar="FILE", help="also write the run summary as JSON (`changed`: the "
                                                            "skipped run's, when nothing changed)")
    run.add_argument("--debug", action="store_true", help="show tracebacks")


def main(argv: list[str] | None = None, set_master: bool = True) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _log_to_stderr()
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            return _run(args, set_master)
        if args.command == "changed":
            return _changed(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "report":
            return _report(_read_settings(args), args.html)
        if args.command == "apply":
            return _apply(args)
        if args.command == "snapshot":
            return _snapshot(args)
        if args.command == "select":
            return _select(args)
        raise InputError(f"usage: unknown command {args.command}")
    except (InputError, ProgramError) as error:
        _fail(error, debug)
        return EXIT_INPUT
    except PolicyError as error:
        _fail(error, debug)
        return EXIT_POLICY
    except (ApplyError, PublishError, RunError) as error:
        _fail(error, debug)
        return EXIT_FAILURE
    except BrokenPipeError:  # a reader that stopped early (| head): what it read was complete lines
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error as Python flushes
        return EXIT_OK
    except Exception as error:  # noqa: BLE001 - the last line of defence: one line, exit 1
        _fail(error, debug, prefix=f"internal error ({type(error).__name__}): ")
        return EXIT_FAILURE


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a line is logged, not when the handler was made.

    A host that swaps stderr (Airflow's task log, a notebook, pytest) gets
    every line, and a closed stream from an earlier swap is never written to.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _log_to_stderr() -> None:
    """Progress lines on stderr, whatever logging the host (spark-submit, Airflow) set up."""
    logger = logging.getLogger("dirtiness")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s dirtiness %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _fail(error: Exception, debug: bool, prefix: str = "") -> None:
    if debug:
        traceback.print_exc()
    for line in error.lines if isinstance(error, InputProblems) else [str(error)]:
        message = " ".join(line.split()) or type(error).__name__
        print(f"dirtiness: {prefix}{message}", file=sys.stderr)


def _run(args, set_master: bool) -> int:
    from .publish import unchanged_in, unchanged_since
    from .session import command_session
    from .store.delta import DeltaStore, choose_backend
    from .store.output_root import check_writable

    config, settings, fingerprints = _run_settings(args)
    check_writable(settings.out)  # before any work, not after it
    _warn_drift(settings.drift)
    read = read_settings(args.out, None, config)  # a bad report setting fails before Spark starts
    latest = unchanged_since(settings.out, fingerprints) if args.if_changed else None
    if latest is None:
        remote = args.remote or os.environ.get("SPARK_REMOTE")
        with command_session(config, set_master=set_master, remote=remote) as spark:
            if args.if_changed:  # what delta-rs could not read, the session's store may
                latest = unchanged_in(DeltaStore(spark, settings.out, choose_backend(spark, settings.delta_backend)),
                                      fingerprints)
            if not latest:
                summary = _computed(spark, settings, read, args.report)
    if latest:
        summary = _skipped(settings, latest)
        if args.report:  # the page of the run that still stands
            _report(replace(read, run_id=latest["run_id"]), args.report)
    _write_summary(args.summary_json, summary)
    return EXIT_OK


def _computed(spark, settings, read: ReadSettings, report: str | None) -> dict:
    """The run, its summary printed and its page written (a page saying why, if it failed)."""
    from .pipeline import run
    from .publish import format_summary

    try:
        summary = run(spark, settings)
    except Exception:
        if report:  # a page saying why the run failed, for the CI artifact; never hides the error
            _report_failure(replace(read, run_id=settings.run_id), report)
        raise
    print(format_summary(summary))
    if report:
        _report(replace(read, run_id=settings.run_id), report)
    return summary


def _warn_drift(rows) -> None:
    """One warning line when the database read as the deployed project differs from its deploy record."""
    if rows:
        from .inputs.live import drift_line

        logging.getLogger("dirtiness").warning("warning: %s (the run plans from what the database holds)",
                                               drift_line(list(rows)))


def _changed(args) -> int:
    """What ``run --if-changed`` would decide, without a JVM: a scheduler asks before it spark-submits.

    "changed" also where delta-rs cannot tell (no runs table yet, a table it
    cannot read): the run's own --if-changed then decides through its session.
    """
    from .publish import unchanged_since

    _config, settings, fingerprints = _run_settings(args)
    latest = unchanged_since(settings.out, fingerprints)
    if latest:
        _write_summary(args.summary_json, _skipped(settings, latest, to=sys.stderr))  # stdout: the JSON line
    print(json.dumps({"run_id": settings.run_id, "changed": latest is None,
                      "same_as": latest["run_id"] if latest else None}))
    return EXIT_OK


def _run_settings(args):
    from .settings import FINGERPRINTS, RunParams, resolve

    config = load_config(args.config)
    settings = resolve(RunParams(old=args.old, new=args.new, old_format=args.old_format, new_format=args.new_format,
                                 out=args.out, forced_schemas=args.forced_schema, redeploy_all=args.redeploy_all,
                                 deploy_id=args.deploy_id, only=args.only, exclude=args.exclude,
                                 old_from_database=args.old_from_database,
                                 run_id=args.run_id, rules=args.rules, strategy=args.strategy,
                                 allow_destructive=args.allow_destructive, full=getattr(args, "full", False)),
                       config)
    return config, settings, {k: settings.fingerprints[k] for k in FINGERPRINTS}


def _skipped(settings, latest: dict, to=None) -> dict:
    print(f"run {settings.run_id}: skipped: inputs, rules and configuration are unchanged since "
          f"run {latest['run_id']}", file=to or sys.stdout)
    return {"run_id": settings.run_id, "status": "skipped", "same_as": latest["run_id"],
            "fingerprints": settings.fingerprints}


def _write_summary(path: str | None, summary: dict) -> None:
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=2, sort_keys=True)


def _snapshot(args) -> int:
    import yaml

    config = load_config(args.config)
    if (args.path is None) == (args.from_database is None):
        raise InputError("snapshot: give a tool's artefact (PATH) or --from-database, one of them")
    if args.from_database is not None:
        from .inputs.from_database import dsn_from, read_database

        live = read_database(dsn_from(args.from_database, "--from-database"), config["apply"]["record_schema"])
        document = live.document
        live.parsed()  # what the job would refuse is refused here too
        _warn_drift(live.drift)
    else:
        document = _converted(args, config)
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)
    if not args.out:
        sys.stdout.write(text)
        return EXIT_OK
    folder = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(folder, exist_ok=True)
    partial = os.path.join(folder, f".{os.path.basename(args.out)}.partial")
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, args.out)  # never a half-written snapshot under the name asked for
    print(f"{args.out}: {len(document['objects'])} objects", file=sys.stderr)
    return EXIT_OK


def _converted(args, config: dict) -> dict:
    """A tool's artefact as the snapshot document the job reads."""
    from .inputs.formats import to_document
    from .inputs.snapshot import parse_document
    from .plan.dialect import Dialect

    if not os.path.exists(args.path):
        raise InputError(f"{args.path}: no such file or folder")
    dialect = Dialect.from_config(config)
    document = to_document(args.path, args.format, system_schemas=dialect.system_schemas,
                           external_databases=tuple(config["external_databases"] or ()))
    if document is None:
        raise InputError(f"{args.path}: already a snapshot in this job's own form: the job reads it as it is")
    document.pop("unit_tests", None)  # not part of a snapshot: counted by a run
    document.pop("clusters", None)  # read by a run for its plan's cluster statements
    parse_document(document, args.path)  # what the job would refuse is refused here too
    return document


def _select(args) -> int:
    from .readback.explain import subject
    from .readback.run_tables import RunTables
    from .readback.select import ls_json, node_name, selected_nodes

    read = _read_settings(args)
    tables = RunTables.open(read.out, read.run_id)
    nodes = selected_nodes(tables, read.outputs.get("DirtyStmt", "dirty_stmts"))
    if args.objects:  # only the objects named, each of the run (or refused with the closest names)
        wanted = [subject(tables, "object", text) for text in args.objects]
        chosen = {key for key, _ in nodes}
        for key in wanted:
            if key not in chosen:
                print(f"dirtiness: {'.'.join(key)} is not selected in run {tables.run_id} (dirtiness explain "
                      f"{'.'.join(key)} says why)", file=sys.stderr)
        nodes = [(key, unique_id) for key, unique_id in nodes if key in set(wanted)]
    if not nodes and not args.objects:  # an empty --select would make dbt build everything: say so
        print("dirtiness: nothing is dirty: no dbt node to select", file=sys.stderr)
    elif args.format == "json":
        for key, unique_id in nodes:
            print(json.dumps(ls_json(key, unique_id)))
    else:
        print(" ".join(node_name(unique_id) for _, unique_id in nodes))
    return EXIT_OK


def _explain(args) -> int:
    from .readback.explain import explain, format_text
    from .typed_names import parts_of
    from .readback.run_tables import RunTables

    targets = [(k, v) for k, v in (("object", args.object), ("cluster", args.cluster), ("schema", args.schema)) if v]
    if len(targets) != 1:
        raise InputError("usage: explain needs exactly one of DB.SCHEMA.NAME, --cluster C, --schema DB.SCHEMA")
    kind, text = targets[0]
    read = _read_settings(args)
    tables = RunTables.open(read.out, read.run_id)
    explanation = explain(tables, kind, parts_of(text), read.outputs)
    if args.format == "json":
        print(json.dumps(explanation.to_json(), indent=2, default=str))
    else:
        print(format_text(explanation))
    return EXIT_OK


def _apply(args) -> int:
    from .apply.runner import Settings, apply_plan

    read = _read_settings(args, parallel=args.parallel)
    resolve = {}
    for text in args.resolve:
        seq, _, outcome = text.partition("=")
        if not seq.strip().isdigit() or outcome not in ("succeeded", "retry"):
            raise InputError(f"--resolve {text!r}: expected SEQ=succeeded or SEQ=retry")
        resolve[int(seq)] = outcome
    settings = Settings(parallel=read.parallel, dry_run=args.dry_run, resolve=resolve, databases=tuple(args.database))
    dsn = args.dsn or os.environ.get("DIRTINESS_DSN")
    summary = apply_plan(read, dsn, settings)
    if args.dry_run:
        print(summary["dry_run"])
    else:
        print(f"applied run {summary['run_id']}: {counted(summary['ran'], 'operation')} run, "
              f"{summary['already_done']} already done, in {summary['seconds']:.1f} s")
    return EXIT_OK


def _read_settings(args, parallel: int | None = None) -> ReadSettings:
    return read_settings(args.out, args.run_id, load_config(args.config), parallel)


def _report(read: ReadSettings, html: str) -> int:
    from .readback.report.page import write_report
    from .readback.run_tables import RunTables

    tables = RunTables.open(read.out, read.run_id, succeeded_only=False)
    write_report(tables, html, read.report)
    print(f"report of run {tables.run_id} ({tables.run['status']}): {html}")
    return EXIT_OK


def _report_failure(read: ReadSettings, html: str) -> None:
    try:
        _report(read, html)
    except Exception as error:  # noqa: BLE001 - the run's own error is what the caller must see
        logging.getLogger("dirtiness").warning("could not write the report of the failed run: %s", error)


def entry(argv: list[str] | None = None, set_master: bool = True) -> NoReturn:
    """A process (``dirtiness``, the spark-submit job): exit with ``main``'s code, not a crash at shutdown.

    Arrow's C++ thread pools can abort an exiting interpreter after the work is
    done ("terminate called without an active exception", SIGABRT), which a
    scheduler would read as a failed task. By now every table is committed and
    every line printed, so the process flushes and leaves at once.
    """
    code = main(argv, set_master)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
