"""The measured inputs of the search (execution side): the engine's calibration, the cost of one
raw file read, and each filter's stored/uncompressed ratio on a sample of the dataset's own data."""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ccp.plan import calibrate
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
    from ccp.workload.source import open_readonly

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


def measure_costs(source, dataset, pipelines, work_dir: Path) -> Costs:
    data_kind = dataset.generate.data if dataset.generate is not None else "normal"
    cal = calibrate(list(pipelines), source.dtype, data_kind, work_dir)
    ratios = filter_ratios(sample_block(source, dataset), pipelines) if source.numeric else {p.spec: 1.0 for p in pipelines}
    return Costs(cal, raw_read_cost(), ratios)
