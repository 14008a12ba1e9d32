"""The pure model on its own: published HDF5 numbers (seeds 000/001) and cache mechanics."""

from __future__ import annotations

import dataclasses

import pytest

from ccp.chunkcache import ChunkCache
from ccp.model import DatasetModel, RequestPrediction, simulate, summarise

MiB = 1024 * 1024
SHAPE = (1000, 100, 100)


def planes_written(filtered, nbytes):
    reqs = [("write", (i, 0, 0), (1, 100, 100)) for i in range(1000)]
    return summarise(simulate(SHAPE, (50, 100, 100), 4, filtered=filtered,
                              cache=ChunkCache(nbytes, 521, 0.75), requests=reqs, allocated=False))


@pytest.mark.parametrize(("filtered", "nbytes", "writes", "reads"), [
    (False, 1 * MiB, 1000, 0),
    (False, 5 * MiB, 20, 0),
    (True, 1 * MiB, 1000, 980),
    (True, 5 * MiB, 20, 0),
], ids=["none-1MiB", "none-5MiB", "gzip-1MiB", "gzip-5MiB"])
def test_seed_write_case_full_scale(filtered, nbytes, writes, reads):
    """1000x100x100 int32 in 50x100x100 chunks written plane by plane (HDF5 2.0 measured)."""
    tot = planes_written(filtered, nbytes)
    assert (tot.raw_writes, tot.raw_reads) == (writes, reads)


def test_seed_write_case_bytes_uncompressed():
    # cache < chunk: each chunk written whole once (fill + first plane), then 49 planes directly
    tot = planes_written(False, 1 * MiB)
    assert tot.raw_write_bytes == 20 * 2_000_000 + 980 * 40_000


@pytest.mark.parametrize(("chunk0", "filtered", "plane", "raw_reads"), [
    (50, True, "row", 2000),
    (10, True, "row", 10000),
    (50, False, "row", 100_000),
    (10, False, "row", 10000),
    (50, True, "column", 2000),
    (10, True, "column", 10000),
    (50, False, "column", 10_000_000),
    (10, False, "column", 10000),
], ids=lambda v: str(v))
def test_seed_read_tables(chunk0, filtered, plane, raw_reads):
    """Seed 001's read tables (1 MiB cache; the seed's totals add ~10 metadata operations)."""
    if plane == "row":       # plane holds the fastest-changing dimension
        reqs = [("read", (0, j, 0), (1000, 1, 100)) for j in range(100)]
    else:
        reqs = [("read", (0, 0, k), (1000, 100, 1)) for k in range(100)]
    tot = summarise(simulate(SHAPE, (chunk0, 100, 100), 4, filtered=filtered,
                             cache=ChunkCache(MiB, 521, 0.75), requests=reqs))
    assert tot.raw_reads == raw_reads


def test_hits_loads_evictions_simple_lru():
    # 4 chunks of 16 bytes, cache holds 2, every chunk fully read -> method-0 preemption, head first
    m = DatasetModel((8,), (2,), 8, cache=ChunkCache(32, 7, 0.75))
    assert m.request("read", (0,), (2,)) == RequestPrediction(chunk_loads=1, raw_reads=1, raw_read_bytes=16)
    assert m.request("read", (2,), (2,)).chunk_loads == 1
    p = m.request("read", (4,), (2,))
    assert (p.chunk_loads, p.evictions) == (1, 1)
    assert m.cached_chunks() == [(1,), (2,)]
    p = m.request("read", (2,), (4,))
    assert (p.chunk_hits, p.chunk_loads) == (2, 0)
    assert m.close() == RequestPrediction(evictions=2, op="close")


def test_hit_moves_entry_one_place_only():
    m = DatasetModel((8,), (2,), 1, cache=ChunkCache(100, 17, 0.75))
    for i in range(4):
        m.request("read", (2 * i,), (1,))
    m.request("read", (0,), (1,))                 # hit on the head: swaps with its successor
    assert m.cached_chunks() == [(1,), (0,), (2,), (3,)]


