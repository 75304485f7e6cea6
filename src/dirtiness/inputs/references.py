"""Every object's SQL read on Spark: checked against its declared dependencies and cluster, or the source of them.

Statements are parsed where the rows are (a Python UDF per object with
``sql``), so a catalog of any size never passes through the driver; only
the first few problems of each kind are collected, in one Spark job.

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
- The dialect's limits: kinds it has, clusters and indexes only where it has them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import InputError, summarize
from ..model import KEY
from ..sql.statement import SqlError, parse
from .snapshot import Snapshot, first_problems, missing_dependencies

log = logging.getLogger("dirtiness")

MISMATCH = "dependencies that do not match the SQL"

REFERENCE = T.StructType([T.StructField(k, T.StringType()) for k in KEY])
ANALYSIS = T.StructType([
    T.StructField("error", T.StringType()),
    T.StructField("references", T.ArrayType(REFERENCE)),
    T.StructField("sql_cluster", T.StringType()),
])


@dataclass(frozen=True)
class SqlSettings:
    """How the job treats SQL: the parser's dialect and the ``sql`` section of the configuration."""

    dialect: str                      # materialize | postgres (the sqlglot dialect)
    verbatim_kinds: tuple[str, ...] = ()
    mismatch: str = "error"           # error | warn
    kinds: tuple[str, ...] | None = None  # kinds the database has (None: all)
    clusters: bool = True
    indexes: bool = True


def analyse(sql: str | None, kind: str, database: str, schema: str, name: str, dialect: str) -> tuple:
    """One object's statement: (error, references, cluster); runs inside a Spark task."""
    try:
        statement = parse(sql, dialect, (database, schema, name), kind)
    except SqlError as error:
        return (str(error), None, None)
    return (None, [list(r) for r in statement.references], statement.cluster)


def resolve_statements(snapshot: Snapshot, settings: SqlSettings, external_databases=(), side: str = "new",
                       shown: int = 5) -> Snapshot:
    """The snapshot with dependencies and clusters checked against (or taken from) its SQL.

    The new project must also be closed: every dependency, declared or read
    from the SQL, names an object it lists (or one in ``external_databases``).
    The deployed state may read objects it does not list.
    """
    dialect = settings.dialect
    analysed_udf = F.udf(lambda sql, kind, d, s, n: analyse(sql, kind, d, s, n, dialect), ANALYSIS, useArrow=False)
    objects = snapshot.objects
    analysed = (objects.where(F.col("sql").isNotNull())
                .select(*KEY, "kind", "cluster", analysed_udf("sql", "kind", *KEY).alias("a"))
                .select(*KEY, "kind", "cluster", "a.*")
                .localCheckpoint())  # one parse per statement, read by the checks and the inference below
    parsed = analysed.where(F.col("error").isNull())
    references = (parsed.select(*KEY, F.explode("references").alias("r"))
                  .select(*KEY, *(F.col(f"r.{k}").alias(f"dep_{k}") for k in KEY)))
    declared = snapshot.dependencies.select(*KEY, *(f"dep_{k}" for k in KEY))
    with_declared = declared.select(*KEY).distinct()
    checked = parsed.select(*KEY).join(with_declared, list(KEY), "left_semi")
    external = list(external_databases)

    def owned(frame: DataFrame) -> DataFrame:
        return frame.where(~F.col("dep_database").isin(*external)) if external else frame

    dep_columns = [f"dep_{k}" for k in KEY]
    unread = owned(declared.join(checked, list(KEY), "left_semi")).join(references, [*KEY, *dep_columns], "left_anti")
    undeclared = owned(references.join(checked, list(KEY), "left_semi")).join(declared, [*KEY, *dep_columns],
                                                                             "left_anti")
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
            snapshot.indexes.select(_shown(F.col("index_name"))) if not settings.indexes else None,
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
    dependencies = declared.unionByName(inferred).unionByName(undeclared)  # undeclared: only when warned
    if side == "new":
        checks["dependencies on objects not in the snapshot"] = missing_dependencies(
            Snapshot(snapshot.path, objects, dependencies, snapshot.indexes), external)
    where = f"{snapshot.path} ({side} project)"
    for problem, (details, total) in first_problems({k: v for k, v in checks.items() if v is not None},
                                                      shown).items():
        line = summarize(details, f"{where}: {total} {problem}", total=total)
        if problem == MISMATCH and settings.mismatch == "warn":
            log.warning("%s (warning: the plan orders by both)", line)
        else:
            raise InputError(line)

    objects = (objects.join(parsed.select(*KEY, "sql_cluster"), list(KEY), "left")
               .withColumn("cluster", F.coalesce("cluster", "sql_cluster")).select(*objects.columns))
    return Snapshot(snapshot.path, objects, dependencies.distinct(), snapshot.indexes).cached()


def _shown(detail) -> F.Column:
    return F.concat(F.concat_ws(".", *KEY), F.lit(": "), detail).alias("detail")


def _dep() -> F.Column:
    return F.concat_ws(".", *(f"dep_{k}" for k in KEY))
