"""What Spark ran between two marks: jobs, stages and tasks, from the session's status tracker; the seconds
those jobs ran; and the runs and seconds of Catalyst's analyser and optimiser rules.

A small catalog's run costs far more than its jobs run: every DataFrame a run
builds is analysed when it is built, and every query it collects is
optimised and planned before its job starts. ``jobs_s`` against a stage's
wall seconds shows that share; ``rule_runs`` counts the rules Catalyst ran
(the same for the same run, however busy the machine), ``rules_s`` their
time. Catalyst keeps one count per JVM: a measured session runs alone.

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
        self.rules = self.context._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
        self.last_rules = self._rule_metrics()

    def _rule_metrics(self) -> tuple[int, int]:
        """Catalyst's rules run so far in this JVM: (runs, nanoseconds)."""
        metrics = self.rules.getCurrentMetrics()
        return metrics.numRuns(), metrics.time()

    def _job_ids(self) -> list[int]:
        # Status updates arrive through the listener bus: wait until it has delivered them.
        self.context._jsc.sc().listenerBus().waitUntilEmpty(10_000)
        return list(self.tracker.getJobIdsForGroup(None))

    @staticmethod
    def _ran_ms(store, job: int) -> int:
        """From the job's submission to its end; 0 for a job the status store no longer keeps (``RETAINED``)."""
        try:
            data = store.job(job)
        except Exception:  # noqa: BLE001 - py4j's error for a job evicted from the store
            return 0
        if not (data.submissionTime().isDefined() and data.completionTime().isDefined()):
            return 0
        return data.completionTime().get().getTime() - data.submissionTime().get().getTime()

    def take(self) -> dict:
        jobs = sorted(set(self._job_ids()) - self.seen)
        self.seen.update(jobs)
        stages = ran = tasks = 0
        store, ran_ms = self.context._jsc.sc().statusStore(), 0
        for job in jobs:
            ran_ms += self._ran_ms(store, job)
            info = self.tracker.getJobInfo(job)
            for stage in (info.stageIds if info else ()):
                stages += 1
                stage_info = self.tracker.getStageInfo(stage)
                if stage_info is not None and stage_info.numCompletedTasks:  # not skipped (its shuffle reused)
                    ran += 1
                    tasks += stage_info.numCompletedTasks
        (runs_before, nanos_before), self.last_rules = self.last_rules, self._rule_metrics()
        runs, nanos = self.last_rules[0] - runs_before, self.last_rules[1] - nanos_before
        return {"jobs": len(jobs), "stages": ran, "skipped_stages": stages - ran, "tasks": tasks,
                "jobs_s": round(ran_ms / 1000, 3), "rule_runs": runs, "rules_s": round(nanos / 1e9, 3)}


# Spark keeps the status of this many jobs and stages; a 1M run has tens of thousands.
RETAINED = {"spark.ui.retainedJobs": 1_000_000, "spark.ui.retainedStages": 1_000_000}
