"""How fast the chunk-cache model predicts: the reference (Python) vs the compiled kernel (numba).

    PYTHONPATH=. /work/venv/bin/python benchmarks/model_speed.py [--reference-requests 20000]

1. Predicted requests per second for tiling, random and write patterns: the reference model fed as
   ``ccp.plan`` feeds it today (a tuple per request, a RequestPrediction per request) on the first
   ``--reference-requests`` of each plan ("before"), and the compiled kernel on the whole plan
   ("after"): per request from plan arrays (``simulate_arrays``), totals only, and for tilings
   totals with the plan generated inside the kernel (``simulate_tiling``). All agree on the prefix.
2. A sweep-sized case: 1,000 cells (10 chunk shapes x 10 caches x 10 access patterns on a CrIS-like
   60x30x9x717 float32 dataset), about 6.6 M requests; every cell predicted (totals) as ``ccp plan``
   would do it without file I/O and calibration: tilings with ``simulate_tiling``, random plans
   made with ``random_requests`` and fed to ``simulate_arrays``.
3. Seed 001's element-by-element read: 1000x100x100 int32 read one element per request (10 M
   requests) with a 1 MiB cache, both uncompressed 50-plane chunks (every element a file read) and
   gzip 10-plane chunks (all hits but the first per chunk): ``simulate_tiling`` (totals, and a row
   per request) and, for comparison, ``tile_requests`` + ``simulate_arrays``.
4. numba's compile: the first call in a fresh process with an empty cache directory, and with the
   cache this script's earlier runs left (``cache=True``).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.model import simulate, simulate_arrays, simulate_tiling, summarise
from ccp.workload.requests import random_requests, tile_requests

MiB = 1024 * 1024
CRIS = (60, 30, 9, 717)
SEED = (1000, 100, 100)


class Timer:
    """Wall and CPU seconds of a block (the machine may be shared: CPU time is this process's own)."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.w, time.process_time() - self.c


def _rate(n, t):
    return f"{n / t.cpu:,.0f} ({n / t.wall:,.0f})"


def _reqs(op, plan, k):
    for i in range(k):
        yield op, tuple(int(x) for x in plan.starts[i]), tuple(int(x) for x in plan.counts[i])


def pattern_rates(ref_n: int) -> None:
    patterns = [
        ("tiling: CrIS rows, gzip 4x30x9x717, 3 MiB", CRIS, (4, 30, 9, 717), True, ChunkCache(3 * MiB, 521, 0.75),
         "read", tile_requests(CRIS, (1, 1, 1, 717)), True, (1, 1, 1, 717)),
        ("tiling: seed 001 rows 1x1x100, 10x100x100, 1 MiB", SEED, (10, 100, 100), False, ChunkCache(MiB, 521, 0.75),
         "read", tile_requests(SEED, (1, 1, 100)), True, (1, 1, 100)),
        ("random: 4x4x4 blocks, chunks 10x10x10, 1 MiB", SEED, (10, 10, 10), True, ChunkCache(MiB, 521, 0.75),
         "read", random_requests(SEED, (4, 4, 4), 500_000, seed=0), True, None),
        ("write: seed 001 rows 1x1x100, 50x100x100, 5 MiB", SEED, (50, 100, 100), False, ChunkCache(5 * MiB, 521, 0.75),
         "write", tile_requests(SEED, (1, 1, 100)), False, (1, 1, 100)),
        ("write: rows 1x1x100, gzip 10x100x100, 1 MiB", SEED, (10, 100, 100), True, ChunkCache(MiB, 521, 0.75),
         "write", tile_requests(SEED, (1, 1, 100)), False, (1, 1, 100)),
    ]
    for per_request in (True, False):     # load every compiled function from numba's cache before timing
        simulate_tiling((8, 8), (4, 4), 4, filtered=False, cache=ChunkCache(), op="read", block=(1, 1),
                        per_request=per_request)
        simulate_arrays((8, 8), (4, 4), 4, filtered=False, cache=ChunkCache(), ops="read", starts=[(0, 0)],
                        counts=[(1, 1)], per_request=per_request)
    print("requests per second of CPU time (of wall time in parentheses; the machine may be shared)\n")
    print("| pattern | requests | before: reference | after: arrays, per request | arrays, totals | "
          "tiling in kernel, totals | speed-up (best, CPU) |")
    print("|---|---|---|---|---|---|---|")
    for name, shape, chunks, filtered, cache, op, plan, allocated, block in patterns:
        k = min(ref_n, len(plan))
        with Timer() as t_ref:
            ref = simulate(shape, chunks, 4, filtered=filtered, cache=cache, requests=_reqs(op, plan, k),
                           allocated=allocated)
        pre = simulate_arrays(shape, chunks, 4, filtered=filtered, cache=cache, ops=op, starts=plan.starts[:k],
                              counts=plan.counts[:k], allocated=allocated)
        assert list(pre) == ref, name
        with Timer() as t_per:
            simulate_arrays(shape, chunks, 4, filtered=filtered, cache=cache, ops=op, starts=plan.starts,
                            counts=plan.counts, allocated=allocated)
        with Timer() as t_tot:
            full = simulate_arrays(shape, chunks, 4, filtered=filtered, cache=cache, ops=op, starts=plan.starts,
                                   counts=plan.counts, allocated=allocated, per_request=False).total()
        n = len(plan)
        tiled = "n/a"
        best = min(t_per.cpu, t_tot.cpu)
        if block is not None:
            with Timer() as t_tile:
                tot = simulate_tiling(shape, chunks, 4, filtered=filtered, cache=cache, op=op, block=block,
                                      allocated=allocated).total()
            assert tot == full, name
            tiled, best = _rate(n, t_tile), min(best, t_tile.cpu)
        print(f"| {name} | {n:,} | {_rate(k, t_ref)} | {_rate(n, t_per)} | {_rate(n, t_tot)} | {tiled} | "
              f"{(n / best) / (k / t_ref.cpu):,.0f}x |")


def sweep_cells():
    chunk_shapes = [(4, 30, 9, 717), (1, 30, 9, 717), (2, 30, 9, 717), (8, 30, 9, 717), (1, 1, 9, 717),
                    (4, 10, 9, 717), (4, 30, 3, 717), (1, 30, 9, 239), (12, 6, 9, 717), (60, 1, 1, 717)]
    caches = [ChunkCache(n, s, 0.75) for n in (MiB, 3 * MiB, 8 * MiB, 32 * MiB, 512 * 1024) for s in (521, 8191)]
    accesses = [("read", (1, 1, 1, 717), None), ("read", (1, 1, 3, 717), None), ("read", (2, 1, 1, 717), None),
                ("read", (1, 2, 1, 717), None), ("read", (1, 1, 9, 717), None), ("read", (1, 30, 1, 717), None),
                ("read", (1, 1, 1, 717), 10_000), ("read", (4, 30, 9, 717), None), ("write", (1, 1, 1, 717), None),
                ("write", (1, 30, 9, 717), None)]
    for chunks in chunk_shapes:
        for cache in caches:
            for op, block, rand in accesses:
                yield chunks, cache, op, block, rand


def sweep_case() -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    n_cells = n_req = 0
    for i, (chunks, cache, op, block, rand) in enumerate(sweep_cells()):
        kw = {"filtered": i % 2 == 0, "cache": cache, "allocated": op == "read"}
        if rand:
            plan = random_requests(CRIS, block, rand, seed=i)
            p = simulate_arrays(CRIS, chunks, 4, ops=op, starts=plan.starts, counts=plan.counts, per_request=False, **kw)
            n = len(plan)
        else:
            p = simulate_tiling(CRIS, chunks, 4, op=op, block=block, **kw)
            n = math.prod(-(-s // b) for s, b in zip(CRIS, block))
        summarise(p)
        n_cells += 1
        n_req += n
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"| {n_cells:,} cells, {n_req:,} requests | {wall:.2f} s | {cpu:.2f} s | {n_req / wall:,.0f} req/s |")


def ten_million() -> None:
    print("seconds of CPU time (of wall time in parentheses)\n")
    print("| layout | simulate_tiling, totals | simulate_tiling, a row per request | tile_requests | "
          "simulate_arrays, totals | raw reads | chunk loads |")
    print("|---|---|---|---|---|---|---|")
    for name, chunks, filtered in (("50x100x100, none (one read per element)", (50, 100, 100), False),
                                   ("10x100x100, gzip 6 (hits)", (10, 100, 100), True)):
        kw = {"filtered": filtered, "cache": ChunkCache(MiB, 521, 0.75)}
        with Timer() as t_tile:
            tot = simulate_tiling(SEED, chunks, 4, op="read", block=(1, 1, 1), **kw).total()
        with Timer() as t_tile_per:
            per = simulate_tiling(SEED, chunks, 4, op="read", block=(1, 1, 1), per_request=True, **kw)
        assert per.total() == tot
        del per
        with Timer() as t_plan:
            plan = tile_requests(SEED, (1, 1, 1))
        with Timer() as t_arr:
            arr = simulate_arrays(SEED, chunks, 4, ops="read", starts=plan.starts, counts=plan.counts,
                                  per_request=False, **kw).total()
        assert arr == tot
        del plan
        cells = [f"{t.cpu:.2f} s ({t.wall:.2f} s)" for t in (t_tile, t_tile_per, t_plan, t_arr)]
        print(f"| {name} | {' | '.join(cells)} | {tot.raw_reads:,} | {tot.chunk_loads:,} |")


COMPILE_PROBE = """
import time
t0 = time.perf_counter()
from ccp.chunkcache import ChunkCache
from ccp.model import simulate_arrays
t1 = time.perf_counter()
simulate_arrays((8, 8), (4, 4), 4, filtered=False, cache=ChunkCache(), ops="read", starts=[(0, 0)], counts=[(8, 8)])
t2 = time.perf_counter()
simulate_arrays((8, 8), None, 4, filtered=False, cache=ChunkCache(), ops="read", starts=[(0, 0)], counts=[(8, 8)])
t3 = time.perf_counter()
print(f"{t1 - t0:.2f} {t2 - t1:.2f} {t3 - t2:.2f}")
"""


def compile_cost() -> None:
    env = dict(os.environ)
    rows = []
    with tempfile.TemporaryDirectory() as empty:
        for label, cache_dir in (("empty cache (first use on a machine)", empty), ("cache from the previous run", empty)):
            env["NUMBA_CACHE_DIR"] = cache_dir
            out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True, text=True, check=True)
            rows.append((label, *out.stdout.split()))
    print("| numba cache | import ccp.model + numba | first chunked call | first contiguous call |")
    print("|---|---|---|---|")
    for label, a, b, c in rows:
        print(f"| {label} | {a} s | {b} s | {c} s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference-requests", type=int, default=20_000)
    args = ap.parse_args()
    import h5py
    import numba

    print(f"numba {numba.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}, h5py {h5py.version.version}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start\n")
    compile_cost()
    print()
    pattern_rates(args.reference_requests)
    print()
    print("| sweep (compiled, warm) | wall | CPU (this process) | rate (wall) |")
    print("|---|---|---|---|")
    sweep_case()
    print()
    ten_million()


if __name__ == "__main__":
    main()
