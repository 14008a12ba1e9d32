"""ccp tune against an exhaustive measured sweep over a grid of chunk shapes, on three workloads.

    PYTHONPATH=. .venv/bin/python benchmarks/tune_vs_sweep.py [--out results/tune-bench] [--budget 60s] [--repeats 1]

For each workload (time series + maps, the cache trap, a single random-tile pattern; small enough
for a shared machine): ``ccp tune`` with a measuring budget, then one ``ccp run`` sweep over a grid
of chunk shapes (per dimension 1, 4, 16, 64, ... and the whole dimension; chunks of 4 KiB up to the workload's
max_chunk_bytes) x the workload's filters x two caches (the readers' current cache and the
largest the tuner may use), every pattern measured. Quality: the tuner's pick (measured in its
own proof run) over the best weighted time in the grid (both cold, same repeats). Cost: wall time.
The grid and the tuner measure in separate runs: differences of a few percent are noise.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import time
from pathlib import Path

import yaml

from ccp.run import prepare, run_sweep
from ccp.store.schema import FINISHED
from ccp.tune.tune import tune
from ccp.units import parse_duration, parse_size

WORKLOADS = {
    "series-maps": {
        "name": "bench-series-maps",
        "dataset": {"path": "/data", "generate": {"shape": [128, 48, 72], "dtype": "<f4", "data": "smooth"}},
        "workload": [{"access": {"op": "read", "block": [128, 1, 1]}, "weight": 1},
                     {"access": {"op": "read", "block": [1, 48, 72]}, "weight": 1}],
        "constraints": {"filters": ["none"], "max_chunk_bytes": "64KiB", "max_cache_bytes": "256KiB",
                        "current_cache": "64KiB"},
    },
    "cache-trap": {
        "name": "bench-cache-trap",
        "dataset": {"path": "/data", "generate": {"shape": [8, 30, 9, 100], "dtype": ">f4", "chunks": [4, 30, 9, 100],
                                                  "filters": "gzip:6"}},
        "workload": [{"access": {"op": "read", "block": [1, 1, 1, 100]}, "weight": 1}],
        "constraints": {"current_cache": "256KiB", "max_cache_bytes": "1MiB", "max_chunk_bytes": "512KiB"},
    },
    "single-tile": {
        "name": "bench-single-tile",
        "dataset": {"path": "/data", "generate": {"shape": [64, 128, 128], "dtype": "<f4", "data": "smooth"}},
        "workload": [{"access": {"op": "read", "block": [8, 32, 32], "random": 100}, "weight": 1}],
        "constraints": {"filters": ["gzip:1"], "cache_nbytes": 0, "max_chunk_bytes": "256KiB"},
    },
}


def grid_shapes(shape, itemsize: int, max_bytes: int, min_bytes: int = 4096) -> list[list[int]]:
    per_dim = [sorted({4 ** k for k in range(0, 8) if 4 ** k < n} | {n}) for n in shape]
    out = []
    for c in itertools.product(*per_dim):
        b = math.prod(c) * itemsize
        if min_bytes <= b <= max_bytes:
            out.append(list(c))
    return out


def grid_sweep(doc: dict, repeats: int, budget: float | None) -> dict:
    import numpy as np

    g = doc["dataset"]["generate"]
    itemsize = np.dtype(g.get("dtype", "<f4")).itemsize
    k = doc["constraints"]
    filters = k.get("filters") or [g.get("filters", "none")]
    caches = [parse_size(k.get("current_cache", "1MiB"))]
    if "cache_nbytes" in k:
        caches = [parse_size(k["cache_nbytes"])]
    else:
        caches.append(parse_size(k.get("max_cache_bytes", "64MiB")))
    return {"name": doc["name"] + "-grid", "dataset": doc["dataset"],
            "matrix": {"chunks": grid_shapes(g["shape"], itemsize, parse_size(k.get("max_chunk_bytes", "4MiB"))),
                       "filters": filters, "cache": [{"nbytes": c, "nslots": 521 if c < 1 << 20 else 10007} for c in caches],
                       "access": [it["access"] for it in doc["workload"]]},
            "repeats": repeats, "cold": True, "time_budget": budget}


def best_of_grid(sweep_file: Path, run_dir: Path, doc: dict) -> tuple[dict, int]:
    _, _, cells = prepare(sweep_file)
    with (run_dir / "cells.csv").open(newline="") as fh:
        rows = {r["cell_id"]: r for r in csv.DictReader(fh)}
    weights = {json.dumps(it["access"].get("block")): it.get("weight", 1) for it in doc["workload"]}
    totals: dict[tuple, float] = {}
    for c in cells:
        r = rows.get(c.cell_id)
        key = (c.chunks, c.filters.spec, c.cache.nbytes)
        ok = r is not None and r["status"] in FINISHED
        w = weights[json.dumps(list(c.access.block))]
        totals[key] = totals.get(key, 0.0) + (w * float(r["time_s"]) if ok else math.inf)
    best = min(totals.items(), key=lambda kv: kv[1])
    return {"chunks": list(best[0][0]), "filters": best[0][1], "cache_nbytes": best[0][2], "measured_s": best[1]}, len(cells)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("results/tune-bench"))
    ap.add_argument("--budget", default="60s", help="ccp tune's measuring budget")
    ap.add_argument("--cell-budget", default="5s", help="time budget per grid cell")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "work"
    summary = []
    for name in args.only or WORKLOADS:
        doc = WORKLOADS[name]
        wfile = args.out / f"{name}.yaml"
        wfile.write_text(yaml.safe_dump(doc, sort_keys=False))
        t0 = time.perf_counter()
        # a fresh tune folder each time; the grid folder resumes (a rerun measures only missing grid cells)
        r = tune(wfile, budget=parse_duration(args.budget), out=args.out / name / f"tune-{time.strftime('%Y%m%d-%H%M%S')}", work_dir=work,
                 repeats=args.repeats, echo=lambda *_: None)
        t_tune = time.perf_counter() - t0
        gfile = args.out / f"{name}-grid.yaml"
        gfile.write_text(yaml.safe_dump(grid_sweep(doc, args.repeats, parse_duration(args.cell_budget)), sort_keys=False))
        t0 = time.perf_counter()
        run_sweep(gfile, out=args.out / name / "grid", work_dir=work, report=False, echo=lambda *_: None)
        t_grid = time.perf_counter() - t0
        best, ncells = best_of_grid(gfile, args.out / name / "grid", doc)
        rec = r["recommended"]
        row = {"workload": name, "tuner_pick": rec["chunks"], "tuner_cache": rec["cache_nbytes"], "tuner_s": rec["measured_s"],
               "model_pick": r["model_pick"]["chunks"], "grid_best": best["chunks"], "grid_best_cache": best["cache_nbytes"],
               "grid_best_s": best["measured_s"], "quality": rec["measured_s"] / best["measured_s"] if rec["measured_s"] else None,
               "heuristics_s": r["verified"]["heuristics"], "current_s": r["verified"]["current"],
               "candidates": r["candidates"], "tune_wall_s": t_tune, "search_s": r["search"]["search_s"],
               "grid_cells": ncells, "grid_wall_s": t_grid}
        summary.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"{'workload':<12} {'tuner pick':<14} {'measured':>9} {'grid best':<14} {'measured':>9} {'pick/best':>9} "
          f"{'tune wall':>9} {'grid wall':>9} {'grid cells':>10}")
    for s in summary:
        print(f"{s['workload']:<12} {'x'.join(map(str, s['tuner_pick'])):<14} {s['tuner_s']:>9.4f} "
              f"{'x'.join(map(str, s['grid_best'])):<14} {s['grid_best_s']:>9.4f} {s['quality']:>9.2f} "
              f"{s['tune_wall_s']:>9.1f} {s['grid_wall_s']:>9.1f} {s['grid_cells']:>10}")


if __name__ == "__main__":
    main()
