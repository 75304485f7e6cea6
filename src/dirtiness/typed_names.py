"""Names as a user types them: a whole name (``materialize.public.customers``) or any unambiguous suffix of
it (``public.customers``, ``customers``), as ``dirtiness select`` prints them.

One resolver for every command that takes a name (``explain``, ``select``, ``run --only/--exclude``):
a suffix that names exactly one known thing is that thing; one that names several is refused listing
them; one that names nothing is refused with the closest known names.
"""

from __future__ import annotations

from typing import Iterable

from .errors import InputError
from .readback.fact_text import parse_name, show_name
from .wording import closest

Name = tuple[str, ...]


def parts_of(text: str) -> Name:
    """``text`` split into name parts (a double-quoted part may hold dots); InputError when it cannot be."""
    try:
        return parse_name(text)
    except ValueError as error:
        raise InputError(f"{text}: {error}") from None


def suffix_matches(parts: Name, known: Iterable[Name]) -> list[Name]:
    """The known names ``parts`` is the whole of, or a suffix of."""
    size = len(parts)
    return sorted(k for k in known if len(k) >= size and tuple(k[len(k) - size:]) == parts)


def resolve(text: str, known: Iterable[Name], what: str, where: str) -> Name:
    """The one known name ``text`` names (``what``: "object"; ``where``: "in run x")."""
    known = list(known)
    parts = parts_of(text)
    found = suffix_matches(parts, known)
    if len(found) == 1:
        return found[0]
    if found:
        raise InputError(ambiguous(text, found, what))
    raise InputError(not_found(text, known, what, where))


def ambiguous(text: str, found: list[Name], what: str) -> str:
    shown = ", ".join(show_name(f) for f in found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
    return f"{text}: names {len(found)} {what}s: {shown}; give more of the name"


def not_found(text: str, known: Iterable[Name], what: str, where: str) -> str:
    hint = suggestions(text, known)
    return f"{text}: no such {what} {where}" + (f"; did you mean {hint}?" if hint else "")


def suggestions(text: str, known: Iterable[Name], n: int = 3) -> str:
    """The known names closest to ``text``, whole or by their last parts: ``a.b.c or a.b.d``."""
    by_text: dict[str, Name] = {}
    size = len(parts_of(text)) if text.strip() else 1
    for name in known:
        for shown in (show_name(name), show_name(name[-size:])):
            by_text.setdefault(shown, name)
    last = parts_of(text)[-1] if text.strip() else text
    found = []
    for match in closest(text, by_text, n * 3):
        name = by_text[match]
        if show_name(name) not in found and closest(last, [name[-1]]):  # like it where it differs, not only
            found.append(show_name(name))                                 # by a long common prefix
    return " or ".join(found[:n])
