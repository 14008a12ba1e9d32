"""Seed 003's hyperslab plan, checked against brute force."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.repack.plan import chunks_in, fit_block, plan_slabs


@st.composite
def cases(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 13), min_size=rank, max_size=rank)))
    chunked = rank > 0 and draw(st.booleans())
    chunks = tuple(draw(st.integers(1, 9)) for _ in range(rank)) if chunked else None
    itemsize = draw(st.sampled_from([1, 2, 4, 8, 16]))
    buffer_bytes = draw(st.integers(1, 4000))
    return shape, chunks, itemsize, buffer_bytes


def _check(shape, chunks, itemsize, buffer_bytes):
    plan = plan_slabs(shape, chunks, itemsize, buffer_bytes)
    seen = np.zeros(shape, dtype=np.int32)
    slabs = list(plan)
    assert len(slabs) == len(plan)
    chunk_fits = chunks is not None and math.prod(chunks) * itemsize <= buffer_bytes
    for slab in slabs:
        assert all(c >= 1 for c in slab.count)
        assert all(0 <= s and s + c <= d for s, c, d in zip(slab.start, slab.count, shape))
        seen[slab.slices] += 1
        # within the buffer (one element is the least a hyperslab can hold)
        assert slab.size * itemsize <= max(buffer_bytes, itemsize)
        if chunk_fits:
            assert plan.mode == "chunks"
            for s, c, ch, d in zip(slab.start, slab.count, chunks, shape):
                assert s % ch == 0
                assert (s + c) % ch == 0 or s + c == d
        elif chunks is not None:
            # element blocks never cross a destination chunk boundary
            assert plan.mode == "elements-in-chunk"
            for s, c, ch in zip(slab.start, slab.count, chunks):
                assert s // ch == (s + c - 1) // ch
    assert (seen == 1).all()  # exactly once
    if chunks is not None and chunk_fits and math.prod(shape):
        # the largest slab holds as many whole chunks as fit, growing from the last dimension
        assert plan.slab_bytes <= buffer_bytes


@settings(max_examples=300, deadline=None)
@given(cases())
def test_hyperslabs_tile_exactly_once_within_buffer_and_aligned(case):
    _check(*case)


@pytest.mark.parametrize("shape,chunks,itemsize,buf", [
    ((60, 30, 9, 717), (1, 30, 9, 717), 4, 32 * 1024**2),
    ((60, 30, 9, 717), (4, 30, 9, 717), 4, 1024),
    ((60, 30, 9, 717), None, 4, 32 * 1024**2),
    ((), None, 8, 1),
    ((5, 0, 3), (2, 2, 2), 4, 100),
])
def test_known_cases(shape, chunks, itemsize, buf):
    _check(shape, chunks, itemsize, buf)


def test_cris_plan_is_43_whole_chunks_per_hyperslab():
    plan = plan_slabs((60, 30, 9, 717), (1, 30, 9, 717), 4, 32 * 1024**2)
    assert plan.mode == "chunks" and plan.aligned
    assert plan.block == (43, 30, 9, 717)
    assert [s.count[0] for s in plan] == [43, 17]


def test_growth_is_from_the_last_dimension_outward():
    # chunks 2x2x2 of 1 byte: 8 bytes; 40-byte buffer = 5 chunks; grid 3x3x3 chunks
    assert fit_block((3, 3, 3), 5) == (1, 1, 3)
    assert fit_block((3, 3, 3), 9) == (1, 3, 3)
    assert fit_block((3, 3, 3), 10) == (1, 3, 3)
    assert fit_block((3, 3, 3), 27) == (3, 3, 3)
    assert fit_block((3, 3, 3), 2) == (1, 1, 2)
    plan = plan_slabs((6, 6, 6), (2, 2, 2), 1, 40)
    assert plan.block == (2, 2, 6)


def test_chunk_larger_than_buffer_uses_element_blocks_inside_chunks():
    plan = plan_slabs((10, 100), (5, 100), 8, 400)  # chunk 4000 B > 400 B buffer
    assert plan.mode == "elements-in-chunk" and not plan.aligned
    assert plan.block == (1, 50)
    firsts = [s.start for s in list(plan)[:10]]
    # all hyperslabs of the first chunk come before any of the second
    assert all(s[0] < 5 for s in firsts)


def test_contiguous_elements_fill_last_dims_first():
    plan = plan_slabs((4, 10, 10), None, 4, 4 * 250)
    assert plan.block == (2, 10, 10)
    plan = plan_slabs((4, 10, 10), None, 4, 4 * 35)
    assert plan.block == (1, 3, 10)


def test_chunks_in_lists_overlapping_chunks():
    from ccp.repack.plan import Slab

    assert list(chunks_in(Slab((3, 0), (4, 5)), (4, 4))) == [(0, 0), (0, 4), (4, 0), (4, 4)]


def test_bad_chunks_rejected():
    with pytest.raises(ValueError):
        plan_slabs((4, 4), (2,), 4)
    with pytest.raises(ValueError):
        plan_slabs((4, 4), (2, 0), 4)
