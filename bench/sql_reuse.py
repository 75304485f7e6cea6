"""Benchmark: a run that reuses what earlier runs parsed and rendered, against one that does it all again.

    python bench/sql_reuse.py [--objects 20000] [--changes 10] [--pairs 2] [--seed 7]

The synthetic catalog of ``bench/run.py`` (``synthetic.generate``), each view
and materialized view given a statement that reads its dependencies, as
table-form snapshots. A first run into the output root parses every statement
and renders every plan statement, and keeps both (``sql_analysis``,
``rendered_statements``); then ``--changes`` statements of the new project are
edited and the same inputs are run ``--pairs`` times both ways, alternately, in
one session: reusing what earlier runs kept, and with ``--full``. Per run: wall
seconds of the ``sql`` and ``plan`` stages and of the whole run, statements
parsed, rendered and reused; both ways must give the same dirty sets and the
same plan, row for row (each run's staging suffix made alike). The last line
on stdout is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile

import polars as pl
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from synthetic import generate, write_snapshot  # noqa: E402

from dirtiness.config import load_config  # noqa: E402
from dirtiness.pipeline import run  # noqa: E402
from dirtiness.plan.operations import deploy_suffix  # noqa: E402
from dirtiness.session import build_session  # noqa: E402
from dirtiness.settings import RunParams, resolve  # noqa: E402


def with_statements(tables: dict) -> dict:
    """Each view and materialized view reads its dependencies (what ``depends_on`` says it reads)."""
    objects, deps = tables["objects"].to_pylist(), tables["dependencies"].to_pylist()
    reads: dict[tuple, list[tuple]] = {}
    for d in deps:
        reads.setdefault((d["database"], d["schema"], d["name"]), []).append(
            (d["dep_database"], d["dep_schema"], d["dep_name"]))
    for o in objects:
        read = reads.get((o["database"], o["schema"], o["name"]))
        if o["kind"] in ("view", "materialized-view") and read:
            sources = " CROSS JOIN ".join(f'"{db}"."{schema}"."{name}" AS r{i}'
                                          for i, (db, schema, name) in enumerate(read))
            kind = "MATERIALIZED VIEW" if o["kind"] == "materialized-view" else "VIEW"
            cluster = f' IN CLUSTER "{o["cluster"]}"' if o["cluster"] else ""
            o["sql"] = f'CREATE {kind} "{o["name"]}"{cluster} AS SELECT r0.* FROM {sources} WHERE 1 = 1'
    return {**tables, "objects": pa.Table.from_pylist(objects, schema=tables["objects"].schema)}


def edited(tables: dict, changes: int, rng: random.Random) -> dict:
    objects = tables["objects"].to_pylist()
    for o in rng.sample([o for o in objects if o["sql"]], changes):
        o["sql"] = o["sql"].replace("WHERE 1 = 1", "WHERE 2 = 2")
        o["hash"] += "-edited"
    return {**tables, "objects": pa.Table.from_pylist(objects, schema=tables["objects"].schema)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    old, new = generate(args.objects, args.seed, 0.0002)
    old, new = with_statements(old), with_statements(new)
    config = load_config()
    spark = build_session(config)
    spark.sparkContext.setLogLevel("ERROR")
    figures = []
    with tempfile.TemporaryDirectory(prefix="dirtiness-sql-reuse-") as work:
        old_path = write_snapshot(old, os.path.join(work, "old"))
        out = os.path.join(work, "out")

        def one(new_path: str, run_id: str, full: bool) -> dict:
            settings = resolve(RunParams(old=old_path, new=new_path, out=out, run_id=run_id, allow_destructive=True,
                                         full=full), config)
            summary = run(spark, settings)
            plan = pl.read_delta(os.path.join(out, "ddl_plan")).filter(pl.col("run_id") == run_id).drop("run_id")
            rows = sorted(str(r).replace(deploy_suffix(run_id), "_{suffix}") for r in plan.rows())
            return {"run": run_id, "full": full, "sql_s": summary["seconds"]["sql"],
                    "plan_s": summary["seconds"]["plan"], "total_s": summary["seconds"]["total"],
                    **summary["statements"], "answer": [summary["counts"], summary["plan"],
                                                        hashlib.sha256("\n".join(rows).encode()).hexdigest()]}

        first = one(write_snapshot(new, os.path.join(work, "new0")), "first", False)
        print(json.dumps(first), file=sys.stderr, flush=True)
        new_path = write_snapshot(edited(new, args.changes, rng), os.path.join(work, "new1"))
        for pair in range(args.pairs):
            for full in ((False, True) if pair % 2 == 0 else (True, False)):
                row = one(new_path, f"{'full' if full else 'reuse'}-{pair}", full)
                print(json.dumps(row), file=sys.stderr, flush=True)
                figures.append(row)
    spark.stop()
    reuse = [r for r in figures if not r["full"]]
    full = [r for r in figures if r["full"]]
    assert all(r["answer"] == full[0]["answer"] for r in figures), "reused and parsed runs differ"
    print(json.dumps({
        "objects": args.objects, "changes": args.changes, "first_parsed": first["parsed"],
        "first_rendered": first["rendered"],
        "reuse": {"parsed": reuse[0]["parsed"], "reused": reuse[0]["reused"], "rendered": reuse[0]["rendered"],
                  "render_reused": reuse[0]["render_reused"],
                  **{f"{k}_s": statistics.median(r[f"{k}_s"] for r in reuse) for k in ("sql", "plan", "total")}},
        "full": {"parsed": full[0]["parsed"], "rendered": full[0]["rendered"],
                 **{f"{k}_s": statistics.median(r[f"{k}_s"] for r in full) for k in ("sql", "plan", "total")}},
        "sql_ratio": round(statistics.median(r["sql_s"] for r in reuse)
                           / statistics.median(r["sql_s"] for r in full), 3),
        "plan_ratio": round(statistics.median(r["plan_s"] for r in reuse)
                            / statistics.median(r["plan_s"] for r in full), 3),
        "total_ratio": round(statistics.median(r["total_s"] for r in reuse)
                             / statistics.median(r["total_s"] for r in full), 3)}))


if __name__ == "__main__":
    main()
