"""The plan's rules evaluated: every decision by name, with the reason the plan row gives for it.

A decision's reason is its rule's quoted reason, with ``{Var}`` filled from
the cause (``reads {P}, which the plan removes`` becomes ``reads
db.core.clean, which the plan removes``); a rule without one gives none of
its own (its cause says why: a staged object is staged because it is
redeployed, and the plan row gives the reason it is redeployed). The
``plan_decisions`` table holds every decision of a run with its rule, cause,
round and reason, so ``explain`` can walk a plan decision back to the change
behind it, through the dirty sets.
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..datalog.check import CheckedProgram
from ..datalog.holding import Batch
from ..model import OBJECT_DOMAIN

PROGRAM = "plan"
DECISIONS = {"relation": "relation", "database": "d_database", "schema": "d_schema", "name": "d_name",
             "cluster": "d_cluster", "rule": "rule", "cause": "cause", "round": "round", "reason": "reason"}


def reason_columns(checked: CheckedProgram) -> dict[str, Column]:
    """The columns ``named_outputs`` adds for the plan's tuples: the reason of a rule that has one, and the
    tuple's object, schema or cluster under generic names (``d_database, d_schema, d_name, d_cluster``)."""
    reason = F.lit(None).cast("string")
    plan = F.col("program") == PROGRAM
    for index, rule in enumerate(checked.rules):
        if rule.reason is None:
            continue
        for at in checked.cause_atoms(rule):
            atom = rule.body[at]
            pieces = [F.col(f"k{atom.args.index(p)}_raw") if i % 2 else F.lit(p)
                      for i, p in enumerate(re.split(r"{([^{}]*)}", rule.reason)) if p or i % 2]
            reason = F.when(plan & (F.col("rule_index") == index) & (F.col("cause_rel") == atom.relation),
                            F.concat(*pieces)).otherwise(reason)
    key: dict[str, Column] = {c: F.lit(None).cast("string") for c in ("d_database", "d_schema", "d_name", "d_cluster")}
    for relation, domains in checked.derived.items():
        mine = plan & (F.col("relation") == relation)
        if domains == (OBJECT_DOMAIN,):
            picked = {"d_database": "c0_p0", "d_schema": "c0_p1", "d_name": "c0_p2"}
        else:
            picked = {f"d_{d}": f"c{i}_p0" for i, d in enumerate(domains) if f"d_{d}" in key}
        for name, source in picked.items():
            key[name] = F.when(mine, F.col(source)).otherwise(key[name])
    return {"reason": reason, **key}


def decision_rows(outputs: Batch) -> Batch:
    """The ``plan_decisions`` rows of the named outputs."""
    return outputs.part("program", PROGRAM, DECISIONS)
