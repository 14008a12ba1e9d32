"""Calls on many boxes (a list index, points, irregular hyperslabs: one HDF5 call each) against HDF5 under the log
VFD, and the compiled kernel against the reference model on them (ccp/model/union.py says what HDF5 does)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_strategies import DTYPES, REALITY, SETTINGS, caches, layouts, slabs
from test_reality import _cmp, _Files

from ccp.chunkcache import ChunkCache
from ccp.model import simulate, simulate_arrays, simulate_fast
from ccp.model.union import MultiBox

NO_CACHE = ChunkCache(0, 0, 0.75)
ROOMY = ChunkCache(1 << 20, 521, 0.75)
ONE_CHUNK = ChunkCache(80, 521, 0.75)        # holds one 10-element f8 chunk: the next evicts it


def _rows(idx, width):
    """``d[idx, :]`` of a 2-D dataset ``width`` wide: a box per listed row (what h5py ORs together)."""
    return [(i, 0) for i in idx], [(1, width)] * len(idx)


def _cols(idx, height):
    """``d[:, idx]``: a box per listed column."""
    return [(0, i) for i in idx], [(height, 1)] * len(idx)


def _list(idx):
    """``d[idx]`` of a 1-D dataset."""
    return [(i,) for i in idx], [(1,)] * len(idx)


CASES = [   # id, shape, chunks, filtered, cache, the call (starts, counts, points), reads and chunk loads of one call
    ("1d-list-read-directly-a-read-per-run", (100,), (10,), False, NO_CACHE, (*_list([0, 5, 9, 14]), False), 4, 0),
    ("1d-list-cached-each-chunk-once", (100,), (10,), False, ROOMY, (*_list([0, 5, 9, 14]), False), 2, 2),
    ("1d-list-cache-of-one-chunk-each-chunk-once", (100,), (10,), False, ONE_CHUNK,
     (*_list([0, 5, 9, 14, 15, 31]), False), 3, 3),
    ("1d-list-filtered-no-cache-each-chunk-once", (100,), (10,), True, NO_CACHE,
     (*_list([0, 5, 9, 14, 15, 31]), False), 3, 3),
    ("1d-consecutive-indexes-one-read", (100,), (10,), False, NO_CACHE, (*_list([0, 1, 2]), False), 1, 0),
    ("2d-rows-read-directly", (10, 10), (5, 5), False, NO_CACHE, (*_rows([0, 3], 10), False), 4, 0),
    ("2d-rows-whole-chunk-width-merge", (10, 10), (5, 10), False, NO_CACHE, (*_rows([0, 1, 3], 10), False), 2, 0),
    ("2d-columns-a-read-per-element", (10, 10), (5, 5), False, NO_CACHE, (*_cols([2, 7], 10), False), 20, 0),
    ("2d-rows-cached", (10, 10), (5, 5), False, ROOMY, (*_rows([0, 3, 7], 10), False), 4, 4),
    ("2d-rows-filtered-small-cache", (10, 10), (5, 5), True, ONE_CHUNK, (*_rows([0, 3, 7], 10), False), 4, 4),
    ("2d-blocks-across-chunk-rows-one-read", (4, 4), (2, 4), False, NO_CACHE, ([(0, 2), (1, 0)], [(1, 2), (1, 2)],
                                                                              False), 1, 0),
    ("points-unsorted-in-list-order", (100,), (10,), False, NO_CACHE, ([(7,), (5,), (6,)], [(1,)] * 3, True), 2, 0),
    ("points-one-apart-on-disk-not-in-memory", (100,), (10,), False, NO_CACHE,
     ([(15,), (5,), (16,), (6,)], [(1,)] * 4, True), 4, 0),
    ("points-repeated-read-twice", (100,), (10,), False, NO_CACHE, ([(5,), (5,), (6,)], [(1,)] * 3, True), 2, 0),
    ("points-2d-mask-filtered-once-per-chunk", (10, 10), (5, 5), True, ONE_CHUNK,
     ([(0, 0), (0, 1), (7, 7), (3, 3), (8, 9)], [(1, 1)] * 5, True), 2, 2),
]


@pytest.mark.parametrize(("shape", "chunks", "filtered", "cache", "call", "reads", "loads"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_one_call_on_many_boxes_as_hdf5_does_it(h5trace, tmp_path, shape, chunks, filtered, cache, call, reads, loads):
    """Reads and bytes of one call (twice: the second finds what the first left in the cache) equal HDF5's; the
    chunk loads and reads are those of each chunk visited once per call (the model fed a box at a time made more)."""
    starts, counts, points = call
    req = MultiBox.of("read", starts, counts, points=points)
    path = tmp_path / "a.h5"
    h5trace.make_file(path, shape, chunks, "f8", filtered=filtered, prewrite=[((0,) * len(shape), shape)])
    sizes = h5trace.stored_chunk_sizes(path)
    obs = h5trace.trace(path, [req, req], cache, "f8")
    kw = {"filtered": filtered, "cache": cache, "requests": [req, req],
          "stored_chunk_bytes": sizes.__getitem__ if filtered else None}
    for sim in (simulate, simulate_fast):
        pred = sim(shape, chunks, 8, **kw)
        assert (pred[0].raw_reads, pred[0].chunk_loads) == (reads, loads)
        _cmp(pred, obs)



WRITES_OF_ONE_POINT = [   # id, point, chunks of the (4,) dataset, filtered, cache, raw reads of the write
    ("1-element-chunk-cached-no-read", (0,), (1,), False, ChunkCache(8, 1, 0.0), 0),
    ("1-element-chunk-filtered-uncached-no-read", (0,), (1,), True, NO_CACHE, 0),
    ("1-element-chunk-filtered-cached-no-read", (2,), (1,), True, ROOMY, 0),
    ("2-element-chunk-cached-reads-it", (1,), (2,), False, ROOMY, 1),
]


@pytest.mark.parametrize(("point", "chunks", "filtered", "cache", "reads"),
                         [pytest.param(*c[1:], id=c[0]) for c in WRITES_OF_ONE_POINT])
def test_a_point_selection_of_one_element_writes_a_whole_chunk_without_reading_it(
        h5trace, tmp_path, point, chunks, filtered, cache, reads):
    """HDF5's single-element path leaves the selection type unset (ccp/model/union.py): a written point that is
    its whole chunk is not read first, unlike the points of a bigger point selection (make test-slow found it)."""
    req = MultiBox.of("write", [point], None, points=True)
    path = tmp_path / "a.h5"
    h5trace.make_file(path, (4,), chunks, "f8", filtered=filtered, prewrite=[((0,), (4,))])
    sizes = h5trace.stored_chunk_sizes(path)
    obs = h5trace.trace(path, [req], cache, "f8")
    kw = {"filtered": filtered, "cache": cache, "requests": [req], "stored_chunk_bytes": sizes.__getitem__}
    for sim in (simulate, simulate_fast):
        pred = sim((4,), chunks, 8, **kw)
        assert [(p.raw_reads, p.raw_writes) for p in pred] == [(o.raw_reads, o.raw_writes) for o in obs]
        assert pred[0].raw_reads == reads

@st.composite
def many_box_calls(draw, shape, ops=("read",)):
    """A call on 2-6 boxes (a union, boxes maybe overlapping or abutting) or 2-12 points (any order, repeats)."""
    op = draw(st.sampled_from(ops))
    if draw(st.booleans()):
        pts = draw(st.lists(st.tuples(*[st.integers(0, s - 1) for s in shape]), min_size=2, max_size=12))
        if op == "write":       # HDF5 writes a repeated point twice, in an order the model does not follow
            pts = list(dict.fromkeys(pts))
        return MultiBox.of(op, pts, None, points=True)
    boxes = draw(st.lists(slabs(shape), min_size=2, max_size=6))
    return MultiBox.of(op, [b[0] for b in boxes], [b[1] for b in boxes])


@st.composite
def call_lists(draw, shape, ops=("read",)):
    """A few calls on many boxes, each maybe repeated (hits), with a plain box now and then."""
    out: list = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 4)) == 0:
            s, c = draw(slabs(shape))
            out.append((draw(st.sampled_from(ops)), s, c))
        else:
            out.append(draw(many_box_calls(shape, ops)))
        if draw(st.booleans()):
            out.append(out[-1])
    return out


@pytest.mark.thorough       # make test-slow runs it again with CCP_MODEL_EXAMPLES=150
@REALITY
@given(data=st.data(), layout=layouts(), filtered=st.booleans(), pre=st.sampled_from(["all", "none"]),
       writes=st.booleans())
def test_many_box_calls_match_hdf5(h5trace, tmp_path, data, layout, filtered, pre, writes):
    """Per call: raw reads and writes (bytes too, unfiltered) as HDF5 does them, on any chunk shape and cache."""
    shape, chunks, dtype = layout
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks) * itemsize), label="cache")
    requests = data.draw(call_lists(shape, ("read", "write") if writes else ("read",)), label="requests")
    path = _Files(tmp_path).new()
    h5trace.make_file(path, shape, chunks, dtype, filtered=filtered,
                      prewrite=[((0,) * len(shape), shape)] if pre == "all" else [])
    sizes = h5trace.stored_chunk_sizes(path)
    obs = h5trace.trace(path, requests, cache, dtype)
    chunk_bytes = math.prod(chunks) * itemsize
    kw = {"filtered": filtered, "cache": cache, "requests": requests,
          "stored_chunk_bytes": lambda c: sizes.get(c, chunk_bytes), "allocated": None if pre == "all" else False}
    pred = simulate(shape, chunks, itemsize, **kw)
    if filtered and writes:     # a rewritten filtered chunk's size is its new content's (LIMITS.md 1): counts only
        assert [(p.op, p.raw_reads, p.raw_writes) for p in pred] == \
               [(p.op, o.raw_reads, o.raw_writes) for p, o in zip(pred, obs)]
    else:
        _cmp(pred, obs)
    assert list(simulate_fast(shape, chunks, itemsize, **kw)) == pred     # hits, loads and evictions too
    path.unlink()


@SETTINGS
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(), skip=st.booleans())
def test_compiled_kernel_matches_reference_on_many_box_calls(data, layout, filtered, skip):
    """Every count of every call, mixed reads and writes, repeated (the repeat skipping copies whole calls)."""
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    requests = data.draw(call_lists(shape, ("read", "write")), label="requests") * 4
    pred = simulate(shape, chunks, itemsize, filtered=filtered, cache=cache, requests=requests)
    rank = len(shape)
    calls = [r if isinstance(r, MultiBox) else MultiBox.of(r[0], [r[1]], [r[2]]) for r in requests]
    fast = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache,
                           ops=[c.op for c in calls for _ in c.starts],
                           starts=np.concatenate([c.starts for c in calls]).reshape(-1, rank),
                           counts=np.concatenate([c.counts for c in calls]).reshape(-1, rank),
                           calls=np.repeat(np.arange(len(calls)), [len(c.starts) for c in calls]),
                           points=np.repeat([c.points for c in calls], [len(c.starts) for c in calls]),
                           skip_repeats=skip)
    first = np.cumsum([0] + [len(c.starts) for c in calls])[:-1]
    per_call = np.add.reduceat(fast.counts[:-1], first, axis=0) if len(first) else fast.counts[:0]
    assert [tuple(r) for r in per_call.tolist()] + [tuple(fast.counts[-1].tolist())] == \
           [(p.chunk_hits, p.chunk_loads, p.evictions, p.raw_reads, p.raw_read_bytes, p.raw_writes,
             p.raw_write_bytes) for p in pred]


def test_a_call_box_by_box_over_predicts_where_the_call_does_not():
    """The gap of the closing note: 20 chunks each holding 4 listed elements, a cache of one chunk: fed a box at a
    time the model loads 80 chunks, as one call 20 (what HDF5 loads)."""
    idx = [c * 10 + k for k in (0, 3, 6, 9) for c in range(20)]
    idx.sort()
    starts = np.asarray(idx, np.int64)[:, None]
    counts = np.ones_like(starts)
    kw = {"filtered": True, "cache": ONE_CHUNK, "ops": "read", "starts": starts, "counts": counts}
    boxes = simulate_arrays((200,), (10,), 8, **kw).total()
    call = simulate_arrays((200,), (10,), 8, calls=np.zeros(len(idx), np.int64), **kw).total()
    assert (boxes.chunk_loads, call.chunk_loads) == (20, 20)      # sorted: a box after the last one hits
    shuffled = np.asarray([c * 10 + k for k in (0, 3, 6, 9) for c in range(20)], np.int64)[:, None]
    kw["starts"] = shuffled
    boxes = simulate_arrays((200,), (10,), 8, **kw).total()
    call = simulate_arrays((200,), (10,), 8, calls=np.zeros(len(idx), np.int64), points=np.ones(len(idx), bool),
                           **kw).total()
    assert (boxes.chunk_loads, call.chunk_loads) == (80, 20)


def test_a_batch_that_begins_inside_a_call_is_refused():
    from ccp.model import ArrayModel

    m = ArrayModel((100,), (10,), 8, filtered=False, cache=ROOMY)
    m.feed("read", [[0], [5]], [[1], [1]], calls=[0, 0])
    with pytest.raises(ValueError, match="begins inside call 0"):
        m.feed("read", [[9]], [[1]], calls=[0])


def test_calls_strided_calls_and_boxes_mixed_in_one_plan():
    """A trace mixes them (``d[::3]``, ``d[[1, 5]]``, ``d[2:9]``, repeated): the compiled kernel's calls (strided rows
    handed to the box kernel between them) equal the reference's, call by call, on random plans."""
    rng = np.random.default_rng(1)
    for trial in range(120):
        n = int(rng.integers(4, 30))
        chunks = (int(rng.integers(1, n + 1)),)
        cache = [NO_CACHE, ROOMY, ChunkCache(16, 7, 0.5)][trial % 3]
        reqs: list = []
        for _ in range(int(rng.integers(1, 8))):
            kind = int(rng.integers(0, 3))
            a = int(rng.integers(0, n))
            if kind == 0:               # a strided call: blocks of 1-2 elements, stride up to 3 more
                b = min(int(rng.integers(1, 3)), n - a)
                t = b + int(rng.integers(0, 4))
                k = (n - a - b) // t + 1
                reqs.append(("read", (a,), ((k - 1) * t + b,), (t,), (b,)))
            elif kind == 1:
                pts = [(int(p),) for p in rng.integers(0, n, int(rng.integers(2, 6)))]
                reqs.append(MultiBox.of("read", pts, None, points=bool(rng.integers(0, 2))))
            else:
                reqs.append(("read", (a,), (int(rng.integers(1, n - a + 1)),)))
        reqs = reqs * 3
        ref = simulate((n,), chunks, 8, filtered=bool(trial % 2), cache=cache, requests=reqs)
        rows = []      # (call, start, count, stride, block, points)
        for i, r in enumerate(reqs):
            if isinstance(r, MultiBox):
                rows += [(i, s, c, c, c, r.points) for s, c in zip(r.starts.tolist(), r.counts.tolist())]
            else:
                rows.append((i, r[1], r[2], r[3] if len(r) > 3 else r[2], r[4] if len(r) > 3 else r[2], False))
        calls = np.array([x[0] for x in rows])
        fast = simulate_arrays((n,), chunks, 8, filtered=bool(trial % 2), cache=cache, ops="read",
                               starts=[x[1] for x in rows], counts=[x[2] for x in rows], strides=[x[3] for x in rows],
                               blocks=[x[4] for x in rows], calls=calls, points=[x[5] for x in rows])
        per_call = np.add.reduceat(fast.counts[:-1], np.flatnonzero(np.diff(calls, prepend=-1) != 0), axis=0)
        assert [tuple(r) for r in per_call.tolist()] + [tuple(fast.counts[-1].tolist())] == \
               [(p.chunk_hits, p.chunk_loads, p.evictions, p.raw_reads, p.raw_read_bytes, p.raw_writes,
                 p.raw_write_bytes) for p in ref], (n, chunks, cache, reqs)
