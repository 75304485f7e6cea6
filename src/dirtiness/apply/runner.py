"""``dirtiness apply``: a succeeded run's plan executed against a database over the Postgres wire protocol.

Phase by phase, step by step. The operations of one step run in parallel on
up to ``parallel`` connections (the plan says they may); a swap step runs in
one transaction where the dialect has transactional DDL. Every operation's
outcome goes to ``apply_log`` before the next step starts, and a failure
stops the apply after its step, naming the operation and the database's
message.

Running apply again resumes: operations that succeeded are skipped, and
none runs twice. Where the dialect has transactional DDL (PostgreSQL), each
operation runs in a transaction whose id is logged (``started``) before it
commits, so an apply killed between the commit and the log is settled by
asking the database what became of that transaction. Elsewhere
(Materialize) such an operation is in doubt: apply stops and asks the user
to say what happened (``--resolve SEQ=succeeded|retry``). An advisory lock
keeps two applies of one run apart where the database has them.

The connection string is never printed or logged: database messages are
scrubbed of it and of its password.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Callable

from ..errors import InputError, PolicyError
from ..sql import secrets
from ..sql.secrets import scrub_dsn
from ..model import DESIRED_OBJECTS, NO_PLAN, facts_table
from ..readback.run_tables import RunTables
from ..config import ReadSettings
from ..wording import counted
from . import record
from .log import ApplyLog, Event

log = logging.getLogger("dirtiness")

PLAN_FIELDS = ["seq", "phase", "phase_order", "step", "action", "object_type", "database", "schema", "name",
               "target_schema", "statement"]
LOCK_WAIT_SECONDS = 30.0       # an apply killed a moment ago may still hold the lock
APPLICATION_NAME = "dirtiness apply"  # how a later apply knows an earlier one's sessions
IN_PROGRESS_WAIT_SECONDS = 60.0  # ... and have a statement running in the database


class ApplyError(RuntimeError):
    """An operation failed, or its outcome is unknown (exit 1): one line naming it."""


@dataclass(frozen=True)
class Operation:
    seq: int
    phase: str
    phase_order: int
    step: int
    action: str
    object_type: str
    database: str | None
    schema: str | None
    name: str | None
    target_schema: str | None
    statement: str | None

    def describe(self) -> str:
        if self.object_type == "cluster":
            what = f"cluster {self.name}"
        elif self.object_type == "schema" and self.action == "SWAP":
            what = f"schema {self.database}.{self.schema} with {self.target_schema}"
        elif self.object_type == "schema":
            what = f"schema {self.database}.{self.target_schema or self.schema}"
        else:
            what = f"{self.object_type} {self.database}.{self.schema}.{self.name}"
        return f"seq {self.seq} ({self.phase} step {self.step}, {self.action} {what})"


@dataclass
class Settings:
    parallel: int = 4  # the command line takes apply.parallel from conf/job.yaml
    dry_run: bool = False
    resolve: dict[int, str] = field(default_factory=dict)  # seq -> succeeded | retry
    order: Callable[[list[Operation]], list[Operation]] | None = None  # the order within a step (tests shuffle)
    databases: tuple[str, ...] = ()  # only the operations on these databases (PostgreSQL: one connection each)


def load_operations(out: str, run_id: str | None, databases=()) -> tuple[RunTables, list[Operation]]:
    tables = RunTables.open(out, run_id)
    if tables.run.get("strategy") == NO_PLAN:
        raise InputError(f"run {tables.run_id} planned no DDL (strategy none): nothing to apply; its selection is "
                         f"built by its tool (dbt build --select \"$(dirtiness select --out {out} --run-id "
                         f"{tables.run_id})\")")
    where = {"database": list(databases)} if databases else {}
    rows = tables.read("ddl_plan", columns=PLAN_FIELDS, **where).to_pylist()
    if databases and not rows:
        raise InputError(f"run {tables.run_id}: no operation on {'database' if len(databases) == 1 else 'databases'} "
                         f"{', '.join(databases)}")
    operations = sorted((Operation(**{k: r.get(k) for k in PLAN_FIELDS}) for r in rows), key=lambda o: o.seq)
    missing = [o for o in operations if not o.statement]
    if missing:
        names = "; ".join(o.describe() for o in missing[:5]) + (" (and more)" if len(missing) > 5 else "")
        raise InputError(f"run {tables.run_id}: {counted(len(missing), 'operation')} without a statement (their "
                         f"objects have no sql in the snapshot), nothing applied: {names}")
    return tables, operations


def dry_run(operations: list[Operation], done: set[int]) -> str:
    lines = []
    for op in operations:
        mark = " (already applied)" if op.seq in done else ""
        lines.append(f"-- {op.describe()}{mark}\n{op.statement.rstrip().rstrip(';')};")
    return "\n".join(lines)


def apply_plan(read: ReadSettings, dsn: str | None, settings: Settings) -> dict:
    """Apply a run's plan; returns a summary. ``ApplyError`` (exit 1) at the first failure."""
    out = read.out
    tables, operations = load_operations(out, read.run_id, settings.databases)
    run_id = tables.run_id
    transactional = _transactional(tables.run, read.transactional)
    journal = ApplyLog(out, run_id, attempt=uuid.uuid4().hex[:12])
    if settings.dry_run:
        done = {s for s, row in journal.states().items() if row["status"] == "succeeded"}
        return {"run_id": run_id, "dry_run": dry_run(operations, done), "operations": len(operations)}
    if not dsn:
        raise InputError("apply needs a database: --dsn URL or the DIRTINESS_DSN environment variable")
    operations = [_with_secret(op) for op in operations]  # every value found before anything runs
    import psycopg

    started, ran = time.perf_counter(), 0
    try:
        with _Database(dsn, transactional, settings.parallel) as database:
            _check_server(tables.run, read.servers, database.server())
            database.lock(run_id)
            database.lock("deploy", "another apply is deploying to this database")  # one run at a time
            try:
                done = _settle(journal, operations, database, settings.resolve)
                mine = record.Deployment(run_id, tables.run.get("old_fingerprint"),
                                         tables.run.get("new_fingerprint"), *record.touched(operations))
                history = database.deployments(read.record_schema)
                if not done:  # an apply that already ran some of the plan passed this check then
                    why = record.refusal(mine, history, database.live_now(read.record_schema))
                    if why:
                        raise PolicyError(why)
                for (_, _, step), group in groupby(operations, key=lambda o: (o.phase_order, o.phase, o.step)):
                    pending = [o for o in group if o.seq not in done]
                    if not pending:
                        continue
                    if settings.order:
                        pending = settings.order(pending)
                    clock = time.perf_counter()
                    if pending[0].phase == "swap" and transactional:
                        database.run_together(pending, journal)
                    else:
                        for start in range(0, len(pending), settings.parallel):
                            database.run_parallel(pending[start:start + settings.parallel], journal)
                    ran += len(pending)
                    log.info("%s step %d: %s in %.2f s", pending[0].phase, step, counted(len(pending), "operation"),
                             time.perf_counter() - clock)
                journal.flush()  # the last operations' outcomes, before the database is read
                state = database.deployed_state(read.record_schema, lambda name: _desired_hashes(tables, name))
                deployment = replace(mine, applied_at=_now(), live_fingerprint=state.fingerprint,
                                     changes=_changes(tables))
                database.record(read.record_schema, deployment, state.rows,
                                first=all(d.run_id != run_id for d in history))
            finally:
                journal.compact()  # still holding the run's lock
    except psycopg.Error as error:  # the connection itself failed: say so without the connection string
        raise ApplyError(f"database error: {scrub_dsn(_first_line(error), dsn)}") from None
    return {"run_id": run_id, "operations": len(operations), "ran": ran, "already_done": len(operations) - ran,
            "seconds": round(time.perf_counter() - started, 3)}


