"""The session as the job builds it: PySpark's view of the JVM keeps the classes it has resolved."""

import threading

from pyspark.sql import functions as F


def _round_trips(spark, action) -> int:
    """How many commands ``action`` sends to the JVM from this thread: not py4j's finalizer thread's releases
    of Java objects whose Python proxies were collected meanwhile (measured once: 5 commands for one lit)."""
    client = spark.sparkContext._gateway._gateway_client
    sent, caller = [], threading.get_ident()
    send = client.send_command

    def counted(command, *args, **kwargs):
        if threading.get_ident() == caller:
            sent.append(command.split("\n", 1)[0])
        return send(command, *args, **kwargs)

    client.send_command = counted
    try:
        action()
    finally:
        del client.send_command  # the instance attribute goes, the class's method is back
    return len(sent)


def test_a_column_function_costs_one_round_trip_once_resolved(spark):
    F.col("warm")  # resolves org.apache.spark.sql.functions and its col
    assert _round_trips(spark, lambda: F.col("name")) == 1
    assert _round_trips(spark, lambda: F.lit(1)) <= 2  # lit once more: its own name, then the call
    assert _round_trips(spark, lambda: F.lit(2)) == 1


def test_static_fields_are_read_each_time_and_results_are_unchanged(spark):
    assert spark.range(3).select((F.col("id") * F.lit(2)).alias("twice")).collect()[2]["twice"] == 4
    jvm = spark.sparkContext._jvm
    first = jvm.System.currentTimeMillis()
    assert jvm.System.currentTimeMillis() >= first  # a static method, kept, still called each time
    assert jvm.System is jvm.System  # the class was kept ...
    assert _round_trips(spark, lambda: jvm.Integer.MAX_VALUE) >= 1  # ... a field's value never is


def test_the_driver_collects_with_the_throughput_collector_unless_the_environment_chose_one():
    from dirtiness.config import load_config
    from dirtiness.session import driver_java_options

    ours = load_config()["spark"]["conf"]["spark.driver.extraJavaOptions"]
    assert ours == "-XX:+UseParallelGC"
    assert driver_java_options(ours, {}) == ours
    assert driver_java_options(ours, {"JAVA_TOOL_OPTIONS": "-Xss4m"}) == ours
    # the JVM refuses two collectors: the environment's wins, the rest of ours stays
    assert driver_java_options(f"-Dx=1 {ours} -Dy=2", {"JAVA_TOOL_OPTIONS": "-XX:+UseG1GC"}) == "-Dx=1 -Dy=2"
    assert driver_java_options(ours, {"JDK_JAVA_OPTIONS": "-XX:+UseZGC -Xmx2g"}) == ""


def test_a_setting_spark_submit_gives_wins_and_is_named_without_its_value(caplog):
    from dirtiness.session import not_submitted, submitted_keys

    ours = {"spark.sql.shuffle.partitions": "4", "spark.ui.retainedJobs": "100",
            "spark.hadoop.fs.s3a.secret.key": "ours-not-logged"}
    submitted = frozenset({"spark.master", "spark.sql.shuffle.partitions", "spark.hadoop.fs.s3a.secret.key"})
    with caplog.at_level("INFO", logger="dirtiness.session"):
        assert not_submitted(ours, submitted) == {"spark.ui.retainedJobs": "100"}
    assert "spark.hadoop.fs.s3a.secret.key, spark.sql.shuffle.partitions" in caplog.text
    assert "ours-not-logged" not in caplog.text and "4" not in caplog.text
    assert not_submitted(ours, frozenset()) == ours
    assert submitted_keys({}) == frozenset()  # no JVM launched this Python: nothing submitted, no JVM started


def test_releasing_a_session_waits_for_the_server_at_most_its_bound(caplog):
    """A Spark Connect server that does not answer the release (gone, or retried by the client for minutes)
    costs the command the bound, then one warning; one that answers is waited for."""
    from dirtiness.session import release

    class Session:
        def __init__(self, answers: bool):
            self.answers, self.asked, self.unblock = answers, threading.Event(), threading.Event()

        def stop(self):
            self.asked.set()
            if not self.answers:
                self.unblock.wait()

    answering = Session(answers=True)
    with caplog.at_level("WARNING", logger="dirtiness.session"):
        release(answering, seconds=60)
    assert answering.asked.is_set() and caplog.text == ""
    silent = Session(answers=False)
    with caplog.at_level("WARNING", logger="dirtiness.session"):
        release(silent, seconds=0.2)
    assert silent.asked.is_set()
    assert "did not release the session within 0.2 s" in caplog.text
    silent.unblock.set()
