"""The destructive guard, before Spark starts: deleted stateful objects that the plan is certain to drop.

The plan's own check (``plan.checks``) refuses every destructive operation once the plan is built. A
deletion needs no plan to be known: a table or source the new project no longer lists is dropped by
either bundled strategy, whenever the dirty rules make every changed statement dirty (``DirtyStmt(O) :-
ChangedStmt(O)``; mz-deploy's rules leave what its ``apply`` manages to it, and a program of one's own may
decide otherwise). Such a run is refused (exit 3) in a second, not after its Spark jobs.
"""

from __future__ import annotations

from ..datalog.check import CheckedProgram
from ..errors import PolicyError
from ..inputs.snapshot import Document
from .operations import STATEFUL
from .strategies import PLANNERS

SHOWN = 5


def refuse_deleted_stateful(old: Document, new: Document, checked: CheckedProgram,
                            plan_checked: CheckedProgram | None, strategy: str) -> None:
    """PolicyError naming the deleted stateful objects when the plan is certain to drop them."""
    if not _drops_deletions(checked, plan_checked, strategy):
        return
    kept = {tuple(o[:3]) for o in new.objects}
    gone = sorted(f"{'.'.join(o[:3])} ({o[3]})" for o in old.objects
                  if o[3] in STATEFUL and tuple(o[:3]) not in kept)
    if gone:
        more = f" (and {len(gone) - SHOWN} more)" if len(gone) > SHOWN else ""
        raise PolicyError(f"the plan drops stateful objects, refused without --allow-destructive: "
                          f"{', '.join(gone[:SHOWN])}{more} (deleted from the new project {new.path}; nothing "
                          f"was computed)")


def _drops_deletions(checked: CheckedProgram, plan_checked: CheckedProgram | None, strategy: str) -> bool:
    """Whether every deleted object is dropped: a bundled strategy's rules, and dirty rules that make every
    changed statement dirty."""
    if plan_checked is None or strategy not in PLANNERS or PLANNERS[strategy].rules != plan_checked.path:
        return False
    return any(rule.head.relation == "DirtyStmt" and len(rule.body) == 1 and not rule.body[0].negated
               and rule.body[0].relation == "ChangedStmt" and rule.body[0].args == rule.head.args
               for rule in checked.rules)
