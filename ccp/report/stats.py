"""Noise-aware judgements, as asv and pyperf users expect: a confidence interval per cell and "faster" / "slower"
only when a difference is both significant and larger than a stated threshold.

- ``Sample``: what a run holds about one cell's time: its median pass, every timed pass's total and (from
  requests.parquet) every timed request.
- ``ci95``: the 95% confidence interval of a cell's pass time from its per-request samples (the requests of a pass
  are its cost: requests x mean request time, +- 1.96 standard errors, plus the median open and close).
- ``mann_whitney``: the two-sided Mann-Whitney U test with the normal approximation and tie correction, in numpy
  (scipy is not a dependency); tested against brute-force exact values in tests/report/test_report_stats.py.
- ``judge``: "faster", "slower" or "tie" for B against A: different only when B / A is beyond THRESHOLD and either
  the per-request times differ (U test, p < ALPHA, in the same direction as the totals; with two or more passes each,
  the passes must not overlap either) or every pass of the faster cell beat every pass of the slower one (the cost of
  a pass can sit in a few requests, a chunk decompressed once, which a rank test on requests cannot see).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

THRESHOLD = 1.25         # a ratio of median pass times under this is a tie, however significant
ALPHA = 0.05             # two-sided
MIN_PASSES_FOR_U = 4     # with fewer passes per cell a U test on pass times cannot reach ALPHA (3 vs 3: p >= 0.1)
MAX_REQUEST_SAMPLES = 20_000   # per cell, evenly subsampled: the U test's normal approximation needs no more


@dataclass(frozen=True)
class Sample:
    time_s: float                      # the cell's median pass (cells.parquet)
    passes: np.ndarray                 # every timed pass's total, seconds (may be empty)
    requests: np.ndarray               # every timed request, seconds, all passes (may be empty)
    n_requests: float = float("nan")   # requests per pass
    overhead_s: float = 0.0            # median open + close of a pass
    complete: bool = True              # False when extrapolated: the samples cover a prefix only
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0))   # each timed pass's first request (seed 004: the
    #                                    one that reads and decompresses a chunk the others then find in the cache)


@dataclass(frozen=True)
class Verdict:
    word: str          # faster | slower | tie | unknown (B against A)
    ratio: float       # time B / time A
    p: float           # U test p-value (NaN when not computed)
    why: str           # one phrase: how it was judged

    @property
    def differs(self) -> bool:
        return self.word in ("faster", "slower")


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


def ci95(s: Sample) -> tuple[float, float]:
    """95% confidence interval of the pass time from per-request samples; (NaN, NaN) without them.

    A pass's requests cost its first request plus n - 1 times the mean of the others (the first is its own class: it
    often reads and decompresses what the others find in the cache, and one such outlier would swamp a pooled standard
    deviation). Half-width: 1.96 x sqrt((n - 1)^2 var(others) / N_others + var(first) / passes), around the measured
    median pass; the part of a pass outside its requests (open, close, the loop) is taken as fixed."""
    r, first = s.requests, s.firsts
    if not s.complete or len(r) < 2 or not np.isfinite(s.n_requests) or not np.isfinite(s.time_s):
        return float("nan"), float("nan")
    n = s.n_requests
    if len(first) and n > 1 and len(r) > len(first) + 1:
        rest = _without(r, first)
        var = (n - 1) ** 2 * float(rest.var(ddof=1)) / len(rest) + (float(first.var(ddof=1)) / len(first) if len(first) > 1 else 0.0)
    else:
        var = n ** 2 * float(r.var(ddof=1)) / len(r)
    half = 1.96 * math.sqrt(var)
    return max(0.0, s.time_s - half), s.time_s + half


def _without(r: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The request times less one occurrence of each first request."""
    r = list(r)
    for f in first:
        try:
            r.remove(f)
        except ValueError:
            pass
    return np.asarray(r, float)


