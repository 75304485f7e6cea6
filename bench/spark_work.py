"""What Spark ran between two marks: jobs, stages and tasks, from the session's status tracker.

Classic sessions only (Spark Connect has no SparkContext). Lives in the
benchmark, never in the job: the job does not count its own Spark work.
"""

from __future__ import annotations


class SparkWork:
    """``work.take()`` -> the jobs, stages and tasks finished since the last ``take``."""

    def __init__(self, spark) -> None:
        self.context = spark.sparkContext
        self.tracker = self.context.statusTracker()
        self.seen = set(self._job_ids())

    def _job_ids(self) -> list[int]:
        # Status updates arrive through the listener bus: wait until it has delivered them.
        self.context._jsc.sc().listenerBus().waitUntilEmpty(10_000)
        return list(self.tracker.getJobIdsForGroup(None))

    def take(self) -> dict:
        jobs = sorted(set(self._job_ids()) - self.seen)
        self.seen.update(jobs)
        stages = ran = tasks = 0
        for job in jobs:
            info = self.tracker.getJobInfo(job)
            for stage in (info.stageIds if info else ()):
                stages += 1
                stage_info = self.tracker.getStageInfo(stage)
                if stage_info is not None and stage_info.numCompletedTasks:  # not skipped (its shuffle reused)
                    ran += 1
                    tasks += stage_info.numCompletedTasks
        return {"jobs": len(jobs), "stages": ran, "skipped_stages": stages - ran, "tasks": tasks}


# Spark keeps the status of this many jobs and stages; a 1M run has tens of thousands.
RETAINED = {"spark.ui.retainedJobs": 1_000_000, "spark.ui.retainedStages": 1_000_000}
