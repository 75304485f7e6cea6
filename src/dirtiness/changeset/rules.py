"""Loading the rule program a run uses: parse, check, and match it to the output tables."""

from __future__ import annotations

from ..datalog.check import CheckedProgram, check_program
from ..datalog.syntax import ProgramError, parse_program
from ..errors import InputError
from ..model import base_domains, plan_domains


def load_rules(path: str, outputs: dict[str, str]) -> CheckedProgram:
    """The dirty rules: over the base facts (``model.BASE_RELATIONS``), deriving at least the outputs."""
    checked = check_program(parse_program(_read(path), path), base_domains())
    missing = [r for r in outputs if r not in checked.derived]
    if missing:
        raise ProgramError(path, 0, f"the configuration writes {', '.join(missing)}, which no rule derives")
    return checked


def load_plan_rules(path: str) -> CheckedProgram:
    """A strategy's rules: over the dirty sets and the plan's facts (``model.PLAN_RELATIONS``)."""
    return check_program(parse_program(_read(path), path), plan_domains())


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise InputError(f"{path}: cannot read the rule program: {error.strerror}") from None
