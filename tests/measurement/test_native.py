"""The native timed loop (ccp.measurement.native) against HDF5, the model and the Python loop."""

from __future__ import annotations

import time

import h5py
import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.hdf5.dataset import DatasetInfo
from ccp.hdf5.filters import parse_filters
from ccp.matrix.cells import Cell
from ccp.measurement import iolog, native, runner
from ccp.model import simulate_arrays
from ccp.workload.requests import random_requests, tile_requests

pytestmark = pytest.mark.skipif(native.available() is not None, reason=f"native loop: {native.available()}")

SHAPE = (12, 10, 30)


class ArrayData:
    """The ``data.read(start, count)`` interface of ccp.workload.datagen over an array."""

    def __init__(self, arr):
        self.arr = arr

    def read(self, start, count):
        return self.arr[tuple(slice(s, s + c) for s, c in zip(start, count))]


def _job(path, chunks, filters, cache, block, dtype="<i4", op="read"):
    source = DatasetInfo(SHAPE, np.dtype(dtype), SHAPE, None, chunks, parse_filters("none"), "test")
    cell = Cell(chunks, parse_filters(filters), cache, AccessSpec(op, block))
    return runner.CellJob(cell=cell, file=str(path), dataset_path="/data", source=source, generate=None,
                          user_file=None, repeats=1, cold=False, counted_pass=True)


def _make(path, chunks, filters, dtype="<i4"):
    data = np.arange(np.prod(SHAPE), dtype=dtype).reshape(SHAPE)
    kw = {"compression": "gzip", "compression_opts": 1} if filters == "gzip:1" else {}
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=chunks, **kw)
    return data


def test_uses_the_library_h5py_loaded():
    a = native.api()
    assert a.version == h5py.version.hdf5_version
    assert a.path in native._loaded_hdf5_paths()


