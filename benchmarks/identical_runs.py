"""Identical runs of benchmarks/noisy_compare.py's sweep minutes apart, for the verdict rule to be judged on:
N runs as quiet as the machine is (Q1..QN) alternating with N under one memory-bound competitor (M1..MN), then the
planted CPU regression (200 us of CPU before every read) quiet (P1, P2) and under the competitor (PM1, PM2).
Competitors are this script's children, ended by pid.

    .venv/bin/python benchmarks/identical_runs.py --out /tmp/pace/runs [--runs 4]
    .venv/bin/python benchmarks/judge_recorded.py --extract tests/report/data/pace_passes.json /tmp/pace/runs/{Q1,...}

The second line keeps what the rule reads of each run's cells (tests/report/data/pace_passes.json came so).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import noisy_compare as nc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=4, help="quiet runs, and as many under the competitor")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    sweep = out / "noisy.yaml"
    sweep.write_text(yaml.safe_dump(nc.SWEEP))
    work = out / "work"

    def one(name: str, memory: int, planted: str = "") -> None:
        procs = nc.start_competitors(0, memory, 200) if memory else []
        try:
            if procs:
                time.sleep(3)
            load = os.getloadavg()[0]
            wall = nc.run(sweep, out / name, work, planted=planted)
        finally:
            nc.stop(procs)
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} {name}: {wall:.1f} s, load before {load:.2f}", flush=True)
        time.sleep(2)

    for i in range(1, args.runs + 1):
        one(f"Q{i}", 0)
        one(f"M{i}", 1)
    for i in (1, 2):
        one(f"P{i}", 0, "cpu")
        one(f"PM{i}", 1, "cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
