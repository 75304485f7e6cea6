"""Benchmark: the job on a synthetic catalog or the bundled example, its Spark jobs counted.

    python bench/run.py --objects 100000 [--seed 7] [--changed 0.0002] [--no-reference] [--no-floor] [--warm N]
                        [--next-run CHANGES [--pairs 2] [--restated]]
    python bench/run.py --example [--strategy in-place]

The run goes through the same pipeline the command line runs
(``pipeline.run``: compute, then publish). Per stage and per round of each
rule program: wall seconds and the Spark jobs and stages run (a table on
stderr). Then the floor (``floor.py``: a minimal semi-naive reachability
loop on the same catalog, same session) and, after Spark stops, the
read-back figures (explain of the longest chain, the report) and the
in-memory reference evaluator. The last line on stdout is one JSON object
with all figures.

The floor runs after the run, in a JVM the run has warmed up, while the run
itself is a cold JVM's first computation, as a scheduled run is. ``--warm N``
first computes the same catalog N times (unmeasured, same session), so that
the run's rounds and the floor's are measured with the same code compiled:
the engine's cost per round against the floor's, without the JVM's warm-up.

``--next-run CHANGES`` then measures an hour's schedule: ``CHANGES`` more
statements of the new project edited, the next run into the same output root
(taking whatever earlier runs there left) against the same inputs with
``--full``, alternately, ``--pairs`` times each (each pair after ``CHANGES``
edits more, so that every next run follows a change), in the same session. It prints
the ratio of their medians against issue 53's budget for a run after a small
change (at most 25% of a full run at 100,000 objects, 20% at a million), their
Spark jobs, whether both gave the same rows, and the bytes of what earlier runs
left beside the bytes of the facts tables. ``--restated`` edits only statements
already modified since the old project, in their hash (restated units: the next
run takes the last one's answer and renders their plan rows again).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from answers import answer_of  # noqa: E402
from floor import reachability_rounds  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from spark_work import RETAINED, SparkWork  # noqa: E402
from synthetic import generate, write_snapshot  # noqa: E402
from work_folder import work_folder  # noqa: E402

from dirtiness.changeset.dirty_sets import column_names  # noqa: E402
from dirtiness.config import PROJECT_ROOT, load_config  # noqa: E402
from dirtiness.datalog.naive import evaluate_naive  # noqa: E402
from dirtiness.model import BASE_RELATIONS, OBJECT_DOMAIN  # noqa: E402
from dirtiness.pipeline import Hooks, run  # noqa: E402
from dirtiness.session import build_session, session_settings  # noqa: E402
from dirtiness.settings import RunParams, resolve  # noqa: E402
from dirtiness.store.delta import DeltaStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, help="a synthetic catalog of this many objects")
    parser.add_argument("--example", action="store_true", help="the bundled example instead")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--changed", type=float, default=0.0002, help="fraction of statements changed")
    parser.add_argument("--strategy", choices=("blue-green", "in-place"), help="default: the configuration's")
    parser.add_argument("--no-reference", action="store_true", help="skip the in-memory evaluator")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor loop")
    parser.add_argument("--config", help="YAML overlaid on conf/job.yaml")
    parser.add_argument("--keep", help="keep the snapshots and outputs in this folder")
    parser.add_argument("--warm", type=int, default=0, metavar="N",
                        help="compute the catalog N times first (unmeasured): rounds and floor both warm")
    parser.add_argument("--next-run", type=int, metavar="CHANGES",
                        help="then the next run after CHANGES more edits, against a full run (synthetic only)")
    parser.add_argument("--pairs", type=int, default=2, help="with --next-run: runs of each kind")
    parser.add_argument("--restated", action="store_true",
                        help="with --next-run: edit only statements modified since the old project")
    args = parser.parse_args()
    if bool(args.objects) == args.example:
        parser.error("give --objects N or --example")
    if args.next_run is not None and args.example:
        parser.error("--next-run needs --objects N")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    with work_folder(args.keep, "dirtiness-bench-") as work:
        measure(args, work)


def measure(args: argparse.Namespace, work: str) -> None:
    """One run in ``work``, its figures printed: the table on stderr, the JSON line on stdout."""
    started = time.perf_counter()
    if args.example:
        old_path, new_path = (str(PROJECT_ROOT / "examples" / f"{side}.yaml") for side in ("old", "new"))
        dependencies = None
    else:
        old, new = generate(args.objects, args.seed, args.changed)
        old_path = write_snapshot(old, os.path.join(work, "old"))
        new_path = write_snapshot(new, os.path.join(work, "new"))
        dependencies = new["dependencies"].num_rows
    generate_s = time.perf_counter() - started

    config = load_config(args.config)
    config["spark"]["conf"].update(RETAINED)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    # synthetic catalogs delete stateful objects too: their plans drop them
    settings = resolve(RunParams(old=old_path, new=new_path, out=out, run_id=f"bench-{args.objects or 'example'}",
                                 strategy=args.strategy, allow_destructive=True), config)
    started = time.perf_counter()
    spark = build_session(config)
    session_s = time.perf_counter() - started
    for warm in range(args.warm):  # the same computation, unmeasured: the JVM compiles what the run will use
        run(spark, resolve(RunParams(old=old_path, new=new_path, out=os.path.join(work, f"warm{warm}"),
                                     run_id=f"warm-{warm}", strategy=args.strategy, allow_destructive=True), config))
        shutil.rmtree(os.path.join(work, f"warm{warm}"), ignore_errors=True)
    work_of = SparkWork(spark)
    stages: dict[str, dict] = {}
    rounds: list[dict] = []
    current = [None]

    def on_stage(name: str) -> None:
        if name.startswith("write:"):
            return
        if current[0] is not None:
            stages[current[0]] = _add(stages.get(current[0]), work_of.take())
        current[0] = name

    def on_round(entry) -> None:
        program = "plan" if current[0] == "plan" else "rules"
        rounds.append({"program": program, "round": entry.round, "new": sum(entry.new.values()),
                       "seconds": round(entry.seconds, 3), **work_of.take()})

    def on_static(stratum: int) -> None:  # a stratum's static parts, held as it starts (before its first round)
        program = "plan" if current[0] == "plan" else "rules"
        rounds.append({"program": program, "round": f"s{stratum}", "new": 0, "seconds": 0.0, **work_of.take()})

    summary = run(spark, settings, Hooks(on_stage=on_stage, on_round=on_round, on_static=on_static))
    stages[current[0]] = _add(stages.get(current[0]), work_of.take())
    for name in ("fixpoint", "plan"):  # a stage's own jobs, beside its rounds'
        program = "plan" if name == "plan" else "rules"
        stages[name]["rounds_jobs"] = sum(r["jobs"] for r in rounds if r["program"] == program)
    total_jobs = sum(s["jobs"] for s in stages.values()) + sum(r["jobs"] for r in rounds)
    # what Spark spent running the jobs and in Catalyst's rules, the stages' and their rounds'
    spark_work = {k: round(sum(s[k] for s in (*stages.values(), *rounds)), 3)
                  for k in ("jobs_s", "rules_s", "rule_runs")}
    report = {
        "objects": args.objects or "example",
        "strategy": settings.strategy,
        "dependencies": dependencies,
        "facts": sum(summary["facts"].values()),
        "rounds": summary["rounds"],
        "plan_rounds": summary["plan_rounds"],
        "session_s": round(session_s, 2),
        "warm": args.warm,
        "fixpoint_s": summary["seconds"]["fixpoint"],
        "total_s": summary["seconds"]["total"],
        "dirty": summary["counts"],
        "jobs": total_jobs,
        **spark_work,
        "stages": {name: {"seconds": summary["seconds"].get(name), **counts} for name, counts in stages.items()},
        "round_log": rounds,
        "round_median_s": round(statistics.median(r["seconds"] for r in rounds
                                                  if r["program"] == "rules" and isinstance(r["round"], int)), 3),
        "generate_s": round(generate_s, 2),
    }
    if args.example:  # the golden file the tests and the README are checked against
        golden = json.loads((PROJECT_ROOT / "examples" / "expected.json").read_text())
        report["golden"] = (summary["counts"] == golden["counts"] and summary["plan"] == golden["plan"]
                            and summary["rounds"] == golden["rounds"])
    if not args.no_floor:
        facts = DeltaStore(spark, out)
        with session_settings(spark, settings.computed_with(summary["objects"])):
            # under the session settings the run computed with
            floor = reachability_rounds(facts.read("facts/depends_on").where(F.col("run_id") == settings.run_id))
        report["floor_rounds"] = floor
        report["floor_round_median_s"] = round(statistics.median(r["seconds"] for r in floor), 3)
    if args.next_run is not None:
        report["next_run"] = next_run(args, spark, config, old_path, new, out, work)
    spark.stop()
    report.update(_read_back(out, os.path.join(work, "report.html"), config))
    if not args.no_reference:
        report.update(_reference(settings.checked, out, summary["run_id"], config))
    for name, figures in report["stages"].items():
        rounds_jobs = f" (+{figures['rounds_jobs']} in its rounds)" if "rounds_jobs" in figures else ""
        print(f"stage {name:<11} {figures['seconds'] or 0:7.2f} s  {figures['jobs']:5d} jobs {figures['stages']:5d} "
              f"stages{rounds_jobs}; jobs ran {figures['jobs_s']:.2f} s, Catalyst's rules {figures['rules_s']:.2f} s",
              file=sys.stderr)
    for entry in rounds:
        what = (f"round {entry['round']:>3}" if isinstance(entry["round"], int)
                else f"static stratum {entry['round'][1:]}")  # held before the stratum's first round
        print(f"{entry['program']:>5} {what} {entry['seconds']:7.2f} s  {entry['jobs']:5d} jobs "
              f"{entry['stages']:5d} stages  +{entry['new']}", file=sys.stderr)
    print(f"total {total_jobs} Spark jobs: they ran {spark_work['jobs_s']:.2f} s; Catalyst's rules ran "
          f"{spark_work['rule_runs']} times in {spark_work['rules_s']:.2f} s", file=sys.stderr)
    print(json.dumps(report))


def next_run(args: argparse.Namespace, spark, config: dict, old_path: str, new: dict, out: str, work: str) -> dict:
    """The next hourly run after ``args.next_run`` more edits, into ``out`` (after the measured run), against
    the same inputs run ``--full`` into roots of their own; alternately, ``args.pairs`` of each, each pair after
    as many edits more (so that every next run starts from one whose inputs differ from its own)."""
    rng = random.Random(args.seed + 1)
    objects = new["objects"].to_pylist()
    candidates = objects
    if args.restated:  # already modified: an edit changes their hash, not whether they changed
        deployed = {(r["database"], r["schema"], r["name"]): r["hash"]
                    for r in pq.read_table(os.path.join(old_path, "objects")).to_pylist()}
        candidates = [r for r in objects if deployed.get((r["database"], r["schema"], r["name"])) not in (None, r["hash"])]
    figures: list[dict] = []
    for pair in range(args.pairs):
        for row in rng.sample(candidates, args.next_run):
            row["hash"] += f"-next{pair}"
        new_path = write_snapshot({**new, "objects": pa.Table.from_pylist(objects, schema=new["objects"].schema)},
                                  os.path.join(work, f"new-next-{pair}"))
        for full in ((False, True) if pair % 2 == 0 else (True, False)):
            run_id = f"{'full' if full else 'next'}-{pair}"
            root = os.path.join(work, run_id) if full else out
            settings = resolve(RunParams(old=old_path, new=new_path, out=root, run_id=run_id, full=full,
                                         strategy=args.strategy, allow_destructive=True), config)
            work_of = SparkWork(spark)
            summary = run(spark, settings)
            figures.append({"full": full, "pair": pair, "mode": summary["mode"], "seconds": summary["seconds"]["total"],
                            "jobs": work_of.take()["jobs"],
                            "stages": summary["seconds"], "answer": answer_of(root, run_id)})
            print(json.dumps({k: v for k, v in figures[-1].items() if k != "answer"} | {"run": run_id}),
                  file=sys.stderr, flush=True)
    nexts, fulls = [f for f in figures if not f["full"]], [f for f in figures if f["full"]]
    ratio = statistics.median(f["seconds"] for f in nexts) / statistics.median(f["seconds"] for f in fulls)
    budget = 0.20 if args.objects >= 1_000_000 else 0.25
    kept = sum(_bytes(os.path.join(out, t)) for t in ("units", "sql_analysis", "rendered_statements", "plan_render_inputs"))
    facts = _bytes(os.path.join(out, "facts"))
    figures_ = {
        "changes": args.next_run, "next_s": statistics.median(f["seconds"] for f in nexts),
        "full_s": statistics.median(f["seconds"] for f in fulls), "ratio": round(ratio, 3), "budget": budget,
        "next_jobs": nexts[0]["jobs"], "full_jobs": fulls[0]["jobs"], "next_modes": sorted({f["mode"] for f in nexts}),
        "same_rows": all(n["answer"] == f["answer"] for n, f in zip(nexts, fulls)),
        "kept_bytes": kept, "facts_bytes": facts}
    print(f"next run after {args.next_run} edits ({', '.join(figures_['next_modes'])}): {figures_['next_s']:.1f} s "
          f"({figures_['next_jobs']} jobs) against "
          f"{figures_['full_s']:.1f} s ({figures_['full_jobs']} jobs) for a full run: {ratio:.2f}x, budget "
          f"{budget:.2f}x: {'met' if ratio <= budget else 'NOT MET'}; same rows: {figures_['same_rows']}; "
          f"kept for later runs {kept:,} bytes beside {facts:,} of facts", file=sys.stderr)
    return figures_


def _bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(folder) for f in files)


def _add(before: dict | None, more: dict) -> dict:
    return {k: round((before or {}).get(k, 0) + v, 3) for k, v in more.items()}


def _read_back(out: str, page: str, config: dict) -> dict:
    """``explain`` of the object derived last (the longest chain) and ``report``, both timed, Spark stopped."""
    from dirtiness.readback.explain import explain
    from dirtiness.readback.report.page import write_report
    from dirtiness.readback.run_tables import RunTables

    deepest = max(RunTables.open(out).rows("dirty_stmts"),
                  key=lambda r: (r["round"], r["database"], r["schema"], r["name"]))
    started = time.perf_counter()
    explanation = explain(RunTables.open(out), "object", (deepest["database"], deepest["schema"], deepest["name"]))
    explain_s = time.perf_counter() - started
    started = time.perf_counter()
    write_report(RunTables.open(out), page, config.get("report"))
    return {"explain_s": round(explain_s, 2), "explain_chain": len(explanation.chain),
            "report_s": round(time.perf_counter() - started, 2), "report_bytes": os.path.getsize(page)}


def _reference(checked, out: str, run_id: str, config: dict) -> dict:
    """The naive evaluator on the facts the job wrote; equal when every output set matches."""
    from deltalake import DeltaTable

    def rows(table: str) -> list[dict]:
        return DeltaTable(os.path.join(out, table)).to_pyarrow_table().to_pylist()

    base = {}
    for relation in BASE_RELATIONS:
        base[relation.name] = {
            tuple(tuple(r[f] for f in c.fields) if c.domain == OBJECT_DOMAIN else r[c.fields[0]]
                  for c in relation.columns)
            for r in rows(f"facts/{relation.table}") if r["run_id"] == run_id}
    started = time.perf_counter()
    derived, rounds = evaluate_naive(checked, base)
    reference_s = time.perf_counter() - started
    equal = True
    for relation, table in config["outputs"].items():
        domains = checked.domains(relation)
        keys = [c for cols in column_names(domains) for c in cols]
        got = {tuple(r[k] for k in keys) for r in rows(table) if r["run_id"] == run_id}
        expected = {tuple(p for v, d in zip(t, domains) for p in (v if d == OBJECT_DOMAIN else (v,)))
                    for t in derived[relation]}
        equal = equal and got == expected
    return {"reference_rounds": rounds, "reference_s": round(reference_s, 2), "equal": equal}


if __name__ == "__main__":
    main()
