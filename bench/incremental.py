"""Benchmark: the dirty rules brought up to date after a small change, against evaluating them again.

    python bench/incremental.py [--objects 100000] [--changes 10] [--steps 3] [--seed 7] [--deploys]

The engine alone (``datalog.incremental``), not yet a whole run: the bundled
dirty rules (``conf/rules/dirty.dl``) over synthetic base facts held as
blocks, partitioned as a large catalog's: objects in schemas of a thousand,
each reading one or two objects before it in its schema (now and then one
anywhere), some on clusters, some sinks and indexes. Each step changes the
inputs (an hour's edits), then evaluates the fixed point both ways in the
same session, one after the other: a full evaluation and an update from the
last step's fixed point. Between steps the project moves on (``--changes``
more objects changed, nothing deployed) or, with ``--deploys``, a deploy
happened (the changed objects are ``--changes`` others). Per step: wall
seconds, Spark jobs and rounds of each, their ratio, and whether both hold
the same tuples with the same provenance. The last line on stdout is one
JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pyspark.sql import functions as F  # noqa: E402
from spark_work import SparkWork  # noqa: E402

from dirtiness.changeset.rules import load_rules  # noqa: E402
from dirtiness.config import load_config  # noqa: E402
from dirtiness.datalog.engine import Program, tuple_schema  # noqa: E402
from dirtiness.datalog.holding import Batch, Holding, local_batch  # noqa: E402
from dirtiness.datalog.incremental import Maintained  # noqa: E402
from dirtiness.session import build_session, session_settings, spark_settings  # noqa: E402

CLUSTERS, BOUNDARIES, SCHEMA_SIZE = 200, 10, 1000


def catalog(spark, objects: int) -> dict:
    """The base relations that do not change between steps, as frames of ids: each object reads one or two
    objects before it in its own schema, one in five hundred also one anywhere before it; one in thirty runs
    on one of two hundred clusters, ten of them shared across schemas (``ClusterBoundary``)."""
    ids = spark.range(objects).select(F.col("id").alias("o"), (F.col("id") % SCHEMA_SIZE).alias("at"))
    near = [F.col("o") - 1 - F.pmod(F.xxhash64("o", F.lit(k)), F.least(F.col("at"), F.lit(20))) for k in (1, 2)]
    anywhere = F.pmod(F.xxhash64("o", F.lit(3)), F.col("o"))
    depends = (ids.where("at > 0").select(F.col("o").alias("c0"), near[0].alias("c1"))
               .unionByName(ids.where("at > 1 AND o % 2 = 0").select(F.col("o").alias("c0"), near[1].alias("c1")))
               .unionByName(ids.where("o > 0 AND o % 500 = 7").select(F.col("o").alias("c0"), anywhere.alias("c1"))))
    on_cluster = ids.where("o % 30 = 0").select(F.col("o").alias("c0"), (F.col("o") % CLUSTERS).alias("c1"))
    return {
        "DependsOn": depends.distinct(),
        "ObjectInSchema": ids.select(F.col("o").alias("c0"), F.lit(0).cast("long").alias("c1"),
                                     (F.col("o") / SCHEMA_SIZE).cast("long").alias("c2")),
        "StmtUsesCluster": on_cluster,
        "IsSink": ids.where("o % 97 = 5").select(F.col("o").alias("c0")),
        "IndexUsesCluster": ids.where("o % 50 = 1").select(F.col("o").alias("c0"), F.col("o").alias("c1"),
                                                           (F.col("o") % CLUSTERS).alias("c2")),
        "ClusterBoundary": spark.range(BOUNDARIES).select(F.col("id").alias("c0")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--deploys", action="store_true", help="a deploy between steps (else the edits accumulate)")
    args = parser.parse_args()

    config = load_config()
    spark = build_session(config)
    spark.sparkContext.setLogLevel("ERROR")
    rng = random.Random(args.seed)
    checked = load_rules("dirty", {"DirtyStmt": "dirty_stmts"})
    changed = rng.sample(range(args.objects), args.changes)
    figures = []
    with session_settings(spark, spark_settings(config["spark"]["compute_conf"])):
        holding = Holding(0, partitions=int(spark.conf.get("spark.sql.shuffle.partitions")))
        held = holding.hold_all(catalog(spark, args.objects), try_local=False)
        program = Program(checked, holding)
        maintained = Maintained.of(program)

        def base(changed_ids: list[int]) -> dict[str, Batch]:
            return {**held, "ChangedStmt": local_batch(spark, [(o,) for o in sorted(changed_ids)], tuple_schema(1))}

        work = SparkWork(spark)
        last = program.evaluate(base(changed))
        work.take()
        for step in range(args.steps):
            if args.deploys:  # a deploy between the steps: the changed objects are others
                edited = rng.sample(range(args.objects), args.changes)
            else:  # the project moves on, nothing deployed: more objects changed
                edited = changed + rng.sample(range(args.objects), args.changes)
            started = time.perf_counter()
            full = program.evaluate(base(edited))
            full_seconds, full_jobs = time.perf_counter() - started, work.take()["jobs"]
            started = time.perf_counter()
            updated = maintained.update(last, base(changed), base(edited))
            update_seconds, update_jobs = time.perf_counter() - started, work.take()["jobs"]
            differ = sum(full.relations[r].exceptAll(updated.relations[r]).count()
                         + updated.relations[r].exceptAll(full.relations[r]).count() for r in checked.derived)
            tuples = sum(full.relations[r].count() for r in checked.derived)
            work.take()
            row = {"step": step + 1, "full_s": round(full_seconds, 2), "full_jobs": full_jobs,
                   "update_s": round(update_seconds, 2), "update_jobs": update_jobs,
                   "ratio": round(update_seconds / full_seconds, 3), "rounds": len(full.rounds),
                   "derived": tuples, "rows_differing": differ}
            print(" ".join(f"{k}={v}" for k, v in row.items()), file=sys.stderr, flush=True)
            figures.append(row)
            last, changed = updated, edited
    spark.stop()
    print(json.dumps({"objects": args.objects, "changes": args.changes, "deploys": args.deploys, "steps": figures,
                      "median_ratio": statistics.median(r["ratio"] for r in figures)}))


if __name__ == "__main__":
    main()
