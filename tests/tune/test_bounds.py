"""The search's arithmetic bounds: never above what the model walk costs (else branch and bound
would drop a layout that could win), and counts shared between filters."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.tune.lattice import cache_candidates
from ccp.tune.search import _dim_touch, evaluate, production_cost, read_bound, write_bound
from ccp.tune.workload import WorkItem


def source_of(shape):
    return describe_source(DatasetSpec("/data", generate=GenerateSpec(tuple(shape), np.dtype("<f4"))))


def test_dim_touch_counts_chunks_per_tile():
    assert _dim_touch(10, 4, 3) == (3, 2 + 2 + 2, 2)        # tiles 0-3, 4-7, 8-9 over chunks 0-2, 3-5, 6-8, 9
    assert _dim_touch(8, 8, 8) == (1, 1, 1)
    assert _dim_touch(7, 1, 2) == (7, 7, 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(2, 12), min_size=2, max_size=3), data=st.data())
def test_bounds_are_below_the_model(costs, gzip, nofilter, shape, data):
    rank = len(shape)
    block = tuple(data.draw(st.integers(1, n)) for n in shape)
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    rnd = data.draw(st.sampled_from([0, 5]))
    src = source_of(shape)
    its = (WorkItem(AccessSpec("read", block, random=rnd), 1.5),)
    for filt in (nofilter, gzip):
        rb = read_bound(chunks, filt, src, its, costs)
        assert rb > 0
        for c in cache_candidates(math.prod(chunks) * 4, 64 * 1024):
            cand = evaluate(chunks, filt, ChunkCache(*c), src, its, costs)
            assert rb <= cand.read_s * (1 + 1e-9), (chunks, block, c, filt.spec)
        assert write_bound(chunks, filt, src, costs) <= production_cost(chunks, filt, src, costs) * (1 + 1e-9)
    assert len(block) == rank


def test_filters_share_the_model_walk(costs, gzip):
    from ccp.hdf5.filters import parse_filters
    from ccp.tune import search

    src = source_of((16, 16))
    its = (WorkItem(AccessSpec("read", (1, 16)), 1.0),)
    search._COUNTS.clear()
    a = evaluate((8, 8), gzip, ChunkCache(0, 521, 0.75), src, its, costs)
    walked = len(search._COUNTS)
    b = evaluate((8, 8), parse_filters("gzip:9"), ChunkCache(0, 521, 0.75), src, its, costs)
    assert len(search._COUNTS) == walked                     # gzip:9 reused gzip:1's walk
    assert a.items[0].chunk_loads == b.items[0].chunk_loads == 16 * 2   # no cache: each row loads its 2 chunks


def test_random_bound_counts_the_drawn_tiles_not_the_mean(costs, gzip):
    """Hypothesis found it: 5 random (1,1,11) reads of a (2,2,12) dataset drew mostly the one-element
    edge tiles, so they touched fewer chunks than 5 x the grid's mean tile; the bound used the mean."""
    src = source_of((2, 2, 12))
    its = (WorkItem(AccessSpec("read", (1, 1, 11), random=5), 1.5),)
    cand = evaluate((1, 1, 1), gzip, ChunkCache(1028, 25703, 0.75), src, its, costs)
    assert read_bound((1, 1, 1), gzip, src, its, costs) <= cand.read_s * (1 + 1e-9)