def judge(a: Sample, b: Sample, threshold: float = THRESHOLD, alpha: float = ALPHA) -> Verdict:
    """B against A: faster, slower, tie (within the threshold or not significant) or unknown (nothing to test)."""
    ta, tb = a.time_s, b.time_s
    if not (np.isfinite(ta) and np.isfinite(tb)) or ta <= 0 or tb <= 0:
        return Verdict("unknown", float("nan"), float("nan"), "no time")
    ratio = tb / ta
    word = "slower" if ratio > 1 else "faster"
    if max(ratio, 1 / ratio) < threshold:
        return Verdict("tie", ratio, float("nan"), f"within {threshold:g}x")
    p = float("nan")
    fast, slow = (a, b) if word == "slower" else (b, a)
    passes_ok = len(a.passes) >= 2 and len(b.passes) >= 2
    apart = passes_ok and fast.passes.max() < slow.passes.min()
    if a.complete and b.complete and len(a.requests) >= 2 and len(b.requests) >= 2:
        u, p = mann_whitney(b.requests, a.requests)
        # U of B above its mean: B's requests tend to be slower. It must agree with the totals.
        agree = (u > len(a.requests) * len(b.requests) / 2) == (word == "slower")
        if agree and p < alpha:
            if passes_ok and not apart:
                return Verdict("tie", ratio, p, "the passes overlap")
            return Verdict(word, ratio, p, f"Mann-Whitney {fmt_p(p)}")
        if apart:   # the cost sits in a few requests (a chunk decompressed once): the ranks cannot see it, every pass can
            return Verdict(word, ratio, p, f"every pass apart; per-request Mann-Whitney {fmt_p(p)}")
        if not agree:
            return Verdict("tie", ratio, p, "per-request times point the other way")
        return Verdict("tie", ratio, p, f"not significant: Mann-Whitney {fmt_p(p)}")
    if len(a.passes) >= MIN_PASSES_FOR_U and len(b.passes) >= MIN_PASSES_FOR_U:
        _, p = mann_whitney(b.passes, a.passes)
        if not p < alpha:
            return Verdict("tie", ratio, p, f"not significant: Mann-Whitney on passes, {fmt_p(p)}")
        return Verdict(word, ratio, p, f"Mann-Whitney on passes, {fmt_p(p)}")
    if not passes_ok:
        return Verdict("unknown", ratio, p, "one pass each and no per-request times: cannot tell noise from a difference")
    if not apart:
        return Verdict("tie", ratio, p, "the passes overlap")
    return Verdict(word, ratio, p, "every pass apart")


def fmt_p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


# ---------------------------------------------------------------------------------------------- reading a run

def _passes_from_cells(c) -> np.ndarray:
    """Without requests.parquet: the passes we know of (fastest, median, slowest), as many as were timed."""
    vals = [float(c.get(k)) for k in ("time_s_min", "time_s", "time_s_max") if _finite(c.get(k))]
    rep = int(c.get("repeats")) if _finite(c.get("repeats")) else len(vals)
    if rep <= 1 or len(vals) < 2:
        return np.array(vals[1:2] if len(vals) > 1 else vals)
    return np.array(vals if rep >= 3 else [vals[0], vals[-1]])


def _finite(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def samples(run_dir: Path, cells: pd.DataFrame) -> dict[str, Sample]:
    """cell_id -> Sample for every finished cell with a time: per-pass totals and per-request times from
    requests.parquet when the run has them, else the fastest / median / slowest pass from cells.parquet."""
    from ccp.report.data import is_ok, load_parts

    ok = cells[is_ok(cells) & cells["time_s"].notna()]
    req = None
    try:
        req = load_parts(Path(run_dir) / "requests.parquet", ["cell_id", "pass", "phase", "request", "time_s"], list(ok["cell_id"]),
                         [("pass", ">=", 0)])
    except (OSError, ValueError, KeyError):   # a damaged part: judge from the cells table alone
        req = None
    groups = dict(tuple(req.groupby("cell_id", sort=False))) if req is not None and len(req) else {}
    rng = np.random.default_rng(0)
    out = {}
    for _, c in ok.iterrows():
        cid = str(c["cell_id"])
        complete = str(c.get("status")) != "extrapolated"
        g = groups.get(cid)
        if g is None or g.empty:
            out[cid] = Sample(float(c["time_s"]), _passes_from_cells(c), np.zeros(0), _num(c.get("requests")), 0.0, complete)
            continue
        passes = g.groupby("pass")["time_s"].sum().to_numpy(float) if complete else _passes_from_cells(c)
        rq = g[g["phase"] == "request"]
        firsts = rq.loc[rq["request"] == 0, "time_s"].to_numpy(float)
        rest = rq.loc[rq["request"] != 0, "time_s"].to_numpy(float)
        if len(rest) > MAX_REQUEST_SAMPLES:
            rest = rng.choice(rest, MAX_REQUEST_SAMPLES, replace=False)
        r = np.concatenate([firsts, rest])
        oc = g[g["phase"] != "request"].groupby("pass")["time_s"].sum()
        out[cid] = Sample(float(c["time_s"]), passes, r, _num(c.get("requests")), float(oc.median()) if len(oc) else 0.0,
                          complete, firsts)
    return out


def _num(v) -> float:
    return float(v) if _finite(v) else float("nan")


def from_cell(c) -> Sample:
    """A Sample from a cells row alone (no requests.parquet)."""
    return Sample(_num(c.get("time_s")), _passes_from_cells(c), np.zeros(0), _num(c.get("requests")), 0.0,
                  str(c.get("status")) != "extrapolated")
