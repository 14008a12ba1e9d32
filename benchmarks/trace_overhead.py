"""Recording cost per h5py call under `ccp trace`: the same loops timed without and with the recorder.

Each kind of call (the C fast reader `d[i]`, the Python path `d.astype("f8")[i]`, `read_direct`,
low-level `DatasetID.read`) reads one element from a chunk already in the cache, so the call is as
cheap as h5py gets and the recorder's share is the largest it can be. Each configuration runs in
a fresh process; repeats give median and spread.

    PYTHONPATH=. python benchmarks/trace_overhead.py [--calls 20000] [--repeats 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time
    import h5py, numpy as np
    from h5py import h5s
    n = int(sys.argv[2])
    with h5py.File(sys.argv[1], "r") as f:
        d = f["x"]
        out = {}
        t0 = time.perf_counter()
        for i in range(n):
            d[i % 1000]
        out["getitem (fast reader)"] = (time.perf_counter() - t0) / n
        view = d.astype("f8")
        t0 = time.perf_counter()
        for i in range(n):
            view[i % 1000]
        out["astype(...)[i] (Python path)"] = (time.perf_counter() - t0) / n
        buf = np.empty((1,), d.dtype)
        t0 = time.perf_counter()
        for i in range(n):
            d.read_direct(buf, np.s_[i % 1000:i % 1000 + 1])
        out["read_direct"] = (time.perf_counter() - t0) / n
        fs, ms = d.id.get_space(), h5s.create_simple((1,))
        t0 = time.perf_counter()
        for i in range(n):
            fs.select_hyperslab((i % 1000,), (1,))
            d.id.read(ms, fs, buf)
        out["DatasetID.read (low level)"] = (time.perf_counter() - t0) / n
    print(json.dumps(out))
""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import h5py
    import numpy as np

    from ccp.trace.run import traced_env

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(1000, dtype="f4"), chunks=(1000,))
        child = os.path.join(tmp, "child.py")
        with open(child, "w") as fh:
            fh.write(CHILD)
        runs = {"plain": [], "traced": []}
        for r in range(args.repeats):
            for mode in ("plain", "traced"):
                env = dict(os.environ)
                if mode == "traced":
                    parts = os.path.join(tmp, f"parts-{r}")
                    os.makedirs(parts)
                    env = traced_env(parts, env)
                res = subprocess.run([sys.executable, child, path, str(args.calls)], env=env, capture_output=True,
                                     text=True, check=True)
                runs[mode].append(json.loads(res.stdout))
    print(f"{args.calls} calls x {args.repeats} repeats; one element from a cached chunk per call; "
          f"h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}")
    print(f"{'call':32s} {'plain us':>10s} {'traced us':>10s} {'cost us':>9s} {'spread us':>10s}")
    for kind in runs["plain"][0]:
        plain = [x[kind] * 1e6 for x in runs["plain"]]
        traced = [x[kind] * 1e6 for x in runs["traced"]]
        cost = [t - p for t, p in zip(traced, plain)]
        print(f"{kind:32s} {statistics.median(plain):10.2f} {statistics.median(traced):10.2f} "
              f"{statistics.median(cost):9.2f} {max(cost) - min(cost):10.2f}")


if __name__ == "__main__":
    main()
