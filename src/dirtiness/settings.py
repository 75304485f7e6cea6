"""Every command's settings, resolved and validated once from the flags and the configuration.

``resolve`` gives a run's (``RunSettings``); the commands that read a run
back (explain, report, select, apply) take theirs from ``config.read_settings``
(no Spark there). Everything is read before a SparkSession exists, so bad
usage fails fast with exit 2;
the defaults live in ``conf/job.yaml`` only (read strictly here: a key the
file no longer has is a bug, not a default).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import uuid
from dataclasses import dataclass, field

from . import fingerprints as fingerprints_of
from .changeset.rules import load_plan_rules, load_rules
from .datalog.check import CheckedProgram
from .datalog.holding import STORAGE, Holding
from .errors import InputError, summarize
from .inputs.formats import FORMATS, detect
from .apply.record import STATE
from .inputs.from_database import dsn_from, read_database
from .inputs.references import SqlSettings, analyse
from .inputs.selection import Selection, select
from .inputs.snapshot import Document, check_table_form, is_document, read_document
from .model import NO_PLAN, STRATEGIES
from .plan.deletions import refuse_deleted_stateful
from .plan.dialect import Dialect
from .session import spark_settings
from .wording import counted


TOOLS = {"mz-deploy": "mz_deploy", "dbt": "dbt"}  # an input form -> its section of the configuration
# Settings that change what a run costs, where it keeps its blocks, how it writes, applies and reports, never the
# rows it computes: left out of the configuration's fingerprint, so that tuning them keeps the run a run starts
# from.
COST_ONLY = ("spark", "local_rows", "lazy_checkpoints", "checkpoint_storage", "delta_backend", "apply", "report")
COST_ONLY_SQL = ("reuse_from_objects",)  # reusing an earlier run's analysis never changes an answer


def result_settings(config: dict) -> dict:
    """The configuration less what changes only a run's cost (``COST_ONLY``): what its fingerprint covers."""
    settings = {k: v for k, v in config.items() if k not in COST_ONLY and k != "rules"}  # rules: fingerprinted apart
    if isinstance(settings.get("sql"), dict):
        settings["sql"] = {k: v for k, v in settings["sql"].items() if k not in COST_ONLY_SQL}
    return settings


FINGERPRINTS = ("old_fingerprint", "new_fingerprint", "rules_fingerprint", "config_fingerprint")
REQUIRED_OUTPUTS = ("dirty_stmts", "dirty_clusters", "dirty_schemas")  # the plan reads them


@dataclass
class RunParams:
    """What the user asked for on the command line (flags override the configuration)."""

    old: str | None  # None: --old-from-database
    new: str
    out: str
    forced_schemas: list[str] = field(default_factory=list)
    redeploy_all: bool = False  # every schema of the new project forced
    deploy_id: str | None = None  # staged names are <name>_<deploy_id> (mz-deploy's); else plan.deploy_suffix
    run_id: str | None = None
    rules: str | None = None
    strategy: str | None = None
    allow_destructive: bool = False
    old_format: str = "auto"  # inputs.formats: auto | snapshot | dbt | mz-deploy | moose
    new_format: str = "auto"
    old_from_database: str | None = None  # the deployed project read from this database ("": $DIRTINESS_DSN)
    only: list[str] = field(default_factory=list)     # selective deploy: the changes to deploy (inputs.selection)
    exclude: list[str] = field(default_factory=list)  # and the changes to leave as deployed
    full: bool = False  # start from nothing earlier runs left (every statement parsed)


