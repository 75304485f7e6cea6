"""Benchmark: the job on a synthetic catalog, checked against the in-memory evaluator.

    python bench/run.py --objects 100000 [--seed 7] [--changed 0.0002] [--no-reference]

Prints the rounds as they run and, as its last line, one JSON object:
objects, facts, rounds, reference_rounds, equal, fixpoint_s, total_s,
reference_s, the stages and per-round seconds, and the read-back figures:
explain_s (the longest chain), report_s and report_bytes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from synthetic import generate, write_snapshot  # noqa: E402

from dirtiness.base_facts import BASE_RELATIONS, OBJECT_DOMAIN  # noqa: E402
from dirtiness.config import load_config  # noqa: E402
from dirtiness.datalog.naive import evaluate_naive  # noqa: E402
from dirtiness.job import RunParams, prepare, run  # noqa: E402
from dirtiness.outputs import column_names  # noqa: E402
from dirtiness.session import build_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--changed", type=float, default=0.0002, help="fraction of statements changed")
    parser.add_argument("--no-reference", action="store_true", help="skip the in-memory evaluator")
    parser.add_argument("--config", help="YAML overlaid on conf/job.yaml")
    parser.add_argument("--keep", help="keep the snapshots and outputs in this folder")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    work = args.keep or tempfile.mkdtemp(prefix="dirtiness-bench-")
    started = time.perf_counter()
    old, new = generate(args.objects, args.seed, args.changed)
    old_path = write_snapshot(old, os.path.join(work, "old"))
    new_path = write_snapshot(new, os.path.join(work, "new"))
    generate_s = time.perf_counter() - started

    config = load_config(args.config)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    prepared = prepare(RunParams(old=old_path, new=new_path, out=out, run_id=f"bench-{args.objects}"), config)
    spark = build_session(config)
    summary = run(spark, prepared, config)

    result = {
        "objects": args.objects,
        "dependencies": new["dependencies"].num_rows,
        "facts": sum(summary["facts"].values()),
        "rounds": summary["rounds"],
        "fixpoint_s": summary["seconds"]["fixpoint"],
        "total_s": summary["seconds"]["total"],
        "dirty": summary["counts"],
        "stages": summary["seconds"],
        "round_seconds": [r["seconds"] for r in summary["round_log"]],
        "generate_s": round(generate_s, 2),
    }
    spark.stop()
    result.update(_read_back(out, os.path.join(work, "report.html"), config))
    if not args.no_reference:
        result.update(_reference(prepared.checked, out, summary["run_id"], config))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


def _read_back(out: str, page: str, config: dict) -> dict:
    """``explain`` of the object derived last (the longest chain) and ``report``, both timed, Spark stopped."""
    from dirtiness.explain import explain
    from dirtiness.report.page import write_report
    from dirtiness.run_tables import RunTables

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
