"""Facts as text, the way ``cause`` shows them: ``DirtyStmt(materialize.public.flippers)``.

An argument is an object (``database.schema.name``) or a single name; a part
that is not a plain lowercase identifier is double-quoted (``"My Schema"``,
``""`` for a quote inside), so the text reads back unambiguously. The Spark
side writes it (``interning.quote_if_needed``); ``explain`` reads it here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")
_FACT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\((.*)\)", re.S)


@dataclass(frozen=True)
class Fact:
    relation: str
    args: tuple[tuple[str, ...], ...]  # one tuple of name parts per argument

    @property
    def parts(self) -> tuple[str, ...]:
        """All name parts in order: the key columns of the relation's table."""
        return tuple(p for arg in self.args for p in arg)

    def __str__(self) -> str:
        return f"{self.relation}({', '.join(show_name(a) for a in self.args)})"


def quote(part: str) -> str:
    return part if _PLAIN.fullmatch(part) else '"' + part.replace('"', '""') + '"'


def show_name(parts: tuple[str, ...]) -> str:
    return ".".join(quote(p) for p in parts)


def parse_fact(text: str) -> Fact:
    match = _FACT.fullmatch(text.strip())
    if not match:
        raise ValueError(f"not a fact: {text!r}")
    inner = match.group(2)
    args = tuple(_split(a, ".") for a in _split(inner, ",")) if inner.strip() else ()
    return Fact(match.group(1), args)


def parse_name(text: str) -> tuple[str, ...]:
    """``db.schema.name`` as typed by a user: parts split on dots; a double-quoted part may hold dots."""
    parts = _split(text.strip(), ".")
    if any(p == "" for p in parts):
        raise ValueError(f"empty name part in {text!r}")
    return parts


def _split(text: str, separator: str) -> tuple[str, ...]:
    """Splits on ``separator`` outside double quotes; unquotes quoted parts when splitting on dots."""
    pieces, current, quoted, i = [], [], False, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            if quoted and text[i + 1:i + 2] == '"':
                current.append('""' if separator == "," else '"')
                i += 2
                continue
            quoted = not quoted
            if separator == ",":
                current.append(char)
        elif char == separator and not quoted:
            pieces.append("".join(current).strip() if separator == "," else "".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quoted:
        raise ValueError(f"unterminated quote in {text!r}")
    pieces.append("".join(current).strip() if separator == "," else "".join(current))
    return tuple(pieces)