def test_w0_one_lets_partially_read_chunks_overflow_the_cache():
    # Pointer 1 of the prune starts only after pointer 0 walked the whole list: with w0 == 1 and
    # no fully-read chunk, nothing is evicted and the cache grows past nbytes (HDF5 does this).
    m = DatasetModel((8,), (2,), 4, cache=ChunkCache(16, 17, 1.0))
    for i in range(4):
        m.request("read", (2 * i,), (1,))
    assert m.cached_chunks() == [(0,), (1,), (2,), (3,)]
    m2 = DatasetModel((8,), (2,), 4, cache=ChunkCache(16, 17, 0.75))
    for i in range(4):
        m2.request("read", (2 * i,), (1,))
    assert len(m2.cached_chunks()) == 2


def test_slot_collision_evicts_and_flushes_dirty():
    m = DatasetModel((4,), (1,), 4, cache=ChunkCache(1000, 2, 0.75), allocated=False)
    m.request("write", (0,), (1,))
    p = m.request("write", (2,), (1,))            # same slot (2 % 2 == 0)
    assert (p.evictions, p.raw_writes, p.raw_write_bytes) == (1, 1, 4)


def test_zero_slots_disable_the_cache():
    p = simulate((8,), (4,), 1, filtered=True, cache=ChunkCache(1000, 0, 0.75),
                 requests=[("read", (0,), (1,))] * 3)
    assert [q.chunk_loads for q in p] == [1, 1, 1, 0]


def test_summarise_totals_every_count():
    ps = [RequestPrediction(*range(1, 8)), RequestPrediction(*range(10, 17), op="write")]
    tot = summarise(ps)
    assert tot.op == "total"
    for f in dataclasses.fields(RequestPrediction):
        if f.name != "op":
            assert getattr(tot, f.name) == sum(getattr(p, f.name) for p in ps)


@pytest.mark.parametrize("kw", [{"nbytes": -1}, {"nslots": -1}, {"w0": 1.5}, {"w0": -0.1}],
                         ids=["nbytes", "nslots", "w0-high", "w0-low"])
def test_cache_params_validated(kw):
    with pytest.raises(ValueError):
        ChunkCache(**kw)


def test_contiguous_sieve_buffer():
    # 64x64 int32 = 16 KiB < 64 KiB sieve: the first access loads it all, close writes it back
    p = simulate((64, 64), None, 4, filtered=False, cache=ChunkCache(),
                 requests=[("write", (0, 0), (2, 2)), ("read", (5, 5), (9, 9))], allocated=False)
    assert [(q.raw_reads, q.raw_read_bytes, q.raw_writes, q.raw_write_bytes) for q in p] == \
        [(1, 16384, 0, 0), (0, 0, 0, 0), (0, 0, 1, 16384)]


def test_bad_requests_rejected():
    m = DatasetModel((4,), (2,), 1)
    with pytest.raises(ValueError):
        m.request("append", (0,), (1,))
    with pytest.raises(ValueError):
        m.request("read", (3,), (2,))
    m.close()
    with pytest.raises(RuntimeError):
        m.request("read", (0,), (1,))


def test_the_models_default_cache_is_hdf5_2s():
    # ccp.model imports no other room, so it states HDF5 2.0's default cache itself; ccp.hdf5.defaults is the
    # one place the rest of ccp reads it from: the two must not drift apart
    from ccp.chunkcache import HDF5_2X, ChunkCache
    from ccp.hdf5.defaults import DEFAULT_W0
    from ccp.model import DEFAULT_NBYTES, DEFAULT_NSLOTS
    from ccp.model import DEFAULT_W0 as MODEL_W0

    assert (DEFAULT_NBYTES, DEFAULT_NSLOTS, MODEL_W0) == (HDF5_2X.nbytes, HDF5_2X.nslots, HDF5_2X.w0) == \
        (ChunkCache().nbytes, ChunkCache().nslots, DEFAULT_W0)
