"""Every check of a plan before it is published, and what the run reports about it: one Spark query.

- statements the plan cannot write (SQL that cannot be rewritten, a
  staging name longer than the database allows): exit 2;
- invariants every plan must satisfy, computed from the plan rows and the
  snapshots alone, not from the rules' decisions, so a mistake in the rules
  cannot hide itself: a violation is a bug, exit 1;
- destructive operations without ``--allow-destructive``: exit 3;
- and the summary's figures: operations per phase, dirty objects the plan
  leaves alone, statements carried verbatim.

Each check is a frame of ``detail`` rows; the first few of each and their
counts come back from one collect (``inputs.snapshot.collect_problems``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import InputError, PolicyError
from ..inputs.snapshot import Snapshot, collect_problems, read_problems
from ..model import APPLY_MANAGED, KEY
from .decision_table import invariants as decision_invariants
from .operations import SCHEMA

CREATING = ("stage", "post-swap", "setup")  # phases that build dependencies before dependents
DROPPING = ("teardown", "cleanup")         # phases that drop dependents before dependencies
RECREATING = ("CREATE", "CREATE REPLACEMENT", "APPLY REPLACEMENT", "REPOINT")
SHOWN = {"statements": 5, "invariant": 3, "destructive": 5, "attention": 20, "verbatim": 20}
CHECK_COLUMNS = ("problem", "n", "detail", "total")  # a row of ``plan_checks``' frame
# The checks whose findings depend on the plan's rendered statements (``error``, ``verbatim``); every other one
# reads only what a plan row is (its subject, action, phase, step) and the snapshots' facts
OF_STATEMENTS = ("statements", "verbatim")


class InvariantError(RuntimeError):
    """The plan breaks an invariant: named, with examples."""


@dataclass
class PlanContext:
    """What the checks read beside the plan rows."""

    old: Snapshot
    new: Snapshot
    deployed: DataFrame       # key, kind, cluster: what the database holds before the plan
    dirty_stmts: DataFrame    # key, kind, change
    changed: DataFrame        # key, change
    strategy: str
    max_identifier_length: int | None
    apply_managed_left: bool = False  # the rules leave apply-managed changes out of the dirty sets (mz-deploy)
    decisions: DataFrame | None = None  # the decisions table (plan.decision_table): checked complete


@dataclass
class PlanReport:
    """What the checks found, read back from one collect."""

    found: dict[str, tuple[list[str], int]]
    invariants: list[str]
    phases: dict[str, int]
    rows: list[dict]  # as collected (``CHECK_COLUMNS``): kept for a run that takes this plan (``store.taken``)

    def details(self, name: str) -> tuple[list[str], int]:
        return self.found.get(name, ([], 0))

    def enforce(self, allow_destructive: bool) -> None:
        """Raise what the plan cannot be published with: unwritable statements, a broken invariant, then
        destructive operations without permission."""
        errors, total = self.details("statements")
        if total:
            more = " (and more)" if total > SHOWN["statements"] else ""
            raise InputError("the plan cannot write these statements: " + "; ".join(errors) + more)
        for invariant in self.invariants:
            examples, total = self.details(f"invariant:{invariant}")
            if total:
                raise InvariantError(f"plan invariant violated: {invariant}: {'; '.join(sorted(examples))}")
        names, total = self.details("destructive")
        if total and not allow_destructive:
            more = ", ..." if total > SHOWN["destructive"] else ""
            raise PolicyError(f"the plan drops stateful objects, refused without --allow-destructive: "
                              f"{', '.join(names)}{more}")

    @property
    def needing_attention(self) -> list[str]:
        return self.details("attention")[0]

    @property
    def verbatim(self) -> list[str]:
        return self.details("verbatim")[0]


def plan_checks(plan: DataFrame, context: PlanContext) -> tuple[DataFrame, list[str]]:
    """The frame of every check's first details and counts (to collect or hold), and the invariants in order."""
    invariants = _invariants(plan, context)
    checks = {
        **{f"invariant:{name}": frame for name, frame in invariants.items()},
        "destructive": plan.where(F.col("destructive")).select(F.coalesce(
            F.concat(_show(*KEY), F.lit(" ("), F.col("kind"), F.lit(")")),
            F.concat(_show(*SCHEMA), F.lit(" (the swapped-out schema, with the deleted tables or sources it holds)")))
            .alias("detail"), _seq_order()),
        **_of_statements(plan, context.max_identifier_length),
    }
    if context.strategy == "blue-green":
        checks["attention"] = _needing_attention(plan, context)
    phases = {f"phase:{order}:{name}": plan.where((F.col("phase") == name) & (F.col("phase_order") == order))
              for order, name in PHASES}
    return collect_problems(checks, max(SHOWN.values()), counted=phases), list(invariants)


