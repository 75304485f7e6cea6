"""Every strategy that plans DDL, in one table: its bundled rule program, what its planner and decisions table
read of its rules, its planner, and how its decided tuples become one decision per subject.

``model.STRATEGIES`` names them all for the command line (with ``none``,
which plans nothing: ``model.NO_PLAN``); a strategy added here is one entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame

from ..config import CONF
from . import blue_green, in_place
from .operations import Planning

# (relation, decision for a deployed object, for one the database lacks, whether it decides only for objects
# the new project no longer has)
ObjectDecision = tuple[str, str, str, bool]


@dataclass(frozen=True)
class Strategy:
    """One strategy: the rows of its plan and the decisions they carry out."""

    name: str
    rules: str  # its bundled rule program (plan.rules in conf/job.yaml names it too)
    # every relation of its rules the planner and the decisions table read: a program given for the strategy
    # must derive each (``changeset.rules.load_plan_rules``)
    planned: tuple[str, ...]
    operations: Callable[[Planning], tuple[DataFrame, DataFrame]]  # rows and what staged statements read
    groups: dict[str, tuple[tuple[str, ...], str]]  # phase group -> the relations it orders, by which edges
    objects: tuple[ObjectDecision, ...]  # an object's terminal relations (``plan.decision_table``)
    # a schema's and a cluster's: the first that holds decides (a swapped schema is also staged)
    schemas: tuple[tuple[str, str], ...]
    clusters: tuple[tuple[str, str], ...]
    dirty_kept: str | None = None  # why a dirty object the plan leaves alone is kept ({kind}: its kind)


BLUE_GREEN = Strategy(
    name="blue-green", rules=str(CONF / "rules" / "plan_blue_green.dl"),
    planned=("Redeployed", "Staged", "ReplacedInPlace", "CreatedInProduction", "Swapped", "Removed", "Gone",
             "DroppedInCleanup", "SinkRedeployed", "SinkRecreated", "SinkRepointed", "SinkDropped",
             "StagingSchema", "CreatedSchema", "EmptiedSchema", "SwappedCluster", "CreatedCluster"),
    operations=blue_green.blue_green_plan, groups=blue_green.GROUPS,
    objects=(("Staged", "redeployed by staging", "created by staging", False),
             ("ReplacedInPlace", "replaced in place", "replaced in place", False),
             ("CreatedInProduction", "created", "created", False),
             ("SinkRecreated", "created again", "created", False),
             ("SinkRepointed", "repointed", "repointed", False),
             ("SinkDropped", "dropped", "dropped", True),
             ("Gone", "dropped", "dropped", False),
             ("Removed", "dropped", "dropped", True)),
    schemas=(("Swapped", "swapped"), ("EmptiedSchema", "dropped"), ("CreatedSchema", "created"),
             ("StagingSchema", "staged for replacements")),
    clusters=(("SwappedCluster", "swapped"), ("CreatedCluster", "created")),
    dirty_kept="dirty; blue-green does not redeploy a {kind} outside the swapped schemas",
)
IN_PLACE = Strategy(
    name="in-place", rules=str(CONF / "rules" / "plan_in_place.dl"),
    planned=("Dropped", "Created", "CreatedSchema", "EmptiedSchema", "CreatedCluster"),
    operations=in_place.in_place_plan, groups=in_place.GROUPS,
    objects=(("Created", "dropped and created again", "created", False), ("Dropped", "dropped", "dropped", True)),
    schemas=(("EmptiedSchema", "dropped"), ("CreatedSchema", "created")),
    clusters=(("CreatedCluster", "created"),),
)
PLANNERS = {s.name: s for s in (BLUE_GREEN, IN_PLACE)}  # every strategy that plans, by name
