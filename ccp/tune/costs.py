"""The measured inputs of the search (execution side): the engine's calibration, the cost of one
raw file read, and each filter's stored/uncompressed ratio on a sample of the dataset's own data."""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from ccp.chunkcache import HDF5_1X
from ccp.hdf5 import plists
from ccp.hdf5.defaults import DEFAULT_W0
from ccp.predict import Calibration, calibrate
from ccp.tune.heuristics import whole_rows
from ccp.tune.search import Costs

SAMPLE_BYTES = 4 * 1024 * 1024
SAMPLE_CHUNK_BYTES = 256 * 1024
PROBE_REPEATS = 5          # timed passes per probe: the fastest stands (a shared machine's passes vary)


def sample_block(source, dataset) -> np.ndarray:
    """Up to :data:`SAMPLE_BYTES` of the data: whole rows from the middle of the leading dimension."""
    itemsize = np.dtype(source.dtype).itemsize
    count = whole_rows(source.shape, itemsize, SAMPLE_BYTES)
    start = tuple((n - c) // 2 if d == 0 else 0 for d, (n, c) in enumerate(zip(source.shape, count)))
    if dataset.generate is not None:
        from ccp.workload.datagen import Generator

        return Generator(dataset.generate).read(start, count)
    from ccp.hdf5.dataset import open_readonly

    with open_readonly(dataset.file, "dataset.file") as f:
        sel = tuple(slice(s, s + c) for s, c in zip(start, count))
        return np.ascontiguousarray(f[source.path or dataset.path][sel])


@dataclass(frozen=True)
class FilterProbe:
    """Each pipeline on the sample: stored/uncompressed ratio and seconds per uncompressed byte."""

    ratio: dict          # spec -> stored bytes / padded uncompressed bytes
    decode: dict         # spec -> seconds per byte decoded, beyond an unfiltered read of the same chunks
    encode: dict         # spec -> seconds per byte encoded, beyond an unfiltered write
    read_s_per_byte: float   # an unfiltered chunk read from the page cache, per byte (read + copy out)


def fastest_cpu_s(fn, reps: int) -> float:
    """CPU seconds of the fastest of ``reps`` passes of ``fn`` (work served from memory: page cache,
    chunk cache). CPU time, not wall time: on a shared machine a pass's wall time is its cost plus
    the time it waited for a core, which says how busy the machine was, not what the work costs;
    and the fastest pass is the least disturbed (as timeit)."""
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def _write_sample(path: bytes, dcpl, ftype, sample: np.ndarray) -> None:
    from h5py import h5d, h5f, h5s

    fid = h5f.create(path, h5f.ACC_TRUNC)
    ds = h5d.create(fid, b"d", ftype, h5s.create_simple(sample.shape), dcpl=dcpl)
    ds.write(h5s.ALL, h5s.ALL, sample)
    ds.close()
    fid.close()


def _read_chunks(ds, fspace, selections, bufs) -> None:
    for st, cnt in selections:
        fspace.select_hyperslab(st, cnt)
        ms, buf = bufs[cnt]
        ds.read(ms, fspace, buf)


def probe_filters(sample: np.ndarray, pipelines, reps: int = PROBE_REPEATS) -> FilterProbe:
    """``sample`` (the dataset's own data) written with each pipeline in chunks of about 256 KiB,
    then read back chunk by chunk with no chunk cache (every read decodes), from the page cache:
    the stored ratio, decode and encode cost on this data and this machine, now. The fastest of
    ``reps`` passes; an unfiltered copy is the baseline the filters' costs are measured above."""
    from h5py import h5d, h5f, h5s, h5t

    chunks = whole_rows(sample.shape, sample.dtype.itemsize, SAMPLE_CHUNK_BYTES)
    grid = [-(-n // c) for n, c in zip(sample.shape, chunks)]
    padded = math.prod(g * c for g, c in zip(grid, chunks)) * sample.dtype.itemsize
    starts = [tuple(i * c for i, c in zip(idx, chunks)) for idx in np.ndindex(*grid)]
    ftype = h5t.py_create(sample.dtype, logical=True)
    read_t, write_t, ratio = {}, {}, {}
    specs = ["none", *[p.spec for p in pipelines if not p.is_none]]
    by_spec = {p.spec: p for p in pipelines}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            path = f"{tmp}/probe.h5".encode()
            dcpl = plists.chunked_dcpl(chunks, by_spec.get(spec), sample.dtype)
            write_t[spec] = fastest_cpu_s(partial(_write_sample, path, dcpl, ftype, sample), max(2, reps // 2))
            fid = h5f.open(path, h5f.ACC_RDONLY)
            dapl = plists.no_cache_dapl()           # no cache: every read decodes its chunk
            ds = h5d.open(fid, b"d", dapl)
            stored = ds.get_storage_size()
            fspace = ds.get_space()
            sel = [(st, tuple(min(c, n - s) for c, s, n in zip(chunks, st, sample.shape))) for st in starts]
            bufs = {cnt: (h5s.create_simple(cnt), np.empty(cnt, sample.dtype)) for _, cnt in sel}
            read = partial(_read_chunks, ds, fspace, sel, bufs)
            read()                                       # the page cache holds the file: warm passes only
            read_t[spec] = fastest_cpu_s(read, reps)
            ds.close()
            fid.close()
            ratio[spec] = 1.0 if spec == "none" else min(1.0, max(stored / padded, 1e-4))
    base_r, base_w = read_t["none"], write_t["none"]
    return FilterProbe(ratio, {s: max(read_t[s] - base_r, 0.0) / padded for s in specs},
                       {s: max(write_t[s] - base_w, 0.0) / padded for s in specs}, base_r / padded)


def per_request_cost(dtype, reps: int = PROBE_REPEATS, n: int = 2000) -> float:
    """Seconds of one small read served from the chunk cache, as the sweep's read loop makes it
    (selection made outside the timed call, memory type the stored type): HDF5's and the loop's
    fixed cost per request, beyond the per-chunk visit. The fastest of ``reps`` batches of ``n``."""
    from h5py import h5d, h5f, h5s, h5t

    dtype = np.dtype(dtype)
    shape = (64, 64)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/req.h5".encode()
        dcpl = plists.chunked_dcpl(shape)
        fid = h5f.create(path, h5f.ACC_TRUNC)
        dapl = plists.cache_dapl(HDF5_1X)
        ftype = h5t.py_create(dtype, logical=True)
        ds = h5d.create(fid, b"d", ftype, h5s.create_simple(shape), dcpl=dcpl, dapl=dapl)
        ds.write(h5s.ALL, h5s.ALL, np.zeros(shape, dtype))
        one, fs, buf, mtype = h5s.create_simple((1, 1)), ds.get_space(), np.empty((1, 1), dtype), h5t.py_create(dtype)
        idx = [(i % 64, (i * 7) % 64) for i in range(n)]

        def batch(read=True):
            for st in idx:
                fs.select_hyperslab(st, (1, 1))
                if read:
                    ds.read(one, fs, buf, mtype)

        batch()
        # the read loop selects outside its timed call: the selection and the Python loop are not the request's
        t = max(fastest_cpu_s(batch, reps) - fastest_cpu_s(partial(batch, False), reps), 0.0) / n
        ds.close()
        fid.close()
    return t


def _preads(fd: int, offsets: list[int]) -> None:
    for off in offsets:
        os.pread(fd, 8, off)


def raw_read_cost(n: int = 4000, reps: int = PROBE_REPEATS) -> float:
    """Seconds of one small ``pread`` from a file in the page cache: the fixed cost of a raw read."""
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(os.urandom(1 << 20))
        fh.flush()
        offsets = np.random.default_rng(0).integers(0, (1 << 20) - 8, n).tolist()
        return fastest_cpu_s(partial(_preads, fh.fileno(), offsets), reps) / n


def cold_fetch_time(work_dir: Path, chunks: tuple[int, int], grid: tuple[int, int], n: int, reps: int = 3) -> float:
    """Seconds per read of one whole uncompressed chunk of ``chunks`` (float32) from a file whose
    pages were dropped (as the sweep's cold passes drop them): ``n`` chunks of the ``grid`` in
    random order, so readahead does not help (as it does not for a time series crossing a file of
    maps). The fastest of ``reps`` passes, each over a freshly dropped file."""
    from h5py import h5d, h5f, h5s, h5t

    from ccp.measurement.pagecache import drop_file

    shape = (grid[0] * chunks[0], grid[1] * chunks[1])
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    times = []
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        path = f"{tmp}/load.h5".encode()
        dcpl = plists.chunked_dcpl(chunks)
        fid = h5f.create(path, h5f.ACC_TRUNC)
        ds = h5d.create(fid, b"d", h5t.NATIVE_FLOAT, h5s.create_simple(shape), dcpl=dcpl)
        ds.write(h5s.ALL, h5s.ALL, data)
        ds.close()
        fid.close()
        mspace, buf = h5s.create_simple(chunks), np.empty(chunks, np.float32)
        for rep in range(reps):
            order = np.random.default_rng(rep + 1).permutation(grid[0] * grid[1])[:n]
            drop_file(path.decode())
            fid = h5f.open(path, h5f.ACC_RDONLY)
            dapl = plists.no_cache_dapl()
            ds = h5d.open(fid, b"d", dapl)
            fspace = ds.get_space()
            t0 = time.perf_counter()
            for lin in order.tolist():
                fspace.select_hyperslab((lin // grid[1] * chunks[0], lin % grid[1] * chunks[1]), chunks)
                ds.read(mspace, fspace, buf)
            times.append((time.perf_counter() - t0) / len(order))
            ds.close()
            fid.close()
    return min(times)


def cold_costs(work_dir: Path, warm_per_fetch_s: float, read_s_per_byte: float) -> tuple[float, float]:
    """(seconds per cold chunk fetch, seconds per cold byte), beyond the warm costs of the same
    reads: a line through two chunk sizes, 16 KiB and 256 KiB. A device with a high latency shows
    in the first, one with a low bandwidth in the second."""
    small, big = (64, 64), (128, 512)
    b_small, b_big = math.prod(small) * 4, math.prod(big) * 4
    t_small = cold_fetch_time(work_dir, small, (32, 32), 256) - warm_per_fetch_s - b_small * read_s_per_byte
    t_big = cold_fetch_time(work_dir, big, (8, 16), 64) - warm_per_fetch_s - b_big * read_s_per_byte
    per_byte = max((t_big - t_small) / (b_big - b_small), 0.0)
    return max(t_small - per_byte * b_small, 0.0), per_byte


def chunk_visit_cost(per_request_s: float, passes: int = 10) -> float:
    """Seconds per chunk a request touches when the chunk is already in the chunk cache: one
    request over 64 small cached chunks, repeated, less the per-request cost."""
    from h5py import h5d, h5f, h5s, h5t

    shape, chunks, block = (256, 256), (4, 4), (256, 4)
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/visit.h5".encode()
        dcpl = plists.chunked_dcpl(chunks)
        fid = h5f.create(path, h5f.ACC_TRUNC)
        dapl = plists.dapl(100_003, 4 << 20, DEFAULT_W0)
        ds = h5d.create(fid, b"d", h5t.NATIVE_FLOAT, h5s.create_simple(shape), dcpl=dcpl, dapl=dapl)
        ds.write(h5s.ALL, h5s.ALL, data)
        mspace, fspace, buf = h5s.create_simple(block), ds.get_space(), np.empty(block, np.float32)
        times = []
        for _ in range(passes + 1):
            t0 = time.process_time()       # CPU time: see fastest_cpu_s
            for c in range(0, shape[1], block[1]):
                fspace.select_hyperslab((0, c), block)
                ds.read(mspace, fspace, buf)
            times.append(time.process_time() - t0)
        ds.close()
        fid.close()
    per_req = min(times[1:]) / (shape[1] // block[1])
    return max(per_req - per_request_s, 0.0) / (block[0] // chunks[0])


def _write_rows(path: bytes, shape, chunks, data) -> None:
    from h5py import h5d, h5f, h5s, h5t

    fid = h5f.create(path, h5f.ACC_TRUNC)
    dapl = plists.cache_dapl(HDF5_1X)
    ds = h5d.create(fid, b"d", h5t.NATIVE_FLOAT, h5s.create_simple(shape), dcpl=plists.chunked_dcpl(chunks), dapl=dapl)
    mspace, fspace = h5s.create_simple(chunks), ds.get_space()
    for r in range(0, shape[0], chunks[0]):
        fspace.select_hyperslab((r, 0), chunks)
        ds.write(mspace, fspace, data[r:r + chunks[0]])
    ds.close()
    fid.close()


def write_op_cost(per_request_s: float, byte_s: float, n: int = 1024, reps: int = 3) -> float:
    """Seconds per chunk written to a new file beyond the request and its bytes: the chunk's allocation,
    its index entry and the write call (``n`` chunks of 1 KiB, a request each; the fastest of ``reps``)."""
    shape, chunks = (n, 256), (1, 256)
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        t = fastest_cpu_s(partial(_write_rows, f"{tmp}/w.h5".encode(), shape, chunks, data), reps)
    return max(t / n - per_request_s - math.prod(chunks) * 4 * byte_s, 0.0)


def measure_costs(source, dataset, pipelines, work_dir: Path) -> Costs:
    """Every price the search uses, measured now on this machine (nothing cached from an earlier
    run: a calibration taken while the machine was busy would bias every later search), the
    filters on a sample of the dataset's own data."""
    if source.numeric:
        fp = probe_filters(sample_block(source, dataset), pipelines)
        per_request = per_request_cost(source.dtype)
        cal = Calibration(per_request, fp.read_s_per_byte, dict(fp.decode), dict(fp.encode))
        ratios = dict(fp.ratio)
    else:   # raw records: the engine's calibration on bytes (filters' costs per byte of bytes), fresh
        data_kind = dataset.generate.data if dataset.generate is not None else "normal"
        cal = calibrate(list(pipelines), source.dtype, data_kind, None)
        ratios = {p.spec: 1.0 for p in pipelines}
    raw = raw_read_cost()
    visit = chunk_visit_cost(cal.per_request_s)
    load, cold_byte = cold_costs(work_dir, cal.per_request_s + raw + visit, cal.read_s_per_byte)
    write_op = max(write_op_cost(cal.per_request_s, cal.read_s_per_byte), raw)
    return Costs(cal, raw, ratios, load, visit, cold_byte, write_op_s=write_op)
