"""A held frame's size estimate, reset: Spark's checkpoint keeps the one of the query it came from.

Classic Spark only: it builds the plan node in the JVM. A Spark Connect frame is returned as it is.
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def without_size_estimate(held: DataFrame) -> DataFrame:
    """A checkpointed frame that no longer claims its origin's estimated size.

    Spark's checkpoint keeps the optimizer's size estimate of the query it came from, and the estimate of
    a join is the product of its inputs'. Each hold read by the next query's joins multiplies it again:
    after a run's few dozen holds over blocks, the estimate of one plan query had millions of bits, and
    multiplying them took the optimizer and planner two minutes of the three its query took (40 random
    projects, blocks filled eagerly). Held afresh, the leaf says what any RDD says (Spark's default size),
    with its partitioning and ordering kept; nothing a run computes reads the estimate (broadcast joins and
    adaptive execution are off while it computes). A Spark Connect frame, or a JVM whose checkpoint node
    this does not know, is returned as it is."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    if not isinstance(held, ClassicFrame):
        return held
    from py4j.protocol import Py4JError

    session = held.sparkSession
    try:
        plan = held._jdf.queryExecution().logical()
        jvm, none = session._jvm, session._jvm.scala.Option.empty()
        leaf = jvm.org.apache.spark.sql.execution.LogicalRDD(
            plan.output(), plan.rdd(), plan.outputPartitioning(), plan.outputOrdering(), plan.isStreaming(),
            plan.stream(), session._jsparkSession, none, none)
        return ClassicFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(session._jsparkSession, leaf), session)
    except Py4JError:
        return held
