"""One decision per object, schema and cluster: the ``decisions`` table, and the checks that it is complete.

The plan's rules derive many tuples about an object (``Redeployed``,
``Removed``, ``Staged``, ...); most are steps on the way. A few are
*terminal*: they say what finally happens to the object. Each terminal
relation maps to one decision (each strategy's ``objects``, ``schemas`` and
``clusters`` in ``plan.strategies``); a subject no terminal relation names is
``kept``. Two different decisions for one object is a contradiction in the
rules, and fails the run.

Every row also lists the ``ddl_plan`` steps (``seq``) that carry its decision
out: an object's own rows; an index's row goes to its object when that is not
kept, else to its cluster; an object with no row of its own (dropped with its
schema or cluster) takes the rows of its schema, else of its cluster. Before
the run publishes, three invariants hold (``invariants``): each subject has
one decision, each plan row belongs to a subject that is not kept, and each
subject that is not kept has a plan row.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import APPLY_MANAGED, KEY
from .strategies import PLANNERS

KEPT = "kept"
DECISION_COLUMNS = T.StructType([
    T.StructField("subject", T.StringType()),    # object | schema | cluster
    *(T.StructField(c, T.StringType()) for c in KEY),  # a schema: name null; a cluster: database, schema null
    T.StructField("kind", T.StringType()),       # an object's kind (the new project's, else the deployed one)
    T.StructField("cluster", T.StringType()),    # an object's cluster (likewise)
    T.StructField("decision", T.StringType()),
    T.StructField("relation", T.StringType()),   # the plan relation that decided it (null: kept)
    T.StructField("rule", T.StringType()),       # the rule that derived that tuple (plan_decisions)
    T.StructField("reason", T.StringType()),     # why: the plan row's reason, or why a changed object is kept
    T.StructField("steps", T.StringType()),      # the ddl_plan seq numbers that carry it out: "5,9,15" (kept: null)
])

INVARIANTS = ("every object has one decision", "every plan row carries out a decision",
              "every decision but kept has a plan row")


def decided_subjects(strategy: str, decisions: DataFrame, plan: DataFrame, old_objects: DataFrame,
                     new_objects: DataFrame, deployed: DataFrame, dirty: DataFrame, changed: DataFrame,
                     indexes: DataFrame, apply_managed_left: bool) -> DataFrame:
    """Every object of both projects, every schema and cluster they or the plan name: its one decision, the
    rule behind it, and why a changed object is kept (``kept_reason``); ``decision_table`` adds the steps.

    ``decisions``: the ``plan_decisions`` rows; ``plan``: the ``ddl_plan`` rows (``seq``); ``deployed``: the
    keys of what the database holds before the plan; ``dirty``/``changed``: keys (``change``) of the dirty
    and changed objects; ``indexes``: both projects' (key, index_name, cluster).

    A run holds this before ``decision_table`` reads it three times: as one query the two took the
    optimizer most of the bundled example's time in Spark jobs (15 of 19 s, on a busy machine)."""
    subjects = _subjects(old_objects, new_objects, indexes, plan)
    decided = _decided(strategy, decisions, subjects.join(deployed.withColumn("deployed", F.lit(True)), list(KEY),
                                                          "left"))
    return _kept_reasons(decided, dirty, changed, strategy, apply_managed_left)


def decision_table(decided: DataFrame, plan: DataFrame, indexes: DataFrame) -> DataFrame:
    """The ``decisions`` rows: each of ``decided_subjects``' with the plan rows that carry its decision out."""
    return _with_steps(decided, plan, indexes).select(*DECISION_COLUMNS.names)


def invariants(table: DataFrame, plan: DataFrame) -> dict[str, DataFrame]:
    """The three completeness checks of a held decisions table, each a frame of ``detail`` rows (empty when
    it holds)."""
    shown = F.concat(F.col("subject"), F.lit(" "), F.concat_ws(".", *KEY))
    two = (table.where(F.col("decision").contains("|"))
           .select(F.concat(shown, F.lit(": "), F.regexp_replace("decision", r"\|", " and ")).alias("detail")))
    undone = (table.where((F.col("decision") != KEPT) & F.col("steps").isNull())
              .select(F.concat(shown, F.lit(" is "), F.col("decision"), F.lit(" by no plan row")).alias("detail")))
    owned = (table.where(F.col("decision") != KEPT)
             .select(F.explode(F.split("steps", ",")).alias("seq")).select(F.col("seq").cast("int").alias("seq")))
    orphans = (plan.join(owned, "seq", "left_anti")
               .select(F.concat(F.lit("row "), F.col("seq"), F.lit(" ("), F.col("action"), F.lit(" "),
                                F.col("object_type"), F.lit(" "), F.concat_ws(".", *KEY),
                                F.lit(") carries out no decision")).alias("detail")))
    return dict(zip(INVARIANTS, (two, orphans, undone)))


