"""Rule programs as data: the abstract syntax and the ``.dl`` parser.

A program is one rule per line (a line ending in ``,`` or ``:-`` continues on
the next), an optional trailing ``.``, ``#`` or ``%`` comments::

    dependency: DirtyStmt(O) :- DependsOn(O, P), DirtyStmt(P), NOT IsReplacement(P)

The optional ``label:`` names the rule in the provenance of what it derives.
A label may carry a quoted reason, the plan's words for why the rule holds;
``{Var}`` in it stands for a variable of the rule's cause (the body atom the
provenance records), filled with that fact's names::

    reads "reads {P}, which the plan removes": Redeployed(O) :- Removed(P), Reads(O, P)

Arguments are variables (``O``, ``Db``) or the wildcard ``_``; constants are
not part of the language (sets of values are base relations, such as the
kinds the plan stages).

A program may declare its interface: the base relations it reads and the
relations it derives (every one: what it derives is what a run keeps), one
directive each, checked exactly when the program is loaded::

    .input ChangedStmt, DependsOn, IsReplacement
    .output DirtyStmt

A program without them reads and derives what its rules say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WILDCARD_PREFIX = "_#"  # wildcards become fresh variables no user name can match


class ProgramError(ValueError):
    """A rule program problem, located as ``file:line: message``."""

    def __init__(self, path: str, line: int, message: str):
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


@dataclass(frozen=True)
class Atom:
    relation: str
    args: tuple[str, ...]
    negated: bool = False

    @property
    def arity(self) -> int:
        return len(self.args)

    def variables(self) -> set[str]:
        return {a for a in self.args if not is_wildcard(a)}

    def __str__(self) -> str:
        shown = ", ".join("_" if is_wildcard(a) else a for a in self.args)
        return f"{'NOT ' if self.negated else ''}{self.relation}({shown})"


@dataclass(frozen=True)
class Rule:
    label: str
    head: Atom
    body: tuple[Atom, ...]
    line: int
    reason: str | None = None  # with {Var} placeholders for variables of the cause

    @property
    def reason_variables(self) -> list[str]:
        return re.findall(r"{([^{}]*)}", self.reason or "")

    @property
    def positive(self) -> tuple[Atom, ...]:
        return tuple(a for a in self.body if not a.negated)

    @property
    def negative(self) -> tuple[Atom, ...]:
        return tuple(a for a in self.body if a.negated)

    def __str__(self) -> str:
        reason = f' "{self.reason}"' if self.reason is not None else ""
        return f"{self.label}{reason}: {self.head} :- {', '.join(str(a) for a in self.body)}"


@dataclass(frozen=True)
class Declaration:
    """``.input A, B`` (the base relations a program reads) or ``.output C`` (the relations it derives)."""

    direction: str               # input | output
    relations: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Program:
    path: str
    rules: tuple[Rule, ...]
    text: str = field(repr=False, default="")
    declarations: tuple[Declaration, ...] = ()

    @property
    def derived(self) -> tuple[str, ...]:
        """Relations defined by rules, in order of first definition."""
        return tuple(dict.fromkeys(r.head.relation for r in self.rules))

    def declared(self, direction: str) -> Declaration | None:
        return next((d for d in self.declarations if d.direction == direction), None)


def is_wildcard(arg: str) -> bool:
    return arg.startswith(WILDCARD_PREFIX)


_IDENT = r"[A-Za-z][A-Za-z0-9_]*"
_LABEL = re.compile(rf'^\s*({_IDENT})\s*(?:"([^"]*)"\s*)?:(?!-)')
_COMMENT = re.compile(r'"[^"]*"|(?:^|(?<=\s))[#%]')
_ATOM = re.compile(rf"\s*(NOT\s+|not\s+|!\s*)?({_IDENT})\s*\(([^()]*)\)\s*")
_VARIABLE = re.compile(rf"^(_|{_IDENT})$")


_DECLARATION = re.compile(rf"^\.(\w+)\s+({_IDENT}(?:\s*,\s*{_IDENT})*)\s*\.?$")


def parse_program(text: str, path: str = "<rules>") -> Program:
    rules: list[Rule] = []
    declarations: dict[str, Declaration] = {}
    for line_no, statement in _statements(text):
        if statement.startswith("."):
            declaration = _parse_declaration(statement, path, line_no)
            if declaration.direction in declarations:
                raise ProgramError(path, line_no, f".{declaration.direction} is declared twice (first on line "
                                                  f"{declarations[declaration.direction].line})")
            declarations[declaration.direction] = declaration
            continue
        rules.append(_parse_rule(statement, path, line_no, len(rules)))
    if not rules:
        raise ProgramError(path, 0, "the program has no rules")
    return Program(path=path, rules=tuple(rules), text=text, declarations=tuple(declarations.values()))


def _parse_declaration(statement: str, path: str, line: int) -> Declaration:
    match = _DECLARATION.match(statement)
    if match is None or match.group(1) not in ("input", "output"):
        raise ProgramError(path, line, f"expected '.input Relation, ...' or '.output Relation, ...', got "
                                       f"{statement!r}")
    return Declaration(match.group(1), tuple(r.strip() for r in match.group(2).split(",")), line)


def _statements(text: str):
    """Yield (first line number, statement) with comments stripped and continuations joined."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if not pending:
            start = number
        pending = f"{pending} {line}".strip()
        if pending.endswith((",", ":-", ":")):  # a label alone on its line: the rule follows
            continue
        yield start, pending
        pending = ""
    if pending:
        yield start, pending


