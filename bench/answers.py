"""A run's answer as one digest, to compare two runs of the same inputs (run ids and staging suffixes aside)."""

from __future__ import annotations

import hashlib
import os

import polars as pl

from dirtiness.plan.operations import deploy_suffix


def answer_of(root: str, run_id: str) -> str:
    """A digest of a run's dirty sets, plan and decisions (its run id and staging suffix made alike)."""
    digest = hashlib.sha256()
    for table in ("dirty_stmts", "dirty_clusters", "dirty_schemas", "ddl_plan", "plan_decisions", "decisions"):
        frame = pl.read_delta(os.path.join(root, table)).filter(pl.col("run_id") == run_id).drop("run_id")
        rows = sorted(str(r).replace(deploy_suffix(run_id), "{suffix}") for r in frame.rows())
        digest.update("\n".join([table, *rows]).encode())
    return digest.hexdigest()
