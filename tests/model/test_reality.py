"""The model against HDF5 itself: per-request raw-data I/O under the log VFD must agree exactly."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_strategies import (
    DTYPES,
    REALITY,
    SETTINGS,
    caches,
    layouts,
    request_lists,
    sieve_sizes,
    slabs,
)

from ccp.chunkcache import ChunkCache
from ccp.model import ChunkGrid, simulate, simulate_fast, summarise

pytestmark = pytest.mark.thorough   # make test-slow runs these again with CCP_MODEL_EXAMPLES=150

SIMULATORS = {"reference": simulate, "compiled": simulate_fast}

def _cmp(pred, obs, *, write_bytes=True):
    got = [(p.op, p.raw_reads, p.raw_read_bytes, p.raw_writes, p.raw_write_bytes if write_bytes else None)
           for p in pred]
    want = [(p.op, o.raw_reads, o.raw_read_bytes, o.raw_writes, o.raw_write_bytes if write_bytes else None)
            for p, o in zip(pred, obs)]
    assert len(pred) == len(obs)
    assert got == want


class _Files:
    """Unique file names inside one test's tmp_path (hypothesis reuses the fixture)."""

    def __init__(self, root):
        self.root, self.n = root, itertools.count()

    def new(self):
        return self.root / f"f{next(self.n)}.h5"


# --------------------------------------------------------------------------------------- reads
@REALITY
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans())
def test_reads_match_hdf5(h5trace, tmp_path, data, layout, filtered):
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    chunk_bytes = math.prod(chunks or shape) * itemsize
    cache = data.draw(caches(chunk_bytes), label="cache")
    requests = data.draw(request_lists(shape, chunks), label="requests")
    path = _Files(tmp_path).new()
    h5trace.make_file(path, shape, chunks, dtype, filtered=filtered, prewrite=[((0,) * len(shape), shape)])
    sizes = h5trace.stored_chunk_sizes(path) if chunks else {}
    sieve = sieve_sizes(data.draw, shape, chunks, itemsize)
    obs = h5trace.trace(path, requests, cache, dtype, sieve_buf_size=sieve)
    kw = {"filtered": filtered, "cache": cache, "requests": requests, "stored_chunk_bytes": sizes.__getitem__,
              "sieve_buf_size": sieve}
    pred = simulate(shape, chunks, itemsize, **kw)
    _cmp(pred, obs)
    fast = simulate_fast(shape, chunks, itemsize, **kw)
    _cmp(fast, obs)
    assert list(fast) == pred            # hits, loads and evictions too
    path.unlink()


# -------------------------------------------------------------------------------------- writes
@SETTINGS
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(),
       pre=st.sampled_from(["none", "all", "some"]))
@pytest.mark.slow
def test_writes_and_mixed_match_hdf5(h5trace, tmp_path, data, layout, filtered, pre):
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    chunk_bytes = math.prod(chunks or shape) * itemsize
    cache = data.draw(caches(chunk_bytes), label="cache")
    requests = data.draw(request_lists(shape, chunks, ops=("write", "write", "read")), label="requests")
    if pre == "all":
        prewrite = [((0,) * len(shape), shape)]
    elif pre == "some":
        prewrite = data.draw(st.lists(slabs(shape), min_size=1, max_size=3), label="prewrite")
    else:
        prewrite = []
    if chunks is None:
        allocated = bool(prewrite)
    else:
        g = ChunkGrid(shape, chunks)
        allocated = {c for s, n in prewrite for c in g.chunks_touched(s, n)}
    path = _Files(tmp_path).new()
    h5trace.make_file(path, shape, chunks, dtype, filtered=filtered, prewrite=prewrite)
    sizes = h5trace.stored_chunk_sizes(path) if chunks else {}
    sieve = sieve_sizes(data.draw, shape, chunks, itemsize)
    obs = h5trace.trace(path, requests, cache, dtype, sieve_buf_size=sieve)
    # Filtered: a read of a chunk that this handle rewrote reads its new compressed size, which
    # the model cannot know -> compare byte counts only where sizes are knowable.
    kw = {"filtered": filtered, "cache": cache, "requests": requests, "allocated": allocated, "sieve_buf_size": sieve,
              "stored_chunk_bytes": lambda c: sizes.get(c, chunk_bytes)}
    pred = simulate(shape, chunks, itemsize, **kw)
    fast = simulate_fast(shape, chunks, itemsize, **kw)
    for p_ in (pred, fast):
        if filtered:
            assert [(p.op, p.raw_reads, p.raw_writes) for p in p_] == \
                   [(p.op, o.raw_reads, o.raw_writes) for p, o in zip(p_, obs)]
        else:
            _cmp(p_, obs)
    assert list(fast) == pred
    path.unlink()


