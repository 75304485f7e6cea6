"""Exact integer ids for the keys inside the engine, and the way back to names, for every relation at once.

The facts of all base relations travel as one frame (``FACTS``: the
relation, its fields in slots ``s0..``, and a change), so interning them is
three joins with one dictionary, however many relations there are (Spark
pays for every join of a query, so a join per relation and column would
cost more than the data).

The dictionary holds every key: an object (three name parts) or a name
(database, schema, cluster, index, kind: one part), with its id
``bucket + buckets * rank``. ``bucket`` is a hash of the key modulo
``buckets``, ``rank`` the key's position among the keys of its bucket in
sorted order. Two keys of a kind never share an id, the same keys always get
the same ids, and the ranking runs in parallel, one bucket group per task.
The dirty rules' keys rank first in their bucket and the plan's own keys
after them, so a key has the same id in both programs and the dirty rules'
ids (and so their choice between equal causes) do not depend on the plan.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..model import KEY, OBJECT_DOMAIN, BaseRelation

SLOTS = 6  # the widest relation has six fields (DependsOn, Reads: an object and what it reads)
WIDTH = 3  # the most columns a base relation has
FACTS = T.StructType([T.StructField("relation", T.StringType()),
                      *(T.StructField(f"s{i}", T.StringType()) for i in range(SLOTS)),
                      T.StructField("change", T.StringType())])
PARTS = ("p0", "p1", "p2")  # an object's database, schema, name; a name's value and two empty parts
DICTIONARY = T.StructType([T.StructField("kind", T.StringType()),
                           *(T.StructField(p, T.StringType()) for p in PARTS),
                           T.StructField("id", T.LongType())])
PAD = -1


def kind_of(domain: str) -> str:
    return OBJECT_DOMAIN if domain == OBJECT_DOMAIN else "name"


def facts_union(facts: dict[str, DataFrame], relations: dict[str, BaseRelation]) -> DataFrame:
    """The facts of every relation as one frame of ``FACTS``: each relation's fields in order, in slots."""
    def slotted(name: str, frame: DataFrame) -> DataFrame:
        fields = relations[name].fields
        own = [f for f in fields if f != "change"]
        return frame.select(F.lit(name).alias("relation"),
                            *(F.col(own[i]) if i < len(own) else F.lit(None).cast("string") for i in range(SLOTS)),
                            (F.col("change") if "change" in fields else F.lit(None).cast("string")).alias("change"))
    parts = [slotted(name, frame).toDF(*FACTS.names) for name, frame in facts.items()]
    return reduce(DataFrame.unionByName, parts)


def fact_columns(relation: BaseRelation) -> dict[str, str]:
    """The columns of a relation's facts table, from ``FACTS`` rows: field -> slot."""
    own = [f for f in relation.fields if f != "change"]
    return {f: f"s{i}" for i, f in enumerate(own)} | ({"change": "change"} if "change" in relation.fields else {})


def _layout(relations: dict[str, BaseRelation], position: int) -> tuple[Column, list[Column]]:
    """For column ``position`` of every relation: its kind (object or name) and its three parts, read from
    the slots of a ``FACTS`` row."""
    kinds, slots = {}, {}
    for name, relation in relations.items():
        if position >= len(relation.columns):
            continue
        column = relation.columns[position]
        own = [f for f in relation.fields if f != "change"]
        kinds[name] = kind_of(column.domain)
        slots[name] = [own.index(f) for f in column.fields]
    kind = F.element_at(_map(kinds), F.col("relation"))
    slot_array = F.array(*(F.col(f"s{i}") for i in range(SLOTS)))
    parts = []
    for part in range(3):
        index = {name: s[part] + 1 for name, s in slots.items() if part < len(s)}
        value = F.element_at(slot_array, F.element_at(_map(index), F.col("relation"))) if index else None
        parts.append(F.when(F.element_at(_map({n: len(s) > part for n, s in slots.items()}), F.col("relation")),
                            value).otherwise(F.lit("")) if value is not None else F.lit(""))
    return kind, parts


def _map(values: dict) -> Column:
    if not values:
        return F.create_map().cast("map<string,string>")
    return F.create_map(*(x for k, v in values.items() for x in (F.lit(k), F.lit(v))))


def dictionary(facts: DataFrame, relations: dict[str, BaseRelation], first: set[str], buckets: int) -> DataFrame:
    """``kind, p0, p1, p2, id`` of every key of ``facts``; keys of the ``first`` relations rank first."""
    program = F.when(F.col("relation").isin(*first), F.lit(0)).otherwise(F.lit(1))
    positions = [_layout(relations, position) for position in range(WIDTH)]
    keys = facts.select(F.explode(F.array(*(
        F.struct(kind.alias("kind"), *(p.alias(n) for p, n in zip(parts, PARTS)), program.alias("program"))
        for kind, parts in positions))).alias("key")).select("key.*").where(F.col("kind").isNotNull())
    distinct = keys.groupBy("kind", *PARTS).agg(F.min("program").alias("program"))
    bucket = F.when(F.col("kind") == OBJECT_DOMAIN, F.pmod(F.xxhash64(*PARTS), F.lit(buckets))).otherwise(
        F.pmod(F.xxhash64("p0"), F.lit(buckets)))
    rank = F.row_number().over(Window.partitionBy("kind", "bucket").orderBy("program", *PARTS)) - 1
    return (distinct.withColumn("bucket", bucket)
            .select("kind", *PARTS, (F.col("bucket") + F.lit(buckets) * rank).cast("long").alias("id")))


def interned(facts: DataFrame, dictionary_: DataFrame, relations: dict[str, BaseRelation]) -> DataFrame:
    """``relation, c0, c1, c2``: every fact as ids (``PAD`` past a relation's columns)."""
    frame = facts
    for position in range(WIDTH):
        kind, parts = _layout(relations, position)
        frame = frame.select("*", kind.alias(f"_kind{position}"),
                             *(p.alias(f"_{n}{position}") for p, n in zip(parts, PARTS)))
        ids = dictionary_.select(*(F.col(c).alias(f"_{c}{position}") for c in ("kind", *PARTS)),
                                 F.col("id").alias(f"c{position}"))
        frame = frame.join(ids, [f"_kind{position}", *(f"_{n}{position}" for n in PARTS)], "left")
    return frame.select("relation", *(F.coalesce(F.col(f"c{i}"), F.lit(PAD)).alias(f"c{i}") for i in range(WIDTH)))


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
            .join(names, [f"_kind_{column}", f"_id_{column}"], "left").drop(f"_kind_{column}", f"_id_{column}"))


def quote_if_needed(part: Column) -> Column:
    """A name part as written in SQL: plain if a lowercase identifier, else double-quoted."""
    plain = part.rlike("^[a-z_][a-z0-9_]*$")
    return F.when(plain, part).otherwise(F.concat(F.lit('"'), F.replace(part, F.lit('"'), F.lit('""')), F.lit('"')))


def object_names(dictionary_: DataFrame) -> DataFrame:
    """``id, database, schema, name`` of every object."""
    return dictionary_.where(F.col("kind") == OBJECT_DOMAIN).select("id", *(F.col(p).alias(k) for p, k in zip(PARTS, KEY)))
