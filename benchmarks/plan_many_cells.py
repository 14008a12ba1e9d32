"""`ccp plan` of a 1,000-cell sweep, end to end (interpreter start-up, calibration cache warm, all cells).

    .venv/bin/python benchmarks/plan_many_cells.py [--cells 1000] [--rounds 3]

The sweep is benchmarks/many_cells.py's (50 caches x 20 read blocks over a 64x64 float32 dataset). One
untimed run first (it writes the calibration and the layout files into the work folder, as a user's first
plan does, and, as Python does by default, the modules' bytecode), then ROUNDS timed runs of `ccp plan SWEEP
--work WORK` as its own process; prints the median and spread of the wall time and of the process's CPU time
(user + system: what the machine's other jobs cannot stretch), the cell count printed by the plan, and the load
average. PYTHONDONTWRITEBYTECODE is dropped from the plan's environment: with it every run compiles ccp's modules
from source again (0.4 s here), which no user's default installation does.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
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
    ccp = str(Path(os.sys.executable).with_name("ccp"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "many.yaml"
        path.write_text(yaml.safe_dump(sweep))
        cmd = [ccp, "plan", str(path), "--json", "--work", str(Path(tmp) / "work")]
        print("$", " ".join(cmd))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        walls, cpus, cells = [], [], 0
        for _ in range(args.rounds):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            cells = len([line for line in r.stdout.splitlines() if line.startswith("{")]) or r.stdout.count('"cell_id"')
    print(f"ccp plan of {cells} cells: wall median {statistics.median(walls):.2f} s, spread {min(walls):.2f}-{max(walls):.2f} s; "
          f"CPU median {statistics.median(cpus):.2f} s, spread {min(cpus):.2f}-{max(cpus):.2f} s; "
          f"over {args.rounds} rounds; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
