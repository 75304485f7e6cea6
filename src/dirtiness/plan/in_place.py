"""The in-place strategy (Moose-style): ``teardown`` then ``setup``.

teardown drops what ``redeploy.in_place`` says: every dirty view,
materialized view and sink that is deployed, dirty stateful objects
(tables, sources) that changed or were deleted, and every deployed object
that reads one of those, dependents before what they depend on. setup
creates every dropped object the new project still has, and every dirty
view, materialized view and sink, and every added or changed stateful
object, dependencies first (step 1 + depth; step 0 creates the schemas the
old snapshot does not show), each with its indexes one step later. The
schemas the new project no longer has are dropped last in teardown
(without CASCADE: one still holding something makes the statement fail).
Statements are the objects' own SQL, qualified. Dropping a table or source
loses its data: such a row is destructive. This strategy never replaces an
object in place: a dirty replacement materialized view is dropped and
created again like any other, and so are its readers.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..model import KEY
from . import redeploy
from .operations import RECREATABLE, STATEFUL, PlanInputs, cluster_creations, operations
from .redeploy import SCHEMA, Catalog
from .statements import (
    kind_keyword,
    qualified,
    quoted,
    schema_name,
    with_object_statements,
)
from .steps import dependency_edges, with_steps


def in_place_plan(inputs: PlanInputs) -> DataFrame:
    d = inputs.dialect
    catalog = Catalog.of(inputs)
    dropped, _ = redeploy.in_place(inputs, catalog)
    new = catalog.new
    dirty = inputs.dirty_stmts.select(*KEY)
    created = (new.join(dirty, list(KEY), "left_semi")
               .where(F.col("kind").isin(*RECREATABLE) | F.col("change").isin("added", "modified"))
               .withColumn("reason", F.lit("dirty"))
               .unionByName(new.join(dropped.select(*KEY, "reason"), list(KEY)).join(dirty, list(KEY), "left_anti"))
               .withColumn("target", F.col("schema")).withColumn("staged_cluster", F.lit(None).cast("string"))
               .withColumn("replacing", F.lit(False)))
    stepped = with_steps({
        "teardown": (dropped, dependency_edges(catalog.readers, dependents_first=True)),
        "setup": (created, dependency_edges(inputs.new.dependencies)),
    }, inputs.holding)
    teardown = operations(
        stepped["teardown"], "teardown", 1, "DROP", "object", step=F.col("step"),
        statement=d.render("drop_object", kind=kind_keyword("kind"), object=qualified(*KEY)),
        destructive=F.col("kind").isin(*STATEFUL))
    last = stepped["teardown"].groupBy("database").agg((F.max("step") + 1).alias("step"))
    emptied = catalog.emptied_schemas(dropped).join(last, "database", "left").withColumn(
        "step", F.coalesce("step", F.lit(0)))
    setup = with_object_statements(stepped["setup"], None, d, inputs.verbatim_kinds)
    unknown = created.select(*SCHEMA).distinct().join(catalog.known_schemas, SCHEMA, "left_anti")
    parts = [
        teardown,
        operations(emptied, "teardown", 1, "DROP", "schema", step=F.col("step"), target_schema=F.col("schema"),
                   statement=d.render("drop_empty_schema", schema=schema_name(d, "database", "schema"))),
        operations(unknown, "setup", 2, "CREATE", "schema", step=F.lit(0), target_schema=F.col("schema"),
                   statement=d.render("create_schema", schema=schema_name(d, "database", "schema"))),
        operations(setup, "setup", 2, "CREATE", "object", step=F.col("step") + 1, target_schema=F.col("schema"),
                   statement=F.col("statement")),
    ]
    if d.clusters:
        parts.append(cluster_creations(catalog.missing_clusters, d, "setup", 2))
        indexes = inputs.new.indexes.join(setup.select(*KEY, "step"), list(KEY))
        parts.append(operations(
            indexes, "setup", 2, "CREATE", "index", step=F.col("step") + 2, name=F.col("index_name"),
            target_schema=F.col("schema"), kind=F.lit(None).cast("string"),
            statement=d.render("create_index", index=quoted("index_name"), cluster=quoted("cluster"),
                               object=qualified(*KEY))))
    return reduce(DataFrame.unionByName, parts)
