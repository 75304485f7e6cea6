"""The SparkSession, sized by ``conf/job.yaml``."""

from __future__ import annotations

from pyspark.sql import SparkSession


def build_session(config: dict, set_master: bool = True) -> SparkSession:
    """A session from the ``spark`` section; ``set_master=False`` under spark-submit, which sets its own.

    An already active session (a notebook, a Databricks job, a test run) is
    used as its host configured it: its settings are not ours to change.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    spark_conf = config.get("spark", {})
    builder = SparkSession.builder.appName(spark_conf.get("app_name", "dirtiness"))
    if set_master and spark_conf.get("master"):
        builder = builder.master(spark_conf["master"])
    for key, value in (spark_conf.get("conf") or {}).items():
        builder = builder.config(key, str(value).lower() if isinstance(value, bool) else str(value))
    builder = builder.config("spark.log.level", spark_conf.get("log_level", "WARN"))
    return builder.getOrCreate()