def statement_checks(plan: DataFrame, max_identifier_length: int | None) -> DataFrame:
    """The frame of the ``OF_STATEMENTS`` checks alone: what a plan whose rows differ from a checked one's only
    in their statements finds again (``store.taken``), the rest of its findings being that one's."""
    return collect_problems(_of_statements(plan, max_identifier_length), max(SHOWN.values()))


def _of_statements(plan: DataFrame, max_identifier_length: int | None) -> dict[str, DataFrame]:
    return {
        "statements": _unwritable(plan, max_identifier_length),
        "verbatim": plan.where(F.col("verbatim")).select(F.concat(
            F.col("seq"), F.lit(" "), F.col("phase"), F.lit(" "), _show(*KEY), F.lit(" ("), F.col("kind"), F.lit(")"))
            .alias("detail"), _seq_order()),
    }


def _seq_order() -> F.Column:
    return F.lpad(F.col("seq").cast("string"), 12, "0").alias("order")


PHASES = ((1, "stage"), (2, "swap"), (3, "post-swap"), (4, "cleanup"), (1, "teardown"), (2, "setup"))


def plan_report(rows, invariants: list[str]) -> PlanReport:
    """The report from the rows of ``plan_checks``' frame."""
    names = {"statements", *(f"invariant:{i}" for i in invariants), "destructive", "verbatim", "attention"}
    counted = {f"phase:{order}:{name}": None for order, name in PHASES}
    found = read_problems(rows, dict.fromkeys(names), counted)
    for name in list(found):
        if name in SHOWN or name.startswith("invariant:"):
            limit = SHOWN["invariant" if name.startswith("invariant:") else name]
            found[name] = (found[name][0][:limit], found[name][1])
    phases = {name: found[f"phase:{order}:{name}"][1] for order, name in PHASES if found[f"phase:{order}:{name}"][1]}
    return PlanReport(found, invariants, phases, [{c: row[c] for c in CHECK_COLUMNS} for row in rows])


def _show(*columns) -> F.Column:
    return F.concat_ws(".", *columns)


def _unwritable(plan: DataFrame, max_identifier_length: int | None) -> DataFrame:
    errors = plan.where(F.col("error").isNotNull()).select(F.col("error").alias("detail"))
    if max_identifier_length:
        longest = F.concat(F.col("target_schema"), F.lit("_swap"))  # the parking name of a swap is the longest
        errors = errors.unionByName(
            plan.where((F.col("object_type") == "schema") & (F.col("target_schema") != F.col("schema"))
                       & (F.octet_length(longest) > max_identifier_length))
            .select(F.concat(F.concat_ws(".", "database", "schema"), F.lit(": the staging name "), longest,
                             F.lit(f" is longer than {max_identifier_length} bytes")).alias("detail")))
    return errors.distinct()


def _needing_attention(plan: DataFrame, context: PlanContext) -> DataFrame:
    """Dirty objects the blue-green plan does not touch (a changed table outside the swapped schemas, say)."""
    kinds = context.new.objects.select(*KEY, "kind").unionByName(
        context.old.objects.select(*KEY, "kind").join(context.new.objects.select(*KEY), list(KEY), "left_anti"))
    touched = plan.where(F.col("object_type") == "object").select(*KEY)
    swapped = plan.where((F.col("object_type") == "schema") & (F.col("action") == "SWAP")).select(*SCHEMA)
    return (context.dirty_stmts.select(*KEY, "change").join(kinds, list(KEY))
            .join(touched, list(KEY), "left_anti").join(swapped, SCHEMA, "left_anti")
            .select(F.concat(_show(*KEY), F.lit(" ("), F.col("kind"), F.lit(", "),
                             F.coalesce("change", F.lit("dirty")), F.lit(")")).alias("detail"),
                    F.concat_ws("\u0000", *KEY).alias("order")))


# --- invariants ------------------------------------------------------------------


