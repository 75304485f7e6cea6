"""Loading the rule program a run uses: parse, check, and match it to the output tables."""

from __future__ import annotations

from ..config import rule_program
from ..datalog.check import CheckedProgram, check_program
from ..datalog.syntax import ProgramError, parse_program
from ..errors import InputError
from ..model import base_domains, plan_domains
from ..plan.strategies import PLANNERS


def load_rules(path: str, outputs: dict[str, str]) -> CheckedProgram:
    """The dirty rules: over the base facts (``model.BASE_RELATIONS``), deriving at least the outputs.
    ``path``: a .dl file, or a bundled program by name."""
    path = rule_program(path)
    checked = check_program(parse_program(_read(path), path), base_domains())
    missing = [r for r in outputs if r not in checked.outputs]
    if missing:
        raise ProgramError(path, 0, f"the configuration writes {', '.join(missing)}, which no rule derives")
    return checked


def load_plan_rules(path: str, strategy: str) -> CheckedProgram:
    """A strategy's rules: over the dirty sets and the plan's facts (``model.PLAN_RELATIONS``), deriving every
    relation the strategy's planner reads (``plan.strategies``: its ``planned``)."""
    path = rule_program(path)
    checked = check_program(parse_program(_read(path), path), plan_domains())
    missing = [r for r in PLANNERS[strategy].planned if r not in checked.outputs]
    if missing:
        raise ProgramError(path, 0, f"the {strategy} planner reads {', '.join(missing)}, which no rule of this "
                                    f"program derives")
    return checked


def _read(path: str) -> str:
    """The program's text: UTF-8, with or without a byte-order mark; anything else is named by its byte."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"{path}: cannot read the rule program: {error.strerror}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{path}: the rule program is UTF-16 (it starts with a UTF-16 byte-order mark); "
                         f"save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{path}: line {line}, byte {error.start}: not UTF-8 ({error.reason}); save the rule "
                         f"program as UTF-8") from None
