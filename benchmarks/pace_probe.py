"""Does the machine's pace (ccp.measurement.passes.pace_probe: one 4 MiB copy timed after each pass) move as a small
pass's own CPU time does? A two-request pass (two 1 MiB reads of 256 KiB unfiltered chunks through h5py's low-level
API, a 2 MiB chunk cache), then the probe, 30 times, quiet and under competitors this script starts and ends by pid:
memory-bound ones (two 200 MiB arrays copied again and again, as benchmarks/noisy_compare.py's) and busy loops.

    .venv/bin/python benchmarks/pace_probe.py [--out DIR] [quiet mem1 busy2 mem1busy1 mem2 quiet ...]

Prints each condition's median pass and probe CPU time, and both as ratios to the first quiet condition's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccp.measurement.passes import pace_probe  # noqa: E402

MEMORY = "import numpy as np\na = np.ones(200 * 2**20 // 8)\nb = np.empty_like(a)\nwhile True: np.copyto(b, a)"
BUSY = "while True: pass"
KINDS = {"quiet": [], "mem1": [MEMORY], "mem2": [MEMORY, MEMORY], "busy2": [BUSY, BUSY], "mem1busy1": [MEMORY, BUSY]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kinds", nargs="*", default=["quiet", "mem1", "busy2", "mem1busy1", "mem2", "quiet", "mem1"],
                    help=f"conditions in order, each one of {', '.join(KINDS)}")
    ap.add_argument("--out", type=Path, default=None, help="folder for the test file (default: a temp dir)")
    args = ap.parse_args()
    if set(args.kinds) - set(KINDS):
        ap.error(f"not a condition: {', '.join(sorted(set(args.kinds) - set(KINDS)))} (one of {', '.join(KINDS)})")
    folder = args.out or Path(tempfile.mkdtemp(prefix="ccp-pace-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pace.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.random.default_rng(0).normal(size=(8, 32, 32, 64)).astype("<f4"),
                         chunks=(1, 32, 32, 64))
    fid = h5py.h5f.open(str(path).encode(), h5py.h5f.ACC_RDONLY)

    def one_pass() -> None:
        dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
        dapl.set_chunk_cache(521, 2 << 20, 0.75)
        ds = h5py.h5d.open(fid, b"data", dapl)
        fs = ds.get_space()
        for i in (0, 4):
            out = np.empty((4, 32, 32, 64), "<f4")
            fs.select_hyperslab((i, 0, 0, 0), (4, 32, 32, 64))
            ds.read(h5py.h5s.create_simple((4, 32, 32, 64)), fs, out)
        ds.close()

    def cpu_ms() -> float:
        t = time.thread_time_ns()
        one_pass()
        return (time.thread_time_ns() - t) / 1e6

    pace_probe()
    base = None
    for kind in args.kinds:
        procs = [subprocess.Popen([sys.executable, "-c", code]) for code in KINDS[kind]]
        try:
            time.sleep(1.5 if procs else 0)
            rows = [(cpu_ms(), pace_probe() * 1e3) for _ in range(30)]
        finally:
            for p in procs:       # only what this script started
                p.kill()
                p.wait()
        m = np.median(rows, axis=0)
        if base is None and kind == "quiet":
            base = m
        ratio = f" | x {m[0] / base[0]:.2f} {m[1] / base[1]:.2f}" if base is not None else ""
        print(f"{kind:10} pass {m[0]:.3f} ms  pace {m[1]:.3f} ms{ratio}", flush=True)
        time.sleep(1)
    fid.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
