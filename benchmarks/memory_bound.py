"""Peak memory of `ccp run` on a dataset several times larger than the memory it is allowed.

    .venv/bin/python benchmarks/memory_bound.py [--gib 4] [--limit-gib 1.5] [--work DIR]

Generates a GIB-sized float32 dataset (streamed, 32 MiB slabs), writes it again block by block in a
write cell and reads it back in a read cell, all under an address-space limit (RLIMIT_AS) smaller than
the dataset, and prints the peak resident memory of the whole process tree (wait4's ru_maxrss).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4.0, help="dataset size")
    ap.add_argument("--limit-gib", type=float, default=1.5, help="address-space limit for ccp (RLIMIT_AS)")
    ap.add_argument("--work", type=Path, default=None, help="folder for the work files (needs ~3x the dataset)")
    args = ap.parse_args()
    plane = 1024 * 1024 * 4                        # bytes in one 1024x1024 float32 plane
    n0 = int(args.gib * 1024**3 // plane)
    sweep = {
        "name": "memory-bound",
        "dataset": {"generate": {"shape": [n0, 1024, 1024], "dtype": "<f4", "data": "uniform"}},
        "matrix": {"chunks": [[16, 256, 256]], "filters": ["none"], "cache": ["16MiB"],
                   "access": [{"op": "write", "block": [16, 1024, 1024]}, {"op": "read", "block": [4, 1024, 1024]}]},
        "repeats": 1, "cold": True,
    }
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        tmp = Path(tmp)
        (tmp / "s.yaml").write_text(yaml.safe_dump(sweep))
        limit = int(args.limit_gib * 1024**3)

        def limit_memory():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "ccp.cli", "run", str(tmp / "s.yaml"), "--out", str(tmp / "run"),
                                 "--work", str(tmp / "work"), "--no-report"], preexec_fn=limit_memory)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        import pandas as pd
        cells = pd.read_csv(tmp / "run" / "cells.csv") if (tmp / "run" / "cells.csv").exists() else None
    print(f"dataset {n0}x1024x1024 float32 = {n0 * plane / 1024**3:.2f} GiB; address-space limit {args.limit_gib:g} GiB; "
          f"exit status {os.waitstatus_to_exitcode(status)}; {wall:.0f} s")
    print(f"peak RSS of the process tree: {usage.ru_maxrss / 1024:.0f} MiB")
    if cells is not None:
        print(cells[["op", "block", "status", "time_s", "raw_writes", "raw_reads"]].to_string(index=False))


if __name__ == "__main__":
    main()
