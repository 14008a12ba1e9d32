"""The search on workloads whose best layout is known, and against brute force (model only, fixed costs)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.tune.lattice import cache_candidates, chunk_lattice, padding, workload_blocks
from ccp.tune.search import NEAR_BEST, evaluate, search
from ccp.tune.workload import WorkItem


def source_of(shape, chunks=None, filters=None):
    from ccp.hdf5.filters import FilterPipeline

    spec = GenerateSpec(tuple(shape), np.dtype("<f4"), chunks=chunks, filters=filters or FilterPipeline())
    return describe_source(DatasetSpec("/data", generate=spec))


def items(*blocks, weights=None):
    return tuple(WorkItem(AccessSpec("read", tuple(b)), w) for b, w in zip(blocks, weights or [1.0] * len(blocks)))


def run(src, its, filters, costs, **kw):
    lat = chunk_lattice(src.shape, 4, kw.pop("max_chunk_bytes", 64 * 1024), workload_blocks(its),
                        extra=[src.chunks] if src.chunks else [])
    kw.setdefault("max_cache_bytes", 1 << 20)
    kw.setdefault("max_storage_overhead", 0.25)
    kw.setdefault("fixed_cache", None)
    current = (src.chunks, src.filters) if src.chunks else None
    return search(src, its, lat, filters, costs, current=current, **kw)


def test_single_pattern_best_chunk_is_the_block(costs, gzip):
    # compressed, no room to keep a chunk: a request must decode exactly its own block, once
    # (blocks of 32 KiB: decoding more than the block costs more than fetching one more chunk)
    src = source_of((32, 64, 64))
    res = run(src, items((8, 32, 32)), [gzip], costs, fixed_cache=0)
    assert res.recommended.chunks == (8, 32, 32)


def test_time_series_and_maps_get_a_balanced_shape(costs, nofilter):
    src = source_of((64, 32, 32))
    series, maps = (64, 1, 1), (1, 32, 32)
    res = run(src, items(series, maps), [nofilter], costs, fixed_cache=4096 + 1024, max_chunk_bytes=4096)
    c = res.recommended.chunks
    # neither extreme: a series read and a map read both span several chunks, and fewer than the extremes make them
    assert 1 < c[0] < 64 and 1 < c[1] * c[2] < 1024, c
    best = res.recommended.workload_s
    for extreme in [(64, 4, 4), (1, 32, 32)]:
        ext = evaluate(extreme, nofilter, ChunkCache(4096 + 1024, 521, 0.75), src, items(series, maps), costs)
        assert best < ext.workload_s


def test_cache_trap_is_cured_by_a_cache_not_a_repack(costs, gzip):
    # rows read out of compressed 32 KiB chunks with a 16 KiB cache: every row decodes its chunk again
    src = source_of((16, 32, 32), chunks=(8, 32, 32), filters=gzip)
    trap = items((1, 1, 32))
    res = run(src, trap, [gzip], costs)
    rec = res.recommended
    assert rec.chunks == (8, 32, 32)
    assert rec.cache.nbytes >= 8 * 32 * 32 * 4
    current = evaluate((8, 32, 32), gzip, ChunkCache(16 * 1024, 521, 0.75), src, trap, costs)
    assert rec.workload_s < current.workload_s / 5


def test_storage_constraint_rejects_padded_shapes(costs, nofilter):
    from ccp.tune.lattice import padding

    src = source_of((200, 200))
    res = run(src, items((200, 200)), [nofilter], costs, max_storage_overhead=0.02)
    assert res.rejected > 0
    assert all(padding(src.shape, cand.chunks) <= 0.02 for cand in res.best)


def test_no_shape_within_the_constraints_is_one_line(costs, nofilter):
    from ccp.errors import CcpError

    with pytest.raises(CcpError, match="max_storage_overhead"):
        run(source_of((10, 10)), items((10, 10)), [nofilter], costs, max_storage_overhead=0.0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(2, 12), min_size=2, max_size=3), data=st.data())
def test_search_finds_the_brute_force_optimum(costs, gzip, nofilter, shape, data):
    """Every (chunks, filters, cache) costed with no pruning: the search's pick is as fast, up to
    the NEAR_BEST slack it allows itself for a smaller cache."""
    block = tuple(data.draw(st.integers(1, n)) for n in shape)
    its = items(block)
    src = source_of(shape)
    filters = [nofilter, gzip]
    res = run(src, its, filters, costs, max_cache_bytes=64 * 1024, max_storage_overhead=10.0)
    lat = chunk_lattice(src.shape, 4, 64 * 1024, workload_blocks(its))
    brute = min(evaluate(c, f, ChunkCache(*k), src, its, costs).workload_s
                for c in lat for f in filters for k in cache_candidates(math.prod(c) * 4, 64 * 1024))
    assert res.recommended.workload_s <= brute * (1 + NEAR_BEST) + 1e-12


def test_front_is_not_dominated(costs, gzip, nofilter):
    src = source_of((32, 16, 16))
    res = run(src, items((32, 1, 1), (1, 16, 16)), [nofilter, gzip], costs)
    pts = [(c.read_s, c.write_s, c.storage_bytes) for c in res.best]
    for f in res.front:
        p = (f.read_s, f.write_s, f.storage_bytes)
        assert not any(all(a <= b for a, b in zip(q, p)) and q != p for q in pts)
    assert res.evaluated >= len(res.best)


@pytest.mark.parametrize("chunks", [(4, 8, 8), (16, 1, 32)], ids=["aligned", "rows"])
def test_evaluate_counts_match_the_plan_module(costs, nofilter, chunks):
    """The search's counts are ccp.plan's predictions, the ones `ccp run` stores beside its measurements."""
    from ccp.matrix.cells import Cell
    from ccp.predict import predict_cell

    src = source_of((16, 32, 32))
    cache = ChunkCache(1 << 20, 521, 0.75)
    its = items((4, 8, 8))
    cand = evaluate(chunks, nofilter, cache, src, its, costs)
    p = predict_cell(Cell(chunks, nofilter, cache, its[0].access), src)
    assert cand.items[0].chunk_loads == p["predicted_chunk_loads"]
    assert cand.items[0].raw_reads == p["predicted_raw_reads"]


def test_the_shortlist_is_the_fastest_few_not_only_the_front(costs, gzip):
    """Branch and bound keeps the keep_best fastest layouts even when the fastest dominates them:
    measurement chooses among them (before, a front of one fast layout left only slow ones to measure)."""
    src = source_of((8, 16, 16), chunks=(4, 16, 16), filters=gzip)
    trap = items((1, 1, 16))
    res = run(src, trap, [gzip], costs, keep_best=4, max_cache_bytes=16 * 1024)
    assert len(res.best) >= 4
    lat = chunk_lattice(src.shape, 4, 64 * 1024, workload_blocks(trap), extra=[src.chunks])
    brute = sorted(min(evaluate(c, gzip, ChunkCache(*k), src, trap, costs).workload_s
                       for k in cache_candidates(math.prod(c) * 4, 16 * 1024))
                   for c in lat if padding(src.shape, c) <= 0.25)
    assert all(c.workload_s <= brute[3] * (1 + NEAR_BEST) + 1e-12 for c in res.best[:4])


def test_a_prediction_tie_keeps_the_largest_cache(costs, gzip):
    """Rows of compressed chunks read twice over: every cache holding a row of chunks is predicted as
    fast, and the search keeps the largest (memory is saved on a measured tie, never on a predicted one)."""
    src = source_of((16, 32, 32), chunks=(1, 32, 32), filters=gzip)
    res = run(src, items((1, 32, 32)), [gzip], costs, max_cache_bytes=1 << 20)
    rec = res.recommended
    largest = cache_candidates(math.prod(rec.chunks) * 4, 1 << 20, grid_chunks=math.prod(
        -(-n // c) for n, c in zip(src.shape, rec.chunks)))[-1]
    assert rec.cache.nbytes == largest[0]


@pytest.mark.parametrize("shape, chunks, blocks", [
    ((16, 32, 32), (1, 32, 32), [(1, 32, 32)]),              # a chunk a request: any cache holding one loads the same
    ((16, 32, 32), (4, 32, 32), [(1, 32, 32)]),              # rows of a chunk read in turn: room for a chunk or reloads
    ((64, 64), (8, 8), [(64, 1), (1, 64)]),                  # columns and rows through small chunks
], ids=["one-chunk-requests", "rows-of-chunks", "rows-and-columns"])
def test_frugal_cache_is_the_smallest_with_the_same_predicted_io(costs, gzip, shape, chunks, blocks):
    """The smaller cache offered for measurement is the smallest the model predicts the same I/O for (every
    pattern's chunk loads, file operations and bytes read): each smaller one changes a count (CrIS's
    cache was cut on a near-tie in time, and measured 1.4x slower in the league)."""
    from ccp.tune.search import frugal_cache, same_io

    src = source_of(shape)
    its = items(*blocks)
    big = ChunkCache(1 << 20, 521, 0.75)
    budget = evaluate(chunks, gzip, big, src, its, costs)
    small = frugal_cache(chunks, gzip, big, src, its, costs, max_cache_bytes=1 << 20, fixed_cache=None)
    if small is not None:
        assert small.cache.nbytes < big.nbytes and same_io(small, budget)
    floor = small.cache.nbytes if small is not None else big.nbytes
    grid = math.prod(-(-n // c) for n, c in zip(shape, chunks))
    smaller = [c for c in cache_candidates(math.prod(chunks) * 4, 1 << 20, grid_chunks=grid) if c[0] < floor]
    assert all(not same_io(evaluate(chunks, gzip, ChunkCache(*c), src, its, costs), budget) for c in smaller)
    assert frugal_cache(chunks, gzip, big, src, its, costs, max_cache_bytes=1 << 20, fixed_cache=4096) is None