@dataclass(frozen=True)
class RunSettings:
    old: str
    new: str
    old_format: str
    new_format: str
    out: str
    run_id: str
    checked: CheckedProgram
    plan_checked: CheckedProgram | None   # the strategy's rules (plan.rules); None: strategy none, no plan
    outputs: dict[str, str]               # derived relation -> output table
    forced: tuple[tuple[str, str], ...]   # (database, schema)
    strategy: str
    allow_destructive: bool
    dialect: Dialect
    sql: SqlSettings
    external_databases: tuple[str, ...]
    interning_seed: int
    holding: Holding                      # local_rows, lazy_checkpoints: how a run holds what it computes
    compute_conf: dict[str, str]          # the session's settings while a run computes and writes
    small_catalog_objects: int            # at most this many objects in both snapshots: the small-data path
    reuse_from_objects: int               # from this many objects, statements earlier runs analysed are reused
    small_catalog_conf: dict[str, str]    # the session's settings on that path, while it computes and writes
    local_catalog_conf: dict[str, str]    # and on top of them, for a catalog held as rows (local_rows)
    deploy_suffix: str                    # the template, filled from the run id by the planner
    delta_backend: str
    fingerprints: dict[str, str]
    inputs: dict[str, Document | str] = field(default_factory=dict, compare=False, repr=False)  # old, new: a
    # document parsed and validated before Spark started, or the path of a table-form snapshot
    drift: tuple[dict, ...] | None = None  # --old-from-database: where the database differs from its deploy record
    selection: Selection | None = field(default=None, compare=False, repr=False)  # --only/--exclude: inputs["new"]
    # is then the deployed project plus the selected changes
    clusters_outside: bool = False  # the new project (mz-deploy's) defines clusters by file; every other cluster
    # it uses exists outside it (staged and swapped when dirty, never created)
    full: bool = False  # --full: nothing earlier runs left is read

    def reuses_analysis(self, objects: int) -> bool:
        """A catalog of this many objects (both snapshots) takes what earlier runs analysed, and keeps what it
        parses for later runs (``inputs.analysed_before``)."""
        return objects >= self.reuse_from_objects

    def small_catalog(self, objects: int) -> bool:
        """A catalog of this many objects (both snapshots) takes the small-data path."""
        return bool(self.small_catalog_objects) and objects <= self.small_catalog_objects

    def held_as_rows(self, objects: int) -> bool:
        """A small catalog that fits in ``local_rows``: what a run holds is tried as rows first."""
        return self.small_catalog(objects) and objects <= self.holding.local_rows

    def small_catalog_settings(self, objects: int) -> dict[str, str]:
        """The session's settings for computing a catalog of this many objects, on top of ``compute_conf``."""
        if not self.small_catalog(objects):
            return {}
        return {**self.small_catalog_conf, **(self.local_catalog_conf if self.held_as_rows(objects) else {})}

    def computed_with(self, objects: int) -> dict[str, str]:
        """Every session setting a run over a catalog of this many objects computes with: what reads its held
        frames (its writes, the benchmark's floor) runs with them too."""
        return {**self.compute_conf, **self.small_catalog_settings(objects)}

    def dirty_relation(self, table: str) -> str:
        """The derived relation the configuration writes to ``table`` (``dirty_stmts``: ``DirtyStmt``)."""
        return next(relation for relation, written in self.outputs.items() if written == table)


