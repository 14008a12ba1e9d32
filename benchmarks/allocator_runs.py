"""Does a run measure the same as the run before it? breaker14 E1: a run that wrote its own work files measured a
cell's whole-chunk reads (2 MiB chunks, the native client) at 3.5-6.3 ms of CPU a pass, every run after it reusing
the files 10.6-16.8 ms: the measuring process inherited its parent's malloc thresholds (ccp.measurement.allocator).

    .venv/bin/python benchmarks/allocator_runs.py [--out DIR] [--runs 3]

Runs one such cell in a fresh work folder, then again reusing it, RUNS times each way, and prints each run's timed CPU
time per pass (ms): with ccp.measurement.allocator.steady in every measuring process the two kinds agree.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
SWEEP = {"name": "allocator", "dataset": {"path": "/data", "generate": {"shape": [8, 64, 64, 64], "dtype": "<f4",
                                                                         "data": "normal", "seed": 0}},
         "matrix": {"chunks": [[2, 64, 64, 64]], "filters": ["none"], "cache": ["16MiB"], "client": ["native"],
                    "access": [{"op": "read", "block": [4, 64, 64, 64]}]},
         "repeats": 5, "cold": False}


def cpu_ms(run: Path) -> list[float]:
    r = pd.read_parquet(run / "requests.parquet")
    opens = r[(r["phase"] == "open") & (r["pass"] >= 0)]
    return [float(x) * 1e3 for x in opens["timed_cpu_s"].astype(float)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="ccp-allocator-"))
    out.mkdir(parents=True, exist_ok=True)
    sweep = out / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    for i in range(args.runs):
        work = out / f"work{i}"
        shutil.rmtree(work, ignore_errors=True)
        for kind in ("writes", "reuses"):
            run = out / f"{kind}{i}"
            shutil.rmtree(run, ignore_errors=True)
            r = subprocess.run([str(ROOT / ".venv" / "bin" / "ccp"), "run", str(sweep), "--out", str(run), "--work",
                                str(work), "--no-report"], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"ccp run failed: {r.stderr.strip()[-300:]}")
            ms = cpu_ms(run)
            print(f"run {i + 1} {kind} its work files: timed CPU a pass {' '.join(f'{x:.1f}' for x in ms)} ms",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
