"""Loading the rule program a run uses: parse, check, and match it to the output tables."""

from __future__ import annotations

from ..datalog.check import CheckedProgram, check_program
from ..datalog.syntax import ProgramError, parse_program
from ..errors import InputError
from ..model import base_domains


def load_rules(path: str, outputs: dict[str, str]) -> CheckedProgram:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise InputError(f"{path}: cannot read the rule program: {error.strerror}") from None
    checked = check_program(parse_program(text, path), base_domains())
    missing = [r for r in outputs if r not in checked.derived]
    if missing:
        raise ProgramError(path, 0, f"the configuration writes {', '.join(missing)}, which no rule derives")
    return checked
