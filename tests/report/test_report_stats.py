"""The report's statistics: the Mann-Whitney U test against brute force, the verdicts, the confidence interval."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.report.stats import Sample, ci95, exact_u_p, judge, mann_whitney


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
    return Sample(float(np.median(tot)), tot, req, float(n), complete)


W = (("requests", 2160.0), ("raw_reads", 8.0), ("raw_read_bytes", 800_000.0))          # a cell's I/O counts
MORE = (("requests", 2160.0), ("raw_reads", 2160.0), ("raw_read_bytes", 864_000_000.0))   # a cache too small
QUIET = np.array([1.00, 1.02, 0.99])
CPU = np.array([0.98, 1.00, 0.97])


def _s(passes, cpu=(), work=W, contended=False, load=float("nan")):
    passes = np.asarray(passes, float)
    return Sample(float(np.median(passes)), passes, np.zeros(0), 2160.0, True, cpu=np.asarray(cpu, float),
                  work=work, contended=contended, load=load, cpus=2.0)


# B against A. Load shifts the wall time of a whole pass, not its counts and hardly its CPU time: the verdicts a busy
# machine cannot fake.
@pytest.mark.parametrize("a, b, word, why", [
    (_s(QUIET, CPU), _s(QUIET * 1.1, CPU), "tie", "within"),
    (_s(QUIET, CPU, load=0.3), _s(QUIET * 3, CPU * 1.05, contended=True, load=7.9), "noise", "CPU time per pass"),
    (_s(QUIET, CPU), _s(QUIET * 3, CPU * 1.05), "noise", "waiting"),
    (_s(QUIET, CPU), _s(QUIET * 3, CPU * 3), "slower", "every pass apart in wall and CPU time"),
    (_s(QUIET, CPU), _s(QUIET * 3, CPU * 1.05, work=MORE, contended=True), "slower", "more work: raw reads 8 -> 2,160"),
    (_s(QUIET, CPU, work=MORE), _s(QUIET / 3, CPU, contended=True), "faster", "less work"),
    (_s(QUIET, CPU, work=MORE), _s(QUIET * 3, CPU), "noise", "different work"),   # less work yet slower: time decides
    (_s(QUIET), _s(QUIET * 3), "noise", "Mann-Whitney on 3 vs 3 passes, p = 0.1"),  # an older run: no CPU times
    (_s([1, 1.01, 0.99, 1.02, 0.98]), _s(np.array([1, 1.01, 0.99, 1.02, 0.98]) * 3, contended=True), "noise",
     "contention"),
    (_s([1, 1.01, 0.99, 1.02, 0.98]), _s(np.array([1, 1.01, 0.99, 1.02, 0.98]) * 3), "slower", "Mann-Whitney on passes"),
    (_s([1.0], work=()), _s([3.0], work=()), "unknown", "one pass"),
    (_s([1.0], work=W), _s([3.0], work=MORE), "slower", "more work"),
], ids=["within-threshold", "loaded-same-work", "waiting-same-work", "cpu-apart", "more-work-under-load", "less-work",
        "less-work-but-slower", "old-run-3-passes", "old-run-contended", "old-run-5-passes", "one-pass", "one-pass-more-work"])
def test_judge_by_counts_first_then_passes(a, b, word, why):
    v = judge(a, b)
    assert v.word == word and why in v.why


@pytest.mark.parametrize("x, y", [([1, 2, 3], [4, 5, 6]), ([1, 2, 2, 3], [2, 3, 4, 4]), ([1, 5, 2], [3, 4, 1, 6, 7])],
                         ids=["apart", "ties", "unequal"])
def test_exact_pass_test_is_the_permutation_test(x, y):
    assert exact_u_p(x, y) == pytest.approx(_exact_p(np.asarray(x, float), np.asarray(y, float)))


def test_ci_surrounds_the_median_and_narrows_with_samples():
    few, many = _sample(1e-2, n=20), _sample(1e-2, n=2000)
    for s in (few, many):
        lo, hi = ci95(s)
        assert lo <= s.time_s <= hi
    assert (ci95(many)[1] - ci95(many)[0]) / many.time_s < (ci95(few)[1] - ci95(few)[0]) / few.time_s
    assert np.isnan(ci95(_sample(1e-2, complete=False))[0])       # an extrapolated cell: the samples are a prefix


