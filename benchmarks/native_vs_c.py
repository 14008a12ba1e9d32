"""Recorded time per request: a C loop vs ccp's native loop vs today's h5py low-level loop vs h5py slicing.

    PYTHONPATH=. /work/venv/bin/python benchmarks/native_vs_c.py [--rounds 5]

Every client reads the same rows of the same file with the same chunk cache, in the same libhdf5
(the C loop is linked against h5py's bundled library, not the system's), page cache warm:

* ``C``: a small C program (built here with gcc and the HDF5 headers of ``apt-get install
  libhdf5-dev``; skipped with a message when either is missing): select, ``clock_gettime``,
  ``H5Dread``, ``clock_gettime``, per request;
* ``native``: :func:`ccp.measurement.native.read_pass` (the numba loop);
* ``h5py-lowlevel``: :func:`ccp.measurement.runner.read_pass` (today's timed loop);
* ``h5py``: ``dset[i:i+1, j:j+1, k:k+1, :]`` timed with ``perf_counter_ns``, what most Python code does.

Cases, on a CrIS-like 60x30x9x717 big-endian float32 dataset (random normal data), rows 1x1x1x717
(16,200 requests): gzip-6 chunks 4x30x9x717 with a 3 MiB cache; contiguous; the same chunks
uncompressed; and "all hits": the uncompressed chunks with a 64 MiB cache, every row read twice and
only the second pass counted. Rounds alternate the clients; the table shows medians over rounds of
each client's mean and median time per request, and the ratio of means to C.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.hdf5.dataset import DatasetInfo
from ccp.hdf5.filters import parse_filters
from ccp.matrix.cells import Cell
from ccp.measurement import native, runner
from ccp.workload.requests import tile_requests

SHAPE, CHUNKS, ROW = (60, 30, 9, 717), (4, 30, 9, 717), (1, 1, 1, 717)
MiB = 1024 * 1024
HEADERS = ("/usr/include/hdf5/serial", "/usr/include")

C_LOOP = r"""
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* loop FILE DSET NSLOTS NBYTES W0 REQUESTS N RANK OUT: REQUESTS holds n*rank starts then n*rank
   counts (uint64); OUT gets n int64 nanoseconds. Memory type = the file type (no conversion). */
