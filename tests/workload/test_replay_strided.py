"""A regular hyperslab (``a[::3]``) replayed as boxes grouped by the chunks it touches, not one box per block
(finding 6: 33,334 boxes a call made ``ccp diagnose`` take 0.2 s per call). Held against the old expansion, a box per
block: the same chunks, the same elements selected in each, the same bounding box, the same chunk loads when the
cache holds what a call touches; contiguous datasets still get a box per block."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.chunkcache import ChunkCache
from ccp.model.fast import simulate_arrays
from ccp.workload.replay import _boxes


def old_expansion(start, count, stride, block):
    starts = [[s + i * st for s, i, st in zip(start, idx, stride)]
              for idx in itertools.product(*[range(c) for c in count])]
    return np.asarray(starts, np.int64), np.asarray([block] * len(starts), np.int64)


def per_chunk_elements(shape, chunks, starts, counts):
    """{chunk coordinates: elements selected in it} of boxes (elements counted once)."""
    mask = np.zeros(shape, bool)
    for s, c in zip(starts, counts):
        mask[tuple(slice(a, a + n) for a, n in zip(s, c))] = True
    out = {}
    for idx in itertools.product(*[range(-(-n // k)) for n, k in zip(shape, chunks)]):
        n = int(mask[tuple(slice(i * k, (i + 1) * k) for i, k in zip(idx, chunks))].sum())
        if n:
            out[idx] = n
    return out, mask


CASES = [   # shape, chunks, start, count, stride, block
    ((100,), (10,), [0], [34], [3], [1]),
    ((100,), (10,), [5], [9], [11], [1]),             # stride beyond a chunk: a chunk per element
    ((100,), (7,), [1], [12], [8], [3]),              # blocks of 3, some across a chunk edge
    ((100,), (50,), [2], [3], [4], [1]),              # one chunk, gaps in it
    ((40, 30), (8, 7), [1, 0], [10, 8], [4, 4], [1, 2]),
    ((12, 10, 9), (4, 5, 3), [0, 1, 0], [6, 3, 3], [2, 3, 3], [1, 1, 3]),   # the last dim: blocks abut
    ((100,), (10,), [0], [20], [5], [5]),             # stride == block: one box
]


@pytest.mark.parametrize("shape, chunks, start, count, stride, block", CASES,
                         ids=["stride-3", "stride-past-chunk", "blocks-across-edges", "one-chunk-gaps", "2d",
                              "3d-abutting", "abutting"])
def test_grouped_boxes_select_what_the_old_expansion_did(shape, chunks, start, count, stride, block):
    row = pd.Series({"sel": "regular", "start": start, "count": count, "stride": stride, "block": block,
                     "blocks": None, "points": None})
    new_starts, new_counts, approx = _boxes(row, len(shape), 65536, chunks)
    assert not approx
    new_starts, new_counts = np.asarray(new_starts, np.int64), np.asarray(new_counts, np.int64)
    old_starts, old_counts = old_expansion(start, count, stride, block)
    new_chunks, new_mask = per_chunk_elements(shape, chunks, new_starts, new_counts)
    old_chunks, old_mask = per_chunk_elements(shape, chunks, old_starts, old_counts)
    assert len(new_starts) <= min(len(old_starts) + len(old_chunks), 2 * len(old_chunks))    # a box a chunk, or two
    assert new_chunks == old_chunks                           # the same chunks, the same elements in each
    assert int((new_counts.prod(axis=1)).sum()) == int(old_mask.sum())     # no element twice
    for d in range(len(shape)):                               # the same bounding box
        assert new_starts[:, d].min() == old_starts[:, d].min()
        assert (new_starts[:, d] + new_counts[:, d]).max() == (old_starts[:, d] + old_counts[:, d]).max()
    for filtered in (False, True):                            # a cache holding every chunk: the same loads
        cache = ChunkCache(1 << 24, 100_003, 0.75)
        got = [simulate_arrays(shape, chunks, 8, filtered=filtered, cache=cache, ops="read", starts=s, counts=c)
               .total().chunk_loads for s, c in ((new_starts, new_counts), (old_starts, old_counts))]
        assert got[0] == got[1] == len(old_chunks)


def test_a_contiguous_dataset_keeps_a_box_per_block():
    row = pd.Series({"sel": "regular", "start": [3], "count": [5], "stride": [4], "block": [2], "blocks": None,
                     "points": None})
    starts, counts, approx = _boxes(row, 1, 65536, None)
    old_starts, old_counts = old_expansion([3], [5], [4], [2])
    assert not approx and np.array_equal(starts, old_starts) and np.array_equal(counts, old_counts)


def test_too_many_boxes_is_the_bounding_box():
    row = pd.Series({"sel": "regular", "start": [0], "count": [1000], "stride": [3], "block": [1], "blocks": None,
                     "points": None})
    starts, counts, approx = _boxes(row, 1, 10, (2,))
    assert approx and starts == [[0]] and counts == [[2998]]


@st.composite
def strided_selections(draw):
    """A shape, its chunks and a regular hyperslab in it (block <= stride, inside the shape)."""
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
@given(sel=strided_selections(), filtered=st.booleans(), calls=st.integers(1, 3), small=st.booleans())
def test_random_strided_selections_count_what_the_old_expansion_did(sel, filtered, calls, small):
    """Chunk loads, raw reads and their bytes of a strided call repeated, its boxes grouped by chunk against a box
    per block: equal when the cache holds every chunk the calls touch, and in 1-D with a cache of one chunk (a
    box per block visits each chunk's blocks one after the other, as HDF5 visits the chunk once)."""
    shape, chunks, start, count, stride, block = sel
    small = small and len(shape) == 1
    row = pd.Series({"sel": "regular", "start": start, "count": count, "stride": stride, "block": block,
                     "blocks": None, "points": None})
    new_starts, new_counts, approx = _boxes(row, len(shape), 65536, chunks)
    assert not approx
    old_starts, old_counts = old_expansion(start, count, stride, block)
    chunk_bytes = math.prod(chunks) * 8
    cache = ChunkCache(chunk_bytes, 1, 0.75) if small else ChunkCache(1 << 24, 100_003, 0.75)
    got = []
    for s, c in ((new_starts, new_counts), (old_starts, old_counts)):
        s, c = np.tile(np.asarray(s, np.int64), (calls, 1)), np.tile(np.asarray(c, np.int64), (calls, 1))
        t = simulate_arrays(shape, chunks, 8, filtered=filtered, cache=cache, ops="read", starts=s, counts=c).total()
        got.append((t.chunk_loads, t.raw_reads, t.raw_read_bytes))
    assert got[0] == got[1]