def resolve(params: RunParams, config: dict) -> RunSettings:
    input_fingerprints, inputs = {}, {}
    dialect = Dialect.from_config(config)
    sides = (("old", params.old, params.old_format), ("new", params.new, params.new_format))
    drift, old_label = None, params.old
    if params.old_from_database is not None:
        if params.old:
            raise InputError("--old and --old-from-database: give the deployed project one way")
        live = read_database(dsn_from(params.old_from_database, "--old-from-database"),
                             config["apply"]["record_schema"])
        if live.recorded_by is None:
            raise InputError(f"--old-from-database: {live.path} has no deploy record "
                             f"({config['apply']['record_schema']}.{STATE}): nothing says which version of the "
                             f"project it holds; plan from --old FILE and apply once, which starts the record")
        inputs["old"], drift, old_label = live.parsed(), tuple(live.drift), live.path
        _check_identifiers(inputs["old"], dialect)
        input_fingerprints["old_fingerprint"] = fingerprints_of.of_document(inputs["old"])
        sides = sides[1:]
    elif not params.old:
        raise InputError("the deployed project is needed: --old PATH or --old-from-database")
    for label, path, format in sides:
        if format not in FORMATS:
            raise InputError(f"--{label}-format {format!r}: expected one of {', '.join(FORMATS)}")
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder (--{label})")
        document = None
        if is_document(path, format):  # a document is validated now, before Spark starts, and read once
            document = read_document(path, format=format, system_schemas=dialect.system_schemas,
                                     external_databases=tuple(config["external_databases"] or ()))
        if document is not None:
            _check_identifiers(document, dialect)
        else:
            check_table_form(path)
        inputs[label] = document if document is not None else path
        # a tool's artefact by what it says, not by when the tool last wrote it
        input_fingerprints[f"{label}_fingerprint"] = (fingerprints_of.of_document(document)
                                                      if document is not None and document.converted
                                                      else fingerprints_of.of_path(path))
    selection = None
    if params.only or params.exclude:
        selection = _selection(inputs, params, dialect, config)
        inputs["new"] = selection.new
        input_fingerprints["new_fingerprint"] = fingerprints_of.of_document(selection.new)
    outputs = dict(config["outputs"] or {})
    missing = [t for t in REQUIRED_OUTPUTS if t not in outputs.values()]
    if missing:
        raise InputError(f"configuration: outputs must name the tables {', '.join(missing)} (the plan reads them)")
    # a tool's project brings its tool's semantics: its rules, and (dbt) its own way to build the selection
    tool = TOOLS.get(params.new_format if params.new_format != "auto" else detect(params.new))
    tool_settings = config[tool] if tool else {}
    checked = load_rules(params.rules or tool_settings.get("rules") or config["rules"], outputs)
    forced = tuple(_forced_schema(s) for s in params.forced_schemas)
    if params.redeploy_all:
        forced += tuple(_every_schema(inputs["new"], params.new))
    strategy = params.strategy or tool_settings.get("strategy") or config["plan"]["strategy"]
    if strategy not in STRATEGIES:
        raise InputError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    plan_rules = (config["plan"].get("rules") or {}).get(strategy)
    if not plan_rules and strategy != NO_PLAN:
        raise InputError(f"plan.rules: no rule program for the {strategy} strategy")
    backend = config["delta_backend"]
    if backend not in ("auto", "spark", "deltalake"):
        raise InputError(f"delta_backend: expected auto, spark or deltalake, not {backend!r}")
    run_id = params.run_id or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    settings = result_settings(config)
    plan_checked = load_plan_rules(plan_rules, strategy) if strategy != NO_PLAN else None
    if not params.allow_destructive and all(isinstance(inputs[side], Document) for side in ("old", "new")):
        refuse_deleted_stateful(inputs["old"], inputs["new"], checked, plan_checked, strategy)
    fingerprints = {
        **input_fingerprints,
        "rules_fingerprint": fingerprints_of.of_text(checked.program.text
                                                     + (plan_checked.program.text if plan_checked else "")),
        "config_fingerprint": fingerprints_of.of_settings(settings, forced=sorted(forced), strategy=strategy,
                                                          allow_destructive=params.allow_destructive,
                                                          **({"selection": selection.text()} if selection else {}),
                                                          **({"deploy_id": params.deploy_id} if params.deploy_id
                                                             else {})),
    }
    return RunSettings(
        old=old_label, new=params.new, old_format=params.old_format, new_format=params.new_format,
        out=params.out, run_id=run_id, checked=checked, plan_checked=plan_checked, outputs=outputs,
        forced=forced, strategy=strategy, allow_destructive=params.allow_destructive, dialect=dialect,
        sql=dialect.sql_settings(config), external_databases=tuple(config["external_databases"] or ()),
        interning_seed=_positive(config, "interning_seed", allow_zero=True),
        holding=Holding(local_rows=_positive(config, "local_rows", allow_zero=True),
                        lazy_checkpoints=_flag(config, "lazy_checkpoints"),
                        storage=_one_of(config, "checkpoint_storage", tuple(STORAGE))),
        compute_conf=spark_settings(config["spark"]["compute_conf"]),
        small_catalog_objects=_positive(config["spark"], "small_catalog_objects", True, "spark."),
        reuse_from_objects=_positive(config["sql"], "reuse_from_objects", True, "sql."),
        small_catalog_conf=spark_settings(config["spark"]["small_catalog_conf"]),
        local_catalog_conf=spark_settings(config["spark"]["local_catalog_conf"]),
        deploy_suffix=_deploy_id(params.deploy_id) if params.deploy_id else config["plan"]["deploy_suffix"],
        delta_backend=backend, fingerprints=fingerprints, inputs=inputs, selection=selection, drift=drift,
        clusters_outside=tool == "mz_deploy" and isinstance(inputs.get("new"), Document), full=params.full)


