"""The in-place strategy (Moose-style): ``teardown`` then ``setup``.

teardown drops every dirty view, materialized view and sink that exists in
the old project, dependents before what they depend on (over the old
graph); setup creates every dirty view, materialized view and sink of the new
project, dependencies first (over the new graph). Other kinds (tables,
sources, secrets, connections) are dropped only when deleted or their own
statement changed, and created only when added or changed; dropping a
table or source loses data, so it is marked destructive.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..snapshot import KEY
from .operations import RECREATABLE, STATEFUL, PlanInputs, operations
from .statements import kind_keyword, qualified
from .steps import dependency_edges, with_steps


def in_place_plan(inputs: PlanInputs) -> DataFrame:
    dirty = inputs.dirty_stmts.select(*KEY, "change")
    old = inputs.old.objects.select(*KEY, "kind")
    new = inputs.new.objects.select(*KEY, "kind", "sql")

    dropped = (dirty.join(old, list(KEY))
               .where(F.col("kind").isin(*RECREATABLE) | F.col("change").isin("modified", "deleted")))
    created = (dirty.join(new, list(KEY))
               .where(F.col("kind").isin(*RECREATABLE) | F.col("change").isin("added", "modified")))
    stepped = with_steps({
        "teardown": (dropped, dependency_edges(inputs.old.dependencies, dependents_first=True)),
        "setup": (created, dependency_edges(inputs.new.dependencies)),
    })
    teardown = operations(
        stepped["teardown"], "teardown", 1, "DROP", "object", step=F.col("step"),
        statement=inputs.dialect.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY)),
        destructive=F.col("kind").isin(*STATEFUL))
    setup = operations(stepped["setup"], "setup", 2, "CREATE", "object", step=F.col("step"), statement=F.col("sql"))
    return teardown.unionByName(setup)

