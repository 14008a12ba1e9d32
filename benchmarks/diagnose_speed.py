"""How long `ccp diagnose` takes and how much memory it holds, for traces of N calls (synthetic, exact format).

    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_speed.py --calls 250 1000000 [--out results/diag-speed]
    PYTHONPATH=. .venv/bin/python benchmarks/diagnose_speed.py --calls 10000000 --repeats 1 --no-loader

For each N: writes a real HDF5 file (a 100000x64 float32 dataset in 256x64 chunks) and a trace folder in
``ccp trace``'s format (``calls.parquet`` + ``trace.json``) of a per-sample loader: N single-row reads
``d[i]`` at random rows, one file open, the 8 MiB default cache (one user row and one low-level row per
call, as the recorder writes them). Then runs ``ccp diagnose`` on it in a fresh process, and reports its
wall time (median of --repeats), CPU time and peak RSS (the child's ``VmHWM``), with the load
average. The trace is synthetic so that the measurement is of diagnose alone (recording a 10^6-call
program is the recorder's benchmark, ``benchmarks/trace_overhead.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHAPE, CHUNKS = (100_000, 64), (256, 64)


def make_trace(folder: Path, n: int, seed: int = 0, piece: int = 1_000_000) -> None:
    """The trace folder of N calls; ``calls.parquet`` written ``piece`` calls at a time (a 10^7-call trace is
    made in bounded memory; up to ``piece`` calls the file is one piece, as before)."""
    import h5py
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ccp.workload.tracefile import COLUMNS, SCHEMA_VERSION

    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("samples", data=np.arange(np.prod(SHAPE), dtype="f4").reshape(SHAPE), chunks=CHUNKS)
    path = str(data.resolve())
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, SHAPE[0], n)
    pid = 4242
    wall = rng.lognormal(np.log(40e-6), 0.3, n)
    ev = pd.DataFrame({"kind": "event", "pid": pid, "seq": [1, 2, 2 * n + 20, 2 * n + 21],
                       "op": ["file_open", "dataset_open", "dataset_close", "file_close"], "file": path,
                       "dataset": [None, "/samples", "/samples", None], "mode": ["r", None, None, None],
                       "cache_nbytes": [None, 8 << 20, None, None], "cache_nslots": [None, 8191, None, None],
                       "cache_w0": [None, 0.75, None, None]})
    writer = None
    for a in range(0, n, piece):
        b = min(n, a + piece)
        seq = np.arange(a, b, dtype=np.int64) * 2 + 10
        w = wall[a:b]
        hdf5 = w * 0.4
        user = pd.DataFrame({"kind": "call", "pid": pid, "seq": seq, "depth": 0, "parent": 0,
                             "api": "Dataset.__getitem__", "op": "read", "file": path, "dataset": "/samples",
                             "bytes": 256, "wall_s": w, "hdf5_s": hdf5, "nlow": 1})
        low = pd.DataFrame({"kind": "call", "pid": pid, "seq": seq + 1, "depth": 1, "parent": seq,
                            "api": "DatasetID.read", "op": "read", "file": path, "dataset": "/samples", "sel": "box",
                            "bytes": 256, "wall_s": hdf5, "hdf5_s": hdf5, "nlow": 1, "nelems": 64})
        low["start"] = [[int(r), 0] for r in rows[a:b]]
        low["count"] = [[1, 64]] * (b - a)
        parts = ([ev.iloc[:2]] if a == 0 else []) + [pd.concat([user, low]).sort_values("seq")]
        parts += [ev.iloc[2:]] if b == n else []
        t = pd.concat(parts, ignore_index=True)
        for c in COLUMNS:
            if c not in t.columns:
                t[c] = None
        t = t[list(COLUMNS)]
        for c in ("depth", "parent", "nblocks", "nelems", "bytes", "nlow", "rdcc_nbytes", "rdcc_nslots",
                  "cache_nbytes", "cache_nslots"):
            t[c] = pd.array(t[c], dtype="Int64")
        for c in ("rdcc_w0", "cache_w0", "t0_ns"):
            t[c] = pd.to_numeric(t[c])
        for c in ("kind", "api", "op", "file", "dataset", "sel", "mode", "reason"):
            t[c] = t[c].astype("string")
        if n <= piece:
            t.to_parquet(folder / "calls.parquet", index=False)
            break
        table = pa.Table.from_pandas(t, preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(folder / "calls.parquet", table.schema)
        writer.write_table(table.cast(writer.schema))
    if writer is not None:
        writer.close()
    header = {"schema_version": SCHEMA_VERSION, "tool": "ccp trace", "command": ["python", "loader.py"], "exit_status": 0,
              "wall_s": float(wall.sum() * 1.5), "environment": {"hdf5": "2.0.0"}, "pids": [pid], "calls": n,
              "nested_calls": n, "events": 4, "files": [{"path": path, "exists": True}],
              "datasets": [{"file": path, "dataset": "/samples", "shape": list(SHAPE), "dtype": "<f4", "itemsize": 4,
                            "chunks": list(CHUNKS), "filters": [], "layout": "chunked", "storage_size": 1}],
              "recorder_errors": []}
    (folder / "trace.json").write_text(json.dumps(header))


def run_once(folder: Path, load_only: bool = False) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak RSS bytes, first output line) of one `ccp diagnose` in a fresh process (or of
    the trace loader alone, ``load_trace``, to tell its share from diagnose's)."""
    work = ("from ccp.workload.tracefile import load_trace\nload_trace(sys.argv[1])\n" if load_only else
            "from ccp.cli import main\ntry:\n    main(['diagnose', sys.argv[1]])\nexcept SystemExit:\n    pass\n")
    # peak RSS from /proc (VmHWM): ru_maxrss carries over the parent's peak across fork and exec (this
    # script's own, which made the trace)
    code = ("import resource, sys, time; t0 = time.perf_counter()\n" + work +
            "r = resource.getrusage(resource.RUSAGE_SELF)\n"
            "hwm = [int(x.split()[1]) * 1024 for x in open('/proc/self/status') if x.startswith('VmHWM')]\n"
            "print('@@', time.perf_counter() - t0, r.ru_utime + r.ru_stime, (hwm or [r.ru_maxrss * 1024])[0], "
            "file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=False,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    tail = [ln for ln in p.stderr.splitlines() if ln.startswith("@@")]
    if p.returncode or not tail:
        raise SystemExit(f"diagnose failed on {folder}: {p.stderr[-2000:]}")
    _, wall, cpu, rss = tail[-1].split()
    return float(wall), float(cpu), int(rss), (p.stdout.splitlines() or [""])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, nargs="+", default=[250, 1_000_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="results/diag-speed")
    ap.add_argument("--no-loader", action="store_true",
                    help="skip timing load_trace alone (it holds the whole table: ~10 GB at 10^7 calls)")
    args = ap.parse_args()
    for n in args.calls:
        folder = Path(args.out) / f"trace-{n}"
        if not (folder / "trace.json").is_file():
            t0 = time.perf_counter()
            make_trace(folder, n)
            print(f"# made {folder} in {time.perf_counter() - t0:.1f} s", flush=True)
        load = None if args.no_loader else run_once(folder, load_only=True)
        if load is not None:
            print(f"{n} calls: the loader alone (load_trace): wall {load[0]:.2f} s, CPU {load[1]:.2f} s, peak RSS "
                  f"{load[2] / 2**20:.0f} MiB; load average {os.getloadavg()[0]:.1f}", flush=True)
        runs = [run_once(folder) for _ in range(args.repeats)]
        walls = [r[0] for r in runs]
        print(f"{n} calls: diagnose wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max "
              f"{max(walls):.2f}, n={len(walls)}), CPU median {statistics.median(r[1] for r in runs):.2f} s, peak RSS "
              f"{max(r[2] for r in runs) / 2**20:.0f} MiB; load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"# ru_maxrss of this script: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")


if __name__ == "__main__":
    main()
