"""ArrayModel: the compiled model fed a plan in batches gives exactly what it gives for the plan at once.

Held to the one-shot compiled model (:func:`ccp.model.simulate_arrays`) and to the reference model
(:func:`ccp.model.simulate`), request by request and for the close, for any split of the plan.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_strategies import DTYPES, SETTINGS, caches, layouts, request_lists, sieve_sizes

from ccp.chunkcache import ChunkCache
from ccp.model import ArrayModel, ChunkGrid, simulate, simulate_arrays
from ccp.model.fast import COLUMNS

pytestmark = pytest.mark.thorough   # make test-slow runs these again with CCP_MODEL_EXAMPLES=150


def _rows(predictions) -> np.ndarray:
    return np.array([[getattr(p, c) for c in COLUMNS] for p in predictions], np.int64).reshape(-1, len(COLUMNS))


def _split(data, n: int) -> list[int]:
    """Batch boundaries 0 = b0 <= b1 <= ... <= n (empty batches included)."""
    cuts = data.draw(st.lists(st.integers(0, n), max_size=6), label="cuts")
    return [0, *sorted(cuts), n]


@SETTINGS
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans())
def test_batches_equal_the_whole_plan_and_the_reference(data, layout, filtered):
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    ops = data.draw(st.sampled_from([("read",), ("write",), ("read", "write")]), label="ops")
    requests = data.draw(request_lists(shape, chunks, ops=ops), label="requests")
    allocated = data.draw(st.sampled_from([None, False, "set"]), label="allocated")
    if allocated == "set":
        allocated = set(list(ChunkGrid(shape, chunks).iter_chunks())[::2]) if chunks else {(0,) * len(shape)}
    sieve = sieve_sizes(data.draw, shape, chunks, itemsize)
    kw = {"filtered": filtered, "cache": cache, "allocated": allocated, "sieve_buf_size": sieve}
    codes = np.array([0 if r[0] == "read" else 1 for r in requests], np.uint8)
    starts = np.array([r[1] for r in requests], np.int64).reshape(len(requests), len(shape))
    counts = np.array([r[2] for r in requests], np.int64).reshape(len(requests), len(shape))
    whole = simulate_arrays(shape, chunks, itemsize, ops=codes, starts=starts, counts=counts, **kw)
    reference = _rows(simulate(shape, chunks, itemsize, requests=requests, **kw))
    bounds = _split(data, len(requests))
    model = ArrayModel(shape, chunks, itemsize, **kw)
    parts = [model.feed(codes[a:b], starts[a:b], counts[a:b]) for a, b in zip(bounds, bounds[1:])]
    got = np.concatenate([*parts, model.close()[None, :]])
    assert np.array_equal(got, whole.counts)                 # every request and the close, batch or not
    assert np.array_equal(got, reference)
    assert model.n_requests == len(requests)
    totals = ArrayModel(shape, chunks, itemsize, per_request=False, **kw)
    summed = sum((totals.feed(codes[a:b], starts[a:b], counts[a:b])[0] for a, b in zip(bounds, bounds[1:])),
                 np.zeros(len(COLUMNS), np.int64))
    assert np.array_equal(summed, whole.counts[:-1].sum(axis=0))
    assert np.array_equal(totals.close(), whole.counts[-1])


@pytest.mark.parametrize(("chunks", "batch"), [((8, 32), 1), ((8, 32), 7), ((8, 32), 1000), (None, 5)],
                         ids=["chunked-1", "chunked-7", "chunked-all", "contiguous-5"])
def test_a_random_plan_in_batches(chunks, batch):
    rng = np.random.default_rng(3)
    starts = np.stack([rng.integers(0, 60, 400), rng.integers(0, 60, 400)], axis=1)
    counts = np.stack([rng.integers(1, 5, 400), rng.integers(1, 5, 400)], axis=1)
    ops = rng.integers(0, 2, 400).astype(np.uint8)
    kw = {"filtered": chunks is not None, "cache": ChunkCache(8 * 32 * 4 * 5, 7, 0.75)}
    whole = simulate_arrays((64, 64), chunks, 4, ops=ops, starts=starts, counts=counts, **kw)
    model = ArrayModel((64, 64), chunks, 4, **kw)
    rows = [model.feed(ops[i:i + batch], starts[i:i + batch], counts[i:i + batch]) for i in range(0, 400, batch)]
    assert np.array_equal(np.concatenate([*rows, model.close()[None, :]]), whole.counts)


def test_a_closed_handle_takes_no_requests_and_bad_slabs_raise():
    model = ArrayModel((10, 10), (5, 5), 4, filtered=False, cache=ChunkCache())
    with pytest.raises(ValueError, match="outside shape"):
        model.feed("read", [[8, 8]], [[3, 3]])
    model.close()
    with pytest.raises(RuntimeError, match="closed"):
        model.feed("read", [[0, 0]], [[1, 1]])
    with pytest.raises(RuntimeError, match="closed"):
        model.close()
