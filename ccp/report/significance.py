"""The pass-level significance tests the verdict rule (:mod:`ccp.report.stats`) and tune's runoffs use, in numpy
(scipy is not a dependency): the two-sided Mann-Whitney U test (exact by enumeration for the few passes a cell has,
the normal approximation with tie and continuity corrections beyond) and the exact Wilcoxon signed-rank test of
paired rounds; tested against brute-force exact values in tests/report/test_report_stats.py."""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05             # two-sided
EXACT_MAX = 20_000       # the exact U distribution is enumerated up to this many splits (C(n1 + n2, n1))


def mann_whitney(x, y) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of x, p), normal approximation with tie and continuity corrections."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    both = np.concatenate([x, y])
    ranks = _rankdata(both)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    mu = n1 * n2 / 2
    _, counts = np.unique(both, return_counts=True)
    n = n1 + n2
    tie = float((counts ** 3 - counts).sum())
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u1, 1.0
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    return u1, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def _rankdata(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given their average rank."""
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    ranks = np.empty(len(a), float)
    starts = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    ends = np.r_[starts[1:], len(a)]
    for lo, hi in zip(starts, ends):
        ranks[order[lo:hi]] = (lo + hi + 1) / 2
    return ranks


def signed_rank_p(a, b) -> float:
    """Two-sided p of the exact Wilcoxon signed-rank test on the per-round log ratios of ``a`` and ``b``
    (round i of each measured side by side, as tune's interleaved runoff does): how often signs drawn at random
    give a rank sum as far from 0 as the measured one. Rounds with equal times carry no sign and are dropped
    (p 1 when none is left); equal |differences| share their mean rank (:func:`_rankdata`)."""
    d = np.log(np.asarray(a, float)) - np.log(np.asarray(b, float))
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return 1.0
    ranks = _rankdata(np.abs(d))
    if n > 20:     # the normal approximation: 2**n sign assignments would be too many
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        z = abs(float(ranks[d > 0].sum()) - n * (n + 1) / 4) / sd
        return float(1 - math.erf(z / math.sqrt(2)))
    w = float(ranks[d > 0].sum())
    mid = ranks.sum() / 2
    # every sign assignment's positive rank sum, exactly (2**n, rounds are few)
    sums = np.zeros(1)
    for r in ranks:
        sums = np.concatenate([sums, sums + r])
    return float(min(1.0, np.mean(np.abs(sums - mid) >= abs(w - mid) - 1e-9)))


def exact_u_p(x, y) -> float:
    """Two-sided p of the Mann-Whitney U of x against y by enumerating every split (ties as average ranks): exact for
    the few passes a cell has, where the normal approximation is poor. NaN when there are too many splits."""
    from itertools import combinations

    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n = len(x), len(x) + len(y)
    if n1 == 0 or len(y) == 0 or math.comb(n, n1) > EXACT_MAX:
        return float("nan")
    ranks = _rankdata(np.concatenate([x, y]))
    mu = n1 * (n + 1) / 2
    seen = abs(ranks[:n1].sum() - mu)
    splits = [abs(sum(ranks[list(c)]) - mu) for c in combinations(range(n), n1)]
    return float(sum(d >= seen - 1e-9 for d in splits) / len(splits))


def pass_p(x, y) -> float:
    """The pass-level test's p: exact for few passes, the normal approximation beyond."""
    p = exact_u_p(x, y)
    return p if np.isfinite(p) else mann_whitney(x, y)[1]


def least_p(n1: int, n2: int) -> float:
    """The least two-sided p the exact pass test can give with n1 and n2 passes (every pass of one side below every
    pass of the other): 2 / C(n1 + n2, n1). 0.33 for 2 vs 2, 0.1 for 3 vs 3, 0.029 for 4 vs 4."""
    return min(1.0, 2 / math.comb(n1 + n2, n1)) if n1 > 0 and n2 > 0 else 1.0


def passes_needed(alpha: float = ALPHA) -> int:
    """The fewest passes a side with which the exact pass test can reach p < alpha (4 for 0.05)."""
    n = 1
    while least_p(n, n) >= alpha:
        n += 1
    return n


def too_few_passes(n_a: int, n_b: int, alpha: float = ALPHA) -> str:
    need = passes_needed(alpha)
    return (f"too few passes to judge: the pass test on {n_a} vs {n_b} passes cannot reach p < {alpha:g} (its least p "
            f"is {least_p(n_a, n_b):.2g}); {need} passes a side can (repeats: {need}, or ccp compare --remeasure {need} "
            "for local cells)")


def fmt_p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"
