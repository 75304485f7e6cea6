"""The SparkSession, sized by ``conf/job.yaml``."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
from typing import Iterator

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from .config import CONF
from .jvm_names import resolve_names_once

log = logging.getLogger(__name__)

# The longest a command waits for a Spark Connect server to release its session: a server that is gone is
# retried by PySpark's client for minutes, and the command's outcome is known by then.
RELEASE_SECONDS = 30.0


def build_session(config: dict, set_master: bool = True, remote: str | None = None) -> SparkSession:
    """A session from the ``spark`` section; ``set_master=False`` under spark-submit, which sets its own.

    An already active session (a notebook, a Databricks job, a test run) is
    used as its host configured it: its settings are not ours to change.
    ``remote`` (``sc://HOST:PORT``) connects to a Spark Connect server
    instead of starting a JVM here.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    spark_conf = config.get("spark", {})
    if remote:
        return connect_session(remote, spark_conf)
    builder = SparkSession.builder.appName(spark_conf.get("app_name", "dirtiness"))
    if set_master and spark_conf.get("master"):
        builder = builder.master(spark_conf["master"])
    settings = spark_settings(spark_conf.get("conf"))
    settings["spark.log.level"] = spark_conf.get("log_level", "WARN")
    submitted = frozenset() if set_master else submitted_keys(os.environ)
    if submitted:  # spark-submit started the JVM: its settings stand, and its driver's memory and options are set
        settings = not_submitted(settings, submitted)
        for key in ("spark.driver.memory", "spark.driver.extraJavaOptions"):
            settings.pop(key, None)
    else:  # a JVM started here, with these options
        options = driver_java_options(settings.get("spark.driver.extraJavaOptions", ""), os.environ)
        if spark_conf.get("log4j_config"):
            options = f"{options} -Dlog4j2.configurationFile=file:{os.path.join(CONF, spark_conf['log4j_config'])}"
        if options.strip():
            settings["spark.driver.extraJavaOptions"] = options.strip()
    # Python workers (the SQL parser runs in them) use this interpreter and its packages, unless told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    resolve_names_once(spark)
    return spark


@contextlib.contextmanager
def command_session(config: dict, set_master: bool = True, remote: str | None = None) -> Iterator[SparkSession]:
    """The session one command runs in (``build_session``).

    A Spark Connect session the command opened is released when the command
    ends, however it ends: the server then drops what the run left there (its
    checkpoints, its cached frames) at once, not at its idle timeout (an hour
    by default; PySpark's client does not release a session when its process
    exits). A session that was active before (a notebook's, a test's) is its
    owner's; a JVM this process started ends with the process.
    """
    borrowed = SparkSession.getActiveSession() is not None
    spark = build_session(config, set_master=set_master, remote=remote)
    try:
        yield spark
    finally:
        if remote and not borrowed:
            release(spark)


def release(spark: SparkSession, seconds: float = RELEASE_SECONDS) -> None:
    """``spark.stop()`` for a Spark Connect session, waited for at most ``seconds``."""
    stopping = threading.Thread(target=spark.stop, name="dirtiness-release-session", daemon=True)
    stopping.start()
    stopping.join(seconds)
    if stopping.is_alive():
        log.warning("the Spark Connect server did not release the session within %g s: it ends it at its "
                    "idle timeout", seconds)


def submitted_keys(environ) -> frozenset[str]:
    """The Spark settings spark-submit gave the JVM this process runs under: its ``--conf``, its flags
    (``--driver-memory``, ...) and ``spark-defaults.conf``. None when no JVM launched this Python."""
    if not environ.get("PYSPARK_GATEWAY_PORT"):  # PySpark's sign that a JVM launched this Python
        return frozenset()
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to that JVM: without it SparkConf() is Python's own, empty
    return frozenset(key for key, _ in SparkConf().getAll())  # the JVM's spark.* properties


def not_submitted(settings: dict[str, str], submitted: frozenset[str]) -> dict[str, str]:
    """Our settings less those the submission gives: a ``--conf`` or a cluster's ``spark-defaults.conf`` is
    the one the user chose for that cluster, ``conf/job.yaml``'s was chosen for ``local[2]``."""
    kept = sorted(key for key in settings if key in submitted)
    if kept:  # names only: a submitted value may be a secret (an access key)
        log.info("spark-submit's own %s kept (not the configuration's)", ", ".join(kept))
    return {key: value for key, value in settings.items() if key not in submitted}


GARBAGE_COLLECTOR = re.compile(r"-XX:\+Use\w+GC\b")


def driver_java_options(options: str, environ) -> str:
    """The driver JVM's options, less a garbage collector when the environment's JVM options already choose
    one: the JVM refuses to start with two."""
    chosen = " ".join(environ.get(name, "") for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"))
    if not GARBAGE_COLLECTOR.search(chosen):
        return options
    return " ".join(GARBAGE_COLLECTOR.sub("", options).split())


def connect_session(remote: str, spark_conf: dict) -> SparkSession:
    """A Spark Connect session. The server owns its process (memory, master, status store, log4j): only
    the session's SQL settings are ours to give; the rest of ``spark.conf`` is the server's business.

    A SQL setting the server refuses (a static one, one outside a serverless allowlist) is left to it.
    ``isModifiable`` is not asked first: Sail answers no for settings it does not know, yet takes them,
    and its clients need some of those set (``examples/sail/config.yaml``).
    """
    if remote.startswith("local"):
        # PySpark's own local server ("local[2]"): started in this process, so only getOrCreate starts it
        # (create refuses a local string); the command's, as no session was active (``build_session``).
        builder = SparkSession.builder.remote(remote)
        for key, value in spark_settings(spark_conf.get("conf")).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        spark = SparkSession.builder.remote(remote).create()  # its own, which the command releases
    for key, value in spark_settings(spark_conf.get("conf")).items():
        if not key.startswith("spark.sql."):
            continue
        try:
            spark.conf.set(key, value)
        except PySparkException as error:
            log.info("the server keeps its own %s (%s)", key, str(error).splitlines()[0][:200])
    return spark


def spark_settings(conf: dict | None) -> dict[str, str]:
    """Spark settings as the session takes them: strings, booleans spelled ``true``/``false``."""
    return {key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in (conf or {}).items()}


class _Borrowed:
    """The settings blocks hold on one session: its own values, and how many blocks hold each key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.own: dict[str, str | None] = {}
        self.holders: dict[str, int] = {}


@contextlib.contextmanager
def session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Runtime SQL settings for the length of a block; the session's own come back afterwards.

    Runs may share a session from several threads (a notebook, a service): the session's own value
    of a key is saved by the first block that sets it and put back by the last to leave, so blocks
    that overlap never restore each other's values. (What they set meanwhile is shared: these settings
    change how a run is executed, never its rows.)
    """
    borrowed = spark.__dict__.setdefault("_dirtiness_settings", _Borrowed())  # per session, not per module
    taken = []
    with borrowed.lock:
        for key, value in settings.items():
            first = not borrowed.holders.get(key)
            own = spark.conf.get(key, None) if first else None
            try:
                spark.conf.set(key, value)
            except PySparkException as error:  # a server that keeps its own (Databricks serverless, Sail)
                log.info("the session keeps its own %s (%s)", key, str(error).splitlines()[0][:200])
                continue
            if first:
                borrowed.own[key] = own
            borrowed.holders[key] = borrowed.holders.get(key, 0) + 1
            taken.append(key)
    try:
        yield
    finally:
        with borrowed.lock:
            for key in taken:
                borrowed.holders[key] -= 1
                if borrowed.holders[key]:
                    continue
                own = borrowed.own.pop(key)
                if own is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, own)
