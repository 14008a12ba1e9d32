"""The warm-up pass's effect: how much slower a warm cell's first timed pass is than its other timed passes, with and
without the warm-up pass (breaker10 B11: without it the first pass was the slowest of five in 34 of 48 cells, 1.54x
the others' median), and what the warm-up costs in wall time.

    .venv/bin/python benchmarks/warmup_effect.py SWEEP [--runs 6] [--before SRC] [--out results/warmup-effect]

Runs ``ccp run SWEEP --no-report`` ``--runs`` times with this ccp (each warm local cell: a warm-up pass, then its
timed passes) and, with ``--before SRC`` (a source tree of an earlier ccp, e.g. ``git archive COMMIT ccp | tar -x
-C SRC``), as many times with that one, alternating, all with one work folder. Per cell and run it prints nothing;
per side it prints: the first timed pass over the median of the other timed passes (median, range, and in how many
cells it was the slowest pass), the warm-up pass over the median of the timed passes, and the runs' wall times and
the cells' summed elapsed_s. A sweep whose cells are all cold makes no warm-up pass: it says so. Not a test: the
figures are the machine's at the time (the load average is printed before and after each run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
WARMUP_PASS = -2       # ccp.store.schema.WARMUP_PASS (schema 6); an earlier ccp has no such rows


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(sweep: Path, out: Path, work: Path, before: Path | None) -> float:
    env = dict(os.environ)
    if before is not None:
        env["PYTHONPATH"] = str(before)      # the earlier ccp's package ahead of this one
    cmd = [sys.executable, "-m", "ccp.cli", "run", str(sweep), "--out", str(out), "--work", str(work), "--no-report"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT if before is None else before)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def _ratios(run: Path) -> tuple[list[float], list[bool], list[float], float]:
    """Per cell: first timed pass / median of the other timed passes, whether it was the slowest timed pass, the
    warm-up pass / median of the timed passes (none when the cell made none); and the cells' summed elapsed_s."""
    req = pd.read_parquet(run / "requests.parquet", columns=["cell_id", "pass", "time_s"])
    cells = pd.read_csv(run / "cells.csv")
    first, slowest, warm = [], [], []
    for _, g in req.groupby("cell_id"):
        per_pass = g.groupby("pass")["time_s"].sum()
        timed = per_pass[per_pass.index >= 0].sort_index().to_numpy(float)
        if len(timed) < 2:
            continue
        first.append(timed[0] / float(np.median(timed[1:])))
        slowest.append(bool(timed[0] == timed.max()))
        if WARMUP_PASS in per_pass.index:
            warm.append(float(per_pass[WARMUP_PASS]) / float(np.median(timed)))
    return first, slowest, warm, float(cells["elapsed_s"].sum())


def _say(name: str, runs: list[tuple[float, list[float], list[bool], list[float], float]]) -> None:
    first = [r for run in runs for r in run[1]]
    slow = [s for run in runs for s in run[2]]
    warm = [w for run in runs for w in run[3]]
    walls = [run[0] for run in runs]
    elapsed = [run[4] for run in runs]
    print(f"{name}: {len(runs)} runs, {len(first)} cell-runs")
    if first:
        print(f"  first timed pass / median of the other timed passes: median {np.median(first):.2f}x, "
              f"range {min(first):.2f}-{max(first):.2f}x; the slowest timed pass in {sum(slow)} of {len(slow)}")
    if warm:
        print(f"  warm-up pass / median of the timed passes: median {np.median(warm):.2f}x, "
              f"range {min(warm):.2f}-{max(warm):.2f}x ({len(warm)} cell-runs)")
    else:
        print("  no warm-up pass (an earlier ccp, or every cell cold, S3 or --quick)")
    print(f"  run wall time: median {np.median(walls):.2f} s (range {min(walls):.2f}-{max(walls):.2f}); cells' summed "
          f"elapsed_s: median {np.median(elapsed):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--before", type=Path, default=None, help="source tree of an earlier ccp (its ccp/ package inside)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "warmup-effect")
    args = ap.parse_args()
    sweep = args.sweep.resolve()
    out = args.out.resolve()
    work = out / "work"
    sides = {"after": None} if args.before is None else {"before": args.before.resolve(), "after": None}
    got: dict[str, list] = {k: [] for k in sides}
    for i in range(args.runs):
        for name, tree in (sides.items() if i % 2 == 0 else reversed(list(sides.items()))):
            run = out / f"{name}-{i}"
            if run.exists():
                raise SystemExit(f"{run} exists: give a new --out")
            load = _load()
            wall = _run(sweep, run, work, tree)
            print(f"# {name} run {i}: {wall:.2f} s wall; load average {load} before, {_load()} after", flush=True)
            got[name].append((wall, *_ratios(run)))
    for name in sides:
        _say(name, got[name])


if __name__ == "__main__":
    main()
