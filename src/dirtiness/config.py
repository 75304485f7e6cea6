"""Job configuration: ``conf/job.yaml`` overlaid by ``--config`` and then by flags; and the settings of the
commands that read a run back (``read_settings``: no Spark, so explain and report start at once)."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from .errors import InputError

# The default configuration and rule programs ship inside the package (``conf/`` at the top of
# the source tree links here), so an installed wheel finds them wherever it is installed.
CONF = Path(str(resources.files("dirtiness") / "conf"))
DEFAULT_CONFIG = CONF / "job.yaml"
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout: its examples, for tests and benchmark
_PATH_KEYS = (("rules",), ("mz_deploy", "rules"), ("dbt", "rules"), ("plan", "rules", "*"))  # relative to the file


def load_config(path: str | None = None) -> dict:
    """The default configuration, overlaid with ``path`` if given; path keys made absolute."""
    config = _read(str(DEFAULT_CONFIG))
    if path:
        config = _merge(config, _read(path), path)
    return config


def _read(path: str) -> dict:
    if not os.path.isfile(path):
        raise InputError(f"{path}: configuration file not found")
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        raise InputError(f"{path}:{where} malformed YAML: {getattr(error, 'problem', error)}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a configuration must be a mapping")
    base = os.path.dirname(os.path.abspath(path))
    for keys in _PATH_KEYS:
        _absolute(data, keys, base)
    return data


def _absolute(data, keys: tuple[str, ...], base: str) -> None:
    """The relative paths at ``keys`` (``*``: every key at that level) made absolute; a bundled rule program
    named without a path (``dbt_state_modified``) stays a name (``rule_program``)."""
    if not isinstance(data, dict):
        return
    key, rest = keys[0], keys[1:]
    for name in (list(data) if key == "*" else [key]):
        if rest:
            _absolute(data.get(name), rest, base)
        elif isinstance(data.get(name), str):
            path = os.path.normpath(os.path.join(base, data[name]))
            data[name] = data[name] if not os.path.exists(path) and _bundled_name(data[name]) else path


RULES = CONF / "rules"  # the bundled rule programs


def _bundled_name(text: str) -> bool:
    return "/" not in text and os.sep not in text and (RULES / _with_suffix(text)).is_file()


def _with_suffix(text: str) -> str:
    return text if text.endswith(".dl") else f"{text}.dl"


def rule_program(text: str) -> str:
    """The path of a rule program given as a path or, from anywhere (the installed wheel too), as the name
    of a bundled one (``dbt_state_modified``, ``dirty.dl``)."""
    if os.path.exists(text) or not _bundled_name(text):
        if not os.path.exists(text):
            from .wording import did_you_mean

            known = sorted(p.stem for p in RULES.glob("*.dl"))
            raise InputError(f"{text}: no such rule program (a .dl file, or a bundled one by name: "
                             f"{', '.join(known)}){did_you_mean(os.path.basename(text).removesuffix('.dl'), known)}")
        return text
    return str(RULES / _with_suffix(text))


# Sections whose keys are the user's own (Spark settings, table names, strategies, dialects); every other key
# of an overlay must be one the defaults have: a misspelt or retired setting would otherwise do nothing.
_OPEN_SECTIONS = (("spark", "conf"), ("spark", "compute_conf"), ("spark", "small_catalog_conf"),
                  ("spark", "local_catalog_conf"), ("outputs",), ("plan", "rules"), ("plan", "dialects"))


def _merge(base: dict, overlay: dict, path: str, at: tuple[str, ...] = ()) -> dict:
    merged = copy.deepcopy(base)
    open_section = any(at[:len(section)] == section for section in _OPEN_SECTIONS)
    for key, value in overlay.items():
        if key not in merged and not open_section:
            raise InputError(f"{path}: unknown setting {'.'.join((*at, str(key)))} (the settings are those of "
                             f"{DEFAULT_CONFIG.name})")
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value, path, (*at, str(key)))
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class ReadSettings:
    """What the commands that read a run back need: where it is, and what the configuration says of it."""

    out: str
    run_id: str | None                   # None: the latest succeeded run
    outputs: dict[str, str]              # derived relation -> output table
    report: dict                         # the report section, checked
    transactional: dict[str, bool]       # dialect -> whether its DDL runs in transactions (apply)
    servers: dict[str, str]              # dialect -> the server its statements are for (its parser's name)
    parallel: int                        # apply: operations of one step run on up to this many connections
    record_schema: str                   # apply: the schema of the deploy record in the target database


def read_settings(out: str, run_id: str | None, config: dict, parallel: int | None = None) -> ReadSettings:
    from .readback.report.data import report_settings

    dialects = config["plan"]["dialects"] or {}
    parallel = parallel if parallel is not None else config["apply"]["parallel"]
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise InputError(f"--parallel {parallel}: expected 1 or more")
    record_schema = config["apply"].get("record_schema")
    if not isinstance(record_schema, str) or not record_schema.strip():
        raise InputError(f"configuration: apply.record_schema must be a schema name, not {record_schema!r}")
    return ReadSettings(out=out, run_id=run_id, outputs=dict(config["outputs"] or {}),
                        report=report_settings(config.get("report")),
                        transactional={name: bool((d or {}).get("transactional_ddl", False))
                                       for name, d in dialects.items()},
                        servers={name: str((d or {}).get("parser") or name) for name, d in dialects.items()},
                        parallel=parallel, record_schema=record_schema)
