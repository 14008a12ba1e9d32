"""HDF5's cost per chunk load on this machine, by chunk size, unfiltered and gzip: the figures behind
ccp.trace.chunk_price (a chunk load's fixed part, its cost per byte).

    .venv/bin/python benchmarks/chunk_load_cost.py [--smooth]
    .venv/bin/python benchmarks/chunk_load_cost.py --paths

Each dataset (1-D f4, chunks of 1 to 65536 elements) is read whole with the chunk cache off (rdcc_nbytes=0), so
each chunk is one load; the time over the chunks, median of 5 fresh opens. --smooth: a sine series (compresses
well) instead of random numbers.

--paths: CPU time (the fastest of 7 passes) of the ways HDF5 moves warm bytes, behind ``ccp tune``'s prices of a
raw read and a byte: 80 random 128x128 tiles of a 2048x2048 f4 dataset, contiguous (through the 64 KiB sieve:
1,280 reads of 64 KiB) and as one chunk read in parts with no cache (10,240 reads of 512 B, 8 KiB apart); and
whole chunks of 256 KiB-4 MiB, loaded through a cache that holds one (two chunks alternating: every read a load)
against read with no cache (straight into the caller's buffer).

--calls: HDF5's cost of a read call that loads nothing (its chunk already in the cache), behind
``ccp.trace.chunk_price.FIXED_CALL_S``: 2,000 one-row boxes (1x574 f4, big- and little-endian) and 2,000 single
elements of a 48x574 gzip dataset stored as one chunk, read through h5py's low-level ``DatasetID.read`` (the call
``ccp trace`` times as HDF5's, the memory type passed as h5py's slicing passes it) after a first read loaded the
chunk; the median and mean wall time of a call over 5 passes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import h5py
import numpy as np

from ccp.tune.costs import fastest_cpu_s

SIZES = (1, 16, 256, 4096, 65536)


def _cpu_best(fn, reps: int = 7) -> float:
    """tune's own probe timing: the fastest pass's CPU seconds."""
    return fastest_cpu_s(fn, reps)


def _reads(ds, fspace, mspace, buf, starts, count) -> None:
    for st in starts:
        fspace.select_hyperslab(st, count)
        ds.read(mspace, fspace, buf)


def byte_paths() -> None:
    from h5py import h5s

    data = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paths.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("contiguous", data=data)
            f.create_dataset("one chunk", data=data, chunks=(2048, 2048))
            for kib in (256, 1024, 4096):
                f.create_dataset(f"chunks {kib}", data=data, chunks=(kib // 8, 2048))
        tiles = [(int(a), int(b)) for a, b in np.random.default_rng(1).integers(0, 2048 - 128, (80, 2))]
        for name, reads in (("contiguous", 1280), ("one chunk", 10240)):
            with h5py.File(path, "r", rdcc_nbytes=0) as f:
                ds = f[name].id
                fn = partial(_reads, ds, ds.get_space(), h5s.create_simple((128, 128)), np.empty((128, 128), "f4"),
                             tiles, (128, 128))
                fn()
                t = _cpu_best(fn)
            print(f"{name}: 80 tiles 128x128, {reads} raw reads: {1e3 * t:.1f} ms CPU, {1e6 * t / reads:.2f} us a read")
        for kib in (256, 1024, 4096):
            rows, nbytes = kib // 8, kib * 1024
            said = []
            for cache in (nbytes + 1, 0):
                with h5py.File(path, "r", rdcc_nbytes=cache, rdcc_nslots=1009) as f:
                    ds = f[f"chunks {kib}"].id
                    fn = partial(_reads, ds, ds.get_space(), h5s.create_simple((rows, 2048)),
                                 np.empty((rows, 2048), "f4"), [((i % 2) * rows, 0) for i in range(40)], (rows, 2048))
                    fn()
                    said.append(_cpu_best(fn) / (40 * nbytes))
            print(f"chunk {kib} KiB: through a cache of one {1e9 * said[0]:.3f} ns/B, no cache {1e9 * said[1]:.3f} ns/B (CPU)")


def _read_call_times(ds, fspace, mspace, buf, mtype, starts, count) -> np.ndarray:
    """Each ``ds.read``'s own seconds, timed alone as ``ccp trace`` times a low-level call (the selection's making
    outside it; the memory type passed, as h5py's slicing passes it)."""
    spent = np.empty(len(starts))
    for i, st in enumerate(starts):
        fspace.select_hyperslab(st, count)
        t = time.perf_counter_ns()
        ds.read(mspace, fspace, buf, mtype)
        spent[i] = time.perf_counter_ns() - t
    return spent / 1e9


def call_costs() -> None:
    from h5py import h5s, h5t

    data = np.random.default_rng(0).random((48, 574), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calls.h5"
        with h5py.File(path, "w") as f:
            for order in ("<", ">"):
                f.create_dataset(f"f4{order}", data=data.astype(f"{order}f4"), chunks=data.shape, compression="gzip")
        for order in ("<", ">"):
            for count in ((1, 574), (1, 1)):
                with h5py.File(path, "r", rdcc_nbytes=4 << 20) as f:
                    ds = f[f"f4{order}"].id
                    fspace, mspace, buf = ds.get_space(), h5s.create_simple(count), np.empty(count, "f4")
                    mtype = h5t.py_create(buf.dtype)
                    starts = [(i % 48, (7 * i) % (574 - count[1] + 1)) for i in range(2000)]
                    _read_call_times(ds, fspace, mspace, buf, mtype, starts[:1], count)     # the one chunk load
                    t = np.concatenate([_read_call_times(ds, fspace, mspace, buf, mtype, starts, count)
                                        for _ in range(5)])
                print(f"{order}f4 box {count[0]}x{count[1]}, chunk cached: median {1e6 * np.median(t):.2f} us a call, "
                      f"mean {1e6 * t.mean():.2f} us ({len(t)} calls)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smooth", action="store_true")
    ap.add_argument("--paths", action="store_true", help="the CPU cost of HDF5's byte paths (see the docstring)")
    ap.add_argument("--calls", action="store_true", help="HDF5's cost of a call that loads nothing (see the docstring)")
    args = ap.parse_args()
    if args.calls:
        call_costs()
        return
    if args.paths:
        byte_paths()
        return
    n = 1 << 18
    x = (np.sin(np.arange(n) / 50.0) if args.smooth else np.random.default_rng(0).random(n)).astype("f4")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chunks.h5"
        with h5py.File(path, "w") as f:
            for c in SIZES:
                data = x[:20000] if c == 1 else x      # 20,000 one-element chunks are enough
                f.create_dataset(f"none{c}", data=data, chunks=(c,))
                f.create_dataset(f"gzip{c}", data=data, chunks=(c,), compression="gzip")
        for c in SIZES:
            for kind in ("none", "gzip"):
                times = []
                for _ in range(5):
                    with h5py.File(path, "r", rdcc_nbytes=0) as f:
                        d = f[f"{kind}{c}"]
                        nchunks = d.id.get_num_chunks()
                        t = time.perf_counter()
                        d[...]
                        times.append(time.perf_counter() - t)
                print(f"{kind} chunk {4 * c:7d} B  {nchunks:6d} chunks  per chunk "
                      f"{1e6 * statistics.median(times) / nchunks:8.2f} us")


if __name__ == "__main__":
    main()