def _subjects(old_objects: DataFrame, new_objects: DataFrame, indexes: DataFrame, plan: DataFrame) -> DataFrame:
    """subject, key, kind, cluster, in_new: every object of both projects (the new project's kind and cluster
    first), every schema they have and every cluster they or their indexes run on, or the plan names."""
    null = F.lit(None).cast("string")
    new = new_objects.select(*KEY, "kind", "cluster", F.lit(True).alias("in_new"))
    old = (old_objects.join(new_objects.select(*KEY), list(KEY), "left_anti")
           .select(*KEY, "kind", "cluster", F.lit(False).alias("in_new")))
    objects = new.unionByName(old)
    named = plan.where(F.col("object_type").isin("schema", "cluster")).select("object_type", "database", "schema",
                                                                                "name")
    schemas = (objects.select("database", "schema").unionByName(
        named.where(F.col("object_type") == "schema").select("database", "schema")).distinct()
        .select(F.lit("schema").alias("subject"), "database", "schema", null.alias("name")))
    clusters = (objects.select(F.col("cluster").alias("name")).unionByName(indexes.select(F.col("cluster").alias("name")))
                .unionByName(named.where(F.col("object_type") == "cluster").select("name"))
                .where(F.col("name").isNotNull()).distinct()
                .select(F.lit("cluster").alias("subject"), null.alias("database"), null.alias("schema"), "name"))
    others = schemas.unionByName(clusters).select("*", null.alias("kind"), null.alias("cluster"),
                                                   F.lit(True).alias("in_new"))
    return objects.withColumn("subject", F.lit("object")).unionByName(others)


def _decided(strategy: str, decisions: DataFrame, subjects: DataFrame) -> DataFrame:
    """Each subject's decision: an object's from all its terminal relations (several joined by ``|``, a
    contradiction the invariants report), a schema's or cluster's from the first that holds; none: kept."""
    null = F.lit(None).cast("string")
    planner = PLANNERS[strategy]
    terminal = ([("object", r, a, b, only) for r, a, b, only in planner.objects]
                + [("schema", r, d, d, False) for r, d in planner.schemas]
                + [("cluster", r, d, d, False) for r, d in planner.clusters])
    subject, rank = null, F.lit(None).cast("int")
    for at, (kind, relation, *_) in enumerate(terminal):
        subject = F.when(F.col("relation") == relation, kind).otherwise(subject)
        rank = F.when(F.col("relation") == relation, at).otherwise(rank)
    tuples = decisions.where(F.col("relation").isin(*(t[1] for t in terminal))).select(
        subject.alias("subject"), *(F.when(subject != "cluster", F.col(k)).alias(k) for k in ("database", "schema")),
        F.when(subject == "object", F.col("name")).when(subject == "cluster", F.col("cluster")).alias("name"),
        "relation", "rule", rank.alias("rank"))
    deployed = F.coalesce(F.col("deployed"), F.lit(False))
    decision = null
    for at, (_, _, when_deployed, when_new, only_deleted) in enumerate(terminal):
        mine = (F.col("rank") == at) & (~F.col("in_new") if only_deleted else F.lit(True))
        decision = F.when(mine, F.when(deployed, when_deployed).otherwise(when_new)).otherwise(decision)
    keys = ["subject", *KEY]
    joined = (subjects.alias("s").join(tuples.alias("t"), [F.col(f"s.{k}").eqNullSafe(F.col(f"t.{k}")) for k in keys],
                                       "left")
              .select("s.*", "t.relation", "t.rule", "t.rank").withColumn("decision", decision))
    decided_rank = F.when(F.col("decision").isNotNull(), F.col("rank"))
    first = F.min_by(F.struct("decision", "relation", "rule"), decided_rank)
    everything = F.array_join(F.array_sort(F.collect_set("decision")), "|")
    return (joined.groupBy(*keys, "kind", "cluster").agg(everything.alias("all"), first.alias("by"))
            .select(*keys, "kind", "cluster",
                    F.when(F.col("by").isNull(), KEPT).when(F.col("subject") == "object", F.col("all"))
                    .otherwise(F.col("by.decision")).alias("decision"),
                    F.col("by.relation").alias("relation"), F.col("by.rule").alias("rule")))


def _kept_reasons(decided: DataFrame, dirty: DataFrame, changed: DataFrame, strategy: str,
                  apply_managed_left: bool) -> DataFrame:
    """Why a changed or dirty object is kept all the same (the plan rows give the reason of the others)."""
    reason = F.lit(None).cast("string")
    dirty_kept = PLANNERS[strategy].dirty_kept
    if dirty_kept:
        before, after = dirty_kept.split("{kind}")
        reason = F.when(F.col("dirty"), F.concat(F.lit(before), F.col("kind"), F.lit(after)))
    if apply_managed_left:
        reason = F.when(F.col("change").isNotNull() & F.col("kind").isin(*APPLY_MANAGED), F.concat(
            F.col("change"), F.lit("; created, changed and dropped by mz-deploy's apply, never by a deploy"))
        ).otherwise(reason)
    kept = (F.col("decision") == KEPT) & (F.col("subject") == "object")
    return (decided.join(dirty.select(*KEY, F.lit(True).alias("dirty")), list(KEY), "left")
            .join(changed.select(*KEY, "change"), list(KEY), "left")
            .withColumn("kept_reason", F.when(kept, reason)).drop("dirty", "change"))