@dataclass(frozen=True)
class DeployedState:
    """The database's catalog right after an apply, with the project's hashes, and its snapshot's fingerprint
    (what a run from the database, ``--old-from-database``, starts from while nothing changes it)."""

    rows: list | None          # None: not read (Materialize)
    fingerprint: str | None

    @classmethod
    def of(cls, catalog, hashes: dict) -> "DeployedState":
        from ..fingerprints import of_document
        from ..inputs.live import recorded_state, snapshot_document
        from ..inputs.snapshot import parse_document

        rows = recorded_state(catalog, hashes)
        return cls(rows, of_document(parse_document(snapshot_document(catalog, rows))))


def _desired_hashes(tables: RunTables, database: str) -> dict[tuple[str, str], str | None]:
    """(schema, name) -> hash of the run's new project in ``database`` (runs before there was the table: none)."""
    if not tables.has(DESIRED_OBJECTS):
        return {}
    return {(r["schema"], r["name"]): r["hash"] for r in tables.rows(DESIRED_OBJECTS, database=database)}


def _changes(tables: RunTables) -> tuple[str, ...]:
    """The changes the run deploys (its seeds; after a selective run, the selected ones only)."""
    table = facts_table("ChangedStmt")
    if not tables.has(table):
        return ()
    return tuple(sorted(f"{r['database']}.{r['schema']}.{r['name']} ({r['change']})" for r in tables.rows(table)))


