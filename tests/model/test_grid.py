"""Chunk-grid math against brute force (numpy boolean masks)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.model.grid import ChunkGrid, contiguous_runs, next_pow2


@st.composite
def grid_and_slab(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    start = tuple(draw(st.integers(0, s - 1)) for s in shape)
    count = tuple(draw(st.integers(1, s - o)) for s, o in zip(shape, start))
    return ChunkGrid(shape, chunks), start, count


def slab_mask(shape, start, count):
    m = np.zeros(shape, bool)
    m[tuple(slice(s, s + n) for s, n in zip(start, count))] = True
    return m


def chunk_mask(g: ChunkGrid, coords):
    m = np.zeros(g.shape, bool)
    m[tuple(slice(c * k, (c + 1) * k) for c, k in zip(coords, g.chunks))] = True
    return m


@settings(max_examples=150, deadline=None)
@given(grid_and_slab())
def test_chunks_touched_and_intersections(case):
    g, start, count = case
    sel = slab_mask(g.shape, start, count)
    expected = [c for c in g.iter_chunks() if (sel & chunk_mask(g, c)).any()]
    got = g.chunks_touched(start, count)
    assert got == expected                                   # same set, ascending linear index
    assert [g.linear_index(c) for c in got] == sorted(g.linear_index(c) for c in got)
    for c in g.iter_chunks():
        both = sel & chunk_mask(g, c)
        box = g.intersection(start, count, c)
        assert g.selected_in_chunk(start, count, c) == both.sum()
        if not both.any():
            assert box is None
            continue
        lo, hi = box
        assert np.array_equal(both, slab_mask(g.shape, lo, tuple(h - l for l, h in zip(lo, hi))))


@settings(max_examples=100, deadline=None)
@given(grid_and_slab())
def test_grid_counts_indices_and_edge_bytes(case):
    g, _, _ = case
    assert g.grid == tuple(math.ceil(s / c) for s, c in zip(g.shape, g.chunks))
    assert g.nchunks == len(list(g.iter_chunks()))
    for c in g.iter_chunks():
        assert g.linear_index(c) == np.ravel_multi_index(c, g.grid)
        assert g.chunk_valid_nbytes(c, 4) == chunk_mask(g, c).sum() * 4
        assert g.chunk_nbytes(4) == math.prod(g.chunks) * 4
        assert g.is_edge_chunk(c) == (chunk_mask(g, c).sum() != math.prod(g.chunks))
        assert g.chunk_of(g.chunk_box(c)[0]) == c


@settings(max_examples=100, deadline=None)
@given(grid_and_slab())
def test_hash_key_is_c_order_over_power_of_two_padded_grid(case):
    g, _, _ = case
    padded = tuple(next_pow2(n) for n in g.grid)
    keys = []
    for c in g.iter_chunks():
        key = g.hash_key(c)
        expect = c[0] if g.rank == 1 else int(np.ravel_multi_index(c, padded))
        assert key == expect
        keys.append(key)
    assert len(set(keys)) == len(keys)


def test_hash_key_differs_from_cindex():
    g = ChunkGrid((12, 12), (4, 4))                           # 3 x 3 chunks, 2 bits for dim 1
    assert g.linear_index((1, 0)) == 3 and g.hash_key((1, 0)) == 4
    assert g.slot((1, 0), 4) == g.slot((0, 0), 4) == 0


def brute_runs(extent, file_dims, mem_dims):
    """Count pieces contiguous in both the file array and the memory array (box at the origin)."""
    pts = list(itertools.product(*(range(e) for e in extent)))
    f = [np.ravel_multi_index(p, file_dims) for p in pts]
    m = [np.ravel_multi_index(p, mem_dims) for p in pts]
    runs = 1 + sum(1 for i in range(1, len(pts)) if not (f[i] == f[i - 1] + 1 and m[i] == m[i - 1] + 1))
    return runs, len(pts) // runs


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_contiguous_runs_brute_force(data):
    rank = data.draw(st.integers(1, 3))
    extent = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    file_dims = tuple(e + data.draw(st.integers(0, 2)) for e in extent)
    mem_dims = tuple(e + data.draw(st.integers(0, 2)) for e in extent)
    assert contiguous_runs(extent, file_dims, mem_dims) == brute_runs(extent, file_dims, mem_dims)


@settings(max_examples=100, deadline=None)
@given(grid_and_slab())
def test_direct_runs_brute_force(case):
    g, start, count = case
    for c in g.chunks_touched(start, count):
        lo, hi = g.intersection(start, count, c)
        clo = g.chunk_box(c)[0]
        pts = list(itertools.product(*(range(a, b) for a, b in zip(lo, hi))))
        f = [np.ravel_multi_index(tuple(p - o for p, o in zip(q, clo)), g.chunks) for q in pts]
        m = [np.ravel_multi_index(tuple(p - o for p, o in zip(q, start)), count) for q in pts]
        runs = 1 + sum(1 for i in range(1, len(pts)) if not (f[i] == f[i - 1] + 1 and m[i] == m[i - 1] + 1))
        assert g.direct_runs(start, count, c) == (runs, len(pts) // runs)


@pytest.mark.parametrize(("shape", "chunks"), [((5,), (0,)), ((5, 5), (2,)), ((-1,), (1,))],
                         ids=["zero-chunk", "rank-mismatch", "negative-shape"])
def test_bad_grids_rejected(shape, chunks):
    with pytest.raises(ValueError):
        ChunkGrid(shape, chunks)


def test_selection_outside_rejected():
    with pytest.raises(ValueError):
        ChunkGrid((4, 4), (2, 2)).check_slab((3, 0), (2, 1))
