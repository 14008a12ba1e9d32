"""How long `ccp diagnose` takes on a traced program of strided reads: the diagnosis alone, in this process, after a
warm-up diagnosis (imports and the compiled model's first compile excluded), median of --repeats; with the load
average and the CPU time.

    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_stride.py --calls 50 1000 [--repeats 3] [--out results/stride-bench]
    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_stride.py --mixed 1200 [--repeats 3]
    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_stride.py --rows 20000 [--repeats 3]

``--calls N``: ``a[::3]`` of a 100,000-element dataset in 1000-element chunks, N calls. ``--mixed REPS``: the
breaker's cmp_fast program (27 reads a repetition: single elements, whole reads, strides 3, 7 and 1000, empty and
out-of-range slices of that dataset, of a 200x200 gzip dataset in 20x20 chunks and of a contiguous one), REPS
repetitions: 1200 is the 32,400-call trace of issue 23 (128 s, 107 s of it in the compiled model, before).
``--rows N``: ``g[t, ::2]`` for t < N of a 20,000x1000 dataset in 10x100 chunks: N strided calls, none the same.

Finding 6 of 2026-11-27: each strided call was one box per element (33,334 here); a 50-call trace took 11.4 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROGRAM = """import sys, h5py
f = h5py.File(sys.argv[1], "r"); a = f["a"]
for i in range(int(sys.argv[2])):
    a[::3]
"""

MIXED = """import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r"); a = f["a"]; m = f["m"]; c = f["c"]
keys = [0, -1, 99999, np.int8(-5), np.uint64(7), np.int64(-1), np.uint8(255), np.int16(3), np.uint32(9),
        slice(None), slice(None, None, 3), slice(10, 2, None), slice(-10, None), slice(0, 10**20), slice(-10**20, 5),
        slice(5, 100, 7), slice(None, 10**30, 1000), slice(np.int64(3), np.uint8(9), np.int16(2)), slice(-1, -5)]
for rep in range(int(sys.argv[2])):
    for k in keys:
        a[k]
    for k in (0, -1, slice(3, 9, 2), np.int32(-7)):
        m[k]
        c[k]
"""

ROWS = """import sys, h5py
f = h5py.File(sys.argv[1], "r"); g = f["g"]
for t in range(int(sys.argv[2])):
    g[t, ::2]
"""
MAX_ROWS = 20_000


def _trace(out: Path, name: str, data: Path, n: int) -> Path:
    """``ccp trace`` of ``out/NAME.py DATA N`` into ``out/trace-NAME-N``."""
    folder = out / f"trace-{name}-{n}"
    subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "--force", "-o", str(folder), "--",
                    sys.executable, str(out / f"{name}.py"), str(data), str(n)], check=True, capture_output=True)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, nargs="+", default=None, help="a[::3] calls per trace (default 50 1000)")
    ap.add_argument("--mixed", type=int, nargs="+", default=None, help="repetitions of the 27-read mixed program")
    ap.add_argument("--rows", type=int, nargs="+", default=None,
                    help=f"calls g[t, ::2] for t < N (distinct strided calls; N <= {MAX_ROWS})")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="results/stride-bench")
    args = ap.parse_args()
    import h5py
    import numpy as np

    from ccp.trace.stream import diagnose_folder

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("a", data=np.arange(100_000, dtype="f8"), chunks=(1000,))
        f.create_dataset("m", data=np.arange(40_000, dtype="f4").reshape(200, 200), chunks=(20, 20), compression="gzip")
        f.create_dataset("c", data=np.arange(1000, dtype="i4"))
        if args.rows:
            f.create_dataset("g", shape=(MAX_ROWS, 1000), dtype="f4", chunks=(10, 100), fillvalue=1.0)
            for t in range(0, MAX_ROWS, 1000):
                f["g"][t:t + 1000] = np.arange(t * 1000, (t + 1000) * 1000, dtype="f4").reshape(1000, 1000)
    (out / "stride.py").write_text(PROGRAM)
    (out / "mixed.py").write_text(MIXED)
    (out / "rows.py").write_text(ROWS)
    runs = []
    if args.mixed:
        runs += [("mixed", n, 27 * n) for n in args.mixed]
    if args.rows:
        runs += [("rows", min(n, MAX_ROWS), min(n, MAX_ROWS)) for n in args.rows]
    if args.calls or not (args.mixed or args.rows):
        runs += [("stride", n, n) for n in (args.calls or [50, 1000])]
    diagnose_folder(_trace(out, "stride", data, 1))     # warm-up: imports and the compiled model
    for name, n, ncalls in runs:
        folder = _trace(out, name, data, n)
        times, cpus = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            diag = diagnose_folder(folder)
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        loads = sum(int(d.get("chunk_loads") or 0) for d in diag["datasets"])
        label = {"stride": "a[::3]", "mixed": "mixed", "rows": "g[t, ::2]"}[name]
        print(f"{label} x {n} ({ncalls} calls): diagnose {statistics.median(times):.3f} s wall, "
              f"{statistics.median(cpus):.3f} s CPU (median of {args.repeats}: {', '.join(f'{t:.3f}' for t in times)}); "
              f"{loads} chunk loads; load average {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