def _invariants(plan: DataFrame, c: PlanContext) -> dict[str, DataFrame]:
    removed = _removed(plan, c)
    checks = {
        "every changed object of the new project is dirty": _changed_not_dirty(c),
        "each object appears at most once per phase": _repeated(plan),
        "every dependency between planned objects is respected by their steps": _out_of_order(plan, c),
        "nothing the plan removes is still read by an object that stays": _read_after_removal(plan, c, removed),
        "everything the plan removes that the new project keeps is created again": _lost(plan, c, removed),
        "every schema exists before an object is created in it": _schemaless(plan, c),
    }
    if c.strategy == "blue-green":
        checks["every staged schema and cluster is swapped"] = _not_swapped(plan, c)
    if c.decisions is not None:
        checks.update(decision_invariants(c.decisions, plan))
    return checks


def _removed(plan: DataFrame, c: PlanContext) -> DataFrame:
    """Deployed objects the plan drops, or swaps away with their schema or cluster (then drops)."""
    deployed = c.deployed
    swapped_schemas = plan.where((F.col("action") == "SWAP") & (F.col("object_type") == "schema")).select(*SCHEMA)
    swapped_clusters = plan.where((F.col("action") == "SWAP") & (F.col("object_type") == "cluster")).select(
        F.col("name").alias("cluster"))
    dropped = plan.where((F.col("action") == "DROP") & (F.col("object_type") == "object")).select(*KEY)
    replaced = plan.where(F.col("action") == "APPLY REPLACEMENT").select(*KEY)  # moves to the new cluster
    return (deployed.join(swapped_schemas, SCHEMA, "left_semi").select(*KEY)
            .unionByName(deployed.join(swapped_clusters, "cluster", "left_semi").select(*KEY)
                         .join(replaced, list(KEY), "left_anti"))
            .unionByName(dropped.join(deployed, list(KEY), "left_semi")).distinct())


def _recreated(plan: DataFrame) -> DataFrame:
    return plan.where((F.col("object_type") == "object") & F.col("action").isin(*RECREATING)).select(*KEY).distinct()


def _read_after_removal(plan: DataFrame, c: PlanContext, removed: DataFrame) -> DataFrame:
    """A reader must be removed with what it reads (and created again), or keep its identity while it
    changes what it reads (a replacement applied, a sink repointed)."""
    kept_identity = (plan.where((F.col("object_type") == "object")
                                & F.col("action").isin("APPLY REPLACEMENT", "REPOINT")).select(*KEY))
    edges = c.old.dependencies.unionByName(c.new.dependencies).select(
        *KEY, *(F.col(f"dep_{k}").alias(f"s_{k}") for k in KEY))
    readers = (edges.join(removed.select(*(F.col(k).alias(f"s_{k}") for k in KEY)), [f"s_{k}" for k in KEY])
               .join(c.deployed.select(*KEY), list(KEY), "left_semi")
               .join(removed, list(KEY), "left_anti")
               .join(kept_identity, list(KEY), "left_anti"))
    return readers.select(F.concat(_show(*KEY), F.lit(" reads "), _show(*(f"s_{k}" for k in KEY))).alias("detail"))


def _lost(plan: DataFrame, c: PlanContext, removed: DataFrame) -> DataFrame:
    kept = removed.join(c.new.objects.select(*KEY), list(KEY), "left_semi")
    return kept.join(_recreated(plan), list(KEY), "left_anti").select(_show(*KEY).alias("detail"))


def _schemaless(plan: DataFrame, c: PlanContext) -> DataFrame:
    order = F.col("phase_order") * 1_000_000 + F.col("step")
    created = (plan.where((F.col("object_type") == "schema") & (F.col("action") == "CREATE"))
               .groupBy("database", F.col("target_schema").alias("target")).agg(F.min(order).alias("ready")))
    known = c.old.objects.select("database", F.col("schema").alias("target")).distinct().withColumn(
        "ready", F.lit(-1))
    ready = known.unionByName(created).groupBy("database", "target").agg(F.min("ready").alias("ready"))
    creates = plan.where((F.col("object_type").isin("object", "index")) & F.col("action").isin(
        "CREATE", "CREATE REPLACEMENT")).select(*KEY, F.coalesce("target_schema", "schema").alias("target"),
                                                order.alias("at"))
    swaps = plan.where((F.col("object_type") == "schema") & (F.col("action") == "SWAP"))
    for side in ("schema", "target_schema"):  # a swap needs both schemas
        creates = creates.unionByName(swaps.select(*KEY, F.col(side).alias("target"), order.alias("at")))
    return (creates.join(ready, ["database", "target"], "left")
            .where(F.col("ready").isNull() | (F.col("ready") >= F.col("at")))
            .select(F.concat(_show(*KEY), F.lit(" is created in "), _show("database", "target"),
                             F.lit(", which does not exist yet")).alias("detail")))