int main(int argc, char **argv) {
    if (argc != 10) { fprintf(stderr, "usage: loop FILE DSET NSLOTS NBYTES W0 REQUESTS N RANK OUT\n"); return 2; }
    size_t n = strtoull(argv[7], NULL, 10);
    int rank = atoi(argv[8]);
    hsize_t *req = malloc(2 * n * rank * sizeof(hsize_t));
    FILE *f = fopen(argv[6], "rb");
    if (!f || fread(req, sizeof(hsize_t), 2 * n * rank, f) != 2 * n * rank) { fprintf(stderr, "bad requests\n"); return 2; }
    fclose(f);
    hsize_t *starts = req, *counts = req + n * rank;
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    fprintf(stderr, "HDF5 %u.%u.%u, sizeof(hid_t) %zu\n", maj, min, rel, sizeof(hid_t));
    hid_t fid = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), atof(argv[5]));
    hid_t ds = H5Dopen2(fid, argv[2], dapl);
    if (fid < 0 || ds < 0) { fprintf(stderr, "cannot open %s:%s\n", argv[1], argv[2]); return 1; }
    hid_t mtype = H5Dget_type(ds);
    hid_t fs = H5Dget_space(ds);
    size_t itemsize = H5Tget_size(mtype), most = 1;
    for (size_t i = 0; i < n; i++) {
        size_t b = itemsize;
        for (int d = 0; d < rank; d++) b *= counts[i * rank + d];
        if (b > most) most = b;
    }
    void *buf = malloc(most);
    hid_t ms = H5Screate_simple(rank, counts, NULL);
    int64_t *out = malloc(n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) {
        const hsize_t *c = counts + i * rank;
        if (i > 0 && memcmp(c, c - rank, rank * sizeof(hsize_t)) != 0)
            H5Sset_extent_simple(ms, rank, c, NULL);          /* a new request shape: outside the timing */
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, starts + i * rank, NULL, c, NULL);
        int64_t t0 = now();
        herr_t err = H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf);
        int64_t t1 = now();
        if (err < 0) { fprintf(stderr, "H5Dread failed on request %zu\n", i); return 1; }
        out[i] = t1 - t0;
    }
    H5Dclose(ds);
    H5Fclose(fid);
    f = fopen(argv[9], "wb");
    fwrite(out, sizeof(int64_t), n, f);
    fclose(f);
    return 0;
}
"""


def build_c_loop(tmp: Path) -> tuple[Path | None, str]:
    """The C loop linked against h5py's libhdf5, or None and why not."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None, "no C compiler (gcc/cc) on PATH: C column skipped"
    inc = next((d for d in HEADERS if Path(d, "hdf5.h").exists()), None)
    if inc is None:
        return None, "no HDF5 headers (apt-get install libhdf5-dev): C column skipped"
    lib = native.hdf5_library_path()
    src = tmp / "loop.c"
    src.write_text(C_LOOP)
    exe = tmp / "loop"
    cmd = [cc, "-O2", "-o", str(exe), str(src), f"-I{inc}", lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, f"C build failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
    return exe, f"C loop: {cc}, headers {inc}, linked to {lib}"


def c_loop(exe: Path, path: str, cache: ChunkCache, starts, counts, tmp: Path) -> np.ndarray:
    reqfile, out = tmp / "req.bin", tmp / "out.bin"
    np.concatenate([np.asarray(starts, np.uint64).ravel(), np.asarray(counts, np.uint64).ravel()]).tofile(reqfile)
    done = subprocess.run([str(exe), path, "/data", str(cache.nslots), str(cache.nbytes), repr(cache.w0), str(reqfile),
                           str(len(starts)), str(len(starts[0])), str(out)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"C loop failed: {done.stderr.strip()}")
    c_loop.banner = done.stderr.strip()
    return np.fromfile(out, np.int64)


def job_for(path: str, chunks, cache: ChunkCache) -> runner.CellJob:
    source = DatasetInfo(SHAPE, np.dtype(">f4"), SHAPE, None, chunks, parse_filters("none"), "bench")
    cell = Cell(chunks, parse_filters("none"), cache, AccessSpec("read", ROW))
    return runner.CellJob(cell=cell, file=path, dataset_path="/data", source=source, generate=None, user_file=None,
                          repeats=1, cold=False, counted_pass=False)


def h5py_slicing(path: str, cache: ChunkCache, starts, counts) -> np.ndarray:
    sels = [tuple(slice(s, s + c) for s, c in zip(st, ct)) for st, ct in zip(starts, counts)]
    out = np.zeros(len(sels), np.int64)
    clock = time.perf_counter_ns
    with h5py.File(path, "r", rdcc_nbytes=cache.nbytes, rdcc_nslots=cache.nslots, rdcc_w0=cache.w0) as f:
        d = f["data"]
        for i, sel in enumerate(sels):
            t0 = clock()
            d[sel]
            out[i] = clock() - t0
    return out


def measure_case(exe, tmp, path, chunks, cache, starts, counts, skip, rounds, why_not):
    """Median over rounds of each client's mean and median microseconds per request (NaN: skipped)."""
    job = job_for(path, chunks, cache)
    clients = {
        "C": (lambda: c_loop(exe, path, cache, starts, counts, tmp)) if exe else None,
        "native": (lambda: native.read_pass(job, starts, counts, counted=False).request_ns) if not why_not else None,
        "h5py-lowlevel": lambda: runner.read_pass(job, starts, counts, counted=False, log_path=None,
                                                  progress=runner.Progress()).request_ns,
        "h5py": lambda: h5py_slicing(path, cache, starts, counts),
    }
    means: dict[str, list[float]] = {k: [] for k in clients}
    medians: dict[str, list[float]] = {k: [] for k in clients}
    for r in range(rounds + 1):
        for k, fn in clients.items():
            if fn is None:
                continue
            ns = np.asarray(fn())[skip:]
            if r:                                   # round 0 warms the page cache and numba
                means[k].append(float(ns.mean()) / 1e3)
                medians[k].append(float(np.median(ns)) / 1e3)
    nan = float("nan")
    return ({k: statistics.median(v) if v else nan for k, v in means.items()},
            {k: statistics.median(v) if v else nan for k, v in medians.items()})


def make_files(tmp: Path) -> dict[str, str]:
    data = np.random.default_rng(0).standard_normal(SHAPE).astype(">f4")
    files = {}
    for name, kw in (("gzip", {"chunks": CHUNKS, "compression": "gzip", "compression_opts": 6}),
                     ("chunked", {"chunks": CHUNKS}), ("contiguous", {})):
        p = tmp / f"{name}.h5"
        with h5py.File(p, "w") as f:
            f.create_dataset("data", data=data, **kw)
        files[name] = str(p)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    plan = tile_requests(SHAPE, ROW)
    rows_s = [tuple(map(int, s)) for s in plan.starts]
    rows_c = [tuple(map(int, c)) for c in plan.counts]
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        exe, how = build_c_loop(tmp)
        why_not = native.available()
        files = make_files(tmp)
        cases = [  # name, file, chunks, cache, times rows are read, passes counted from
            ("gzip rows (3 MiB cache)", files["gzip"], CHUNKS, ChunkCache(3 * MiB, 521, 0.75), 1),
            ("contiguous rows", files["contiguous"], None, ChunkCache(MiB, 521, 0.75), 1),
            ("chunked uncompressed rows (3 MiB cache)", files["chunked"], CHUNKS, ChunkCache(3 * MiB, 521, 0.75), 1),
            ("all hits (64 MiB cache, 2nd pass)", files["chunked"], CHUNKS, ChunkCache(64 * MiB, 521, 0.75), 2),
        ]
        print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}, numba "
              f"{__import__('numba').__version__}, Python {sys.version.split()[0]}; {how}")
        if why_not:
            print(f"native loop unavailable: {why_not}")
        print(f"{len(rows_s):,} rows {ROW} of {SHAPE} >f4; {args.rounds} alternating rounds after one warm-up round; "
              "microseconds per request, median over rounds of each client's mean [median]\n")
        header = "| case | C | native | h5py-lowlevel | h5py | native / C | h5py-lowlevel / C | h5py / C |"
        print(header)
        print("|" + "---|" * 8)
        for name, path, chunks, cache, times in cases:
            mean, median = measure_case(exe, tmp, path, chunks, cache, rows_s * times, rows_c * times,
                                        len(rows_s) * (times - 1), args.rounds, why_not)
            cell = {k: f"{mean[k]:.2f} [{median[k]:.2f}]" if mean[k] == mean[k] else "n/a" for k in mean}
            ratio = {k: f"{mean[k] / mean['C']:.2f}x" if mean[k] == mean[k] and mean["C"] == mean["C"] else "n/a"
                     for k in mean}
            print(f"| {name} | {cell['C']} | {cell['native']} | {cell['h5py-lowlevel']} | {cell['h5py']} | "
                  f"{ratio['native']} | {ratio['h5py-lowlevel']} | {ratio['h5py']} |")
        if exe:
            print(f"\nC loop ran with: {c_loop.banner}")


if __name__ == "__main__":
    main()
