"""Every object's SQL read on Spark: checked against its declared dependencies and cluster, or the source of them.

Statements are parsed where the rows are, in batches through Arrow
(``analyser``), and only the rows that carry SQL: by Spark's Python workers
for table-form snapshots (one job for both), on the driver for documents,
which are there already. The checks are frames the caller holds with the
resolved snapshots, so their first problems of each kind cost no job of
their own.

- A statement that does not parse, or that creates another object or
  another kind of object, is an error naming the object and the position,
  unless its kind is listed in ``sql.verbatim_kinds`` (then it is carried
  verbatim into the plan, and the plan row says so).
- The relations a statement reads must be exactly its ``depends_on``
  (references into ``external_databases`` are exempt); a mismatch is an
  error, or a warning with ``sql.dependency_mismatch: warn`` (the plan then
  orders by both). An object with SQL and no ``depends_on`` gets the
  dependencies its SQL names.
- ``IN CLUSTER`` must agree with the object's ``cluster``; an object with no
  ``cluster`` takes the statement's.
- The dialect's limits: kinds it has, clusters and indexes only where it has them
  (a deployed state read from a database may list its indexes: nothing creates them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY
from ..sql.statement import SqlError, parse
from .snapshot import Snapshot, missing_dependencies

MISMATCH = "dependencies that do not match the SQL"
DEP = [f"dep_{k}" for k in KEY]

ANALYSIS = T.StructType([T.StructField(c, T.StringType())
                         for c in ("side", "found", *KEY, "error", "sql_cluster", *DEP)])
ARROW_ANALYSIS = pa.schema([pa.field(f.name, pa.string()) for f in ANALYSIS.fields])


@dataclass(frozen=True)
class SqlSettings:
    """How the job treats SQL: the parser's dialect and the ``sql`` section of the configuration."""

    dialect: str                      # materialize | postgres (the sqlglot dialect)
    verbatim_kinds: tuple[str, ...] = ()
    mismatch: str = "error"           # error | warn
    kinds: tuple[str, ...] | None = None  # kinds the database has (None: all)
    clusters: bool = True
    indexes: bool = True
    system_schemas: tuple[str, ...] = ()  # reads there are not dependencies (the database's catalogs)


def analyse(sql: str | None, kind: str, database: str, schema: str, name: str, dialect: str,
            system_schemas=()) -> tuple:
    """One object's statement: (error, references, cluster); runs inside a Spark task."""
    try:
        statement = parse(sql, dialect, (database, schema, name), kind, system_schemas)
    except SqlError as error:
        return (str(error), None, None)
    return (None, [list(r) for r in statement.references], statement.cluster)


def analyser(dialect: str, system_schemas=()):
    """The function ``mapInArrow`` runs over batches of ``side, key, kind, sql``: one ``statement`` row per
    object (its error or cluster) and one ``reads`` row per relation its SQL reads."""
    def analyse_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out: dict[str, list] = {name: [] for name in ARROW_ANALYSIS.names}

            def emit(**values) -> None:
                for name in out:
                    out[name].append(values.get(name))

            for row in batch.to_pylist():
                key = {k: row[k] for k in KEY}
                error, references, cluster = analyse(row["sql"], row["kind"], *key.values(), dialect, system_schemas)
                emit(side=row["side"], found="statement", **key, error=error, sql_cluster=cluster)
                for reference in references or ():
                    emit(side=row["side"], found="reads", **key, **dict(zip(DEP, reference)))
            yield pa.RecordBatch.from_pydict(out, schema=ARROW_ANALYSIS)
    return analyse_batches


def statements_to_analyse(snapshots: dict[str, Snapshot]) -> DataFrame:
    """``side, key, kind, sql`` of every object with SQL of the given snapshots: what ``analyser`` reads."""
    return reduce(DataFrame.unionByName, [
        s.objects.where(F.col("sql").isNotNull()).select(F.lit(side).alias("side"), *KEY, "kind", "sql")
        for side, s in snapshots.items()])


@dataclass
class Resolved:
    """A snapshot with its dependencies and clusters checked against (or taken from) its SQL, and the
    checks to make: a frame of ``detail`` rows per problem, in the order they are reported."""

    snapshot: Snapshot
    problems: dict[str, DataFrame]
    warnings: dict[str, DataFrame]


