"""Benchmark: a seeded sequence of hourly runs into one output root, each against a full run of the same inputs.

    python bench/chain.py [--objects 2000] [--steps 10] [--seed 11] [--strategy blue-green] [--rules index_aware]

Each step changes the synthetic catalog of ``synthetic.generate`` one way, drawn
from the seed (``CHANGES``, nothing as often as three others): nothing (the
snapshots written again, the same rows in new files), statement hashes edited, objects added, objects deleted, dependencies
dropped, indexes moved to another cluster, or a deploy (the deployed project
becomes the new one). The step's run goes into the chain's root, starting
from whatever the runs before it left; a run with the same run id and ``--full``
goes into a root of its own. Per step: the change, the chained run's mode,
both runs' seconds and Spark jobs, and whether their dirty sets, plan and
decisions are the same rows. Exit 1 when any answer differs, or when a run's
mode is not the one its inputs call for (``incremental`` exactly when both
projects are what they were at the step before: after ``nothing``, or a
deploy of what was already deployed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from answers import answer_of  # noqa: E402
from spark_work import SparkWork  # noqa: E402
from synthetic import CLUSTERS_PER_TENANT, generate, tables_of, write_snapshot  # noqa: E402
from work_folder import work_folder  # noqa: E402

from dirtiness.config import load_config  # noqa: E402
from dirtiness.pipeline import run  # noqa: E402
from dirtiness.session import build_session  # noqa: E402
from dirtiness.settings import RunParams, resolve  # noqa: E402

# each step's change and its weight: most hours of a schedule change nothing
CHANGES = {"nothing": 3, "edit": 1, "add": 1, "delete": 1, "rewire": 1, "index": 1, "deploy": 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--strategy", default=None)
    parser.add_argument("--rules", default=None, help="a rule program (a bundled one by name, as `run --rules`)")
    parser.add_argument("--keep", help="a folder to keep the catalogs and outputs in")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    with work_folder(args.keep, "dirtiness-chain-") as work:
        return chain(args, work)


def chain(args: argparse.Namespace, work: str) -> int:
    rng = random.Random(args.seed)
    old, new = (_rows(t) for t in generate(args.objects, args.seed, 0.002))
    config = load_config()
    spark = build_session(config)
    out, failures, steps, before = os.path.join(work, "chain"), [], [], None
    for step in range(args.steps + 1):
        change = "first" if step == 0 else rng.choices(list(CHANGES), weights=list(CHANGES.values()))[0]
        if change == "deploy":
            old = {name: [dict(row) for row in rows] for name, rows in new.items()}
        else:
            _change(new, change, rng, step)
        folder = os.path.join(work, f"step{step}")
        paths = {side: write_snapshot(tables_of(rows), os.path.join(folder, side))
                 for side, rows in (("old", old), ("new", new))}
        figures = {"step": step, "change": change}
        for label, root, full in (("chained", out, False), ("full", os.path.join(folder, "full"), True)):
            settings = resolve(RunParams(old=paths["old"], new=paths["new"], out=root, run_id=f"step-{step}",
                                         full=full, rules=args.rules, strategy=args.strategy,
                                         allow_destructive=True), config)
            work_of = SparkWork(spark)
            summary = run(spark, settings)
            figures[label] = {"mode": summary["mode"], "seconds": summary["seconds"]["total"],
                              "jobs": work_of.take()["jobs"], "answer": answer_of(root, settings.run_id)}
        same = figures["chained"]["answer"] == figures["full"]["answer"]
        now = json.dumps([old, new], sort_keys=True)  # a deploy of what is deployed, say, changes nothing
        expected = "incremental" if now == before else "full"
        before = now
        if not same:
            failures.append(f"step {step} ({change}): the chained run's answer differs from the full run's")
        if figures["chained"]["mode"] != expected:
            failures.append(f"step {step} ({change}): mode {figures['chained']['mode']}, expected {expected}")
        steps.append(figures)
        chained, full_run = figures["chained"], figures["full"]
        print(f"step {step:3d} {change:8} {chained['mode']:12} {chained['seconds']:6.1f} s {chained['jobs']:4d} jobs"
              f"   full {full_run['seconds']:6.1f} s {full_run['jobs']:4d} jobs   same rows: {same}",
              file=sys.stderr, flush=True)
    spark.stop()
    for failure in failures:
        print(failure, file=sys.stderr)
    shown = [{k: ({kk: vv for kk, vv in v.items() if kk != "answer"} if isinstance(v, dict) else v)
              for k, v in s.items()} for s in steps]
    print(json.dumps({"objects": args.objects, "seed": args.seed, "rules": args.rules, "strategy": args.strategy,
                      "steps": shown, "failures": failures}))
    return 1 if failures else 0


def _rows(tables: dict) -> dict[str, list[dict]]:
    return {name: table.to_pylist() for name, table in tables.items()}


def _change(new: dict[str, list[dict]], change: str, rng: random.Random, step: int) -> None:
    """``new`` changed one way, in place (``nothing``: left as it is)."""
    objects, deps, indexes = new["objects"], new["dependencies"], new["indexes"]
    key = ("database", "schema", "name")
    if change == "edit":
        for row in rng.sample(objects, 3):
            row["hash"] += f"e{step}"
    elif change == "add":
        for j in range(3):
            anchor = rng.choice(objects)
            objects.append({**anchor, "name": f"step{step}_added{j}", "hash": f"h-step{step}-{j}"})
            if deps:
                target = rng.choice(deps)
                deps.append({**{k: anchor[k] for k in key}, "name": f"step{step}_added{j}",
                             **{k: target[k] for k in ("dep_database", "dep_schema", "dep_name")}})
    elif change == "delete":
        gone = {tuple(r[k] for k in key) for r in rng.sample(objects, 2)}
        objects[:] = [r for r in objects if tuple(r[k] for k in key) not in gone]
        deps[:] = [d for d in deps if tuple(d[k] for k in key) not in gone
                   and (d["dep_database"], d["dep_schema"], d["dep_name"]) not in gone]
        indexes[:] = [x for x in indexes if tuple(x[k] for k in key) not in gone]
    elif change == "rewire":
        for dep in rng.sample(deps, min(3, len(deps))):
            deps.remove(dep)
    elif change == "index" and indexes:
        moved = rng.choice(indexes)
        tenant = moved["cluster"].split("_")[0]
        moved["cluster"] = f"{tenant}_c{(int(moved['cluster'][-1]) + 1) % CLUSTERS_PER_TENANT}"


if __name__ == "__main__":
    sys.exit(main())
