"""Strided selections (regular hyperslabs, one HDF5 call each) against HDF5 under the log VFD, and the compiled
kernel against the reference model on them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_strategies import DTYPES, REALITY, SETTINGS, caches, layouts, sieve_sizes, slabs
from test_reality import _cmp, _Files

from ccp.chunkcache import ChunkCache
from ccp.model import simulate, simulate_arrays, simulate_fast


@st.composite
def strided_slabs(draw, shape):
    """``(start, count, stride, block)``: per dimension blocks of 1-4 elements, stride >= block (sometimes equal:
    HDF5 merges them), or the plain box; ``count`` ends with a whole block."""
    start, count, stride, block = [], [], [], []
    for s in shape:
        a = draw(st.integers(0, s - 1))
        room = s - a
        b = draw(st.integers(1, min(4, room)))
        t = draw(st.integers(b, max(b, min(room, 3 * b + 3))))
        n = draw(st.integers(1, (room - b) // t + 1))
        start.append(a)
        count.append((n - 1) * t + b)
        stride.append(t)
        block.append(b)
    return tuple(start), tuple(count), tuple(stride), tuple(block)


@st.composite
def strided_requests(draw, shape, ops=("read",)):
    """A few strided calls, each maybe repeated (hits), with a plain box now and then."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(ops))
        if draw(st.integers(0, 4)) == 0:
            s, c = draw(slabs(shape))
            out.append((op, s, c))
        else:
            out.append((op, *draw(strided_slabs(shape))))
        if draw(st.booleans()):
            out.append(out[-1])
    return out


@pytest.mark.thorough       # make test-slow runs it again with CCP_MODEL_EXAMPLES=150
@REALITY
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(),
       pre=st.sampled_from(["all", "none"]), writes=st.booleans())
def test_strided_calls_match_hdf5(h5trace, tmp_path, data, layout, filtered, pre, writes):
    """Per call: raw reads and writes (bytes too, unfiltered) exactly as HDF5 does them, for any layout (a
    candidate's chunks smaller or bigger than the stride), any cache (chunks read directly or through it)."""
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    requests = data.draw(strided_requests(shape, ("read", "write") if writes else ("read",)), label="requests")
    path = _Files(tmp_path).new()
    h5trace.make_file(path, shape, chunks, dtype, filtered=filtered,
                      prewrite=[((0,) * len(shape), shape)] if pre == "all" else [])
    sizes = h5trace.stored_chunk_sizes(path) if chunks else {}
    sieve = sieve_sizes(data.draw, shape, chunks, itemsize)
    obs = h5trace.trace(path, requests, cache, dtype, sieve_buf_size=sieve)
    chunk_bytes = math.prod(chunks or shape) * itemsize
    kw = {"filtered": filtered, "cache": cache, "requests": requests, "sieve_buf_size": sieve,
          "stored_chunk_bytes": lambda c: sizes.get(c, chunk_bytes), "allocated": None if pre == "all" else False}
    pred = simulate(shape, chunks, itemsize, **kw)
    if filtered and writes:     # a rewritten filtered chunk's size is its new content's (LIMITS.md 1): counts only
        assert [(p.op, p.raw_reads, p.raw_writes) for p in pred] == \
               [(p.op, o.raw_reads, o.raw_writes) for p, o in zip(pred, obs)]
    else:
        _cmp(pred, obs)
    fast = simulate_fast(shape, chunks, itemsize, **kw)
    assert list(fast) == pred            # hits, loads and evictions too
    path.unlink()


@SETTINGS
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(), skip=st.booleans())
def test_compiled_kernel_matches_reference_on_strided_calls(data, layout, filtered, skip):
    """Every count of every request, mixed reads and writes, with and without the repeat skipping."""
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    requests = data.draw(strided_requests(shape, ("read", "write")), label="requests") * 4
    pred = simulate(shape, chunks, itemsize, filtered=filtered, cache=cache, requests=requests)
    rank = len(shape)
    box = [r if len(r) == 5 else (*r, r[2], r[2]) for r in requests]
    fast = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache, ops=[r[0] for r in box],
                           starts=np.array([r[1] for r in box]).reshape(-1, rank),
                           counts=np.array([r[2] for r in box]).reshape(-1, rank),
                           strides=np.array([r[3] for r in box]).reshape(-1, rank),
                           blocks=np.array([r[4] for r in box]).reshape(-1, rank), skip_repeats=skip)
    assert list(fast) == pred


NO_CACHE = ChunkCache(0, 0, 0.75)
ROOMY = ChunkCache(1 << 20, 521, 0.75)
A_EVERY_3RD = ("read", (0,), (100,), (3,), (1,))       # a[::3] of 100 elements: 34 of them