def _selection(inputs: dict, params: RunParams, dialect: Dialect, config: dict) -> Selection:
    """--only/--exclude: the new project as the deployed one plus the chosen changes (both read as documents)."""
    for label in ("old", "new"):
        if not isinstance(inputs[label], Document):
            raise InputError(f"{getattr(params, label)}: --only/--exclude need both projects as documents or a "
                             f"tool's project, not a folder of tables (--{label})")
    sql = dialect.sql_settings(config)

    def reads(row: tuple) -> list[tuple[str, str, str]]:
        _error, references, _cluster = analyse(row[7], row[3], *row[:3], sql.dialect, sql.system_schemas)
        return [tuple(r) for r in references or ()]

    return select(inputs["old"], inputs["new"], list(params.only), list(params.exclude), reads)


def _check_identifiers(document: Document, dialect: Dialect) -> None:
    """Names the database would truncate (PostgreSQL: 63 bytes) are refused, not deployed as another name."""
    limit = dialect.max_identifier_length
    if not limit:
        return
    found = {}  # every name part that is too long, once, with the first object it names
    for entry in document.objects:
        for part in entry[:3]:
            if len(part.encode("utf-8")) > limit and part not in found:
                found[part] = f"{'.'.join(entry[:3])}: the name {part[:20]!r}... is {len(part.encode('utf-8'))} bytes"
    if found:
        raise InputError(summarize(list(found.values()), f"{document.path}: {counted(len(found), 'name')} longer "
                                   f"than the {dialect.name} dialect allows ({limit} bytes; the database would "
                                   f"truncate them)"))


def _deploy_id(text: str) -> str:
    """mz-deploy's deploy id, the staged names' suffix as given: lower-case letters, digits and underscores,
    short enough that a name with it still fits (mz-deploy allows half of Materialize's 255 bytes)."""
    if not re.fullmatch(r"[a-z0-9_]{1,126}", text):
        raise InputError(f"--deploy-id {text!r}: expected 1 to 126 lower-case letters, digits or underscores")
    return text


def _every_schema(new: Document | str, path: str) -> list[tuple[str, str]]:
    """--redeploy-all: the schemas of the new project, read before Spark starts (so from a document)."""
    if not isinstance(new, Document):
        raise InputError(f"{path}: --redeploy-all needs the new project as a document or a tool's project "
                         f"(name the schemas of a table-form snapshot with --redeploy-schema)")
    return sorted({(o[0], o[1]) for o in new.objects})


def _forced_schema(text: str) -> tuple[str, str]:
    parts = text.split(".")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise InputError(f"--forced-schema {text!r}: expected DATABASE.SCHEMA")
    return parts[0], parts[1]


def _flag(config: dict, key: str) -> bool:
    value = config[key]
    if not isinstance(value, bool):
        raise InputError(f"{key}: expected true or false, not {value!r}")
    return value


def _one_of(config: dict, key: str, choices: tuple[str, ...]) -> str:
    value = config[key]
    if value not in choices:
        raise InputError(f"{key}: expected one of {', '.join(choices)}, not {value!r}")
    return value


def _positive(config: dict, key: str, allow_zero: bool = False, section: str = "") -> int:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        wanted = "non-negative" if allow_zero else "positive"
        raise InputError(f"{section}{key}: expected a {wanted} integer, not {value!r}")
    return value

