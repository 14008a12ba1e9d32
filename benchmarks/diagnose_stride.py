"""How long `ccp diagnose` takes on a traced program of strided reads (``a[::3]`` of a 100,000-element dataset in
1000-element chunks, N calls): the diagnosis alone, in this process, after a warm-up diagnosis (imports and the
compiled model's first compile excluded), median of --repeats; with the load average.

    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_stride.py --calls 50 1000 [--repeats 3] [--out results/stride-bench]

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, nargs="+", default=[50, 1000])
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
    (out / "stride.py").write_text(PROGRAM)
    folders = {}
    for n in sorted(set([1] + args.calls)):
        folders[n] = out / f"trace-{n}"
        subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "--force", "-o", str(folders[n]), "--",
                        sys.executable, str(out / "stride.py"), str(data), str(n)], check=True, capture_output=True)
    diagnose_folder(folders[1])          # warm-up: imports and the compiled model
    for n in args.calls:
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            diag = diagnose_folder(folders[n])
            times.append(time.perf_counter() - t0)
        d = diag["datasets"][0]
        print(f"{n} strided calls: diagnose {statistics.median(times):.3f} s (median of {args.repeats}: "
              f"{', '.join(f'{t:.3f}' for t in times)}); {d.get('chunk_loads')} chunk loads; "
              f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
