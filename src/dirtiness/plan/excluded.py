"""A selective deploy's second check: the plan moves no object whose change the user excluded.

An excluded change stays as deployed in the effective project
(``inputs.selection``), but the rules may still decide to redeploy, drop or
recreate that object (its schema is swapped for a selected change beside
it, say). Deploying it would deploy what the user asked to leave alone, so
the run stops (exit 2) naming the excluded object, its decision and the
selected change that decision comes from: the seed its derivation chain
ends in, walked over the computed, not yet written tables exactly as
``dirtiness explain`` walks the written ones.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import InputError
from ..inputs.selection import Selection
from ..model import KEY
from ..readback.explain import chain
from ..readback.fact_text import Fact
from .decision_table import KEPT


def excluded_moved(selection: Selection, decisions: DataFrame, tables: "HeldTables",
                   relations: dict[str, str | None]) -> None:
    """Raise InputError when the decisions move an object whose change was excluded."""
    kept_back = sorted(key for key, c in selection.excluded.items() if c.change != "added")
    if not kept_back:
        return
    spark = decisions.sparkSession
    wanted = spark.createDataFrame(kept_back, ", ".join(f"{k} string" for k in KEY))
    moved = (decisions.where((F.col("subject") == "object") & (F.col("decision") != KEPT))
             .join(wanted, list(KEY), "left_semi").select(*KEY, "decision", "relation").collect())
    if not moved:
        return
    moved = sorted(moved, key=lambda r: tuple(r[k] for k in KEY))
    first = moved[0]
    key = tuple(first[k] for k in KEY)
    change = selection.excluded[key]
    links = chain(tables, relations, Fact(first["relation"], (key,)))
    seed = next((link for link in reversed(links) if link.seed), None)
    puller = (f"the selected change {seed.fact.split('(', 1)[1].rstrip(')')} ({seed.change})"
              if seed is not None and seed.change else seed.fact if seed is not None else "the rules")
    rest = [".".join(r[k] for k in KEY) for r in moved[1:]]
    others = f" (and {', '.join(rest[:3])}{' ...' if len(rest) > 3 else ''} with it)" if rest else ""
    raise InputError(f"selection: {puller} pulls in {'.'.join(key)}, a change the selection leaves out "
                     f"({change.change}, {change.because}): the plan would have it {first['decision']}{others}; "
                     f"to deploy {'them' if rest else 'it'} too, {_what_to_add(selection, moved)}")


def _what_to_add(selection: Selection, moved) -> str:
    """The flags that would let the plan move what it must: ``--only`` each change no ``--only`` named, and
    no ``--exclude`` that left one out."""
    keys = [tuple(r[k] for k in KEY) for r in moved]
    excluded = sorted({selection.excluded[k].because for k in keys if selection.excluded[k].because.startswith("--")})
    named = [".".join(k) for k in keys if not selection.excluded[k].because.startswith("--")]
    steps = ([f"add {' '.join(f'--only {n}' for n in named[:4])}{' ...' if len(named) > 4 else ''}"] if named else [])
    steps += [f"drop {', '.join(excluded)}"] if excluded else []
    return " and ".join(steps)


class HeldTables:
    """A computed run's tables before they are written, read the way ``explain`` reads written ones."""

    def __init__(self, run_id: str, tables: dict[str, DataFrame]) -> None:
        self.run_id, self.tables = run_id, tables

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> list[str]:
        return list(self.tables[table].columns) if table in self.tables else []

    def rows(self, table: str, **where) -> list[dict]:
        frame = self.tables[table]
        for column, value in where.items():
            frame = frame.where(F.col(column).isin(*value) if isinstance(value, (list, tuple, set))
                                else F.col(column).eqNullSafe(F.lit(value)))
        return [row.asDict() for row in frame.collect()]
