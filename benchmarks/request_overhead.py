"""What ccp's timed loop costs per request, against a plain h5py low-level loop doing the same reads.

    .venv/bin/python benchmarks/request_overhead.py [--requests 200000] [--rounds 5]

Both loops read the same small, cached hyperslabs (so HDF5's own work is as small as it gets and any
per-request cost of the tool shows). ccp's loop is `ccp.measurement.runner.read_pass` (a timed pass);
the plain loop is select_hyperslab + DatasetID.read with nothing else. Rounds alternate; medians shown.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
from h5py import h5d, h5f, h5p, h5s, h5t

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.hdf5.dataset import DatasetInfo
from ccp.hdf5.filters import parse_filters
from ccp.matrix.cells import Cell
from ccp.measurement.passes import CellJob, Progress
from ccp.measurement.runner import read_pass
from ccp.workload.requests import tile_requests


def plain_loop(path: str, starts, counts, cache: ChunkCache) -> float:
    fid = h5f.open(path.encode(), h5f.ACC_RDONLY)
    dapl = h5p.create(h5p.DATASET_ACCESS)
    dapl.set_chunk_cache(cache.nslots, cache.nbytes, cache.w0)
    t0 = time.perf_counter_ns()
    ds = h5d.open(fid, b"/data", dapl)
    fspace = ds.get_space()
    mspace = h5s.create_simple(counts[0])
    arr = np.empty(counts[0], dtype="<f4")
    mtype = h5t.py_create(arr.dtype)
    for start, count in zip(starts, counts):
        fspace.select_hyperslab(start, count)
        ds.read(mspace, fspace, arr, mtype)
    ds.close()
    t1 = time.perf_counter_ns()
    fid.close()
    return (t1 - t0) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n = args.requests
    shape, chunks, block = (n // 100, 100), (n // 100, 100), (1, 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "o.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("data", data=np.ones(shape, "<f4"), chunks=chunks)
        cache = ChunkCache(64 * 1024 * 1024, 521, 0.75)     # the one chunk stays cached: HDF5 does minimal work
        plan = tile_requests(shape, block)
        starts = [tuple(map(int, s)) for s in plan.starts]
        counts = [tuple(map(int, c)) for c in plan.counts]
        source = DatasetInfo(shape, np.dtype("<f4"), shape, None, chunks, parse_filters("none"), "bench")
        cell = Cell(chunks, parse_filters("none"), cache, AccessSpec("read", block))
        job = CellJob(cell=cell, file=path, dataset_path="/data", source=source, generate=None, user_file=None,
                      repeats=1, cold=False, counted_pass=False)
        ccp_wall, ccp_sum, plain = [], [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter_ns()
            timing = read_pass(job, starts, counts, counted=False, log_path=None, progress=Progress())
            ccp_wall.append((time.perf_counter_ns() - t0) / 1e9)
            ccp_sum.append(timing.total_s)
            plain.append(plain_loop(path, starts, counts, cache))
    med = statistics.median
    per = lambda s: s / n * 1e6  # noqa: E731
    print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}; {n:,} requests of {block} from a cached chunk; "
          f"{args.rounds} alternating rounds (median, [min-max])")
    print(f"  plain h5py low-level loop, wall:   {per(med(plain)):.3f} us/request  [{per(min(plain)):.3f}-{per(max(plain)):.3f}]")
    print(f"  ccp timed pass, wall:              {per(med(ccp_wall)):.3f} us/request  [{per(min(ccp_wall)):.3f}-{per(max(ccp_wall)):.3f}]")
    print(f"  ccp timed pass, recorded time_s:   {per(med(ccp_sum)):.3f} us/request (what ccp reports: open + requests + close)")
    print(f"  ccp's own cost per request (wall - plain): {per(med(ccp_wall) - med(plain)):.3f} us")


if __name__ == "__main__":
    main()
