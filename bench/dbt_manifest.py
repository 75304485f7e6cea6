"""Benchmark: convert and run a dbt manifest of a few hundred models.

    python bench/dbt_manifest.py [--copies 30] [--runs 3] [--keep DIR]

The manifest is jaffle_shop at dbt 1.12 (``tests/data/dbt``) repeated
``--copies`` times under new names (13 models and 6 seeds a copy, each copy's
dependencies kept inside it); the "target" manifest edits ``stg_orders_0``.
Prints the conversion time (in process, median of 5) and then runs
``dirtiness run`` as a whole process ``--runs`` times (median; the manifest
brings dbt's rules and strategy none), and the selection it makes. The last line on
stdout is one JSON object with all figures.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from work_folder import work_folder  # bench/, the script's own folder

from dirtiness.config import PROJECT_ROOT
from dirtiness.inputs.formats import to_document

FIXTURE = os.path.join(PROJECT_ROOT, "tests", "data", "dbt", "jaffle_shop_manifest_dbt_1.12.json.gz")
EDITED = "model.jaffle_shop.stg_orders_0"


def repeated(manifest: dict, copies: int) -> dict:
    """``copies`` copies of the project's models, seeds and sources, copy ``i`` suffixed ``_i``."""
    def renamed(unique_id: str, i: int) -> str:
        parts = unique_id.split(".")
        parts[-1] = f"{parts[-1]}_{i}"
        return ".".join(parts)

    nodes, sources = {}, {}
    for i in range(copies):
        for unique_id, node in manifest["nodes"].items():
            if node["resource_type"] not in ("model", "seed"):
                continue
            twin = copy.deepcopy(node)
            twin.update(unique_id=renamed(unique_id, i), name=f"{node['name']}_{i}",
                        alias=f"{node.get('alias') or node['name']}_{i}",
                        depends_on={"nodes": [renamed(p, i) for p in node["depends_on"].get("nodes", [])]})
            nodes[twin["unique_id"]] = twin
        for unique_id, source in manifest["sources"].items():
            twin = copy.deepcopy(source)
            twin.update(unique_id=renamed(unique_id, i), identifier=f"{source['identifier']}_{i}")
            sources[twin["unique_id"]] = twin
    return dict(manifest, nodes=nodes, sources=sources, child_map={}, parent_map={})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="keep the manifests and outputs in this folder")
    args = parser.parse_args()
    with work_folder(args.keep, "dirtiness-dbt-bench-") as work:
        measure(args, work)


def measure(args: argparse.Namespace, work: str) -> None:
    """The manifest's conversion and ``args.runs`` runs of the job in ``work``; the JSON line on stdout."""
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        prod = repeated(json.load(handle), args.copies)
    target = copy.deepcopy(prod)
    target["nodes"][EDITED]["raw_code"] += "\n-- edited"
    paths = {}
    for name, manifest in (("prod", prod), ("target", target)):
        paths[name] = os.path.join(work, f"{name}_manifest.json")
        with open(paths[name], "w", encoding="utf-8") as handle:
            json.dump(manifest, handle)
    models = sum(node["resource_type"] == "model" for node in prod["nodes"].values())
    seeds = sum(node["resource_type"] == "seed" for node in prod["nodes"].values())

    convert = []
    for _ in range(5):
        started = time.perf_counter()
        objects = len(to_document(paths["target"], "dbt")["objects"])
        convert.append(time.perf_counter() - started)
    print(f"manifest: {models} models, {seeds} seeds, {len(prod['sources'])} sources, "
          f"{os.path.getsize(paths['target']) / 2**20:.1f} MiB -> {objects} objects; "
          f"conversion median {statistics.median(convert):.2f} s", file=sys.stderr)

    dirtiness = os.path.join(os.path.dirname(sys.executable), "dirtiness")
    walls, summary = [], {}
    for i in range(args.runs):
        out = os.path.join(work, f"out{i}")
        shutil.rmtree(out, ignore_errors=True)
        summary_path = os.path.join(work, f"summary{i}.json")
        started = time.perf_counter()
        subprocess.run([dirtiness, "run", "--old", paths["prod"], "--new", paths["target"],
                        "--out", out, "--summary-json", summary_path],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
        with open(summary_path, encoding="utf-8") as handle:
            summary = json.load(handle)
        print(f"run {i + 1}: {walls[-1]:.1f} s", file=sys.stderr)
    selection = subprocess.run([dirtiness, "select", "--out", out], check=True, capture_output=True,
                               text=True).stdout.split()
    print(f"run median {statistics.median(walls):.1f} s; select: {' '.join(selection)}", file=sys.stderr)
    print(json.dumps({"models": models, "seeds": seeds, "objects": objects,
                      "convert_s": round(statistics.median(convert), 3), "run_s": [round(w, 1) for w in walls],
                      "run_median_s": round(statistics.median(walls), 1), "selected": selection,
                      "seconds": summary.get("seconds")}))


if __name__ == "__main__":
    main()