# ----------------------------------------------------------- the seed's write case, small scale
@pytest.mark.parametrize("sim", SIMULATORS)
@pytest.mark.parametrize("filtered", [False, True], ids=["none", "gzip"])
@pytest.mark.parametrize("fits", [False, True], ids=["cache<chunk", "cache>chunk"])
def test_plane_by_plane_write_case(h5trace, tmp_path, filtered, fits, sim):
    """Seed 001 at 40x10x10 int32, chunks 10x10x10 (4000 B): one plane per H5Dwrite."""
    shape, chunks = (40, 10, 10), (10, 10, 10)
    cache = ChunkCache(nbytes=5 * 4000 if fits else 4000 // 2, nslots=521, w0=0.75)
    requests = [("write", (i, 0, 0), (1, 10, 10)) for i in range(40)]
    path = tmp_path / "planes.h5"
    h5trace.make_file(path, shape, chunks, "i4", filtered=filtered)
    obs = h5trace.trace(path, requests, cache, "i4")
    pred = SIMULATORS[sim](shape, chunks, 4, filtered=filtered, cache=cache, requests=requests, allocated=False)
    tot = summarise(pred)
    expected = {(False, False): (40, 0), (False, True): (4, 0), (True, False): (40, 36), (True, True): (4, 0)}
    assert (tot.raw_writes, tot.raw_reads) == expected[filtered, fits]
    assert sum(o.raw_writes for o in obs) == tot.raw_writes
    assert [(p.raw_reads, p.raw_writes) for p in pred] == [(o.raw_reads, o.raw_writes) for o in obs]
    if not filtered:
        assert [p.raw_write_bytes for p in pred] == [o.raw_write_bytes for o in obs]


@pytest.mark.parametrize("sim", SIMULATORS)
def test_hash_slots_are_bit_packed_not_cindex(h5trace, tmp_path, sim):
    """3x3 chunks: (0,0) and (1,0) collide with 4 slots (packed keys 0, 4), not with 3 (cindex 0, 3)."""
    path = tmp_path / "hash.h5"
    h5trace.make_file(path, (12, 12), (4, 4), "i4", filtered=False, prewrite=[((0, 0), (12, 12))])
    reqs = [("read", (0, 0), (1, 1)), ("read", (4, 0), (1, 1)), ("read", (0, 0), (1, 1))]
    for nslots, third in [(4, 1), (3, 0)]:
        cache = ChunkCache(nbytes=10_000, nslots=nslots, w0=0.75)
        obs = h5trace.trace(path, reqs, cache, "i4")
        pred = SIMULATORS[sim]((12, 12), (4, 4), 4, filtered=False, cache=cache, requests=reqs)
        assert [o.raw_reads for o in obs] == [p.raw_reads for p in pred] == [1, 1, third, 0]


@pytest.mark.parametrize("sim", SIMULATORS)
@pytest.mark.parametrize(("w0", "rereads"), [(1.0, 0), (0.75, 4)], ids=["w0=1", "w0=0.75"])
def test_w0_one_overflows_cache_in_hdf5_too(h5trace, tmp_path, w0, rereads, sim):
    """4 partially read 8-byte chunks in a 16-byte cache: with w0 == 1 HDF5 keeps all four."""
    path = tmp_path / "w0.h5"
    h5trace.make_file(path, (8,), (2,), "i4", filtered=False, prewrite=[((0,), (8,))])
    reqs = [("read", (2 * i,), (1,)) for i in range(4)] * 2
    cache = ChunkCache(nbytes=16, nslots=17, w0=w0)
    obs = h5trace.trace(path, reqs, cache, "i4")
    pred = SIMULATORS[sim]((8,), (2,), 4, filtered=False, cache=cache, requests=reqs)
    assert [o.raw_reads for o in obs] == [p.raw_reads for p in pred]
    assert sum(p.raw_reads for p in pred[4:]) == rereads
