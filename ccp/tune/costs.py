"""The measured inputs of the search (execution side): the engine's calibration, the cost of one
raw file read, and each filter's stored/uncompressed ratio on a sample of the dataset's own data."""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ccp.hdf5 import plists
from ccp.predict import calibrate
from ccp.tune.heuristics import whole_rows
from ccp.tune.search import Costs

SAMPLE_BYTES = 4 * 1024 * 1024
SAMPLE_CHUNK_BYTES = 256 * 1024


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


def filter_ratios(sample: np.ndarray, pipelines) -> dict[str, float]:
    """Stored bytes over uncompressed bytes of ``sample`` written with each pipeline (chunks of about 256 KiB)."""
    import h5py

    out = {}
    chunks = whole_rows(sample.shape, sample.dtype.itemsize, SAMPLE_CHUNK_BYTES)
    with tempfile.TemporaryDirectory() as tmp:
        for p in pipelines:
            if p.is_none:
                out[p.spec] = 1.0
                continue
            path = Path(tmp) / "ratio.h5"
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            p.apply(dcpl, sample.dtype)
            fid = h5py.h5f.create(str(path).encode(), h5py.h5f.ACC_TRUNC)
            ds = h5py.h5d.create(fid, b"d", h5py.h5t.py_create(sample.dtype, logical=True),
                                 h5py.h5s.create_simple(sample.shape), dcpl=dcpl)
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, sample)
            stored = ds.get_storage_size()
            ds.close()
            fid.close()
            # the sample's grid pads its edge chunks: compare with the padded size
            padded = math.prod(-(-n // c) * c for n, c in zip(sample.shape, chunks)) * sample.dtype.itemsize
            out[p.spec] = min(1.0, max(stored / padded, 1e-4))
    return out


def raw_read_cost(n: int = 20000) -> float:
    """Seconds of one small ``pread`` from a file in the page cache: the fixed cost of a raw read."""
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(os.urandom(1 << 20))
        fh.flush()
        fd = fh.fileno()
        offsets = np.random.default_rng(0).integers(0, (1 << 20) - 8, n)
        t0 = time.perf_counter()
        for off in offsets.tolist():
            os.pread(fd, 8, off)
        return (time.perf_counter() - t0) / n


def chunk_load_cost(work_dir: Path, per_request_s: float, raw_read_s: float, n: int = 256) -> float:
    """Seconds HDF5 spends on the first fetch of a chunk, beyond the request, the read call and
    the visit: the chunk index lookup and the device, cold. ``n`` 16 KiB chunks of a 16 MiB file
    in random order (readahead does not help, as it does not for a time series crossing a file of
    maps), page cache dropped first as the sweep's cold passes do. Charged once per distinct chunk."""
    from h5py import h5d, h5f, h5p, h5s, h5t

    from ccp.measurement.pagecache import drop_file

    grid, chunks = (32, 32), (64, 64)
    shape = (grid[0] * chunks[0], grid[1] * chunks[1])
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    order = np.random.default_rng(1).permutation(grid[0] * grid[1])[:n]
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        path = f"{tmp}/load.h5".encode()
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        fid = h5f.create(path, h5f.ACC_TRUNC)
        ds = h5d.create(fid, b"d", h5t.NATIVE_FLOAT, h5s.create_simple(shape), dcpl=dcpl)
        ds.write(h5s.ALL, h5s.ALL, data)
        ds.close()
        fid.close()
        drop_file(path.decode())
        fid = h5f.open(path, h5f.ACC_RDONLY)
        dapl = plists.no_cache_dapl()
        ds = h5d.open(fid, b"d", dapl)
        mspace, fspace, buf = h5s.create_simple(chunks), ds.get_space(), np.empty(chunks, np.float32)
        t0 = time.perf_counter()
        for lin in order.tolist():
            fspace.select_hyperslab((lin // grid[1] * chunks[0], lin % grid[1] * chunks[1]), chunks)
            ds.read(mspace, fspace, buf)
        t = (time.perf_counter() - t0) / len(order)
        ds.close()
        fid.close()
    return max(t - per_request_s - raw_read_s, 0.0)


def chunk_visit_cost(per_request_s: float, passes: int = 10) -> float:
    """Seconds per chunk a request touches when the chunk is already in the chunk cache: one
    request over 64 small cached chunks, repeated, less the per-request cost."""
    from h5py import h5d, h5f, h5p, h5s, h5t

    shape, chunks, block = (256, 256), (4, 4), (256, 4)
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/visit.h5".encode()
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        fid = h5f.create(path, h5f.ACC_TRUNC)
        dapl = plists.dapl(100_003, 4 << 20, 0.75)
        ds = h5d.create(fid, b"d", h5t.NATIVE_FLOAT, h5s.create_simple(shape), dcpl=dcpl, dapl=dapl)
        ds.write(h5s.ALL, h5s.ALL, data)
        mspace, fspace, buf = h5s.create_simple(block), ds.get_space(), np.empty(block, np.float32)
        times = []
        for _ in range(passes + 1):
            t0 = time.perf_counter()
            for c in range(0, shape[1], block[1]):
                fspace.select_hyperslab((0, c), block)
                ds.read(mspace, fspace, buf)
            times.append(time.perf_counter() - t0)
        ds.close()
        fid.close()
    per_req = float(np.median(times[1:])) / (shape[1] // block[1])
    return max(per_req - per_request_s, 0.0) / (block[0] // chunks[0])


def measure_costs(source, dataset, pipelines, work_dir: Path) -> Costs:
    data_kind = dataset.generate.data if dataset.generate is not None else "normal"
    cal = calibrate(list(pipelines), source.dtype, data_kind, work_dir)
    ratios = filter_ratios(sample_block(source, dataset), pipelines) if source.numeric else {p.spec: 1.0 for p in pipelines}
    raw = raw_read_cost()
    visit = chunk_visit_cost(cal.per_request_s)
    return Costs(cal, raw, ratios, max(chunk_load_cost(work_dir, cal.per_request_s, raw) - visit, 0.0), visit)
