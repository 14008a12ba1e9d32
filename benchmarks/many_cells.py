"""Per-cell overhead of a sweep of many small cells: fork, files, commit, against the measured work.

    .venv/bin/python benchmarks/many_cells.py [--cells 1000] [--out DIR]

Builds a sweep of N tiny read cells (caches x blocks over one small dataset), runs it with `ccp run`
(one worker process per cell, counted pass included) and prints wall time per cell, the time the cells
themselves report (elapsed_s: passes + trace + parsing), and the difference: the engine's own cost.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-isolate", action="store_true", help="run cells in the engine's process (for comparison)")
    args = ap.parse_args()
    n_cache = 50
    n_block = -(-args.cells // n_cache)
    sweep = {
        "name": "many-cells",
        "dataset": {"generate": {"shape": [64, 64], "dtype": "<f4"}},
        "matrix": {"chunks": [[16, 16]], "filters": ["none"],
                   "cache": [{"nbytes": 4096 * (i + 1), "nslots": 521} for i in range(n_cache)],
                   "access": [{"op": "read", "block": [1 + i % 64, 64]} for i in range(n_block)]},
        "repeats": 1, "cold": False,
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "many.yaml"
        path.write_text(yaml.safe_dump(sweep))
        out = args.out or tmp / "run"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ccp.cli", "run", str(path), "--out", str(out), "--work", str(tmp / "work"),
                        "--no-report", *(["--no-isolate"] if args.no_isolate else [])], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        cells = pd.read_csv(out / "cells.csv")
    n = len(cells)
    inside = cells["elapsed_s"].sum()
    print(f"{n} cells in {wall:.1f} s: {wall / n * 1e3:.1f} ms per cell wall; "
          f"{inside / n * 1e3:.1f} ms inside the cell (passes, trace, log parsing); "
          f"engine overhead {(wall - inside) / n * 1e3:.1f} ms per cell (fork, commit, start-up amortised)")


if __name__ == "__main__":
    main()
