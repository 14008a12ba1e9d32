"""Recording cost per h5py call under `ccp trace`: the same loops timed without and with the recorder.

Each kind of call (the C fast reader `d[i]`, the Python path `d.astype("f8")[i]`, `read_direct`,
low-level `DatasetID.read`) reads one element from a chunk already in the cache, so the call is as
cheap as h5py gets and the recorder's share is the largest it can be. Each configuration runs in
a fresh process; repeats give median and spread.

    PYTHONPATH=. python benchmarks/trace_overhead.py [--calls 20000] [--repeats 5]

On a loaded machine two processes' times differ by more than the recorder costs; ``--inprocess``
times the issue's loop (100,000 single-element reads ``d[i]``) inside one process, alternating
rounds with h5py's own ``Dataset.__getitem__`` and the recorder's, and reports the median ratio:

    PYTHONPATH=. python benchmarks/trace_overhead.py --inprocess [--calls 100000] [--rounds 100] [--key int]

``--memory`` runs ``--calls`` traced reads and reports the RSS growth per call between a tenth of them and all:

    PYTHONPATH=. python benchmarks/trace_overhead.py --memory --calls 1000000 [--key int]

``--key`` is the index the loop gives: ``int`` (``d[i]``), ``np.int64`` (``d[np.int64(i)]``, what indexing with
an element of a numpy array gives), ``slice`` (``d[i:i + 1]``) or ``tuple`` (``d[i, j]``, a 2-D dataset; --inprocess);
``--inprocess`` only: ``fancy`` (``d[[i, i + 1]]``, a list index: h5py's fast reader takes it, the recorder keeps the
list), ``mask`` (``d[m]``, a boolean mask of two elements: h5py's Python path and the recorder's full path, with
the low-level ``DatasetID.read`` it makes), ``astype`` (``d.astype("f8")[i]``), ``read_direct``
(``d.read_direct(buf, np.s_[i:i + 1])``) or ``fields`` (``d.fields("a")[i]`` of a compound dataset): the recorder's
full path, each with the calls it makes inside h5py.
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


INPROCESS = textwrap.dedent("""
    import json, statistics, sys, time
    import h5py, numpy as np
    from h5py import _selector, h5d
    from h5py._hl.dataset import Dataset
    from h5py._hl import dataset as hl_dataset
    from ccp.trace.recorder import _set_type_attr, install

    def patched():              # every attribute the recorder replaces that these loops reach: (owner, name, value)
        out = [(Dataset, "__getitem__"), (Dataset, "read_direct"), (_selector.Reader, "read"), (h5d.DatasetID, "read")]
        out += [(getattr(hl_dataset, c), "__getitem__") for c in ("AsTypeView", "FieldsView", "AstypeWrapper",
                                                                 "FieldsWrapper") if hasattr(hl_dataset, c)]
        return [(owner, name, owner.__dict__[name]) for owner, name in out if name in owner.__dict__]
    plain = patched()
    rec = install(sys.argv[2])
    traced = patched()

    def use(attrs):
        for owner, name, value in attrs:
            try:
                setattr(owner, name, value)
            except TypeError:   # an extension type (h5py's Cython classes)
                _set_type_attr(owner, name, value)
    SLOWER = ("fancy", "mask", "astype", "read_direct", "fields")
    n, rounds, kind = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    per = max(n // rounds, 1)

    def fresh_keys():           # new key objects per round, as a program's loop makes them (pickle memoizes repeats)
        if kind == "slice":
            return [slice(i % 1000, i % 1000 + 1) for i in range(per)]
        if kind == "np.int64":
            return np.arange(per, dtype=np.int64) % 1000        # iterating gives a new numpy scalar per call
        if kind == "tuple":
            return [(i % 1000 // 100, i % 100) for i in range(per)]
        if kind == "fancy":     # a list index: h5py's fast reader, the recorder's fancy keys
            return [[i % 998, i % 998 + 1] for i in range(per)]
        if kind == "read_direct":   # d.read_direct(buf, slice): the recorder's full path
            return [np.s_[i % 1000:i % 1000 + 1] for i in range(per)]
        if kind == "mask":      # a boolean mask: h5py's Python path, the recorder's full path
            masks = np.zeros((100, 1000), bool)
            masks[np.arange(100), np.arange(100) * 7] = masks[np.arange(100), np.arange(100) * 7 + 3] = True
            return [masks[i % 100] for i in range(per)]
        return [i % 1000 for i in range(per)]
    with h5py.File(sys.argv[1], "r") as f:
        d = f["y" if kind == "tuple" else "z" if kind == "fields" else "x"]
        d[0]
        buf = np.empty((1,), d.dtype)
        # what the loop calls: astype and fields through h5py's views (made once, as a program keeps one), read_direct
        read = d.astype("f8") if kind == "astype" else d.fields("a") if kind == "fields" else d
        times = {"plain": [], "traced": []}
        # the user calls' recorded time (what ccp diagnose sums), for the keys whose calls the records keep
        recorded, kept_wall, keep = [0], [], rec.add

        def add(r):
            if type(r) is tuple:
                recorded[0] += r[2] - r[1]
            elif r.get("kind") == "call" and r.get("depth") == 0:
                recorded[0] += r["wall_ns"]
            keep(r)
        rec.add = add
        cpu = {"plain": [], "traced": []}      # the process's CPU time: what a busy machine disturbs least
        for r in range(rounds):
            for mode in (("plain", "traced") if r % 2 else ("traced", "plain")):
                use(plain if mode == "plain" else traced)
                keys = fresh_keys()
                recorded[0] = 0
                t0, c0 = time.perf_counter(), time.process_time()
                if kind == "read_direct":
                    for k in keys:
                        d.read_direct(buf, k)
                else:
                    for k in keys:
                        read[k]
                cpu[mode].append((time.process_time() - c0) / per)
                times[mode].append((time.perf_counter() - t0) / per)
                if mode == "traced":
                    kept_wall.append(recorded[0] / 1e9 / per)
        use(traced)
    ratios = [t / p for t, p in zip(times["traced"], times["plain"])]
    cpu_ratios = [t / p for t, p in zip(cpu["traced"], cpu["plain"]) if p > 0]
    print(json.dumps({"plain_min_us": min(times["plain"]) * 1e6, "traced_min_us": min(times["traced"]) * 1e6,
                      "plain_us": statistics.median(times["plain"]) * 1e6,
                      "traced_us": statistics.median(times["traced"]) * 1e6,
                      "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "cpu_plain_us": statistics.median(cpu["plain"]) * 1e6,
                      "cpu_traced_us": statistics.median(cpu["traced"]) * 1e6,
                      "cpu_ratio": statistics.median(cpu_ratios),
                      "cpu_total_ratio": sum(cpu["traced"]) / sum(cpu["plain"]),   # with the part-file writes
                      "cpu_total_cost_us": (sum(cpu["traced"]) - sum(cpu["plain"])) / rounds * 1e6,
                      "recorded": rec.written + rec.buffered(), "calls": per * rounds,
                      "recorder": sys.modules["ccp"].__path__[0],
                      "recorded_ratio": statistics.median(k / p for k, p in zip(kept_wall, times["plain"]))
                      if kind in SLOWER else None}))
""")


MEMORY = textwrap.dedent("""
    import json, sys
    import h5py, numpy as np
    from ccp.trace.recorder import install
    rec = install(sys.argv[2])
    kind, calls = sys.argv[3], int(sys.argv[4])

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    with h5py.File(sys.argv[1], "r") as f:
        d = f["x"]
        marks, done = {}, 0
        for upto in (calls // 10, calls):
            for i in range(done, upto):
                j = i % 1000
                d[slice(j, j + 1) if kind == "slice" else np.int64(j) if kind == "np.int64" else j]
            done = upto
            marks[upto] = rss()
    print(json.dumps({"marks": marks, "recorded": rec.written + rec.buffered()}))
""")


def memory(calls: int, key: str) -> None:
    """The traced process's RSS after a tenth of ``calls`` reads and after all of them: flat if the recorder
    keeps nothing per call."""
    import h5py
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(1000, dtype="f4"), chunks=(1000,))
        res = subprocess.run([sys.executable, "-c", MEMORY, path, os.path.join(tmp, "parts"), key, str(calls)],
                             capture_output=True, text=True, check=True, env={**os.environ, "CCP_TRACE_DIR": ""})
    out = json.loads(res.stdout)
    (n1, m1), (n2, m2) = sorted((int(k), v) for k, v in out["marks"].items())
    print(f"{calls} traced reads d[k] (k: {key}); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"RSS after {n1}: {m1 / 2**20:.1f} MiB, after {n2}: {m2 / 2**20:.1f} MiB; "
          f"growth {(m2 - m1) / (n2 - n1):.1f} B/call; records kept {out['recorded']}")


def inprocess(calls: int, rounds: int, key: str = "int") -> None:
    import h5py
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(1000, dtype="f4"), chunks=(1000,))
            f.create_dataset("y", data=np.arange(1000, dtype="f4").reshape(10, 100), chunks=(10, 100))
            z = np.zeros(1000, [("a", "f4"), ("b", "i4")])
            z["a"] = np.arange(1000)
            f.create_dataset("z", data=z, chunks=(1000,))
        res = subprocess.run([sys.executable, "-c", INPROCESS, path, os.path.join(tmp, "parts"), str(calls),
                              str(rounds), key], capture_output=True, text=True, check=True,
                             env={**os.environ, "CCP_TRACE_DIR": ""})
    out = json.loads(res.stdout)
    print(f"{out['calls']} reads d[k] (k: {key}) in {rounds} alternating rounds, in one process; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; recorder {out['recorder']}")
    print(f"untraced {out['plain_us']:.2f} us/call, traced {out['traced_us']:.2f} us/call, "
          f"recording {out['traced_us'] - out['plain_us']:.2f} us/call; traced/untraced median "
          f"{out['ratio']:.3f} (rounds {out['ratio_min']:.3f}-{out['ratio_max']:.3f}); records kept {out['recorded']}")
    print(f"CPU time: untraced {out['cpu_plain_us']:.2f} us/call, traced {out['cpu_traced_us']:.2f} us/call; "
          f"traced/untraced median {out['cpu_ratio']:.3f}, all rounds (part-file writes included) "
          f"{out['cpu_total_ratio']:.3f}, recording {out['cpu_total_cost_us']:.2f} us/call")
    print(f"fastest round: untraced {out['plain_min_us']:.2f} us/call, traced {out['traced_min_us']:.2f} us/call, "
          f"ratio {out['traced_min_us'] / out['plain_min_us']:.3f}")
    if out["recorded_ratio"] is not None:
        print(f"recorded time of a traced round's calls (what ccp diagnose sums) / the untraced round's wall time beside "
              f"it: median {out['recorded_ratio']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--inprocess", action="store_true", help="the d[i] loop, untraced and traced, in one process")
    ap.add_argument("--memory", action="store_true", help="the traced d[i] loop's RSS growth per call")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--key", choices=("int", "np.int64", "slice", "tuple", "fancy", "mask", "astype", "read_direct",
                                      "fields"), default="int",
                    help="--inprocess, --memory: the index given")
    args = ap.parse_args()
    if args.memory:
        if args.key not in ("int", "np.int64", "slice"):
            ap.error(f"--key {args.key}: --inprocess only")
        memory(args.calls, args.key)
        return
    if args.inprocess:
        inprocess(args.calls, args.rounds, args.key)
        return
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