def resolve_statements(snapshot: Snapshot, analysis: DataFrame, settings: SqlSettings, external_databases=(),
                       side: str = "new") -> Resolved:
    """The snapshot resolved against its rows of ``analysis`` (``analyse_statements``, held).

    The new project must also be closed: every dependency, declared or read
    from the SQL, names an object it lists (or one in ``external_databases``).
    The deployed state may read objects it does not list.
    """
    dialect = settings.dialect
    objects = snapshot.objects
    mine = analysis.where(F.col("side") == side)
    analysed = (mine.where(F.col("found") == "statement").select(*KEY, "error", "sql_cluster")
                .join(objects.select(*KEY, "kind", "cluster"), list(KEY)))
    parsed = analysed.where(F.col("error").isNull())
    references = mine.where(F.col("found") == "reads").select(*KEY, *DEP)
    declared = snapshot.dependencies.select(*KEY, *DEP)
    with_declared = declared.select(*KEY).distinct()
    checked = parsed.select(*KEY).join(with_declared, list(KEY), "left_semi")
    external = list(external_databases)

    def owned(frame: DataFrame) -> DataFrame:
        return frame.where(~F.col("dep_database").isin(*external)) if external else frame

    unread = owned(declared.join(checked, list(KEY), "left_semi")).join(references, [*KEY, *DEP], "left_anti")
    undeclared = owned(references.join(checked, list(KEY), "left_semi")).join(declared, [*KEY, *DEP], "left_anti")
    disagreeing = parsed.where(F.col("sql_cluster").isNotNull() & F.col("cluster").isNotNull()
                               & (F.col("sql_cluster") != F.col("cluster")))
    checks = {  # in the order they are reported
        f"objects of a kind the {dialect} dialect does not have":
            objects.where(~F.col("kind").isin(*settings.kinds)).select(_shown(F.col("kind")))
            if settings.kinds else None,
        f"objects on a cluster, which the {dialect} dialect does not have":
            objects.where(F.col("cluster").isNotNull()).select(_shown(F.col("cluster")))
            if not settings.clusters else None,
        f"indexes, which the {dialect} dialect cannot create from a snapshot":
            snapshot.indexes.select(_shown(F.col("index_name"))) if not settings.indexes and side == "new" else None,
        "statements that cannot be used":
            analysed.where(F.col("error").isNotNull() & ~F.col("kind").isin(*settings.verbatim_kinds))
            .select(_shown(F.col("error"))),
        "clusters that disagree with the statement's IN CLUSTER": disagreeing.select(_shown(F.concat(
            F.lit("cluster is "), F.col("cluster"), F.lit(" but its SQL says IN CLUSTER "), F.col("sql_cluster")))),
        MISMATCH:
            unread.select(_shown(F.concat(F.lit("depends_on lists "), _dep(), F.lit(", which its SQL does not read"))))
            .unionByName(undeclared.select(_shown(F.concat(
                F.lit("its SQL reads "), _dep(), F.lit(", which depends_on does not list"))))),
    }
    inferred = references.join(with_declared, list(KEY), "left_anti")
    dependencies = declared.unionByName(inferred).unionByName(undeclared).distinct()  # undeclared: when warned
    if side == "new":
        checks["dependencies on objects not in the snapshot"] = missing_dependencies(
            Snapshot(snapshot.path, objects, dependencies, snapshot.indexes), external)
    checks = {problem: frame for problem, frame in checks.items() if frame is not None}
    warnings = {}
    if settings.mismatch == "warn":
        warnings[MISMATCH] = checks.pop(MISMATCH)
    resolved_objects = (objects.join(parsed.select(*KEY, "sql_cluster"), list(KEY), "left")
                        .withColumn("cluster", F.coalesce("cluster", "sql_cluster")).select(*objects.columns))
    return Resolved(Snapshot(snapshot.path, resolved_objects, dependencies, snapshot.indexes), checks, warnings)


def _shown(detail) -> F.Column:
    return F.concat(F.concat_ws(".", *KEY), F.lit(": "), detail).alias("detail")


def _dep() -> F.Column:
    return F.concat_ws(".", *DEP)
