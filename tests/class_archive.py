"""Spark's classes, archived once for every JVM the suite starts (``make classes``, part of ``make test``).

A JVM of the suite spends seconds loading and verifying the same ~13,000 classes from Spark's jars
(measured here: a bare session started and stopped in 15.4-15.7 s without the archive, 8.5-9.2 s with
it; the bundled example in a fresh JVM 57.6 s against 60.6 s, medians of 3 side by side). Java 17's
class-data sharing maps them from an archive written at the exit of one JVM that ran a small workload. ``tests/conftest.py`` hands the archive to each JVM through ``JAVA_TOOL_OPTIONS`` when
the file exists; a JVM whose class path differs from the archive's (spark-submit's launcher, or jars
changed since) ignores it silently and loads its classes as before. Test-only: the job is untouched.

    python tests/class_archive.py TARGET
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"  # beside the virtualenv whose jars it records
QUIET = "-Xlog:cds*=off"  # a JVM that cannot use the archive says so on every start otherwise


def jvm_options() -> str:
    """The options that let a JVM map the archive, or nothing when there is none (or its path has spaces:
    JAVA_TOOL_OPTIONS splits on them)."""
    if not ARCHIVE.is_file() or any(c.isspace() for c in str(ARCHIVE)):
        return ""
    return f"-XX:SharedArchiveFile={ARCHIVE} {QUIET}"


def build(target: Path, options: str) -> None:
    """Run the example in a child JVM that writes the archive when it exits; publish it whole or not at all."""
    part = target.with_name(target.name + ".part")
    part.unlink(missing_ok=True)
    env = dict(os.environ, JAVA_TOOL_OPTIONS=f"{options} -XX:ArchiveClassesAtExit={part} {QUIET}".strip())
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, __file__, "--workload", folder], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    if not part.is_file():
        raise SystemExit(f"class_archive: the JVM wrote no archive at {part}")
    os.replace(part, target)


def workload(folder: str) -> int:
    """A session that runs what every test's session runs first (SQL planning, a shuffle, Python workers
    over Arrow, a parquet write and read), then stops, and the JVM's exit awaited (it writes the archive
    as it exits, and is killed unfinished if this process ends first). Not the bundled example: that took
    95 s here for the same start-up gain (the example's own queries are compiled anew in any JVM)."""
    from pyspark.sql import functions as F

    from dirtiness.config import load_config
    from dirtiness.session import build_session

    spark = build_session(load_config())
    left = spark.range(100).withColumn("k", F.col("id") % 7)
    right = spark.createDataFrame([(i, str(i)) for i in range(7)], "k long, name string")
    joined = left.join(right, "k").groupBy("name").agg(F.count("*").alias("n"))
    joined.write.parquet(os.path.join(folder, "probe"))
    rows = spark.read.parquet(os.path.join(folder, "probe")).mapInArrow(lambda batches: batches, joined.schema)
    rows.orderBy("name").collect()
    jvm = spark.sparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()  # the JVM's signal to exit
    jvm.wait(timeout=300)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--workload"]:
        sys.exit(workload(sys.argv[2]))
    sys.path.insert(0, os.path.dirname(__file__))
    from conftest import TEST_JVM_OPTIONS

    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ARCHIVE, TEST_JVM_OPTIONS)
