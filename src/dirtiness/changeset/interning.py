"""The way back from the engine's integer ids to names (``changeset.catalog`` makes the ids).

The dictionary holds every key with its id: an object (three name parts) or
a name (database, schema, cluster, index, kind: one part and two empty
ones). ``named`` turns one id column of tuples of many relations into
names with one join, whatever relation each row is of.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY, OBJECT_DOMAIN

PARTS = ("p0", "p1", "p2")  # an object's database, schema, name; a name's value and two empty parts
DICTIONARY = T.StructType([T.StructField("kind", T.StringType()),
                           *(T.StructField(p, T.StringType()) for p in PARTS),
                           T.StructField("id", T.LongType())])


def kind_of(domain: str) -> str:
    return OBJECT_DOMAIN if domain == OBJECT_DOMAIN else "name"


def _map(values: dict) -> Column:
    return F.create_map(*(x for k, v in values.items() for x in (F.lit(k), F.lit(v))))


def named(frame: DataFrame, dictionary_: DataFrame, kinds: dict[str, list[str]], column: str,
          relation: str = "relation") -> DataFrame:
    """``frame`` with the names of the ids in ``column``: ``{column}_p0..p2`` (object parts, or a name and
    two empty parts), ``{column}_text`` (as causes show it: ``db.schema.name``, identifiers quoted when
    needed) and ``{column}_raw`` (the parts as they are, joined by dots). ``kinds`` gives, per value of
    the ``relation`` column, the kind of each of its columns."""
    position = int(column[1:])
    kind = F.element_at(_map({r: k[position] for r, k in kinds.items() if position < len(k)}), F.col(relation))
    names = dictionary_.select(F.col("kind").alias(f"_kind_{column}"), F.col("id").alias(f"_id_{column}"),
                               *(F.col(p).alias(f"{column}_{p}") for p in PARTS),
                               F.when(F.col("kind") == OBJECT_DOMAIN, F.concat_ws(".", *(quote_if_needed(F.col(p))
                                                                                         for p in PARTS)))
                               .otherwise(quote_if_needed(F.col("p0"))).alias(f"{column}_text"),
                               F.when(F.col("kind") == OBJECT_DOMAIN, F.concat_ws(".", *PARTS))
                               .otherwise(F.col("p0")).alias(f"{column}_raw"))
    return (frame.withColumn(f"_kind_{column}", kind).withColumn(f"_id_{column}", F.col(column))
            .join(names.hint("shuffle_hash"), [f"_kind_{column}", f"_id_{column}"], "left").drop(f"_kind_{column}", f"_id_{column}"))


def quote_if_needed(part: Column) -> Column:
    """A name part as written in SQL: plain if a lowercase identifier, else double-quoted."""
    plain = part.rlike("^[a-z_][a-z0-9_]*$")
    return F.when(plain, part).otherwise(F.concat(F.lit('"'), F.replace(part, F.lit('"'), F.lit('""')), F.lit('"')))


def object_names(dictionary_: DataFrame) -> DataFrame:
    """``id, database, schema, name`` of every object."""
    return dictionary_.where(F.col("kind") == OBJECT_DOMAIN).select("id", *(F.col(p).alias(k) for p, k in zip(PARTS, KEY)))