def _with_steps(decided: DataFrame, plan: DataFrame, indexes: DataFrame) -> DataFrame:
    """The decisions with the plan rows that carry each out (``steps``) and the first row's reason.

    A row's candidates, in order: an object, schema or cluster row its own subject; an index row its
    object, then its cluster. The first whose decision is not kept owns it. An object that is not kept and
    owns no row takes its schema's rows, else its cluster's (dropped with them)."""
    null = F.lit(None).cast("string")
    index_of = indexes.select("database", "schema", F.col("index_name").alias("name"), F.col("name").alias("on"),
                              F.col("cluster").alias("index_cluster")).distinct()
    rows = (plan.select("seq", "object_type", *KEY, "reason")
            .join(index_of, list(KEY), "left"))
    is_index = F.col("object_type") == "index"
    own = rows.select("seq", "reason", F.lit(0).alias("priority"),  # an index's own subject: its object
                      F.when(is_index, "object").otherwise(F.col("object_type")).alias("subject"),
                      F.when(F.col("object_type") != "cluster", F.col("database")).alias("database"),
                      F.when(F.col("object_type") != "cluster", F.col("schema")).alias("schema"),
                      F.when(is_index, F.col("on")).when(F.col("object_type") != "schema", F.col("name"))
                      .alias("name"))
    index_cluster = rows.where(is_index).select("seq", "reason", F.lit(1).alias("priority"),
                                                F.lit("cluster").alias("subject"), null.alias("database"),
                                                null.alias("schema"), F.col("index_cluster").alias("name"))
    candidates = own.unionByName(index_cluster)
    keys = ["subject", *KEY]
    live = decided.where(F.col("decision") != KEPT)
    owned = (candidates.where(F.col("name").isNotNull() | F.col("schema").isNotNull())
             .alias("c").join(live.select(*keys, "cluster").alias("d"),
                              [F.col(f"c.{k}").eqNullSafe(F.col(f"d.{k}")) for k in keys])
             .groupBy("seq").agg(F.min_by(F.struct(*(F.col(f"c.{k}").alias(k) for k in keys), "c.reason"),
                                          "c.priority").alias("o"))
             .select("seq", "o.*"))
    by_subject = owned.groupBy(*keys).agg(
        F.array_join(F.array_sort(F.collect_list(F.col("seq").cast("int"))), ",").alias("steps"),
        F.min_by("reason", F.when(F.col("reason").isNull(), 1).otherwise(0) * 1_000_000_000 + F.col("seq"))
        .alias("row_reason"))
    # Each subject's own rows; a live object that owns none takes its schema's, else its cluster's: the
    # three lookups of each decision in one join, the first found wins (one read of by_subject, not four).
    live_object = (F.col("decision") != KEPT) & (F.col("subject") == "object")

    def lookup(priority: int, subject, database, schema, name) -> F.Column:
        return F.struct(F.lit(priority).alias("priority"), subject.alias("l_subject"), database.alias("l_database"),
                        schema.alias("l_schema"), name.alias("l_name"))
    lookups = decided.select(*keys, F.explode(F.array(
        lookup(0, F.col("subject"), F.col("database"), F.col("schema"), F.col("name")),
        F.when(live_object, lookup(1, F.lit("schema"), F.col("database"), F.col("schema"), null)),
        F.when(live_object & F.col("cluster").isNotNull(), lookup(2, F.lit("cluster"), null, null, F.col("cluster"))),
    )).alias("l")).where(F.col("l").isNotNull()).select(*keys, "l.*")
    found = (lookups.alias("l").join(by_subject.alias("b"), [F.col(f"l.l_{k}").eqNullSafe(F.col(f"b.{k}"))
                                                             for k in keys])
             .groupBy(*(F.col(f"l.{k}") for k in keys))
             .agg(F.min_by(F.struct("b.steps", F.when(F.col("l.priority") == 0, F.col("b.row_reason"))
                                    .alias("row_reason")), "l.priority").alias("f"))
             .select(*keys, "f.*"))
    steps = found.alias("s")
    joined = decided.alias("d").join(steps, [F.col(f"d.{k}").eqNullSafe(F.col(f"s.{k}")) for k in keys], "left")
    return joined.select(*(F.col(f"d.{k}").alias(k) for k in keys), "d.kind", "d.cluster", "d.decision",
                         "d.relation", "d.rule", F.coalesce("s.row_reason", "d.kept_reason").alias("reason"),
                         "s.steps")