def _with_secret(op: Operation) -> Operation:
    """The operation as executed: a secret's placeholder replaced by its value (sql/secrets.py), in memory
    only; what was planned, logged and journaled keeps the placeholder."""
    revealed = secrets.reveal(op.statement, op.database or "", op.schema or "", op.name or "")
    return op if revealed == op.statement else replace(op, statement=revealed)


def _transactional(run: dict, dialects: dict[str, bool]) -> bool:
    """Whether the run's dialect has transactional DDL (runs before dialects were recorded: Materialize)."""
    name = run.get("dialect") or "materialize"
    if name not in dialects:
        raise InputError(f"run {run['run_id']} was planned for dialect {name!r}, which the configuration does not "
                         f"define (plan.dialects)")
    return dialects[name]


SERVERS = {"materialize": "Materialize", "postgres": "PostgreSQL"}


def _check_server(run: dict, servers: dict[str, str], server: tuple[str, str]) -> None:
    """A plan runs only on the kind of server its dialect wrote it for (nothing run otherwise)."""
    dialect = run.get("dialect") or "materialize"
    wanted = servers.get(dialect, dialect)
    kind, version = server
    if wanted in SERVERS and wanted != kind:
        raise InputError(f"run {run['run_id']} was planned for the {dialect} dialect ({SERVERS[wanted]}), but the "
                         f"database apply connects to is {version}: nothing applied; plan again for this server "
                         f"(plan.dialect: {kind} in the --config of the run)")


def _settle(journal: ApplyLog, operations: list[Operation], database: "_Database", resolve: dict[int, str]) -> set[int]:
    """Seqs already done; operations an earlier apply left ``started`` are settled first."""
    by_seq = {o.seq: o for o in operations}
    unknown = sorted(set(resolve) - set(by_seq))
    if unknown:
        raise InputError(f"--resolve: no operation with seq {', '.join(map(str, unknown))} in this run")
    done, settled = set(), []
    now = _now()
    for seq, state in sorted(journal.states().items()):
        op = by_seq.get(seq)
        if op is None:
            continue
        if state["status"] == "succeeded":
            done.add(seq)
        elif state["status"] == "started":
            outcome, why = (resolve[seq], None) if seq in resolve else database.outcome(state.get("transaction"))
            if outcome is None:
                raise ApplyError(f"operation {op.describe()} was started by an earlier apply that did not see it "
                                 f"finish, and the database cannot say whether it took effect ({why}): check, then "
                                 f"run apply again with --resolve {seq}=succeeded or --resolve {seq}=retry")
            if outcome == "succeeded":
                done.add(seq)
                settled.append(Event(seq, "succeeded", state["started_at"], now, _settled_message(resolve, seq),
                                     op.phase, op.step, state.get("transaction")))
            else:
                settled.append(Event(seq, "rolled back", state["started_at"], now,
                                     why or "did not take effect in an earlier apply", op.phase, op.step,
                                     state.get("transaction")))
    journal.write(settled)
    return done


def _settled_message(resolve: dict[int, str], seq: int) -> str:
    return "marked succeeded by --resolve" if seq in resolve else "committed by an earlier apply that was cut off"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _first_line(text: str) -> str:
    return " ".join(str(text).split("\n")[0].split())


