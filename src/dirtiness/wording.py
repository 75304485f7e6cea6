"""How messages say numbers and names: counts in English ("1 round", "2 rounds"), and the known names
closest to one a user mistyped (a hint, never a guess acted upon)."""

from __future__ import annotations

import difflib
from typing import Iterable


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 round``, ``5 rounds``, ``2 changes``; ``plural`` where adding an s is wrong (``2 indexes``)."""
    return f"{n} {noun_for(n, noun, plural)}"


def noun_for(n: int, noun: str, plural: str | None = None) -> str:
    """``noun`` for one, its plural for any other number (a list of the things may follow it)."""
    return noun if n == 1 else plural or noun + "s"


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names most like ``name``, best first (none when nothing is close)."""
    return difflib.get_close_matches(name, sorted(set(known)), n=n, cutoff=0.75)


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """``"; did you mean 'depends_on'?"``, or nothing when no known name is close."""
    found = closest(name, known, n)
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(f) for f in found) + "?"