def _strip_comment(raw: str) -> str:
    """The line up to a ``#`` or ``%`` that starts a comment (not one inside a quoted reason)."""
    for match in _COMMENT.finditer(raw):
        if not match.group().startswith('"'):
            return raw[:match.start()]
    return raw


def _parse_rule(statement: str, path: str, line: int, index: int) -> Rule:
    label, reason = f"rule{index + 1}", None
    match = _LABEL.match(statement)
    if match:
        label, reason, statement = match.group(1), match.group(2), statement[match.end():]
    statement = statement.strip()
    if statement.endswith("."):
        statement = statement[:-1].rstrip()
    if statement.count(":-") != 1:
        raise ProgramError(path, line, f"expected 'Head(...) :- Body(...), ...', got {statement!r}")
    head_text, body_text = (part.strip() for part in statement.split(":-"))
    fresh = iter(range(1_000_000))
    head_atoms = _parse_atoms(head_text, path, line, fresh)
    if len(head_atoms) != 1 or head_atoms[0].negated:
        raise ProgramError(path, line, f"the head must be one positive atom, got {head_text!r}")
    body = _parse_atoms(body_text, path, line, fresh)
    if not body:
        raise ProgramError(path, line, "the rule has an empty body")
    return Rule(label=label, head=head_atoms[0], body=tuple(body), line=line, reason=reason)


def _parse_atoms(text: str, path: str, line: int, fresh) -> list[Atom]:
    atoms, position = [], 0
    while position < len(text):
        match = _ATOM.match(text, position)
        if not match:
            raise ProgramError(path, line, f"cannot parse an atom at {text[position:]!r}")
        negated, relation, arg_text = bool(match.group(1)), match.group(2), match.group(3)
        args = []
        for raw in (a.strip() for a in arg_text.split(",")) if arg_text.strip() else []:
            if not _VARIABLE.match(raw):
                raise ProgramError(path, line, f"{relation}: argument {raw!r} is not a variable or _ "
                                               "(constants are not supported)")
            args.append(f"{WILDCARD_PREFIX}{next(fresh)}" if raw == "_" else raw)
        if not args:
            raise ProgramError(path, line, f"{relation}() has no arguments")
        atoms.append(Atom(relation=relation, args=tuple(args), negated=negated))
        position = match.end()
        if position < len(text):
            if text[position] != ",":
                raise ProgramError(path, line, f"expected ',' between atoms at {text[position:]!r}")
            position += 1
    return atoms
