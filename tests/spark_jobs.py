"""How many Spark jobs a classic session has started: job ids are sequential, the status tracker keeps only
the latest ``spark.ui.retainedJobs`` of them, so the newest id counts, not the length of the list."""


def jobs_started(spark) -> int:
    context = spark.sparkContext
    context._jsc.sc().listenerBus().waitUntilEmpty(10_000)  # status updates arrive through the listener bus
    return max(context.statusTracker().getJobIdsForGroup(None), default=-1) + 1


def stages_of_jobs(spark, first: int, end: int) -> list[int]:
    """The number of stages of each job with an id in ``first..end-1`` (jobs still kept by the status tracker)."""
    tracker = spark.sparkContext.statusTracker()
    return [len(tracker.getJobInfo(job).stageIds) for job in range(first, end)]


def descriptions_of_jobs(spark, first: int, end: int) -> list[str | None]:
    """The description of each job with an id in ``first..end-1`` (what the Spark UI lists it by)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    return [store.job(job).description().getOrElse(None) for job in range(first, end)]
