"""What ``pipeline.compute`` hands ``publish``: the computed run, the hooks a caller passes into it, and the
clock that names and times its stages (both stages of a run keep it). Below both, so they import it and not
each other."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession

from .datalog.engine import Evaluation, RoundLog
from .datalog.holding import Batch
from .job_names import job_names
from .plan.checks import PlanContext, PlanReport
from .settings import RunSettings
from .store.base_run import BaseRun

FULL, INCREMENTAL = "full", "incremental"  # a run's mode: computed everything, or started from an earlier run


@dataclass
class Hooks:
    """Calls into a run as it goes: the CLI logs rounds, tests inject failures, the benchmark counts jobs."""

    on_stage: Callable[[str], None] | None = None       # each stage's name as it starts; "write:<table>" too
    on_round: Callable[[RoundLog], None] | None = None  # each round of a fixed point as it ends
    on_static: Callable[[int], None] | None = None      # a stratum's static parts held as it starts (its stratum)
    # a program's fixed point as it is reached: "dirty" or "plan", its base relations (ids), its evaluation
    on_fixpoint: Callable[[str, dict[str, Batch], Evaluation], None] | None = None
    on_plan_checks: Callable[[PlanContext], None] | None = None  # what the plan's checks read beside its rows


@dataclass(frozen=True)
class Earlier:
    """What earlier runs under ``--out`` left that a run may start from: one more input of ``compute``, read
    only by a run that uses it."""

    read_analysis: Callable[[], DataFrame | None] = lambda: None  # statements succeeded runs analysed
    read_rendered: Callable[[], DataFrame | None] = lambda: None  # plan statements succeeded runs rendered
    # the run this one starts from and its units (``changeset.units``), or why there is none
    read_units: Callable[[], tuple[BaseRun, DataFrame | None]] = lambda: (BaseRun(why="no earlier run given"), None)
    read_run_table: Callable[[str, str], DataFrame] = lambda table, run_id: _no_table(table)  # a run's rows
    read_checks: Callable[[str], DataFrame | None] = lambda run_id: None  # a run's plan_checks rows, if any

    def analysis(self) -> DataFrame | None:
        """The rows of the statements succeeded runs analysed (``inputs.analysed_before``), or None."""
        return self.read_analysis()

    def rendered(self) -> DataFrame | None:
        """The plan statements succeeded runs rendered (``plan.rendered_before``), or None."""
        return self.read_rendered()

    def units(self) -> tuple[BaseRun, DataFrame | None]:
        """The run this one starts from (``store.base_run``) and its units' rows (``UNIT_ROWS``), or why there
        is none and None."""
        return self.read_units()

    def run_table(self, table: str, run_id: str) -> DataFrame:
        """The rows run ``run_id`` wrote to ``table`` (a lazy frame, without ``run_id``); raises when they
        cannot be read."""
        return self.read_run_table(table, run_id)

    def checks(self, run_id: str) -> DataFrame | None:
        """What the checks of run ``run_id``'s plan found and the digests they recorded (``store.taken``; a
        lazy frame), or None where no run recorded any; raises when they cannot be read."""
        return self.read_checks(run_id)


def _no_table(table: str) -> DataFrame:
    raise LookupError(f"no earlier run given to read {table} of")


@dataclass
class RunResult:
    """Everything a run computed and checked, not yet written: what ``publish`` writes."""

    settings: RunSettings
    started_at: dt.datetime
    facts: dict[str, Batch] = field(default_factory=dict)     # base relation -> its facts-table rows
    tables: dict[str, Batch] = field(default_factory=dict)    # output table -> dirty rows
    plan: Batch | None = None                                 # the checked ddl_plan rows
    decisions: Batch | None = None                            # plan_decisions rows
    object_decisions: Batch | None = None                     # decisions rows: one per object, schema, cluster
    desired: Batch | None = None                              # the new project's objects: key, kind, hash
    analysed: Batch | None = None     # the analysis of the statements this run parsed, for later runs
    rendered: Batch | None = None     # the plan statements this run rendered, for later runs
    render_inputs: Batch | None = None  # the render inputs of its plan rows (plan.rendered_again), for later runs
    units: Batch | None = None        # every unit of both sides with its digest (changeset.units), for later runs
    units_digest: str | None = None   # a digest of them all (``changeset.units.units_digests``), for later runs
    shapes_digest: str | None = None  # and of them by shape (``changeset.units.units_digests``), for later runs
    started_from: BaseRun = field(default_factory=BaseRun)  # the run this one compared its units with, or why none
    unit_changes: dict | None = None  # {side: {change: units}} since ``started_from`` (None: no such run)
    mode: str = FULL                  # INCREMENTAL: the outputs are those of ``started_from`` (``store.taken``)
    restated: int = 0                 # units restated since it, whose plan rows an INCREMENTAL run rendered again
    full_because: str | None = None   # why a full run did not start from an earlier one
    statements: dict[str, int] = field(default_factory=dict)  # statements parsed, rendered, and reused
    report: PlanReport | None = None                          # the plan's checks and figures
    checks_taken: bool = False        # the report is what the checks of ``started_from``'s plan found
    rounds: list[RoundLog] = field(default_factory=list)       # the dirty rules' rounds
    plan_rounds: list[RoundLog] = field(default_factory=list)  # the strategy's rules' rounds
    seconds: dict[str, float] = field(default_factory=dict)    # wall seconds per compute stage
    small_catalog: bool = False    # computed with the small-data settings (``spark.small_catalog_conf``)
    objects: int = 0               # objects in both snapshots together
    cached: list[DataFrame] = field(default_factory=list)  # columnar caches of this run (``Holding.columnar``)

    @property
    def phases(self) -> dict[str, int]:
        return self.report.phases if self.report else {}

    def release(self) -> None:
        """A long-lived session (notebook, job cluster) must not keep a run's data."""
        import gc

        for frame in self.cached:  # unlike a checkpoint, a cache stays in the session until it is dropped
            frame.unpersist()
        self.cached = []
        gc.collect()  # py4j frees a Java object only once its Python proxy is collected


@contextlib.contextmanager
def named_stages(spark: SparkSession, settings: RunSettings,
                 on_stage: Callable[[str], None] | None) -> Iterator["Stages"]:
    """A run's stage clock, its Spark jobs named by the run and the stage (``job_names``)."""
    with job_names(spark) as name_jobs:
        yield Stages(on_stage, lambda stage: name_jobs(f"dirtiness {settings.run_id}: {stage}"))


class Stages:
    """Wall-clock seconds per named stage: ``with clock("load"): ...`` (a stage entered twice, both times)."""

    def __init__(self, on_stage: Callable[[str], None] | None = None,
                 name_jobs: Callable[[str], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.on_stage, self.name_jobs = on_stage, name_jobs

    def enter(self, name: str) -> None:
        if self.name_jobs:
            self.name_jobs(name)
        if self.on_stage:
            self.on_stage(name)

    @contextlib.contextmanager
    def __call__(self, name: str):
        self.enter(name)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - started, 3)
