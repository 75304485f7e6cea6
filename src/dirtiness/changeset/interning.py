"""Exact integer ids for keys inside the engine, and the way back to names.

An id is ``bucket + buckets * rank``: ``bucket`` is a hash of the key modulo
``buckets``, ``rank`` the key's position among the keys of its bucket in
sorted order. Two keys never share an id (different buckets differ modulo
``buckets``; within a bucket ranks differ), the same key set always gives
the same ids, and the ranking runs in parallel, one bucket group per task.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..model import BY_NAME, KEY, OBJECT_DOMAIN


@dataclass
class Dictionaries:
    objects: DataFrame  # id, database, schema, name
    names: DataFrame    # id, value (databases, schemas, clusters, index names)

    def for_domain(self, domain: str) -> tuple[DataFrame, tuple[str, ...]]:
        return (self.objects, KEY) if domain == OBJECT_DOMAIN else (self.names, ("value",))


def build_dictionaries(facts: dict[str, DataFrame], buckets: int) -> Dictionaries:
    objects, names = [], []
    for relation, frame in facts.items():
        for column in BY_NAME[relation].columns:
            picked = frame.select(*(F.col(f).alias(k) for f, k in zip(column.fields, _keys(column.domain))))
            (objects if column.domain == OBJECT_DOMAIN else names).append(picked)
    object_keys = reduce(DataFrame.unionByName, objects).distinct()
    name_keys = reduce(DataFrame.unionByName, names).distinct()
    return Dictionaries(objects=_number(object_keys, KEY, buckets), names=_number(name_keys, ("value",), buckets))


def _keys(domain: str) -> tuple[str, ...]:
    return KEY if domain == OBJECT_DOMAIN else ("value",)


def _number(keys: DataFrame, columns: tuple[str, ...], buckets: int) -> DataFrame:
    bucket = F.pmod(F.xxhash64(*columns), F.lit(buckets))
    rank = F.row_number().over(Window.partitionBy("bucket").orderBy(*columns)) - 1
    return (keys.withColumn("bucket", bucket)
            .select((F.col("bucket") + F.lit(buckets) * rank).cast("long").alias("id"), *columns))


def intern(relation: str, frame: DataFrame, dictionaries: Dictionaries) -> DataFrame:
    """The facts of ``relation`` as integer columns ``c0..``."""
    out = frame
    for i, column in enumerate(BY_NAME[relation].columns):
        table, keys = dictionaries.for_domain(column.domain)
        renamed = table.select(F.col("id").alias(f"c{i}"), *(F.col(k).alias(f) for k, f in zip(keys, column.fields)))
        out = out.join(renamed, list(column.fields), "inner")
    return out.select(*(f"c{i}" for i in range(len(BY_NAME[relation].columns)))).distinct()


def display_names(dictionaries: Dictionaries) -> dict[str, DataFrame]:
    """``id -> text`` per dictionary, as shown in causes: ``db.schema.name``, identifiers quoted when needed."""
    objects = dictionaries.objects.select(
        "id", F.concat_ws(".", *(quote_if_needed(F.col(k)) for k in KEY)).alias("text"))
    names = dictionaries.names.select("id", quote_if_needed(F.col("value")).alias("text"))
    return {OBJECT_DOMAIN: objects, "name": names}


def quote_if_needed(part: Column) -> Column:
    """A name part as written in SQL: plain if a lowercase identifier, else double-quoted."""
    plain = part.rlike("^[a-z_][a-z0-9_]*$")
    return F.when(plain, part).otherwise(F.concat(F.lit('"'), F.replace(part, F.lit('"'), F.lit('""')), F.lit('"')))
