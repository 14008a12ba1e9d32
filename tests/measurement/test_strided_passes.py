"""A strided request (a replay's ``d[::3]``, ``d[2:12:5, 1:9:4]``, h5py's MultiBlockSlice) is one HDF5 call in every
client's pass, as the program made it (issue 23): under the log VFD the counted pass's raw reads and bytes per
request are the model's for that one call, on chunked, compressed, cached, bypassing and contiguous layouts; a
strided write or copy puts each selected element where it belongs."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.hdf5.dataset import DatasetInfo
from ccp.hdf5.filters import parse_filters
from ccp.matrix.cells import Cell
from ccp.measurement import highlevel, iolog, native, runner
from ccp.model import chunk_size_table, simulate_arrays
from ccp.workload.requestplan import Hyperslabs, RequestPlan

SHAPE = (12, 10, 30)
ITEM = 4

# (start, box, stride, block) per request; a dimension read whole has stride = block = its box
REQUESTS = [
    ((0, 0, 0), (10, 10, 30), (3, 10, 30), (1, 10, 30)),        # d[::3] (rows 0, 3, 6, 9)
    ((2, 1, 0), (6, 5, 29), (5, 4, 7), (1, 1, 1)),              # d[2:12:5, 1:9:4, ::7]
    ((4, 0, 0), (1, 10, 30), (1, 10, 30), (1, 10, 30)),         # a box between them: d[4]
    ((3, 0, 1), (1, 8, 27), (1, 3, 8), (1, 2, 3)),              # blocks of 2 and 3: h5py's MultiBlockSlice
    ((0, 2, 5), (12, 1, 20), (2, 1, 5), (2, 1, 5)),             # abutting blocks of 2 rows, 5 apart: the box
    ((1, 0, 0), (11, 10, 30), (2, 10, 30), (1, 10, 30)),        # d[1::2] again, after the others
]


def plan() -> RequestPlan:
    starts, counts, strides, blocks = (np.array([r[k] for r in REQUESTS], np.int64) for k in range(4))
    return RequestPlan(starts, counts, strides=strides, blocks=blocks)


CLIENTS = [
    pytest.param(native, id="native", marks=pytest.mark.skipif(native.available() is not None,
                                                               reason=f"native loop: {native.available()}")),
    pytest.param(runner, id="h5py-lowlevel"),
    pytest.param(highlevel, id="h5py"),
]

LAYOUTS = [   # chunks, filters, cache
    pytest.param((4, 5, 30), "none", ChunkCache(1 << 20, 521, 0.75), id="chunked-cached"),
    pytest.param((4, 5, 30), "gzip:1", ChunkCache(2 * 4 * 5 * 30 * ITEM, 7, 0.75), id="gzip-small-cache"),
    pytest.param((3, 4, 8), "none", ChunkCache(100, 7, 0.75), id="chunks-bigger-than-the-cache"),
    pytest.param(None, "none", ChunkCache(1 << 20, 521, 0.75), id="contiguous"),
]


def _job(path, chunks, filters, cache, op="read"):
    source = DatasetInfo(SHAPE, np.dtype("<i4"), SHAPE, None, chunks, parse_filters("none"), "test")
    cell = Cell(chunks, parse_filters(filters), cache, AccessSpec(op, (1, 1, 1)))
    return runner.CellJob(cell=cell, file=str(path), dataset_path="/data", source=source, generate=None,
                          user_file=None, repeats=1, cold=False, counted_pass=True)


def _make(path, chunks, filters):
    data = np.arange(np.prod(SHAPE), dtype="<i4").reshape(SHAPE)
    kw = {"compression": "gzip", "compression_opts": 1} if filters == "gzip:1" else {}
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=chunks, **kw)
    return data


def _stored(path, chunks):
    if not chunks:
        return None
    sizes: dict = {}
    with h5py.File(path, "r") as f:
        f["data"].id.chunk_iter(lambda info: sizes.__setitem__(tuple(info.chunk_offset), info.size))
    return chunk_size_table(SHAPE, chunks, sizes)


def _tuples(rows):
    return [tuple(int(x) for x in r) for r in rows]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("chunks", "filters", "cache"), LAYOUTS)
def test_counted_strided_pass_is_the_models_one_call(tmp_path, client, chunks, filters, cache):
    path = tmp_path / "r.h5"
    _make(path, chunks, filters)
    p = plan()
    log = tmp_path / "io.log"
    timing = client.read_pass(_job(path, chunks, filters, cache), _tuples(p.starts), _tuples(p.counts), counted=True,
                              log_path=log, progress=runner.Progress(),
                              hyperslabs=Hyperslabs.of(p.counts, p.strides, p.blocks))
    assert len(timing.windows) == len(p) + 2                          # open, one window a request, close
    ws, we = (np.array([w[k] for w in timing.windows]) for k in (0, 1))
    ops = iolog.parse_log(log)
    got = iolog.count_by_window(ops, iolog.attribute(ops, ws, we), len(ws))
    pred = simulate_arrays(SHAPE, chunks, ITEM, filtered=filters != "none", cache=cache, ops="read",
                           starts=p.starts, counts=p.counts, strides=p.strides, blocks=p.blocks,
                           stored_chunk_bytes=_stored(path, chunks))
    for col in ("raw_reads", "raw_read_bytes"):
        assert got[col][1:-1].tolist() == pred.column(col)[:-1].tolist(), col   # [0] is the open


@pytest.mark.parametrize("client", CLIENTS)
def test_counted_strided_pass_is_not_a_box_per_block(tmp_path, client):
    """The one call is not the same elements read a block at a time: ``d[::3]`` of one gzip chunk bigger than
    the cache reads and decodes the chunk once in the call, where a read per block would read it 4 times."""
    path = tmp_path / "r.h5"
    chunks, cache = (12, 10, 30), ChunkCache(100, 7, 0.75)
    _make(path, chunks, "gzip:1")
    p = RequestPlan(np.array([[0, 0, 0]]), np.array([[10, 10, 30]]), strides=np.array([[3, 10, 30]]),
                    blocks=np.array([[1, 10, 30]]))
    log = tmp_path / "io.log"
    client.read_pass(_job(path, chunks, "gzip:1", cache), _tuples(p.starts), _tuples(p.counts), counted=True,
                     log_path=log, progress=runner.Progress(), hyperslabs=Hyperslabs.of(p.counts, p.strides, p.blocks))
    ops = iolog.parse_log(log)
    assert iolog.totals(ops)["raw_reads"] == 1                        # the chunk, once


class ArrayData:
    """The ``data.read(start, count)`` interface of ccp.workload.datagen over an array."""

    def __init__(self, arr):
        self.arr = arr

    def read(self, start, count):
        return self.arr[tuple(slice(s, s + c) for s, c in zip(start, count))]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("chunks", "filters"), [((5, 3, 7), "gzip:1"), (None, "none")], ids=["gzip", "contiguous"])
def test_strided_write_and_copy_put_every_element_in_place(tmp_path, client, chunks, filters):
    """Odd rows; even rows in blocks of 2 columns 3 apart, the columns between, the last: the file is the data."""
    data = np.random.default_rng(0).integers(-1000, 1000, SHAPE).astype("<i4")
    p = RequestPlan(np.array([[1, 0, 0], [0, 0, 0], [0, 2, 0], [0, 9, 0]]),
                    np.array([[11, 10, 30], [11, 8, 30], [11, 7, 30], [11, 1, 30]]),
                    strides=np.array([[2, 10, 30], [2, 3, 30], [2, 3, 30], [2, 1, 30]]),
                    blocks=np.array([[1, 10, 30], [1, 2, 30], [1, 1, 30], [1, 1, 30]]))
    hyper = Hyperslabs.of(p.counts, p.strides, p.blocks)
    job = _job(tmp_path, chunks, filters, ChunkCache(1000, 7, 0.75), op="write")
    out = tmp_path / "w.h5"
    timing, _ = client.write_pass(job, ArrayData(data), _tuples(p.starts), _tuples(p.counts), out, counted=False,
                                  log_path=None, progress=runner.Progress(), hyperslabs=hyper)
    assert len(timing.request_ns) == len(p)
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["data"][...], data)
    job = _job(out, chunks, filters, ChunkCache(1000, 7, 0.75), op="copy")
    client.write_pass(job, None, _tuples(p.starts), _tuples(p.counts), tmp_path / "c.h5", counted=False,
                      log_path=None, progress=runner.Progress(), hyperslabs=hyper)
    with h5py.File(tmp_path / "c.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], data)
