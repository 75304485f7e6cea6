"""The in-place strategy (Moose-style): ``teardown`` then ``setup``.

What teardown drops and setup creates is decided by the rules of
``conf/rules/plan_in_place.dl`` (``Planning.decisions``); this module writes
their operations. teardown drops, dependents before what they depend on;
the schemas the new project no longer has are dropped last in teardown
(without CASCADE: one still holding something makes the statement fail).
setup creates, dependencies first (step 1 + depth; step 0 creates the
schemas the old snapshot does not show), each object with its indexes one
step later. Statements are the objects' own SQL, qualified. Dropping a
table or source loses its data: such a row is destructive.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..model import KEY
from .operations import STATEFUL, Planning, cluster_creations, operations
from .statements import MOVED, kind_keyword, qualified, quoted, schema_name, to_render

# The objects each phase orders, and by what: what they read first, or (dropping) what reads them first.
GROUPS = {"teardown": (("Dropped",), "reads_reversed"), "setup": (("Created",), "depends_on")}


def in_place_plan(p: Planning) -> tuple[DataFrame, DataFrame]:
    """The operations, and no statement reads anything under another schema (``statements.MOVED``)."""
    d = p.dialect
    dropped = p.stepped("teardown", p.decided("Dropped").join(p.deployed.select(*KEY, "kind"), list(KEY)))
    teardown = operations(
        dropped, "teardown", 1, "DROP", "object", step=F.col("step"),
        statement=d.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY)),
        destructive=F.col("kind").isin(*STATEFUL))
    last = dropped.groupBy("database").agg((F.max("step") + 1).alias("step"))
    emptied = p.decided("EmptiedSchema", False).join(last, "database", "left").withColumn(
        "step", F.coalesce("step", F.lit(0)))
    why_dropped = p.decided("Dropped").select(*KEY, F.col("reason").alias("dropped_reason"))
    setup = p.stepped("setup", p.decided("Created").join(why_dropped, list(KEY), "left")
                      .withColumn("reason", F.coalesce("reason", "dropped_reason")).join(p.new, list(KEY)))
    parts = [
        teardown,
        operations(emptied, "teardown", 1, "DROP", "schema", step=F.col("step"), target_schema=F.col("schema"),
                   statement=d.render("drop_empty_schema", schema=schema_name(d, "database", "schema"))),
        operations(p.decided("CreatedSchema", False), "setup", 2, "CREATE", "schema", step=F.lit(0),
                   target_schema=F.col("schema"),
                   statement=d.render("create_schema", schema=schema_name(d, "database", "schema"))),
        operations(setup, "setup", 2, "CREATE", "object", step=F.col("step") + 1, target_schema=F.col("schema"),
                   render=to_render(setup)),
    ]
    if d.clusters:
        parts.append(cluster_creations(p.decided("CreatedCluster", False).select(F.col("cluster").alias("name")),
                                       p, "setup", 2))
        indexes = p.indexes.join(setup.select(*KEY, "step"), list(KEY))
        parts.append(operations(
            indexes, "setup", 2, "CREATE", "index", step=F.col("step") + 2, name=F.col("index_name"),
            target_schema=F.col("schema"), kind=F.lit(None).cast("string"),
            statement=d.index_statement(index=quoted("index_name"), cluster=quoted("cluster"),
                               object=qualified(*KEY))))
    moved = p.dependencies.select(*MOVED[:6]).withColumn("dep_target", F.lit(None).cast("string")).limit(0)
    return reduce(DataFrame.unionByName, parts), moved
