"""The snapshot diff: which statements changed between the deployed and the desired project."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .snapshot import KEY


def changed_stmt(old_objects: DataFrame, new_objects: DataFrame) -> DataFrame:
    """``(database, schema, name, change)`` with change added | modified | deleted.

    Added and deleted objects always count as changed. A modification needs a
    hash on both sides: an object without a hash is not hash-tracked, so it
    never changes by itself (it may still become dirty through the rules).
    """
    old = old_objects.select(*KEY, F.col("hash").alias("old_hash"), F.lit(True).alias("in_old"))
    new = new_objects.select(*KEY, F.col("hash").alias("new_hash"), F.lit(True).alias("in_new"))
    change = (F.when(F.col("in_old").isNull(), "added")
              .when(F.col("in_new").isNull(), "deleted")
              .when(F.col("old_hash").isNotNull() & F.col("new_hash").isNotNull()
                    & (F.col("old_hash") != F.col("new_hash")), "modified"))
    return (old.join(new, list(KEY), "full_outer")
            .select(*KEY, change.alias("change"))
            .where(F.col("change").isNotNull()))