def _changed_not_dirty(c: PlanContext) -> DataFrame:
    changed = c.changed.where(F.col("change") != "deleted").select(*KEY)
    if c.apply_managed_left:
        changed = changed.join(c.new.objects.where(F.col("kind").isin(*APPLY_MANAGED)).select(*KEY), list(KEY),
                               "left_anti")
    return (changed.join(c.dirty_stmts.select(*KEY), list(KEY), "left_anti")
            .select(_show(*KEY).alias("detail")))


def _repeated(plan: DataFrame) -> DataFrame:
    return (plan.groupBy("phase", "object_type", "database", "schema", "name", "target_schema").count()
            .where(F.col("count") > 1)
            .select(F.concat(F.col("phase"), F.lit(": "), F.col("object_type"), F.lit(" "),
                             _show("database", "schema", "name")).alias("detail")))


def _out_of_order(plan: DataFrame, c: PlanContext) -> DataFrame:
    objects = plan.where(F.col("object_type") == "object").select("phase", *KEY, "step")
    everything = c.old.dependencies.unionByName(c.new.dependencies)
    found = []
    for phases, dependencies, later in ((CREATING, c.new.dependencies, "reader"), (DROPPING, everything, "source")):
        reader = objects.where(F.col("phase").isin(*phases)).select(
            "phase", *(F.col(k).alias(f"r_{k}") for k in KEY), F.col("step").alias("r_step"))
        source = objects.select("phase", *(F.col(k).alias(f"s_{k}") for k in KEY), F.col("step").alias("s_step"))
        edges = dependencies.select(*(F.col(k).alias(f"r_{k}") for k in KEY),
                                    *(F.col(f"dep_{k}").alias(f"s_{k}") for k in KEY))
        pairs = edges.join(reader, [f"r_{k}" for k in KEY]).join(source, ["phase", *(f"s_{k}" for k in KEY)])
        wrong = F.col("r_step") <= F.col("s_step") if later == "reader" else F.col("r_step") >= F.col("s_step")
        found.append(pairs.where(wrong).select(F.concat(
            F.col("phase"), F.lit(": "), _show(*(f"r_{k}" for k in KEY)), F.lit(" (step "), F.col("r_step"),
            F.lit(") reads "), _show(*(f"s_{k}" for k in KEY)), F.lit(" (step "), F.col("s_step"), F.lit(")"))
            .alias("detail")))
    return reduce(DataFrame.unionByName, found)


def _not_swapped(plan: DataFrame, c: PlanContext) -> DataFrame:
    """Schemas receiving a staged copy (not a replacement), and staging copies of the clusters the database
    has, each have a SWAP (a cluster nothing deployed runs on is created under its own name)."""
    staged_schemas = (plan.where((F.col("phase") == "stage") & (F.col("object_type") == "object")
                                 & (F.col("action") == "CREATE") & (F.col("target_schema") != F.col("schema")))
                      .select("object_type", *SCHEMA).distinct().withColumn("object_type", F.lit("schema"))
                      .withColumn("name", F.lit(None).cast("string")))
    deployed = (c.deployed.select("cluster").unionByName(c.old.indexes.select("cluster"))
                .select(F.col("cluster").alias("name")))
    staged_clusters = (plan.where((F.col("phase") == "stage") & (F.col("object_type") == "cluster"))
                       .join(deployed, "name", "left_semi").select("object_type", *SCHEMA, "name"))
    keys = ["object_type", "database", "schema", "name"]
    swapped = plan.where(F.col("phase") == "swap").select(*keys).alias("sw")
    staged = staged_schemas.unionByName(staged_clusters).select(*keys).alias("st")
    same = [F.col(f"st.{k}").eqNullSafe(F.col(f"sw.{k}")) for k in keys]
    return (staged.join(swapped, same, "left_anti")
            .select(F.concat(F.col("object_type"), F.lit(" "), _show("database", "schema", "name")).alias("detail")))
