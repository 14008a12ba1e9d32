"""ccp tune against an exhaustive measured sweep over a grid of chunk shapes, on three workloads.

    PYTHONPATH=. .venv/bin/python benchmarks/tune_vs_sweep.py [--out results/tune-bench] [--budget 60s]
        [--cell-budget 2s] [--repeats 3] [--tune-repeats 3] [--final-repeats 5] [--speed]

For each workload (time series + maps, the cache trap, a single random-tile pattern; small enough
for a shared machine): ``ccp tune`` with a measuring budget, then one ``ccp run`` sweep over a grid
of chunk shapes (per dimension 1, 4, 16, 64, ... and the whole dimension; chunks of 4 KiB up to the
workload's max_chunk_bytes) x the workload's filters x the largest cache the tuner may use (or the
fixed one), every pattern measured, cold. Quality: the tuner's pick over the grid's best weighted
time, twice: as each run measured it (separate runs, minutes apart on a shared machine), and
head-to-head, the two layouts measured again back to back with ``--final-repeats`` passes each
(medians). The head-to-head is the figure to trust: the grid's best is the fastest of many noisy
measurements, so on a busy machine it is biased low (the winner's curse), and the two runs happen
minutes apart under different loads. Cost: wall time of the tuner and of the grid.

``--speed``: also the search alone (model, no measurement) on configs/tune-series-maps.yaml, a
20 MiB dataset: candidates costed and seconds.
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

from ccp.chunkcache import ChunkCache
from ccp.hdf5.dataset import describe_source
from ccp.hdf5.filters import parse_filters
from ccp.run import prepare, run_sweep
from ccp.store.schema import FINISHED
from ccp.tune.prove import Contender, measure_all
from ccp.tune.tune import tune
from ccp.tune.workload import load_workload
from ccp.units import parse_duration, parse_size

WORKLOADS = {
    "series-maps": {
        "name": "bench-series-maps",
        "dataset": {"path": "/data", "generate": {"shape": [256, 48, 72], "dtype": "<f4", "data": "smooth"}},
        "workload": [{"access": {"op": "read", "block": [256, 1, 1]}, "weight": 1},
                     {"access": {"op": "read", "block": [1, 48, 72]}, "weight": 1}],
        "constraints": {"filters": ["none"], "max_chunk_bytes": "64KiB", "max_cache_bytes": "256KiB",
                        "current_cache": "64KiB"},
    },
    "cache-trap": {
        "name": "bench-cache-trap",
        "dataset": {"path": "/data", "generate": {"shape": [64, 30, 9, 100], "dtype": ">f4", "chunks": [4, 30, 9, 100],
                                                  "filters": "gzip:6"}},
        "workload": [{"access": {"op": "read", "block": [1, 1, 1, 100]}, "weight": 1}],
        "constraints": {"current_cache": "256KiB", "max_cache_bytes": "1MiB", "max_chunk_bytes": "512KiB"},
    },
    "single-tile": {
        "name": "bench-single-tile",
        "dataset": {"path": "/data", "generate": {"shape": [64, 128, 128], "dtype": "<f4", "data": "smooth"}},
        "workload": [{"access": {"op": "read", "block": [8, 32, 32], "random": 400}, "weight": 1}],
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
    # the largest cache the tuner may use (a larger cache is never slower bar hash collisions: the
    # readers' smaller current cache would only add cells that cannot be the grid's best)
    caches = [parse_size(k["cache_nbytes"])] if "cache_nbytes" in k else [parse_size(k.get("max_cache_bytes", "64MiB"))]
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
    cache = next(c.cache for c in cells if (c.chunks, c.filters.spec, c.cache.nbytes) == best[0])
    return {"chunks": list(best[0][0]), "filters": best[0][1], "cache_nbytes": best[0][2], "cache_nslots": cache.nslots,
            "cache_w0": cache.w0, "measured_s": best[1]}, len(cells)


def head_to_head(wfile: Path, rec: dict, best: dict, out: Path, work: Path, repeats: int) -> tuple[float | None, float | None]:
    """The tuner's pick and the grid's best measured again, one after the other, ``repeats`` cold passes each."""
    wl = load_workload(wfile)
    source = describe_source(wl.dataset)

    def contender(label, d, nslots, w0):
        return Contender(label, tuple(d["chunks"]), parse_filters(d["filters"]), ChunkCache(d["cache_nbytes"], nslots, w0),
                         float("nan"), "candidate")

    pair = [contender("tuner", rec, rec["cache_nslots"], rec["cache_w0"]),
            contender("grid best", best, best["cache_nslots"], best["cache_w0"])]
    m = measure_all(wl, source, pair, out, work, budget=0, repeats=repeats, echo=lambda *_: None)
    return m[0].measured_s, m[1].measured_s


def search_speed(out: Path) -> dict:
    """``ccp tune configs/tune-series-maps.yaml --no-measure``: the model's search on a 20 MiB dataset."""
    t0 = time.perf_counter()
    r = tune(Path(__file__).resolve().parent.parent / "configs" / "tune-series-maps.yaml", out=out / "speed",
             work_dir=out / "work", measure=False, echo=lambda *_: None)
    return {"dataset": r["dataset"]["shape"], "layouts": r["search"]["layouts"], "bounded": r["search"]["layouts"],
            "walked": r["candidates"], "search_s": r["search"]["search_s"], "calibration_s": r["search"]["calibration_s"],
            "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("results/tune-bench"))
    ap.add_argument("--budget", default="60s", help="ccp tune's measuring budget")
    ap.add_argument("--cell-budget", default="2s", help="time budget per grid cell")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per grid cell (the median stands)")
    ap.add_argument("--tune-repeats", type=int, default=3, help="timed passes per cell in the tuner's own proof")
    ap.add_argument("--final-repeats", type=int, default=5, help="passes each in the head-to-head of the two picks")
    ap.add_argument("--speed", action="store_true", help="also time the search alone on the 20 MiB series+maps config")
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
                 repeats=args.tune_repeats, echo=lambda *_: None)
        t_tune = time.perf_counter() - t0
        gfile = args.out / f"{name}-grid.yaml"
        gfile.write_text(yaml.safe_dump(grid_sweep(doc, args.repeats, parse_duration(args.cell_budget)), sort_keys=False))
        t0 = time.perf_counter()
        run_sweep(gfile, out=args.out / name / "grid", work_dir=work, report=False, echo=lambda *_: None)
        t_grid = time.perf_counter() - t0
        best, ncells = best_of_grid(gfile, args.out / name / "grid", doc)
        rec = r["recommended"]
        t0 = time.perf_counter()
        h_tuner, h_grid = head_to_head(wfile, rec, best, args.out / name / f"final-{time.strftime('%Y%m%d-%H%M%S')}", work,
                                       args.final_repeats)
        t_final = time.perf_counter() - t0
        row = {"workload": name, "tuner_pick": rec["chunks"], "tuner_cache": rec["cache_nbytes"], "tuner_s": rec["measured_s"],
               "model_pick": r["model_pick"]["chunks"], "grid_best": best["chunks"], "grid_best_cache": best["cache_nbytes"],
               "grid_best_s": best["measured_s"], "quality": rec["measured_s"] / best["measured_s"] if rec["measured_s"] else None,
               "tuner_why": rec["why"], "head_to_head_tuner_s": h_tuner, "head_to_head_grid_s": h_grid,
               "head_to_head_quality": h_tuner / h_grid if h_tuner and h_grid else None, "head_to_head_wall_s": t_final,
               "heuristics_s": r["verified"]["heuristics"], "current_s": r["verified"]["current"],
               "candidates": r["candidates"], "tune_wall_s": t_tune, "search_s": r["search"]["search_s"],
               "grid_cells": ncells, "grid_wall_s": t_grid}
        summary.append(row)
        print(json.dumps(row), flush=True)
    speed = search_speed(args.out) if args.speed else None
    if speed:
        print(json.dumps(speed), flush=True)
    (args.out / "summary.json").write_text(json.dumps({"workloads": summary, "search_speed": speed}, indent=2))
    print(f"{'workload':<12} {'tuner pick':<16} {'measured':>9} {'grid best':<16} {'measured':>9} {'pick/best':>9} "
          f"{'head-to-head':>12} {'tune wall':>9} {'grid wall':>9} {'grid cells':>10}")
    for s in summary:
        h2h = f"{s['head_to_head_quality']:.2f}" if s["head_to_head_quality"] else "-"
        print(f"{s['workload']:<12} {'x'.join(map(str, s['tuner_pick'])):<16} {s['tuner_s']:>9.4f} "
              f"{'x'.join(map(str, s['grid_best'])):<16} {s['grid_best_s']:>9.4f} {s['quality']:>9.2f} {h2h:>12} "
              f"{s['tune_wall_s']:>9.1f} {s['grid_wall_s']:>9.1f} {s['grid_cells']:>10}")


if __name__ == "__main__":
    main()
