"""How close a time-budgeted cell's extrapolated time is to the full measurement, and what it costs.

    .venv/bin/python benchmarks/time_budget.py --budget 60s [--full results/cris/full]

Runs the CrIS case's slowest cell (rows 1x1x1x717 from 4x30x9x717 gzip-6 chunks through a 1 MiB
cache: every row decompresses a 2.95 MiB chunk) with a time budget, and compares its extrapolated
time_s with the same cell of a full run (given with --full, or run here without a budget).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from ccp.run import run_sweep
from ccp.units import parse_duration

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", default="60s")
    ap.add_argument("--full", type=Path, default=None, help="a finished `ccp run configs/cris.yaml` folder")
    args = ap.parse_args()
    sweep = yaml.safe_load((ROOT / "configs/cris.yaml").read_text())
    sweep["name"] = "cris-budget"
    sweep["matrix"] = {"chunks": [[4, 30, 9, 717]], "filters": ["gzip:6"], "cache": ["1MiB"],
                       "access": [{"op": "read", "block": [1, 1, 1, 717]}]}
    sweep.pop("exclude", None)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "cris-budget.yaml"
        path.write_text(yaml.safe_dump(sweep))
        work = ROOT / "results" / "work"
        run_sweep(path, out=tmp / "budget", work_dir=work, report=False, time_budget=parse_duration(args.budget))
        budget = pd.read_csv(tmp / "budget" / "cells.csv").iloc[0]
        if args.full is None:
            run_sweep(path, out=tmp / "full", work_dir=work, report=False)
            full = pd.read_csv(tmp / "full" / "cells.csv").iloc[0]
        else:
            cells = pd.read_csv(args.full / "cells.csv").set_index("cell_id")
            full = cells.loc[budget["cell_id"]]
    err = budget["time_s"] / full["time_s"] - 1
    spent = budget["elapsed_s"] / full["elapsed_s"]
    print(f"budget {args.budget}: status {budget['status']}, {budget['fraction_measured']:.1%} of {int(budget['requests']):,} requests measured")
    print(f"  extrapolated time_s {budget['time_s']:.1f} s (spread {budget['time_s_min']:.1f}-{budget['time_s_max']:.1f})")
    print(f"  full run     time_s {full['time_s']:.1f} s (spread {full['time_s_min']:.1f}-{full['time_s_max']:.1f})")
    print(f"  error {err:+.1%}; cell wall time {budget['elapsed_s']:.0f} s vs {full['elapsed_s']:.0f} s = {spent:.1%} of the full cell")
    print(f"  raw reads: extrapolated {int(budget['raw_reads']):,}, full {int(full['raw_reads']):,}")


if __name__ == "__main__":
    main()