class _Database:
    """Connections to the target database: one to coordinate, up to ``parallel`` to run operations on."""

    def __init__(self, dsn: str, transactional: bool, parallel: int) -> None:
        import psycopg

        self.psycopg, self.dsn, self.transactional = psycopg, dsn, transactional
        try:
            self.control = psycopg.connect(dsn, autocommit=True, application_name=APPLICATION_NAME)
            self.workers = [psycopg.connect(dsn, autocommit=not transactional, application_name=APPLICATION_NAME)
                            for _ in range(max(1, parallel))]
        except psycopg.Error as error:
            raise ApplyError(f"cannot connect to the database: {self.scrub(_first_line(error))}") from None
        self.pool = ThreadPoolExecutor(max_workers=len(self.workers))

    def __enter__(self) -> "_Database":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)
        for connection in [self.control, *self.workers]:
            connection.close()

    def scrub(self, text: str) -> str:
        return scrub_dsn(text, self.dsn)

    def server(self) -> tuple[str, str]:
        """``(kind, version)``: ``materialize`` or ``postgres``, as ``SERVERS`` names them, and the version the
        server gives (Materialize answers ``version()`` as PostgreSQL 9.5 does, naming itself)."""
        try:
            version = self.control.execute("SELECT version()").fetchone()[0]
        except self.psycopg.Error as error:
            raise ApplyError(f"cannot ask the database its version: {self.scrub(_first_line(error))}") from None
        kind = "materialize" if "materialize" in version.lower() else "postgres"
        short = version.split(" on ")[0] if kind == "postgres" else version
        return kind, short

    def lock(self, name: str, held: str | None = None) -> None:
        """An advisory lock for the session (PostgreSQL; Materialize has none): one apply per run at a time
        (``name``: the run id), and one deploy per database (``deploy``)."""
        if not self.transactional:
            return
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            row = self.control.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"dirtiness apply {name}",))
            if row.fetchone()[0]:
                return
            if time.monotonic() > deadline:
                raise ApplyError(held or f"another apply of run {name} holds its lock on this database")
            time.sleep(0.2)

    def deployments(self, schema: str) -> list[record.Deployment]:
        """The database's deploy record, oldest first (created empty the first time)."""
        try:
            for statement in record.create_statements(schema, state_too=self.transactional):
                self.control.execute(statement)
            return [record.from_row(r) for r in self.control.execute(record.select_statement(schema)).fetchall()]
        except self.psycopg.Error as error:
            raise ApplyError(f"cannot read the deploy record {schema}.{record.TABLE}: "
                             f"{self.scrub(_first_line(error))}") from None

    def deployed_state(self, schema: str, hashes: Callable[[str], dict]) -> "DeployedState":
        """What the database holds now, each object with the project's hash (``hashes(database)``): the state
        this apply records."""
        from ..inputs.live import read_catalog

        if not self.transactional:  # Materialize: its catalog reader is untested, its transactions cannot
            return DeployedState(None, None)  # replace the state in one step; the runs alone are recorded
        catalog = read_catalog(self.control, skip_schemas=(schema,))
        return DeployedState.of(catalog, hashes(catalog.database))

    def live_now(self, schema: str) -> "record.LiveNow | None":
        """The database as it is before the plan runs: its snapshot's fingerprint (hashes through the recorded
        state) and its drift from that state. None for Materialize (no state recorded there)."""
        from ..fingerprints import of_document
        from ..inputs.live import drift, read_catalog, snapshot_document
        from ..inputs.snapshot import parse_document

        if not self.transactional:
            return None
        catalog = read_catalog(self.control, skip_schemas=(schema,))
        state = [record.state_from_row(r) for r in self.control.execute(record.state_select(schema)).fetchall()]
        if not state:
            return None  # nothing recorded yet: no state to compare with
        return record.LiveNow(of_document(parse_document(snapshot_document(catalog, state))),
                              tuple(drift(catalog, state)))

    def record(self, schema: str, deployment: record.Deployment, state: list | None, first: bool) -> None:
        """The run (when not recorded before) and the state it left, in one transaction."""
        delete, insert = record.state_replace(schema)
        try:
            with self.control.transaction():
                if first:
                    self.control.execute(record.insert_statement(schema), record.to_row(deployment))
                if state is not None:
                    self.control.execute(delete)
                    with self.control.cursor() as cursor:
                        cursor.executemany(insert, [record.state_to_row(deployment.run_id, r) for r in state])
        except self.psycopg.Error as error:
            raise ApplyError(f"the plan was applied, but writing it to the deploy record {schema}.{record.TABLE} "
                             f"failed: {self.scrub(_first_line(error))}") from None

    def outcome(self, transaction: str | None) -> tuple[str | None, str | None]:
        """What became of an earlier apply's transaction: (succeeded | retry | None, why). None: the database
        cannot tell. A transaction still in progress belongs to a dead apply (this one holds the run's lock,
        so no live apply of the run has one): its session is ended, and the database then says."""
        if not self.transactional:
            return None, ("its DDL runs outside transactions, as Materialize's does: the database keeps no "
                          "record of a statement's outcome")
        if not transaction:
            return None, "the earlier apply recorded no transaction for it"
        deadline, ended = time.monotonic() + IN_PROGRESS_WAIT_SECONDS, 0
        while True:
            status = self.control.execute("SELECT pg_xact_status(%s::xid8)", (transaction,)).fetchone()[0]
            if status == "committed":
                return "succeeded", None
            if status == "aborted":
                return "retry", ("ended with the session of an earlier apply that was cut off" if ended
                                 else None)
            if status is None:
                return None, f"transaction {transaction} is unknown to the database"
            if time.monotonic() > deadline:
                return None, f"transaction {transaction} is still running in a session this apply could not end"
            ended += self._end_session_of(transaction)
            time.sleep(0.05)  # the ended session's transaction is rolled back as it exits

    def _end_session_of(self, transaction: str) -> int:
        """Terminate the session of an apply (by its application name) running ``transaction`` (an xid8; the
        session shows it as a 32-bit xid): how many were ended."""
        row = self.control.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            "AND application_name = %s AND backend_xid::text = (%s::xid8::text::numeric %% 4294967296)::text",
            (APPLICATION_NAME, transaction)).fetchone()
        return int(row[0])

    def run_parallel(self, batch: list[Operation], journal: ApplyLog) -> None:
        """Each operation on its own connection (and transaction); outcomes logged; the first failure raised."""
        connections = self.workers[:len(batch)]
        transactions = [self._begin(c) for c in connections]
        started_at = _now()
        journal.write([Event(o.seq, "started", started_at, phase=o.phase, step=o.step, transaction=t)
                       for o, t in zip(batch, transactions)])
        results = list(self.pool.map(self._run_one, connections, batch))
        journal.finished([Event(o.seq, "succeeded" if error is None else "failed", started_at, finished_at,
                                error, o.phase, o.step, t)
                          for o, t, (error, finished_at) in zip(batch, transactions, results)])
        failed = [(o, error) for o, (error, _) in zip(batch, results) if error is not None]
        if failed:
            journal.flush()
            op, error = failed[0]
            raise ApplyError(f"operation {op.describe()} failed: {error}")

    def run_together(self, step: list[Operation], journal: ApplyLog) -> None:
        """A whole step in one transaction: all of it takes effect, or none."""
        connection = self.workers[0]
        transaction = self._begin(connection)
        started_at = _now()
        journal.write([Event(o.seq, "started", started_at, phase=o.phase, step=o.step, transaction=transaction)
                       for o in step])
        failure = None
        for op in step:
            try:
                connection.execute(op.statement)
            except self.psycopg.Error as error:
                failure = (op, self.scrub(_first_line(error)))
                break
        if failure is None:
            try:
                connection.commit()
            except self.psycopg.Error as error:
                failure = (step[-1], self.scrub(_first_line(error)))
        if failure is not None:
            connection.rollback()
            failed, message = failure
            finished = _now()
            journal.write([Event(o.seq, "failed" if o is failed else "rolled back", started_at, finished,
                                 message if o is failed else f"rolled back with seq {failed.seq}", o.phase, o.step,
                                 transaction) for o in step])
            raise ApplyError(f"operation {failed.describe()} failed: {message}")
        finished = _now()
        journal.finished([Event(o.seq, "succeeded", started_at, finished, None, o.phase, o.step, transaction)
                          for o in step])

    def _begin(self, connection) -> str | None:
        if not self.transactional:
            return None
        return connection.execute("SELECT pg_current_xact_id()::text").fetchone()[0]

    def _run_one(self, connection, op: Operation) -> tuple[str | None, dt.datetime]:
        try:
            connection.execute(op.statement)
            if self.transactional:
                connection.commit()
            return None, _now()
        except self.psycopg.Error as error:
            if self.transactional:
                connection.rollback()
            return self.scrub(_first_line(error)), _now()
