"""The rechunk plan's math (ccp.repack.rechunk): counted reads against a brute-force replay of the
writer's policy, and the multi-stage planning against rechunker's own algorithm."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.repack.plan import chunks_in, plan_slabs
from ccp.repack.rechunk import count_pass, io_ops, plan_pass
from ccp.repack.stages import multistage_chunks


def brute_reads(shape, src, dst, itemsize, buffer):
    """Every (hyperslab, source chunk) pair the copy touches, with an unlimited cache: reads and the peak
    of chunks kept, replaying _SourceReader.read one chunk at a time."""
    plan = plan_slabs(shape, dst, itemsize, buffer)
    cache: dict = {}
    reads = peak = 0
    for index, slab in enumerate(plan):
        for off in chunks_in(slab, src):
            if off in cache:
                continue
            reads += 1
            end = tuple(min(o + c, d) - 1 for o, c, d in zip(off, src, shape))
            last = plan.slab_index(end)
            if last > index:
                cache[off] = last
        peak = max(peak, len(cache))
        cache = {o: last for o, last in cache.items() if last > index}
    return reads, peak * math.prod(src) * itemsize


dims = st.lists(st.integers(1, 40), min_size=1, max_size=3)


@st.composite
def cases(draw):
    shape = tuple(draw(dims))
    src = tuple(draw(st.integers(1, d)) for d in shape)
    dst = tuple(draw(st.integers(1, d)) for d in shape)
    itemsize = draw(st.sampled_from([1, 4]))
    buffer = draw(st.integers(math.prod(dst) * itemsize, 4 * math.prod(shape) * itemsize))
    return shape, src, dst, itemsize, buffer


@settings(max_examples=300, deadline=None)
@given(cases())
def test_count_pass_equals_brute_force_with_room(case):
    shape, src, dst, itemsize, buffer = case
    reads, peak = brute_reads(shape, src, dst, itemsize, buffer)
    count = count_pass(shape, src, dst, itemsize, buffer, cache_bytes=10**12)
    assert reads == count.source_chunks == count.chunk_reads
    assert count.peak_cache_bytes == peak


@settings(max_examples=200, deadline=None)
@given(cases(), st.integers(0, 10**4))
def test_count_pass_without_room_reads_more_never_less(case, cache):
    shape, src, dst, itemsize, buffer = case
    count = count_pass(shape, src, dst, itemsize, buffer, cache)
    nsrc = math.prod(-(-d // c) for d, c in zip(shape, src))
    assert count.chunk_reads >= nsrc
    assert count.peak_cache_bytes <= max(cache, 0) or count.chunk_reads == nsrc


@pytest.mark.parametrize(("shape", "src", "dst", "reads", "slabs"), [
    ((200000, 100), (2000, 1), (20000, 10), 10000, 3),
    ((200000, 100), (2000, 1), (6719, 10), 10000, 3),
    ((1000, 1000), (1, 1000), (1000, 1), 1000, 1),
], ids=["6458-scaled", "6458-unaligned", "transpose"])
def test_plan_pass_reads_each_source_chunk_once_within_512mib(shape, src, dst, reads, slabs):
    pp = plan_pass(shape, src, dst, 4, 448 * 2**20, threads=2)
    assert pp.count.chunk_reads == reads
    assert pp.rereads == 0
    assert pp.count.slabs == slabs
    assert pp.buffer_bytes + pp.count.peak_cache_bytes <= 448 * 2**20


def test_plan_pass_grows_the_buffer_when_the_cache_is_short():
    # row chunks -> column chunks: with a 32 MiB buffer every row chunk spans 3 hyperslabs
    small = plan_pass((200000, 100), (1, 100), (200000, 1), 4, 40 * 2**20, threads=2)
    roomy = plan_pass((200000, 100), (1, 100), (200000, 1), 4, 400 * 2**20, threads=2)
    assert small.rereads > 0
    assert roomy.rereads == 0


# ------------------------------------------------------------------ rechunker as the oracle

algorithm = pytest.importorskip("rechunker.algorithm")


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.integers(1, 2000))
def test_io_ops_equal_rechunker(src, dst, size):
    src, dst = min(src, size), min(dst, size)
    assert io_ops((size,), (src,), (dst,)) == algorithm.calculate_single_stage_io_ops((size,), (src,), (dst,))


def test_io_ops_brute_force():
    for src, dst, size in itertools.product(range(1, 9), range(1, 9), range(1, 30)):
        cuts = set(range(0, size, src)) | set(range(0, size, dst))
        assert io_ops((size,), (src,), (dst,)) == len(cuts)


@st.composite
def stage_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5000), min_size=1, max_size=3)))
    src = tuple(draw(st.integers(1, d)) for d in shape)
    dst = tuple(draw(st.integers(1, d)) for d in shape)
    itemsize = draw(st.sampled_from([1, 4, 8]))
    need = itemsize * max(math.prod(src), math.prod(dst))
    max_mem = draw(st.integers(need, need * 100))
    min_mem = draw(st.integers(1, max_mem))
    return shape, src, dst, itemsize, min_mem, max_mem


@settings(max_examples=300, deadline=None)
@given(stage_cases())
def test_multistage_equals_rechunker(case):
    import warnings

    shape, src, dst, itemsize, min_mem, max_mem = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # rechunker warns when it stops for rising I/O: the plan is the answer
        want = algorithm.multistage_rechunking_plan(shape, src, dst, itemsize, min_mem, max_mem)
    got = multistage_chunks(shape, src, dst, itemsize, min_mem, max_mem)
    assert [tuple(map(tuple, stage)) for stage in want] == got


@pytest.mark.parametrize(("shape", "src", "dst", "block", "threads", "wait"), [
    ((200000, 100), (2000, 1), (500, 100), (83500, 100), 2, True),     # transpose: neighbours share sources
    ((200000, 100), (2000, 1), (6719, 10), (80628, 100), 2, False),    # unaligned: sharers 10 tasks apart
    ((200000, 100), (2000, 1), (20000, 10), (80000, 100), 2, False),   # 6458: no source chunk straddles
    ((200000, 100), (2000, 1), (6719, 50), (80628, 100), 2, True),     # 2 targets a row: sharers 2 tasks apart
    ((200000, 100), (2000, 1), (6719, 50), (80628, 100), 1, False),    # ... but one thread: never at once
], ids=["transpose", "unaligned", "6458", "two-a-row", "one-thread"])
def test_the_plan_counts_waits_on_a_shared_decode_only_between_neighbouring_tasks(shape, src, dst, block,
                                                                                  threads, wait):
    from ccp.repack.forecast import _neighbours_share

    assert _neighbours_share(shape, src, dst, block, threads) is wait
