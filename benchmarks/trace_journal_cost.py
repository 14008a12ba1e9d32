"""What the recorder's journal (ccp.trace.journal) costs per fast-path call: h5py's own ``Dataset.__getitem__``, the
fast path as it was at ``--before`` (a git revision: before the journal) and the fast path now, alternated in rounds
of 2,000 single-element reads inside one process, timed by the process's CPU time (what a loaded machine disturbs
least); both fast paths record into the same recorder.

    PYTHONPATH=. .venv/bin/python benchmarks/trace_journal_cost.py [--before a163fab] [--key int] [--rounds 200]

Prints the median CPU time per call of each, the median of the paired round differences (now - before: the
journal's cost) and the median ratios to h5py's own, with the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="a163fab", help="git revision of the fast path before the journal")
    ap.add_argument("--key", choices=("int", "np.int64", "slice", "tuple"), default="int")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--per", type=int, default=2000, help="reads per round")
    args = ap.parse_args()

    import h5py
    import numpy as np
    from h5py import _selector
    from h5py._hl.dataset import Dataset

    import ccp.trace.fastpath as now
    from ccp.trace.recorder import install

    plain = Dataset.__getitem__
    with tempfile.TemporaryDirectory() as tmp:
        old_src = subprocess.run(["git", "show", f"{args.before}:ccp/trace/fastpath.py"], capture_output=True,
                                 text=True, check=True).stdout
        old_path = os.path.join(tmp, "fastpath_before.py")
        with open(old_path, "w") as f:
            f.write(old_src)
        spec = importlib.util.spec_from_file_location("fastpath_before", old_path)
        assert spec is not None and spec.loader is not None
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        rec = install(os.path.join(tmp, "parts"))
        read = _selector.Reader.__dict__["read"]
        fns = {"h5py": plain, "before": before.fast_getitem(rec, plain, read), "now": now.fast_getitem(rec, plain, read)}
        path = os.path.join(tmp, "x.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(1000, dtype="f4"), chunks=(1000,))
            f.create_dataset("y", data=np.arange(1000, dtype="f4").reshape(10, 100), chunks=(10, 100))
        per = args.per
        cpu: dict[str, list[float]] = {k: [] for k in fns}
        with h5py.File(path, "r") as f:
            ds = f["y"] if args.key == "tuple" else f["x"]
            for r in range(args.rounds):
                for name in (list(fns) if r % 2 else list(fns)[::-1]):
                    keys = {"int": lambda: [i % 1000 for i in range(per)],
                            "slice": lambda: [slice(i % 1000, i % 1000 + 1) for i in range(per)],
                            "tuple": lambda: [(i % 1000 // 100, i % 100) for i in range(per)],
                            "np.int64": lambda: np.arange(per, dtype=np.int64) % 1000}[args.key]()
                    Dataset.__getitem__ = fns[name]
                    c0 = time.process_time()
                    for k in keys:
                        ds[k]
                    cpu[name].append((time.process_time() - c0) / per * 1e6)
            Dataset.__getitem__ = plain
    med = {k: statistics.median(v) for k, v in cpu.items()}
    diff = statistics.median(n - b for n, b in zip(cpu["now"], cpu["before"]))
    ratio = {k: statistics.median(a / p for a, p in zip(cpu[k], cpu["h5py"]) if p > 0) for k in ("before", "now")}
    print(f"{args.rounds} rounds of {per} reads d[k] (k: {args.key}); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; CPU us/call median: h5py {med['h5py']:.2f}, "
          f"before ({args.before}) {med['before']:.2f}, now {med['now']:.2f}; the journal adds {diff:.2f} us/call "
          f"(median of paired rounds); /h5py median: before {ratio['before']:.3f}, now {ratio['now']:.3f}")


if __name__ == "__main__":
    sys.exit(main())
