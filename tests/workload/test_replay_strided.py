"""A regular hyperslab (``a[::3]``) replayed as one request, the hyperslab itself (issue 23), not a box per block
(finding 6: 33,334 boxes a call) nor a box per chunk of the traced layout (which saw runs, not the strided elements,
on other layouts, and a read per box where HDF5 reads each block directly). HDF5 itself is in
``tests/model/test_strided.py``; here: the replay's requests, and the model's counts of them against a box per
block where the two must agree."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.chunkcache import ChunkCache
from ccp.model.fast import simulate_arrays
from ccp.workload.replay import REPLAY_COLUMNS, _boxes
from ccp.workload.replay_batches import SequenceBuilder
from ccp.workload.requestplan import RequestPlan


def per_block(start, count, stride, block):
    """The old expansion: a box per block, C order."""
    starts = [[s + i * st for s, i, st in zip(start, idx, stride)]
              for idx in itertools.product(*[range(c) for c in count])]
    return np.asarray(starts, np.int64), np.asarray([block] * len(starts), np.int64)


def row(start, count, stride, block):
    return pd.Series({"sel": "regular", "start": start, "count": count, "stride": stride, "block": block,
                      "blocks": None, "points": None})


CASES = [   # start, count, stride, block -> box, stride, block of the one request
    pytest.param([0], [34], [3], [1], [100], [3], [1], id="a[::3]"),
    pytest.param([1], [12], [8], [3], [91], [8], [3], id="blocks-of-3"),
    pytest.param([0], [20], [5], [5], [100], [100], [100], id="abutting-blocks-are-the-box"),
    pytest.param([4], [1], [9], [2], [2], [2], [2], id="one-block-is-the-box"),
    pytest.param([1, 0], [10, 8], [4, 4], [1, 2], [37, 30], [4, 4], [1, 2], id="2d"),
]


@pytest.mark.parametrize("start, count, stride, block, box, want_stride, want_block", CASES)
def test_a_regular_hyperslab_is_one_request(start, count, stride, block, box, want_stride, want_block):
    starts, counts, approx, strides, blocks = _boxes(row(start, count, stride, block), len(start), 65536)
    assert (starts, counts, approx, strides, blocks) == ([start], [box], False, [want_stride], [want_block])


def traced(rows, shape, chunks, cache):
    """The replay of trace rows (a dataset open, then calls ``(sel, start, count, stride, block)``)."""
    table = [dict.fromkeys(REPLAY_COLUMNS) | {"kind": "event", "pid": 1, "seq": 0, "op": "dataset_open",
                                               "cache_nbytes": cache.nbytes, "cache_nslots": cache.nslots,
                                               "cache_w0": cache.w0}]
    for i, (sel, start, count, stride, block) in enumerate(rows):
        table.append(dict.fromkeys(REPLAY_COLUMNS) | {"kind": "call", "pid": 1, "seq": i + 1, "api": "DatasetID.read",
                                                      "op": "read", "sel": sel, "start": start, "count": count,
                                                      "stride": stride, "block": block})
    b = SequenceBuilder("t", "f.h5", "/a", {"shape": list(shape), "chunks": list(chunks), "dtype": "f8",
                                           "itemsize": 8}, "read")
    b.add(pd.DataFrame(table, columns=list(REPLAY_COLUMNS)))
    return b.finish(lambda: cache)


NO_CACHE = ChunkCache(0, 0, 0.75)
ROOMY = ChunkCache(1 << 20, 521, 0.75)


@pytest.mark.parametrize("chunks, cache, loads, reads", [
    pytest.param((10,), NO_CACHE, 0, 34, id="read-directly-34-reads-not-10"),
    pytest.param((2,), ROOMY, 34, 34, id="2-element-chunks-34-loads-not-20"),
])
def test_the_measured_gaps_through_the_replay(chunks, cache, loads, reads):
    """Issue 23's figures (HDF5's, ``tests/model/test_strided.py``) from a traced ``a[::3]`` replayed, traced on
    10-element chunks and modelled on ``chunks``."""
    seq = traced([("regular", [0], [34], [3], [1]), ("box", [0], [10], None, None)], (100,), (10,), ROOMY)
    assert len(seq.plan) == seq.ncalls == 2 and seq.approximate == 0
    strides, blocks = seq.plan.hyperslab(0, 2)
    t = simulate_arrays((100,), chunks, 8, filtered=False, cache=cache, ops=seq.ops, starts=seq.plan.starts,
                        counts=seq.plan.counts, strides=strides, blocks=blocks)
    assert (t[0].chunk_loads, t[0].raw_reads) == (loads, reads)


@st.composite
def strided_selections(draw):
    """A shape, its chunks (any: smaller or bigger than the stride) and a regular hyperslab in it."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, {1: 200, 2: 30, 3: 12}[rank])) for _ in range(rank))
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    start, count, stride, block = [], [], [], []
    for s in shape:
        b = draw(st.integers(1, s))
        st_ = draw(st.integers(b, max(b, s)))
        a = draw(st.integers(0, s - b))
        count.append(draw(st.integers(1, (s - a - b) // st_ + 1)))
        start.append(a)
        stride.append(st_)
        block.append(b)
    return shape, chunks, start, count, stride, block


@settings(max_examples=60, deadline=None)
@given(sel=strided_selections(), filtered=st.booleans(), calls=st.integers(1, 3))
def test_one_request_counts_what_a_box_per_block_does_when_the_cache_holds_it(sel, filtered, calls):
    """Chunk loads (and, chunks through the cache, raw reads and bytes) of a strided call repeated: the one request
    against a box per block, equal when the cache holds every chunk the calls touch; one visit per chunk a call
    (hits: a chunk's blocks are one visit, not one each)."""
    shape, chunks, start, count, stride, block = sel
    starts, counts, approx, strides, blocks = _boxes(row(start, count, stride, block), len(shape), 65536)
    assert not approx
    cache = ChunkCache(1 << 24, 100_003, 0.75)
    one = simulate_arrays(shape, chunks, 8, filtered=filtered, cache=cache, ops="read", starts=starts * calls,
                          counts=counts * calls, strides=strides * calls, blocks=blocks * calls).total()
    old_starts, old_counts = per_block(start, count, stride, block)
    old = simulate_arrays(shape, chunks, 8, filtered=filtered, cache=cache, ops="read",
                          starts=np.tile(old_starts, (calls, 1)), counts=np.tile(old_counts, (calls, 1))).total()
    touched = {tuple(int(v) for v in s // np.asarray(chunks)) for s0, c0 in zip(old_starts, old_counts)
               for s in itertools.product(*[range(a, a + n) for a, n in zip(s0, c0)])}
    assert one.chunk_loads == old.chunk_loads == len(touched)
    assert (one.raw_reads, one.raw_read_bytes) == (old.raw_reads, old.raw_read_bytes)
    assert one.chunk_hits == (calls - 1) * len(touched)


def test_as_boxes_is_a_box_per_block_and_keeps_the_reopens():
    plan = RequestPlan(np.array([[0], [1], [3]]), np.array([[7], [2], [5]]), np.array([1, 2]),
                       strides=np.array([[3], [2], [2]]), blocks=np.array([[1], [2], [1]]))
    boxes = plan.as_boxes()
    assert boxes.starts.ravel().tolist() == [0, 3, 6, 1, 3, 5, 7]
    assert boxes.counts.ravel().tolist() == [1, 1, 1, 2, 1, 1, 1]
    assert boxes.reopen_before.tolist() == [3, 4]
    assert math.prod(boxes.as_boxes().starts.shape) == 7


def _plain(key):
    """A key with h5py's MultiBlockSlice (no ``==``) as comparable tuples."""
    return tuple(("multiblock", k.start, k.stride, k.count, k.block) if hasattr(k, "block") else k for k in key)


@pytest.mark.parametrize("call, multiblock, want", [
    pytest.param(("regular", [0, 1], [34, 2], [3, 4], [1, 1]), True, [(slice(0, 100, 3), slice(1, 6, 4))],
                 id="a[::3, 1::4]"),
    pytest.param(("regular", [1, 0], [2, 1], [5, 9], [2, 6]), True, [(("multiblock", 1, 5, 2, 2), slice(0, 6))],
                 id="blocks-of-2-one-multiblock-key"),
    pytest.param(("regular", [1, 0], [2, 1], [5, 9], [2, 6]), False,
                 [(slice(1, 3), slice(0, 6)), (slice(6, 8), slice(0, 6))], id="netcdf4-blocks-of-2-a-key-per-block"),
    pytest.param(("box", [2, 3], [4, 5], None, None), True, [(slice(2, 6), slice(3, 8))], id="a-box"),
])
def test_verify_reads_a_strided_call_as_the_program_did(call, multiblock, want):
    """``diagnose --verify`` replays through h5py a strided call as one key, what the program wrote: a slice with a
    step for 1-element blocks, ``h5py.MultiBlockSlice`` for blocks of several elements; through netCDF4-python
    (no such key; its own calls never select blocks) a key per block."""
    from ccp.trace.verify import _box

    seq = traced([call], (100, 6), (10, 6), ROOMY)
    key = _box(seq, 0, multiblock)
    assert [_plain(k) for k in (key if isinstance(key, list) else [key])] == want


@settings(max_examples=60, deadline=None)
@given(sel=strided_selections())
def test_the_chunks_a_strided_request_touches_are_the_models(sel):
    """``ccp diagnose``'s working sets and whole-chunk blocks list the chunks a request touches
    (``ccp.trace.cures.touched_chunks``): for a strided one, the chunks holding selected elements, in the order the
    reference model visits them, not those its box passes over."""
    from ccp.model import ChunkGrid
    from ccp.model.strided import chunk_pieces, selection_axes
    from ccp.trace.cures import touched_chunks

    shape, chunks, start, count, stride, block = sel
    starts, counts, _, strides, blocks = _boxes(row(start, count, stride, block), len(shape), 65536)
    ids, lin = touched_chunks(shape, chunks, *(np.asarray(x, np.int64) for x in (starts, counts, strides, blocks)))
    grid = ChunkGrid(shape, chunks)
    want = [grid.linear_index(cc) for cc, _ in chunk_pieces(selection_axes(starts[0], counts[0], strides[0], blocks[0]),
                                                              chunks)]
    assert ids.tolist() == [0] * len(want) and lin.tolist() == want