@pytest.mark.parametrize(("chunks", "cache", "filtered", "loads", "reads"), [
    pytest.param((10,), NO_CACHE, False, 0, 34, id="10-element-chunks-read-directly-34-reads-not-10"),
    pytest.param((2,), ROOMY, False, 34, 34, id="2-element-chunks-34-loads-not-20"),
    pytest.param((10,), ROOMY, False, 10, 10, id="10-element-chunks-cached-10-loads"),
    pytest.param((10,), NO_CACHE, True, 10, 10, id="filtered-uncached-a-chunk-once-per-call"),
    pytest.param(None, ROOMY, False, 0, 34, id="contiguous-a-piece-per-element-past-the-sieve"),
])
def test_the_measured_gaps_of_a_every_third(h5trace, tmp_path, chunks, cache, filtered, loads, reads):
    """The gaps the box-per-chunk replay had (issue 23), against HDF5: a chunk read directly costs a read per
    block; a layout with chunks smaller than the stride loads each chunk holding a selected element; a chunk that
    cannot be kept is loaded once per call."""
    path = tmp_path / "a.h5"
    h5trace.make_file(path, (100,), chunks, "f8", filtered=filtered, prewrite=[((0,), (100,))])
    sizes = h5trace.stored_chunk_sizes(path) if chunks else {}
    sieve = 8 if chunks is None else None           # a one-element sieve: each piece its own read
    obs = h5trace.trace(path, [A_EVERY_3RD], cache, "f8", sieve_buf_size=sieve)
    kw = {"filtered": filtered, "cache": cache, "requests": [A_EVERY_3RD],
          "stored_chunk_bytes": sizes.__getitem__ if filtered else None, "sieve_buf_size": sieve or 64 * 1024}
    for sim in (simulate, simulate_fast):
        pred = sim((100,), chunks, 8, **kw)
        assert (pred[0].chunk_loads, pred[0].raw_reads) == (loads, reads)
        _cmp(pred, obs, write_bytes=True)


@pytest.mark.parametrize(("shape", "chunks", "request_", "ops"), [
    pytest.param((5, 1, 1), (2, 1, 1), ("read", (0, 0, 0), (5, 1, 1), (3, 1, 1), (2, 1, 1)), 4,
                 id="ci-found-two-rows-of-a-chunk-two-reads-4-not-3"),
    pytest.param((8, 1), (4, 1), ("read", (0, 0), (8, 1), (5, 1), (3, 1)), 6,
                 id="a-column-a-read-per-row-6-not-2"),
    pytest.param((8, 3), (8, 3), ("read", (0, 0), (8, 3), (5, 3), (3, 3)), 6,
                 id="one-chunk-whole-rows-a-read-per-row-6-not-2"),
    pytest.param((8, 2, 2), (4, 2, 2), ("read", (0, 0, 0), (8, 2, 2), (5, 2, 2), (3, 2, 2)), 12,
                 id="a-middle-dim-of-2-rows-stays-apart-12-not-2"),
    pytest.param((8, 2, 2), (4, 2, 2), ("write", (0, 0, 0), (8, 2, 2), (5, 2, 2), (3, 2, 2)), 12,
                 id="writes-alike-12-not-2"),
    pytest.param((8, 1, 2), (8, 1, 2), ("read", (0, 0, 0), (8, 1, 2), (5, 1, 2), (3, 1, 2)), 6,
                 id="a-middle-dim-of-extent-1-flattened-6"),
    pytest.param((2, 8, 2), (2, 4, 2), ("read", (0, 0, 0), (2, 8, 2), (2, 5, 2), (2, 3, 2)), 4,
                 id="a-middle-dim-of-3-rows-irregular-tree-merged-4"),
    pytest.param((2, 5), (1, 2), ("read", (0, 0), (2, 5), (1, 3), (2, 2)), 6,
                 id="a-chunk-per-block-row-6"),
    pytest.param((8,), (4,), ("read", (0,), (8,), (5,), (3,)), 2,
                 id="rank-1-memory-map-a-read-per-block-2"),
])
def test_the_measured_pieces_of_strided_calls_in_rank_2_and_3(h5trace, tmp_path, shape, chunks, request_, ops):
    """A chunk read or written directly, against HDF5: in rank >= 2 the memory selection of a strided call is
    built element by element, its first dimension one span per row (never merged), a middle dimension merged up
    to its last row (strided.memory_rows); regular trees keep rows apart, irregular ones merge."""
    path = tmp_path / "s.h5"
    h5trace.make_file(path, shape, chunks, "f8", filtered=False, prewrite=[((0,) * len(shape), shape)])
    obs = h5trace.trace(path, [request_], NO_CACHE, "f8")
    for sim in (simulate, simulate_fast):
        pred = sim(shape, chunks, 8, filtered=False, cache=NO_CACHE, requests=[request_])
        assert pred[0].raw_reads + pred[0].raw_writes == ops
        _cmp(pred, obs, write_bytes=True)


def test_a_bad_stride_is_one_clear_error():
    with pytest.raises(ValueError, match=r"request 0: stride \(2,\) / block \(3,\)"):
        simulate_arrays((10,), (5,), 1, filtered=False, cache=ROOMY, ops="read", starts=[[0]], counts=[[8]],
                        strides=[[2]], blocks=[[3]])
