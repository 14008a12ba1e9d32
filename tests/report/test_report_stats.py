"""The report's statistics: the Mann-Whitney U test against brute force, the verdicts, the confidence interval."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.report.stats import THRESHOLD, Sample, ci95, judge, mann_whitney


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.lists(st.integers(0, 6), min_size=1, max_size=12))
def test_u_is_the_count_of_pairs(x, y):
    """U of x = pairs with x > y, ties counted one half (small integers: many ties)."""
    u, p = mann_whitney(x, y)
    brute = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)
    assert u == pytest.approx(brute) and 0 <= p <= 1


def _exact_p(x, y) -> float:
    """Two-sided permutation p-value of U: every split of the pooled values."""
    both = np.r_[x, y]
    n1, mu = len(x), len(x) * len(y) / 2
    u0 = abs(mann_whitney(x, y)[0] - mu)
    us = [abs(mann_whitney(both[list(idx)], np.delete(both, list(idx)))[0] - mu)
          for idx in itertools.combinations(range(len(both)), n1)]
    return float(np.mean(np.array(us) >= u0 - 1e-9))


@pytest.mark.parametrize("shift", [0.0, 0.5, 1.0, 2.0], ids=["same", "small", "medium", "large"])
def test_p_close_to_the_exact_test(shift):
    rng = np.random.default_rng(3)
    x, y = rng.normal(0, 1, 7), rng.normal(shift, 1, 7)
    assert mann_whitney(x, y)[1] == pytest.approx(_exact_p(x, y), abs=0.03)


def _sample(t, n=200, spread=0.2, seed=0, passes=3, complete=True):
    rng = np.random.default_rng(seed)
    req = t / n * rng.lognormal(0, spread, n * passes)
    tot = req.reshape(passes, n).sum(axis=1)
    return Sample(float(np.median(tot)), tot, req, float(n), 0.0, complete)


@pytest.mark.parametrize("factor, word", [(1.0, "tie"), (1.15, "tie"), (1.6, "slower"), (1 / 1.6, "faster"), (5.0, "slower")],
                         ids=["same", "under-threshold", "slower", "faster", "much-slower"])
def test_judge(factor, word):
    a, b = _sample(1e-2, seed=1), _sample(1e-2 * factor, seed=2)
    assert judge(a, b).word == word


def test_a_difference_the_samples_do_not_support_is_a_tie():
    """The medians say 1.5x, the requests and the passes they add up to are the same distribution: not significant."""
    a = _sample(1e-2, seed=1)
    b = _sample(1e-2, seed=2)
    b = Sample(a.time_s * 1.5, b.passes, b.requests, b.n_requests)
    v = judge(a, b)
    assert v.word == "tie" and ("not significant" in v.why or "the other way" in v.why)


def test_one_pass_without_requests_cannot_tell():
    a = Sample(1.0, np.array([1.0]), np.zeros(0))
    b = Sample(3.0, np.array([3.0]), np.zeros(0))
    assert judge(a, b).word == "unknown"


def test_overlapping_passes_are_a_tie():
    a = Sample(1.0, np.array([0.5, 1.0, 3.0]), np.zeros(0))
    b = Sample(2.0, np.array([1.5, 2.0, 2.5]), np.zeros(0))
    assert judge(a, b).word == "tie" and judge(a, b, THRESHOLD).why == "the passes overlap"


def test_ci_surrounds_the_median_and_narrows_with_samples():
    few, many = _sample(1e-2, n=20), _sample(1e-2, n=2000)
    for s in (few, many):
        lo, hi = ci95(s)
        assert lo <= s.time_s <= hi
    assert (ci95(many)[1] - ci95(many)[0]) / many.time_s < (ci95(few)[1] - ci95(few)[0]) / few.time_s
    assert np.isnan(ci95(_sample(1e-2, complete=False))[0])       # an extrapolated cell: the samples are a prefix


def test_cost_in_a_few_requests_is_seen_by_the_passes():
    """A gzip chunk decompressed once per 4 planes: 2 slow requests of 8, the rest fast; unfiltered, 8 equal ones. The
    rank test on requests cannot call it, every pass apart can."""
    rng = np.random.default_rng(0)
    slow = np.tile([5e-3, 1e-5, 1e-5, 1e-5], 2 * 3) * rng.lognormal(0, 0.05, 24)
    fast = np.full(24, 8e-5) * rng.lognormal(0, 0.05, 24)
    a = Sample(float(np.median(fast.reshape(3, 8).sum(1))), fast.reshape(3, 8).sum(1), fast, 8.0)
    b = Sample(float(np.median(slow.reshape(3, 8).sum(1))), slow.reshape(3, 8).sum(1), slow, 8.0)
    v = judge(a, b)
    assert v.word == "slower" and "every pass apart" in v.why
