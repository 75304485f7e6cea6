"""Base facts (docs/design.md §3): the relations the rule program starts from.

Each base relation is declared with the domain of every column and the
string columns of its facts table, so the checker knows arities and domains,
and interning knows which dictionary each column uses.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..inputs.snapshot import Snapshot
from ..model import APPLY_MANAGED, BY_NAME, KEY


def extract_base_facts(spark: SparkSession, old: Snapshot, new: Snapshot, changed: DataFrame,
                       forced_schemas: list[tuple[str, str]]) -> dict[str, DataFrame]:
    """Every base relation as a DataFrame of its facts-table columns, without duplicates.

    Membership, sinks and replacements come from the new project; deleted
    objects contribute theirs from the old one, so a deleted object still
    dirties its schema and a deleted sink still does not.
    """
    deleted = (old.objects.join(changed.where(F.col("change") == "deleted").select(*KEY), list(KEY), "left_semi"))
    members = new.objects.unionByName(deleted)
    stmt_cluster = new.objects.where(F.col("cluster").isNotNull()).select(*KEY, "cluster")
    index_cluster = new.indexes.where(F.col("cluster").isNotNull()).select(*KEY, "index_name", "cluster")
    facts = {
        "ChangedStmt": changed.select(*KEY, "change"),
        "ForcedSchema": spark.createDataFrame(sorted(set(forced_schemas)), "database string, schema string"),
        "ObjectInSchema": members.select(*KEY),
        "DependsOn": new.dependencies.select(*KEY, "dep_database", "dep_schema", "dep_name"),
        "StmtUsesCluster": stmt_cluster,
        "IndexUsesCluster": index_cluster,
        "IsSink": members.where(F.col("kind") == "sink").select(*KEY),
        "IsReplacement": members.where(F.col("replacement")).select(*KEY),
        "IsApplyManaged": members.where(F.col("kind").isin(*APPLY_MANAGED)).select(*KEY),
        "ClusterBoundary": stmt_cluster.select("cluster").unionByName(index_cluster.select("cluster")),
    }
    return {name: frame.select(*BY_NAME[name].fields).distinct() for name, frame in facts.items()}
