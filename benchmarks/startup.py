"""Start-up of ``ccp repack``: what the interpreter, numpy, h5py and click cost before ccp does anything, and
a whole small repack, each as its own process; median CPU (user+sys) and wall over ROUNDS, variants
alternating order each round. OpenBLAS rows: numpy's import with its thread pool (the default) and with
OPENBLAS_NUM_THREADS=1 (what ``ccp repack`` sets for itself, see ccp.cli.one_blas_thread).

    .venv/bin/python benchmarks/startup.py [--rounds 9] [--work DIR]

Where the start-up goes module by module: ``python -X importtime .venv/bin/ccp repack ...``. The load average
is printed before and after: on a busy machine the wall times move with it, the CPU times much less.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np


def cases(work: Path) -> dict[str, tuple[list[str], dict]]:
    py = sys.executable
    ccp = str(Path(py).with_name("ccp"))
    blas1 = {"OPENBLAS_NUM_THREADS": "1"}
    small = [ccp, "repack", "-q", "-l", "data:CHUNK=100x10", "-f", "data:GZIP=1", str(work / "small.h5"),
             str(work / "out.h5")]
    return {
        "python -c pass": ([py, "-c", "pass"], {}),
        "import numpy": ([py, "-c", "import numpy"], {}),
        "import numpy, 1 BLAS thread": ([py, "-c", "import numpy"], blas1),
        "import h5py, click": ([py, "-c", "import h5py, click"], {}),
        "ccp repack --help": ([ccp, "repack", "--help"], {}),
        "ccp repack 200x100 f4": (small, {}),
        # as before ccp set one BLAS thread: OpenBLAS's default pool is one thread per CPU
        "  same, BLAS threads = CPUs": (small, {"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        with h5py.File(work / "small.h5", "w") as f:
            f.create_dataset("data", data=np.arange(20000, dtype="f4").reshape(200, 100), chunks=(20, 1),
                             compression="gzip", compression_opts=1)
        todo = cases(work)
        cpu: dict[str, list[float]] = {n: [] for n in todo}
        wall: dict[str, list[float]] = {n: [] for n in todo}
        print(f"load average before {os.getloadavg()[0]:.2f}")
        for i in range(args.rounds):
            for name in (list(todo) if i % 2 == 0 else list(todo)[::-1]):
                cmd, env = todo[name]
                (work / "out.h5").unlink(missing_ok=True)
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = os.times().elapsed
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env})
                wall[name].append(os.times().elapsed - t0)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        print(f"load average after {os.getloadavg()[0]:.2f}; median of {args.rounds}")
        print(f"  {'':<30} {'CPU s':>6} {'wall s':>7}")
        for name in todo:
            print(f"  {name:<30} {statistics.median(cpu[name]):>6.3f} {statistics.median(wall[name]):>7.3f}")


if __name__ == "__main__":
    main()
