"""The compiled model (ccp.model.fast) against the reference model, request by request.

No HDF5 here (test_reality.py holds both to HDF5): the same strategies, longer request lists, mixed
reads and writes, every kind of ``allocated`` and stored sizes that differ per chunk.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_strategies import (
    DTYPES,
    SETTINGS,
    caches,
    layouts,
    request_lists,
    sieve_sizes,
    slabs,
)

from ccp.chunkcache import ChunkCache
from ccp.model import (
    ChunkGrid,
    Predictions,
    RequestPrediction,
    chunk_size_table,
    simulate,
    simulate_arrays,
    simulate_fast,
    simulate_tiling,
    summarise,
)
from ccp.model import fast as fast_module
from ccp.workload.requests import random_requests, tile_requests

pytestmark = pytest.mark.thorough   # make test-slow runs these again with CCP_MODEL_EXAMPLES=150

AGREE = SETTINGS                  # CCP_MODEL_EXAMPLES raises it, as for the reality tests


@st.composite
def allocations(draw, shape, chunks):
    """Every form ``allocated`` takes: None/True/False, a set of chunks (maybe empty), a predicate."""
    kind = draw(st.sampled_from(["none", "true", "false", "set", "predicate"]))
    if kind in ("none", "true", "false"):
        return {"none": None, "true": True, "false": False}[kind]
    if chunks is None:
        return draw(st.sampled_from([set(), {(0,) * len(shape)}]))
    g = ChunkGrid(shape, chunks)
    some = {c for s, n in draw(st.lists(slabs(shape), max_size=3)) for c in g.chunks_touched(s, n)}
    if kind == "set":
        return some
    return some.__contains__


@AGREE
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans())
def test_compiled_agrees_with_reference(data, layout, filtered):
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    chunk_bytes = math.prod(chunks or shape) * itemsize
    cache = data.draw(caches(chunk_bytes), label="cache")
    ops = data.draw(st.sampled_from([("read",), ("write",), ("read", "write")]), label="ops")
    requests = data.draw(request_lists(shape, chunks, ops=ops), label="requests")
    requests += data.draw(request_lists(shape, chunks, ops=ops), label="more requests")
    allocated = data.draw(allocations(shape, chunks), label="allocated")
    sizes = {}
    if chunks is not None:
        sizes = {c: data.draw(st.integers(1, 2 * chunk_bytes)) for c in ChunkGrid(shape, chunks).iter_chunks()}
    kw = {"filtered": filtered, "cache": cache, "requests": requests, "allocated": allocated,
          "stored_chunk_bytes": sizes.__getitem__ if sizes and data.draw(st.booleans()) else None,
          "sieve_buf_size": sieve_sizes(data.draw, shape, chunks, itemsize)}
    want = simulate(shape, chunks, itemsize, **kw)
    got = simulate_fast(shape, chunks, itemsize, **kw)
    assert len(got) == len(want)
    assert list(got) == want                   # every count and byte of every request, and the close
    assert summarise(got) == summarise(want)
    if requests:
        tot = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache,
                              ops=[r[0] for r in requests], starts=[r[1] for r in requests],
                              counts=[r[2] for r in requests], stored_chunk_bytes=kw["stored_chunk_bytes"],
                              allocated=allocated, sieve_buf_size=kw["sieve_buf_size"], per_request=False)
        assert tot[-1] == want[-1]
        assert summarise(tot) == summarise(want)


# ------------------------------------------------------------------- plans as arrays, whole cells
@pytest.mark.parametrize(("shape", "chunks", "block", "filtered", "cache"), [
    ((24, 30, 9, 717), (4, 30, 9, 717), (1, 1, 1, 717), True, ChunkCache(3 * 2**20, 521, 0.75)),
    ((24, 30, 9, 717), (4, 30, 9, 717), (1, 1, 1, 717), True, ChunkCache(2**20, 521, 0.75)),
    ((200, 50, 20), (10, 50, 20), (1, 50, 1), False, ChunkCache(2**16, 7, 0.3)),
    ((200, 50, 20), (13, 7, 5), (7, 7, 7), False, ChunkCache(8 * 13 * 7 * 5 * 4, 16, 1.0)),
    ((200, 50, 20), None, (3, 50, 20), False, ChunkCache()),
    ((200, 50, 20), None, (200, 1, 1), False, ChunkCache()),
], ids=["cris-3MiB", "cris-1MiB", "bypass", "w0=1", "contig-rows", "contig-columns"])
@pytest.mark.parametrize("op", ["read", "write"])
def test_whole_cell_plans_agree(shape, chunks, block, filtered, cache, op):
    """Tiled cells of a few thousand requests, as the planner feeds them (arrays, size table)."""
    plan = tile_requests(shape, block)
    sizes = None
    if chunks is not None:
        grid = ChunkGrid(shape, chunks)
        rng = np.random.default_rng(1)
        by_offset = {tuple(int(c) * k for c, k in zip(cc, chunks)): int(rng.integers(100, 5000))
                     for cc in grid.iter_chunks()}
        sizes = chunk_size_table(shape, chunks, by_offset)
        lookup = {grid.chunk_of(o): v for o, v in by_offset.items()}
    itemsize = 4
    allocated = op == "read"
    got = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache, ops=op, starts=plan.starts,
                          counts=plan.counts, stored_chunk_bytes=sizes, allocated=allocated)
    reqs = [(op, tuple(s), tuple(c)) for s, c in zip(plan.starts.tolist(), plan.counts.tolist())]
    want = simulate(shape, chunks, itemsize, filtered=filtered, cache=cache, requests=reqs,
                    stored_chunk_bytes=lookup.__getitem__ if chunks else None, allocated=allocated)
    assert list(got) == want


def test_random_plan_agrees():
    shape, chunks = (64, 64, 64), (8, 16, 64)
    plan = random_requests(shape, (4, 4, 64), 3000, seed=3)
    cache = ChunkCache(5 * 8 * 16 * 64 * 4, 11, 0.75)
    got = simulate_arrays(shape, chunks, 4, filtered=True, cache=cache, ops="read", starts=plan.starts, counts=plan.counts)
    reqs = [("read", tuple(s), tuple(c)) for s, c in zip(plan.starts.tolist(), plan.counts.tolist())]
    assert list(got) == simulate(shape, chunks, 4, filtered=True, cache=cache, requests=reqs)


@settings(SETTINGS, max_examples=60)
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(), op=st.sampled_from(["read", "write"]))
def test_tiling_generated_in_the_kernel_is_the_plan(monkeypatch, data, layout, filtered, op):
    """simulate_tiling == simulate_arrays(tile_requests(...)) for any block and dim order, across
    batch boundaries, per request or totals, whole or a prefix."""
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    block = tuple(data.draw(st.integers(1, s)) for s in shape)
    order = data.draw(st.permutations(range(len(shape))))
    plan = tile_requests(shape, block, order)
    k = data.draw(st.sampled_from([None, 1, max(1, len(plan) // 2)]))
    monkeypatch.setattr(fast_module, "TILE_BATCH", data.draw(st.sampled_from([1, 3, 1 << 16])))
    per_request = data.draw(st.booleans())
    allocated = op == "read"
    got = simulate_tiling(shape, chunks, itemsize, filtered=filtered, cache=cache, op=op, block=block, order=order,
                          allocated=allocated, per_request=per_request, max_requests=k)
    want = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache, ops=op, starts=plan.starts[:k],
                           counts=plan.counts[:k], allocated=allocated, per_request=per_request)
    assert got.counts.tolist() == want.counts.tolist() and got.ops.tolist() == want.ops.tolist()


# ---------------------------------------------------------------------------- the result object
def test_predictions_behave_like_the_reference_list():
    reqs = [("write", (i, 0), (1, 10)) for i in range(10)] + [("read", (0, 0), (10, 10))]
    kw = {"filtered": False, "cache": ChunkCache(400, 7, 0.75), "requests": reqs, "allocated": False}
    got = simulate_fast((10, 10), (5, 10), 4, **kw)
    want = simulate((10, 10), (5, 10), 4, **kw)
    assert isinstance(got, Predictions)
    assert got[-1] == want[-1] and got[-1].op == "close" and got[0].op == "write" and got[10].op == "read"
    assert list(got[2:5]) == want[2:5]
    assert got.column("raw_writes").tolist() == [p.raw_writes for p in want]
    both = got + got
    assert summarise(both) == RequestPrediction(**{k: 2 * v for k, v in summarise(want).__dict__.items() if k != "op"},
                                                op="total")
    with pytest.raises(ValueError, match="cannot add"):
        got + got[:3]


def test_classes_and_request_count_as_the_engine_computes_them():
    plan = random_requests((64, 64), (4, 16), 2000, seed=5)
    kw = {"filtered": True, "cache": ChunkCache(3 * 8 * 32 * 4, 7, 0.5), "ops": "read", "starts": plan.starts,
          "counts": plan.counts}
    preds = simulate_arrays((64, 64), (8, 32), 4, **kw)
    keys = np.array([(p.chunk_loads, p.raw_reads, p.raw_writes, p.chunk_hits > 0) for p in preds[:-1]], dtype=np.int64)
    want = np.unique(keys, axis=0, return_inverse=True)[1].ravel()
    assert preds.classes().tolist() == want.tolist() and len(set(want.tolist())) > 1
    totals = simulate_arrays((64, 64), (8, 32), 4, per_request=False, **kw)
    assert preds.n_requests == totals.n_requests == 2000 and not totals.per_request
    assert (preds + preds).n_requests == 2000
    with pytest.raises(ValueError, match="per-request"):
        totals.classes()


def test_chunk_size_table_places_offsets_in_c_order():
    table = chunk_size_table((10, 7), (5, 3), {(0, 0): 11, (5, 6): 22, (0, 3): 33})
    assert table.tolist() == [11, 33, 22, 22, 22, 22]      # missing chunks get the median (22)


# ----------------------------------------------------------------------------- errors as before
@pytest.mark.parametrize("chunks", [(4, 4), None], ids=["chunked", "contiguous"])
def test_out_of_range_selection_raises_like_the_reference(chunks):
    reqs = [("read", (0, 0), (1, 1)), ("read", (7, 0), (2, 1))]
    for sim in (simulate, simulate_fast):
        with pytest.raises(ValueError, match="outside shape"):
            sim((8, 8), chunks, 4, filtered=False, cache=ChunkCache(), requests=reqs)


def test_bad_op_and_unknown_stored_size():
    with pytest.raises(ValueError, match="op must be"):
        simulate_fast((8,), (4,), 4, filtered=False, cache=ChunkCache(), requests=[("append", (0,), (1,))])
    with pytest.raises(KeyError, match="stored_chunk_bytes"):
        simulate_fast((8,), (4,), 4, filtered=True, cache=ChunkCache(), requests=[("read", (4,), (1,))],
                      stored_chunk_bytes={(0,): 10}.__getitem__)
    # a size that is never needed may be missing, as in the reference
    got = simulate_fast((8,), (4,), 4, filtered=True, cache=ChunkCache(), requests=[("read", (0,), (1,))],
                        stored_chunk_bytes={(0,): 10}.__getitem__)
    assert got.total().raw_read_bytes == 10
