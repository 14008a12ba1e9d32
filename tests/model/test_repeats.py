"""A plan that repeats itself: the runs found, and the compiled model that walks one period of a run and copies
the rest giving exactly the counts of walking every request (and of the reference model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_strategies import DTYPES, SETTINGS, caches, layouts, request_lists, sieve_sizes

from ccp.chunkcache import ChunkCache
from ccp.model import ArrayModel, simulate, simulate_arrays
from ccp.model import fast as fast_model
from ccp.model.fast import COLUMNS
from ccp.model.repeats import periodic_runs

pytestmark = pytest.mark.thorough


def _plan(ids: list[int]):
    """Requests named by small integers: request ``k`` reads ``[k, k + 1)`` of a 1-D dataset."""
    starts = np.array(ids, np.int64).reshape(-1, 1)
    return np.zeros(len(ids), np.uint8), starts, np.ones_like(starts)


@pytest.mark.parametrize(("ids", "runs"), [
    ([1, 2, 3] * 4, [(0, 12, 3)]),
    ([9, 8] + [1, 2, 3] * 4 + [7], [(2, 14, 3)]),
    ([5] * 6 + [1, 2] * 3, [(0, 6, 1), (6, 12, 2)]),
    ([1, 2, 3, 4, 5, 6], []),
    ([1, 2, 1, 2, 1], []),                          # two periods and a half: not worth a run
    ([1, 2, 1, 3] * 3, [(0, 12, 4)]),               # the first repeat (1 after 2 places) does not last
], ids=["whole-plan", "prefix-and-suffix", "two-runs", "no-repeat", "too-short", "period-not-the-first-distance"])
def test_periodic_runs(ids, runs):
    assert periodic_runs(*_plan(ids)) == runs


def test_periodic_runs_compare_ops_and_counts():
    codes, starts, counts = _plan([1, 2] * 4)
    codes[6] = 1                                     # a write where a read was: the run stops before it
    counts2 = counts.copy()
    counts2[3] = 2
    assert periodic_runs(codes, starts, counts) == [(0, 6, 2)]
    assert periodic_runs(np.zeros(8, np.uint8), starts, counts2) == []


def _rows(predictions) -> np.ndarray:
    return np.array([[getattr(p, c) for c in COLUMNS] for p in predictions], np.int64).reshape(-1, len(COLUMNS))


@SETTINGS
@given(data=st.data(), layout=layouts(contiguous_ok=True), filtered=st.booleans(), repeats=st.integers(3, 7))
def test_repeated_plans_equal_walking_every_request_and_the_reference(monkeypatch, data, layout, filtered, repeats):
    monkeypatch.setattr(fast_model, "VISIT_BYTES", 1 << 40)      # try every run, however small
    shape, chunks, dtype = layout
    filtered = filtered and chunks is not None
    itemsize = DTYPES[dtype]
    cache = data.draw(caches(math.prod(chunks or shape) * itemsize), label="cache")
    ops = data.draw(st.sampled_from([("read",), ("write",), ("read", "write")]), label="ops")
    period = data.draw(request_lists(shape, chunks, ops=ops), label="period")[:data.draw(st.integers(1, 8))]
    prefix = data.draw(request_lists(shape, chunks, ops=ops), label="prefix")[:data.draw(st.integers(0, 6))]
    suffix = data.draw(request_lists(shape, chunks, ops=ops), label="suffix")[:data.draw(st.integers(0, 6))]
    requests = prefix + period * repeats + suffix
    allocated = data.draw(st.sampled_from([None, False]), label="allocated")
    kw = {"filtered": filtered, "cache": cache, "allocated": allocated,
          "sieve_buf_size": sieve_sizes(data.draw, shape, chunks, itemsize)}
    codes = np.array([0 if r[0] == "read" else 1 for r in requests], np.uint8)
    starts = np.array([r[1] for r in requests], np.int64).reshape(len(requests), len(shape))
    counts = np.array([r[2] for r in requests], np.int64).reshape(len(requests), len(shape))
    walked = simulate_arrays(shape, chunks, itemsize, ops=codes, starts=starts, counts=counts, skip_repeats=False, **kw)
    skipped = simulate_arrays(shape, chunks, itemsize, ops=codes, starts=starts, counts=counts, **kw)
    assert np.array_equal(skipped.counts, walked.counts)
    assert np.array_equal(walked.counts, _rows(simulate(shape, chunks, itemsize, requests=requests, **kw)))
    cut = data.draw(st.integers(0, len(requests)), label="cut")     # state carried over a batch boundary
    model = ArrayModel(shape, chunks, itemsize, **kw)
    got = np.concatenate([model.feed(codes[:cut], starts[:cut], counts[:cut]),
                          model.feed(codes[cut:], starts[cut:], counts[cut:]), model.close()[None, :]])
    assert np.array_equal(got, walked.counts)
    totals = ArrayModel(shape, chunks, itemsize, per_request=False, **kw)
    summed = totals.feed(codes, starts, counts)[0]
    assert np.array_equal(summed, walked.counts[:-1].sum(axis=0))
    assert np.array_equal(totals.close(), walked.counts[-1])


@pytest.mark.parametrize("cache", [ChunkCache(1 << 20, 521, 0.75), ChunkCache(64, 7, 0.75), ChunkCache(64, 7, 1.0)],
                         ids=["never-full", "full-and-pruned", "full-w0-1"])
@pytest.mark.parametrize("per_request", [True, False], ids=["per-request", "totals"])
def test_a_repeating_plan_is_walked_about_once(monkeypatch, cache, per_request):
    """Whole reads and strided pieces of a 1-D dataset of 1-element chunks, 200 times over: a few periods are walked
    (the state comes back after the first), the rest copied, and the counts are those of walking them all."""
    rng = np.random.default_rng(5)
    period_starts = rng.integers(0, 900, (12, 1))
    period_counts = np.minimum(rng.integers(1, 400, (12, 1)), 1000 - period_starts)
    starts = np.concatenate([[[0]], np.tile(period_starts, (200, 1))])
    counts = np.concatenate([[[1000]], np.tile(period_counts, (200, 1))])
    kw = {"filtered": False, "cache": cache, "per_request": per_request}
    walked = simulate_arrays((1000,), (1,), 8, ops="read", starts=starts, counts=counts, skip_repeats=False, **kw)
    seen = []
    feed = fast_model._Handle.feed

    def counting_feed(self, codes, *args):
        seen.append(len(codes))
        return feed(self, codes, *args)

    monkeypatch.setattr(fast_model._Handle, "feed", counting_feed)
    skipped = simulate_arrays((1000,), (1,), 8, ops="read", starts=starts, counts=counts, **kw)
    assert np.array_equal(skipped.counts, walked.counts)
    assert sum(seen) <= 1 + 12 * fast_model.MAX_TRIES
