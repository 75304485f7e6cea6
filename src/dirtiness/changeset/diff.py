"""The snapshot diff: which statements changed between the deployed and the desired project."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..model import KEY


def changed_stmt(old_objects: DataFrame, new_objects: DataFrame) -> DataFrame:
    """``(database, schema, name, change)`` with change added | modified | deleted.

    Only a hash says an object changed: listed on both sides with two hashes
    that differ (modified), or listed on one side only with a hash there
    (added, deleted). An object without a hash on every side that lists it is
    not tracked by the deploy (a deployed state often records only what its
    tool manages), so it never changes by itself, whether it appears,
    disappears or stays; it may still become dirty through the rules.
    """
    old = old_objects.select(*KEY, F.col("hash").alias("old_hash"), F.lit(True).alias("in_old"))
    new = new_objects.select(*KEY, F.col("hash").alias("new_hash"), F.lit(True).alias("in_new"))
    change = (F.when(F.col("in_old").isNull() & F.col("new_hash").isNotNull(), "added")
              .when(F.col("in_new").isNull() & F.col("old_hash").isNotNull(), "deleted")
              .when(F.col("old_hash").isNotNull() & F.col("new_hash").isNotNull()
                    & (F.col("old_hash") != F.col("new_hash")), "modified"))
    return (old.join(new, list(KEY), "full_outer")
            .select(*KEY, change.alias("change"))
            .where(F.col("change").isNotNull()))
