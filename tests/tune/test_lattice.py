"""The pure planning math of ccp tune, against brute force."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.tune.heuristics import balanced, series_axis, whole_rows
from ccp.tune.lattice import cache_candidates, chunk_lattice, dim_candidates, is_prime, near_divisors, padding
from ccp.tune.search import dominates, pareto_front


@given(st.integers(1, 3000))
def test_near_divisors_are_the_smallest_chunk_per_chunk_count(n):
    assert near_divisors(n) == sorted({-(-n // k) for k in range(1, n + 1)})


@given(st.integers(1, 500), st.lists(st.integers(1, 500), max_size=3))
def test_dim_candidates_hold_divisors_and_blocks(n, blocks):
    cands = dim_candidates(n, blocks)
    assert {d for d in range(1, n + 1) if n % d == 0} <= set(cands)
    assert {b for b in blocks if b <= n} <= set(cands)
    assert all(1 <= c <= n for c in cands)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=3), st.integers(1, 64 * 1024))
def test_lattice_shapes_fit_the_byte_cap(shape, max_bytes):
    blocks = [tuple(max(1, n // 2) for n in shape)]
    lat = chunk_lattice(shape, 4, max_bytes, blocks, limit=500)
    assert lat, "some shape always fits: all ones"
    assert all(math.prod(c) * 4 <= max(4, max_bytes) for c in lat)
    assert all(1 <= c <= n for s in lat for c, n in zip(s, shape))
    assert len(set(lat)) == len(lat)


def test_lattice_keeps_the_blocks_and_extras():
    lat = chunk_lattice((1000, 100, 100), 4, 4 << 20, [(1000, 1, 1), (1, 100, 100)], extra=[(7, 9, 11)])
    assert (7, 9, 11) in lat
    assert (1, 100, 100) in lat and (1000, 1, 1) in lat


def test_padding():
    assert padding((10,), (5,)) == 0
    assert padding((10,), (4,)) == pytest.approx(0.2)


points3 = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), max_size=30)


@given(points3)
def test_pareto_front_matches_brute_force(points):
    front = pareto_front(points)
    brute = {p for p in points if not any(dominates(q, p) for q in points)}
    assert {points[i] for i in front} == brute
    assert len(front) == len(brute)          # equal points kept once


@given(st.integers(1, 1 << 24), st.integers(1 << 10, 1 << 28))
def test_cache_candidates(chunk_bytes, max_cache):
    cands = cache_candidates(chunk_bytes, max_cache)
    assert [c[0] for c in cands] == sorted(c[0] for c in cands)
    assert all(is_prime(ns) and 521 <= ns <= 100_003 for _, ns, _ in cands)
    assert all(nb <= max_cache for nb, _, _ in cands)
    assert cache_candidates(chunk_bytes, max_cache, fixed_nbytes=12345)[0][0] == 12345


def test_balanced_reproduces_rews_published_example():
    # Russ Rew, "Chunking Data: Choosing Shapes" (Unidata, 2013): 98128 x 277 x 349 floats, 4 KiB chunks
    assert balanced((98128, 277, 349), 4, 0, 4096) == (33, 5, 6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 2000), min_size=2, max_size=4), st.sampled_from([1024, 4096, 1 << 20]))
def test_balanced_fits_and_balances(shape, target):
    c = balanced(shape, 4, 0, target)
    assert all(1 <= x <= n for x, n in zip(c, shape))
    if math.prod(shape) * 4 > target:
        assert math.prod(c) * 4 <= target


def test_series_axis_of_time_series_and_maps():
    assert series_axis([(1, 64, 64), (256, 1, 1)], (256, 64, 64)) == 0
    assert series_axis([(64, 64, 1), (1, 1, 256)], (64, 64, 256)) == 2


def test_whole_rows():
    assert whole_rows((100, 512, 512), 4) == (1, 512, 512)
    assert whole_rows((100, 64, 64), 4) == (64, 64, 64)


@pytest.mark.parametrize("chunk_bytes, budget, grid, largest", [
    (80_000, 4 << 20, 100, 4 << 20),            # 32 chunks is 2.5 MiB: the budget itself is the largest
    (4096, 512 << 10, 16, 16 * 4096 + 1024),    # room for every chunk of the dataset: no more
    (4096, 4 << 20, 16, 1 << 20),               # HDF5's default 1 MiB stays a candidate (nothing to set)
    (4096, 1 << 20, None, 1 << 20),             # the grid unknown: the budget
], ids=["budget-between-powers", "grid-smaller", "default-over-the-grid", "no-grid"])
def test_the_largest_cache_is_the_budget_or_the_whole_grid(chunk_bytes, budget, grid, largest):
    cands = cache_candidates(chunk_bytes, budget, grid_chunks=grid)
    assert cands[-1][0] == largest


@pytest.mark.parametrize("shape, max_bytes, blocks, want", [
    ((4096, 32, 32), 16 << 20, [(1, 32, 32)], [(1, 32, 32), (4096, 32, 32)]),
    ((4096, 1024), 1 << 20, [(1, 1024), (4096, 1)], [(1, 1024), (4096, 1)]),      # the whole is over the cap
    ((100,), 1 << 20, [(500,)], [(100,)]),                                          # a block clipped to the data
], ids=["samples", "rows-and-columns", "clipped"])
def test_structural_extremes(shape, max_bytes, blocks, want):
    from ccp.tune.lattice import structural_extremes

    assert structural_extremes(shape, 4, max_bytes, blocks) == want