@pytest.mark.parametrize(("chunks", "filters", "cache", "block", "rand"), [
    ((4, 5, 30), "gzip:1", ChunkCache(2 * 4 * 5 * 30 * 4, 7, 0.75), (1, 1, 30), 0),
    ((4, 5, 30), "none", ChunkCache(100, 7, 0.75), (2, 3, 7), 0),           # chunks bigger than the cache: bypass
    ((3, 10, 10), "none", ChunkCache(3 * 3 * 10 * 10 * 4, 5, 0.3), (2, 4, 4), 60),
    (None, "none", ChunkCache(8 * 2**20, 8191, 0.75), (1, 10, 1), 0),                             # contiguous: sieve buffer
], ids=["gzip-rows", "bypass", "random-w0", "contiguous-columns"])
def test_counted_read_pass_does_what_the_model_predicts(tmp_path, chunks, filters, cache, block, rand):
    """Per request, the raw reads the log VFD sees in the native loop's windows are the model's."""
    path = tmp_path / "r.h5"
    _make(path, chunks, filters)
    plan = random_requests(SHAPE, block, rand, seed=1) if rand else tile_requests(SHAPE, block)
    starts = [tuple(map(int, s)) for s in plan.starts]
    counts = [tuple(map(int, c)) for c in plan.counts]
    log = tmp_path / "io.log"
    job = _job(path, chunks, filters, cache, block)
    timing = native.read_pass(job, starts, counts, counted=True, log_path=log, progress=runner.Progress())
    assert len(timing.request_ns) == len(starts) and (timing.request_ns > 0).all()
    assert len(timing.windows) == len(starts) + 2                     # open, requests, close
    ws = np.array([w[0] for w in timing.windows])
    we = np.array([w[1] for w in timing.windows])
    assert (ws[1:] // 1000 > we[:-1] // 1000).all()                   # apart at the log's microsecond
    ops = iolog.parse_log(log)
    got = iolog.count_by_window(ops, iolog.attribute(ops, ws, we), len(ws))
    sizes = None
    if chunks:
        with h5py.File(path, "r") as f:
            d = f["data"]
            sizes = {}
            d.id.chunk_iter(lambda info: sizes.__setitem__(tuple(info.chunk_offset), info.size))
        from ccp.model import chunk_size_table
        sizes = chunk_size_table(SHAPE, chunks, sizes)
    pred = simulate_arrays(SHAPE, chunks, 4, filtered=filters != "none", cache=ChunkCache(cache.nbytes, cache.nslots, cache.w0),
                           ops="read", starts=plan.starts, counts=plan.counts, stored_chunk_bytes=sizes)
    assert got["raw_reads"][1:-1].tolist() == pred.column("raw_reads")[:-1].tolist()
    assert got["raw_read_bytes"][1:-1].tolist() == pred.column("raw_read_bytes")[:-1].tolist()


def test_read_pass_matches_the_python_loop_shape(tmp_path):
    path = tmp_path / "r.h5"
    _make(path, (4, 5, 30), "none")
    plan = tile_requests(SHAPE, (1, 1, 30))
    starts = [tuple(map(int, s)) for s in plan.starts]
    counts = [tuple(map(int, c)) for c in plan.counts]
    job = _job(path, (4, 5, 30), "none", ChunkCache(8 * 2**20, 8191, 0.75), (1, 1, 30))
    seen = []
    a = native.read_pass(job, starts, counts, counted=False, progress=runner.Progress(lambda *x: seen.append(x)))
    b = runner.read_pass(job, starts, counts, counted=False, log_path=None, progress=runner.Progress())
    assert a.request_ns.shape == b.request_ns.shape and a.cache == b.cache
    assert len(a.windows) == len(b.windows) == 2                      # open and close only
    assert a.open_ns > 0 and a.close_ns > 0
    assert seen and seen[0] == ("timed pass", 0, len(starts))


@pytest.mark.parametrize(("chunks", "filters", "block"), [
    ((4, 5, 30), "gzip:1", (1, 10, 30)),
    ((5, 3, 7), "none", (2, 4, 6)),
    (None, "none", (3, 1, 30)),
], ids=["gzip-planes", "unaligned", "contiguous"])
def test_write_and_copy_passes_write_exact_values(tmp_path, chunks, filters, block):
    """Every block lands where its selection says: the written file holds exactly the data."""
    data = np.random.default_rng(0).integers(-1000, 1000, SHAPE).astype("<i4")
    plan = tile_requests(SHAPE, block)
    starts = [tuple(map(int, s)) for s in plan.starts]
    counts = [tuple(map(int, c)) for c in plan.counts]
    job = _job(tmp_path, chunks, filters, ChunkCache(1000, 7, 0.75), block, op="write")
    out = tmp_path / "w.h5"
    native.BATCH_BYTES, saved = 1000, native.BATCH_BYTES                 # several data batches
    try:
        timing, storage = native.write_pass(job, ArrayData(data), starts, counts, out, counted=False)
    finally:
        native.BATCH_BYTES = saved
    assert len(timing.request_ns) == len(starts) and storage > 0
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["data"][...], data)
    # copy: read each block from the written file inside the timed request, write it to a new one
    job = _job(out, chunks, filters, ChunkCache(1000, 7, 0.75), block, op="copy")
    timing, _ = native.write_pass(job, None, starts, counts, tmp_path / "c.h5", counted=False)
    with h5py.File(tmp_path / "c.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], data)


def test_deadline_stops_after_the_request_that_passes_it(tmp_path):
    path = tmp_path / "r.h5"
    _make(path, (4, 5, 30), "none")
    plan = tile_requests(SHAPE, (1, 1, 1))
    job = _job(path, (4, 5, 30), "none", ChunkCache(8 * 2**20, 8191, 0.75), (1, 1, 1))
    timing = native.read_pass(job, plan.starts, plan.counts, counted=False, deadline_ns=time.perf_counter_ns())
    assert len(timing.request_ns) == 1


def test_hdf5_failure_is_an_error_naming_the_request(tmp_path):
    path = tmp_path / "r.h5"
    _make(path, (4, 5, 30), "none")
    job = _job(path, (4, 5, 30), "none", ChunkCache(8 * 2**20, 8191, 0.75), (1, 1, 30))
    starts, counts = [(0, 0, 0), (11, 9, 10)], [(1, 1, 30), (1, 1, 30)]     # the second runs off the end
    with pytest.raises(OSError, match=r"request 1 \(start \(11, 9, 10\)"):
        native.read_pass(job, starts, counts, counted=False)
