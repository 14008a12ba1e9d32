"""Noise-aware judgements, as asv and pyperf users expect: a confidence interval per cell and "faster" / "slower"
only when a difference is both significant and larger than a stated threshold.

- ``Sample``: what a run holds about one cell's time: its median pass, every timed pass's total and (from
  requests.parquet) every timed request.
- ``ci95``: the 95% confidence interval of a cell's pass time from its per-request samples (the requests of a pass
  are its cost: requests x mean request time, +- 1.96 standard errors, plus the median open and close).
- ``mann_whitney``: the two-sided Mann-Whitney U test with the normal approximation and tie correction, in numpy
  (scipy is not a dependency); tested against brute-force exact values in tests/report/test_report_stats.py.
- ``judge``: "faster", "slower", "tie", "noise", "undecided" or "unknown" for B against A, by one rule (RULE,
  stated on every page and in ``ccp compare --help``): (1) the work differs -- the I/O counts (requests, raw reads
  and bytes, GETs), which noise cannot change -- and the time moved the same way: a real difference, whatever the
  load; counts of different kinds (a local cell's raw reads, an S3 cell's GETs) and different GET counts are
  different work whichever way the time moved; (2) S3 cells with the same GETs whose time grew with the time spent
  waiting on those GETs while the CPU time did not: the endpoint or network is slower, a real difference (waiting
  on a network never moves the CPU time, so rule (3) could never see it); (3) the same work: a real difference only
  if the passes (the unit of replication: load shifts every request of a pass together) differ significantly -- a
  Mann-Whitney test on pass times, exact for few passes, or every pass apart in wall *and* CPU time -- and the
  process CPU time moved too (waiting for a busy CPU or disk moves the wall time only); else "noise": the same
  work, the time difference is the machine's. "undecided": the pass test cannot reach p < 0.05 with so few passes
  (1 to 3 a side: its least p is 1, 0.33 or 0.1) and nothing else decides: the run needs more passes, never a tie.
The "cheapest change" rule that orders the report's, ``ccp advise``'s and ``ccp diagnose``'s cures is in
:mod:`ccp.report.cheapest`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

THRESHOLD = 1.25         # a ratio of median pass times under this is a tie, however significant
ALPHA = 0.05             # two-sided
MIN_PASSES_APART = 3     # "every pass apart" (wall and CPU) needs at least this many passes per cell
EXACT_MAX = 20_000       # the exact U distribution is enumerated up to this many splits (C(n1 + n2, n1))
WORK_COLUMNS = ("requests", "raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes", "http_gets", "http_bytes")
RULE = ("a difference is real when (1) the I/O counts differ (requests, raw reads and bytes, GETs: noise cannot "
        "change them) and the time moved the same way, whatever the load; a local cell's raw reads and an S3 cell's "
        "GETs are different work, and so are different GET counts, whichever way the time moved; or (2) two S3 cells "
        "make the same GETs and the time waiting on them grew while the CPU time did not: the endpoint or network is "
        "slower; or (3) with the same counts, the passes differ significantly (Mann-Whitney on pass times, p < 0.05, "
        "or every pass apart in wall and CPU time), the process CPU time moved too (by the threshold, at least "
        "1.25x; 1.5x when the slower side was measured under more contention: competitors raise it too), and the "
        "slower side was not the only one measured under contention, nor, both contended, under more load that "
        "explains the ratio (1.5 x its load / CPUs over the faster's). Otherwise the difference is the "
        "machine's (noise), unless the pass test cannot reach p < 0.05 with so few passes (1 to 3 a side) and the CPU "
        "time does not show the difference is waiting: then it is undecided (too few passes; 4 a side can decide), "
        "never a tie. Either way the ratio must reach the threshold")
CONTENTION_SLOWDOWN = 1.5      # how much more than load / CPUs a contended pass may be slowed (shared caches, SMT)
MAX_REQUEST_SAMPLES = 20_000   # per cell, evenly subsampled: the U test's normal approximation needs no more


@dataclass(frozen=True)
class Sample:
    time_s: float                      # the cell's median pass (cells.parquet)
    passes: np.ndarray                 # every timed pass's total, seconds (may be empty)
    requests: np.ndarray               # every timed request, seconds, all passes (may be empty)
    n_requests: float = float("nan")   # requests per pass
    complete: bool = True              # False when extrapolated: the samples cover a prefix only
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0))   # each timed pass's first request (seed 004: the
    #                                    one that reads and decompresses a chunk the others then find in the cache)
    cpu: np.ndarray = field(default_factory=lambda: np.zeros(0))     # each timed pass's process CPU seconds (schema 4)
    work: tuple = ()                   # (column, count) of WORK_COLUMNS the cell's counted pass measured; () unknown
    contended: bool = False            # flagged "contended" when measured
    load: float = float("nan")         # highest 1-minute load average over its passes
    cpus: float = float("nan")
    # where the bytes travel (storage, fsspec, emulated latency and bandwidth, page buffer): cells that differ here
    # differ in what they wait for, so waiting is their work, not the machine's
    path: tuple = ()
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0))    # each timed pass's seconds waiting on GETs (S3)
    loopback: bool = False             # its S3 endpoint ran on this machine (``s3: local``, or a loopback URL)


#: the cells columns that set what a pass waits for besides the CPU (ccp.report.data.STORAGE_COLUMNS, by name: the
#: stats stay independent of the labels)
WAIT_COLUMNS = ("storage", "fsspec", "latency", "bandwidth", "page_buffer", "file_space")


@dataclass(frozen=True)
class Verdict:
    word: str          # faster | slower | tie | noise (same work, the machine's) | undecided (too few passes) |
    #                    unknown (one pass each, no counts): B against A
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
    rest = list(r)
    for f in first:
        try:
            rest.remove(f)
        except ValueError:
            pass
    return np.asarray(rest, float)


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


def work_change(a: Sample, b: Sample) -> tuple[str, str]:
    """("more" | "less" | "same" | "mixed" | "kind" | "unknown", what differs): B's I/O counts against A's. "mixed":
    some counts up, some down (a different layout, not more of the same work); "kind": one cell reads a local file
    (raw reads), the other over S3 (GETs): counts of different kinds, never the same work."""
    ka, kb = io_kind(a), io_kind(b)
    if ka and kb and ka != kb:
        return "kind", f"{_kind_text(a)} against {_kind_text(b)}"
    if not a.work or not b.work:
        return "unknown", ""
    da, db = dict(a.work), dict(b.work)
    diffs = [(k, da[k], db[k]) for k in WORK_COLUMNS if k in da and k in db and da[k] != db[k]]
    if not diffs:
        return "same", ""
    up = {db_ > da_ for _, da_, db_ in diffs}
    what = ", ".join(f"{k.replace('_', ' ')} {_count(va)} -> {_count(vb)}" for k, va, vb in diffs[:3])
    return ("more" if up == {True} else "less" if up == {False} else "mixed"), what


def io_kind(s: Sample) -> str:
    """"s3" (the cell's I/O is GETs), "local" (raw reads of a file) or "" (not known)."""
    storage = dict(zip(WAIT_COLUMNS, s.path)).get("storage", "")
    keys = {k for k, _ in s.work}
    if storage == "s3" or any(k.startswith("http_") for k in keys):
        return "s3"
    return "local" if storage or keys else ""


def _kind_text(s: Sample) -> str:
    w = dict(s.work)
    if io_kind(s) == "s3":
        return f"{_count(w['http_gets'])} GETs (S3)" if "http_gets" in w else "GETs (S3, a count that varied)"
    return f"{_count(w['raw_reads'])} raw reads (local)" if "raw_reads" in w else "raw reads (local)"


def _gets_differ(a: Sample, b: Sample) -> bool:
    """Both S3 cells, each with one GET count for every pass, and the counts differ: different work (every GET is a
    round trip), whichever way the time moved."""
    ga, gb = dict(a.work).get("http_gets"), dict(b.work).get("http_gets")
    return io_kind(a) == io_kind(b) == "s3" and ga is not None and gb is not None and ga != gb


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


def endpoint_slower(fast: Sample, slow: Sample, threshold: float = THRESHOLD) -> str | None:
    """Rule (2): why ``slow``'s time is the GETs waiting longer, or None. Both S3 cells with the same GETs; the
    median pass's GET wait grew by at least half the wall time's growth, every pass of ``slow`` waited longer than
    every pass of ``fast``, and the CPU time per pass stayed within ``threshold`` (waiting on a network moves no
    CPU time, so the pass-and-CPU rule can never call it real). Not when only the slower side was measured under
    contention: a process waiting for a busy CPU inside a GET waits longer too."""
    if io_kind(fast) != "s3" or io_kind(slow) != "s3" or not len(fast.wait) or not len(slow.wait):
        return None
    if slow.contended and not fast.contended:
        return None
    if (fast.loopback or slow.loopback) and (fast.contended or slow.contended):
        # an endpoint on this machine answers on the same busy CPUs: its GETs' wait is the machine's (breaker8 F8)
        return None
    wf, ws = float(np.median(fast.wait)), float(np.median(slow.wait))
    if not ws > wf or ws - wf < 0.5 * (slow.time_s - fast.time_s):
        return None
    if not fast.wait.max() < slow.wait.min():
        return None
    if len(fast.cpu) and len(slow.cpu):
        cpu = float(np.median(slow.cpu)) / max(float(np.median(fast.cpu)), 1e-12)
        if cpu >= threshold:
            return None
        return f"CPU time per pass within {cpu:.3g}x"
    return "CPU time not recorded"


def _secs(v: float) -> str:
    from ccp.units import format_seconds

    return format_seconds(v)


def _count(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def judge(a: Sample, b: Sample, threshold: float = THRESHOLD, alpha: float = ALPHA) -> Verdict:
    """B against A by RULE: faster, slower, tie (within the threshold), noise (the same work; the time difference is
    the machine's) or unknown (one pass each and no counts: nothing to test)."""
    ta, tb = a.time_s, b.time_s
    if not (np.isfinite(ta) and np.isfinite(tb)) or ta <= 0 or tb <= 0:
        return Verdict("unknown", float("nan"), float("nan"), "no time")
    ratio = tb / ta
    word = "slower" if ratio > 1 else "faster"
    if max(ratio, 1 / ratio) < threshold:
        return Verdict("tie", ratio, float("nan"), f"within {threshold:g}x")
    change, what = work_change(a, b)
    if (change, word) in (("more", "slower"), ("less", "faster")):
        return Verdict(word, ratio, float("nan"), f"{'more' if change == 'more' else 'less'} work: {what}")
    if change == "kind" or _gets_differ(a, b):
        return Verdict(word, ratio, float("nan"), f"different work: {what}")
    fast, slow = (a, b) if word == "slower" else (b, a)
    busier = _load_explains(fast, slow, max(ratio, 1 / ratio)) if a.path == b.path else ""
    if busier:
        # competitors on the CPUs raise the process's own CPU time per pass too (shared caches, a core's two
        # threads: 1.3x measured, breaker8 F1), and a loopback endpoint's GETs wait on the same CPUs (F8), so neither
        # the pass test, the CPU time nor the GET wait can clear a difference the slower side's heavier load explains
        # (cells that wait for different things, an emulated latency against none, are judged by their passes)
        done = "the same work" if change == "same" else f"different work ({what})" if what else "unmeasured work"
        return Verdict("noise", ratio, float("nan"), f"{done}; {busier}" + _load_note(a, b))
    waited = endpoint_slower(fast, slow, threshold)
    if waited is not None:
        wa, wb = float(np.median(a.wait)), float(np.median(b.wait))
        grew = f"GET wait {_secs(wa)} -> {_secs(wb)} a pass, the same GETs, {waited}"
        return Verdict(word, ratio, float("nan"),
                       f"the GETs waited {'longer' if word == 'slower' else 'less'} ({grew}): the two read through "
                       "different storage settings" if a.path != b.path else
                       f"the endpoint/network is {word} ({grew}): not this machine's load" + _load_note(a, b))
    n_a, n_b = len(a.passes), len(b.passes)
    if n_a < 2 or n_b < 2:
        if change in ("mixed", "more", "less"):
            # rule (1) needs the time to move the way the work did (handled above); less work and slower, or a mix,
            # with one pass is the machine's as likely as the layout's (breaker8 F2)
            return Verdict("undecided", ratio, float("nan"), f"different work ({what}), {word} against it; "
                           f"{too_few_passes(n_a, n_b, alpha)}" + _load_note(a, b))
        return Verdict("unknown", ratio, float("nan"), "one pass each: cannot tell noise from a difference")
    p = pass_p(b.passes, a.passes)
    # cells that wait for different things (an emulated 20 ms per GET against none): the wall time is the test,
    # the CPU time says nothing about it
    waits_differ = a.path != b.path
    has_cpu = len(a.cpu) == n_a and len(b.cpu) == n_b and n_a > 0 and not waits_differ
    apart = (min(n_a, n_b) >= MIN_PASSES_APART and fast.passes.max() < slow.passes.min()
             and (waits_differ or (has_cpu and fast.cpu.max() < slow.cpu.min())))
    same = "the same work" if change == "same" else "different work (" + what + ")" if what else "unmeasured work"
    cpu_ratio = float(np.median(slow.cpu)) / max(float(np.median(fast.cpu)), 1e-12) if has_cpu else float("nan")
    # the CPU time is the load-proof witness, but not to within a tighter gate than --threshold's default, and
    # competitors on the slower side's CPUs raise its own CPU time per pass too (shared caches, a core's two threads:
    # 1.3x under two busy loops, breaker8 F1): up to CONTENTION_SLOWDOWN is theirs
    cpu_bar = max(threshold, THRESHOLD, CONTENTION_SLOWDOWN if _more_contended(fast, slow) else 1.0)
    if not (p < alpha or apart):
        # the passes themselves apart by the threshold, and a test that could not have said so: too few passes,
        # unless the CPU time shows the difference is waiting (the machine's)
        pass_ratio = float(np.median(slow.passes)) / max(float(np.median(fast.passes)), 1e-12)
        if least_p(n_a, n_b) >= alpha and pass_ratio >= threshold:
            if has_cpu and cpu_ratio < cpu_bar:
                return Verdict("noise", ratio, p, f"{same}; CPU time per pass within {cpu_ratio:.3g}x: the wall time "
                               f"is waiting (the pass test cannot decide {n_a} vs {n_b} passes)" + _load_note(a, b))
            return Verdict("undecided", ratio, p, f"{same}; {too_few_passes(n_a, n_b, alpha)}" + _load_note(a, b))
        return Verdict("noise", ratio, p, f"{same}; passes not apart (Mann-Whitney on {n_a} vs {n_b} passes, {fmt_p(p)})"
                       + _load_note(a, b))
    if has_cpu and cpu_ratio < cpu_bar:
        return Verdict("noise", ratio, p, f"{same}; CPU time per pass within {cpu_ratio:.3g}x: the wall time is "
                       "waiting" + (f" (the slower side's competitors explain up to {cpu_bar:.3g}x of CPU time)"
                                    if cpu_ratio >= max(threshold, THRESHOLD) else "") + _load_note(a, b))
    if not has_cpu and not waits_differ:
        # passes apart in wall time alone: load shifts whole passes, and without the CPU time (a run before schema 4,
        # or without requests.parquet) nothing tells the machine's from the cells' (breaker8 F5)
        return Verdict("undecided", ratio, p, f"{same}; passes apart ({fmt_p(p)}) but CPU time not recorded on both "
                       "sides: the load cannot be ruled out (ccp compare --remeasure "
                       f"{passes_needed(alpha)} decides, for local cells)" + _load_note(a, b))
    how = ("every pass apart in wall time (the two wait for different things)" if waits_differ else
           "every pass apart in wall and CPU time") if apart and not p < alpha else f"Mann-Whitney on passes, {fmt_p(p)}"
    return Verdict(word, ratio, p, how + ("" if change == "same" else f"; {same}"))


def _more_contended(fast: Sample, slow: Sample) -> bool:
    """The slower side was measured under contention and the faster not, or under no less load."""
    if not slow.contended:
        return False
    return not (fast.contended and np.isfinite(fast.load) and np.isfinite(slow.load) and slow.load < fast.load)


def _load_explains(fast: Sample, slow: Sample, ratio: float) -> str:
    """Why the load ``slow`` was measured under can make its passes ``ratio`` times ``fast``'s, or "". A slower side
    measured under contention against a quiet faster one: always. Both contended, the slower under at least the
    faster's load: a process sharing C CPUs at a load average of L runs about L / C times slower than alone (when L >
    C), and competitors in its caches cost more besides (x CONTENTION_SLOWDOWN); a load not recorded explains any
    ratio."""
    if not _more_contended(fast, slow):
        return ""
    if not fast.contended:
        # the 1-minute load average lags a short run (4 competitors on 2 CPUs read 2.1), and under them a few-ms
        # pass's own CPU time rose 1.3-1.9x (benchmarks/noisy_compare.py): one side quiet, the other not, is no
        # comparison of times at all; --remeasure measures both here, alternating
        return ("the slower side was measured under contention, the faster not (ccp compare --remeasure decides, "
                "for local cells)")
    if not np.isfinite(slow.load):
        return "the slower side was measured under contention (load not recorded)"

    def crowd(s: Sample) -> float:
        share = s.load / s.cpus if np.isfinite(s.cpus) and s.cpus > 0 else s.load
        return max(1.0, share) if np.isfinite(share) else 1.0

    room = CONTENTION_SLOWDOWN * crowd(slow) / (crowd(fast) if fast.contended else 1.0)
    if ratio > room:
        return ""
    return ("the slower side was measured under contention, the faster not" if not fast.contended else
            "both were measured under contention, the slower under more") + f": its load explains up to {room:.2g}x"


def _load_note(a: Sample, b: Sample) -> str:
    if not (np.isfinite(a.load) or np.isfinite(b.load)):
        return ""
    return f" (load {_load(a)} vs {_load(b)})"


def _load(s: Sample) -> str:
    if not np.isfinite(s.load):
        return "?"
    return f"{s.load:.1f}/{int(s.cpus)} CPUs" if np.isfinite(s.cpus) else f"{s.load:.1f}"


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


def machine_of(c) -> dict:
    """A cells row's Sample fields that need no requests table: its I/O counts (the counted pass's; none for a quick
    run, whose counts are empty, or for GETs that varied between passes) and its machine state."""
    flags = set(str(c.get("flags") or "").split(","))
    work = tuple((k, float(c.get(k))) for k in WORK_COLUMNS if _finite(c.get(k))
                 and not (k.startswith("http_") and "http-counts-vary" in flags))
    if not any(k != "requests" for k, _ in work):     # requests alone: no counted pass, the work is unknown
        work = ()
    path = tuple("" if c.get(k) is None or (isinstance(c.get(k), float) and math.isnan(c.get(k))) else str(c.get(k))
                 for k in WAIT_COLUMNS)
    wait = _num(c.get("http_wait_s"))    # the median pass's GET wait (S3 cells): one value when no requests table
    return {"work": work, "contended": "contended" in flags, "load": _num(c.get("load_max")), "cpus": _num(c.get("cpus")),
            "path": path, "wait": np.array([wait]) if np.isfinite(wait) else np.zeros(0)}


def _pass_machine(run_dir: Path, ids: list) -> dict:
    """cell_id -> each timed pass's CPU seconds, from requests.parquet's pass rows (schema 4; {} before)."""
    from ccp.errors import CcpError
    from ccp.report.data import load_parts

    try:
        df = load_parts(Path(run_dir) / "requests.parquet", ["cell_id", "pass", "phase", "pass_cpu_s"], ids,
                        [("pass", ">=", 0), ("phase", "==", "open")])
    except (OSError, ValueError, KeyError, CcpError):   # an older run: no pass columns (breaker8 F4)
        return {}
    if df is None or not len(df):
        return {}
    df = df[df["pass_cpu_s"].notna()].sort_values("pass")
    return {cid: g["pass_cpu_s"].to_numpy(float) for cid, g in df.groupby("cell_id", sort=False)}


def _pass_waits(run_dir: Path, ids: list) -> dict:
    """cell_id -> each timed pass's seconds waiting on GETs (the pass's rows' http_wait_s summed), for the S3 cells
    of a run that records them ({} otherwise)."""
    from ccp.errors import CcpError
    from ccp.report.data import load_parts

    if not ids:
        return {}
    try:
        df = load_parts(Path(run_dir) / "requests.parquet", ["cell_id", "pass", "http_wait_s"], ids, [("pass", ">=", 0)])
    except (OSError, ValueError, KeyError, CcpError):   # an older run: no http_wait_s column
        return {}
    if df is None or not len(df):
        return {}
    df = df[df["http_wait_s"].notna()]
    sums = df.groupby(["cell_id", "pass"], sort=True)["http_wait_s"].sum().astype(float)
    return {str(cid): g.to_numpy(float) for cid, g in sums.groupby(level=0, sort=False)}


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
    cpus = _pass_machine(run_dir, list(ok["cell_id"]))
    s3 = ok["storage"].astype(str) == "s3" if "storage" in ok else pd.Series(False, index=ok.index)
    waits = _pass_waits(run_dir, list(ok.loc[s3, "cell_id"]))
    loopback = bool(s3.any()) and endpoint_on_this_machine(run_dir)
    rng = np.random.default_rng(0)
    out = {}
    for i, c in ok.iterrows():
        cid = str(c["cell_id"])
        complete = str(c.get("status")) != "extrapolated"
        g = groups.get(cid)
        m = {**machine_of(c), "cpu": cpus.get(cid, np.zeros(0)), "loopback": loopback and bool(s3[i])}
        if g is None or g.empty:
            out[cid] = Sample(float(c["time_s"]), _passes_from_cells(c), np.zeros(0), _num(c.get("requests")), complete, **m)
            continue
        passes = g.groupby("pass")["time_s"].sum().to_numpy(float)
        if not complete:
            passes, m["cpu"] = _extrapolated_passes(g, _num(c.get("requests")), float(c["time_s"]), m["cpu"])
            if not len(passes):
                passes = _passes_from_cells(c)
        rq = g[g["phase"] == "request"]
        firsts = rq.loc[rq["request"] == 0, "time_s"].to_numpy(float)
        rest = rq.loc[rq["request"] != 0, "time_s"].to_numpy(float)
        if len(rest) > MAX_REQUEST_SAMPLES:
            rest = rng.choice(rest, MAX_REQUEST_SAMPLES, replace=False)
        r = np.concatenate([firsts, rest])
        if len(m["cpu"]) != len(passes):
            m["cpu"] = np.zeros(0)
        if cid in waits and len(waits[cid]) == len(passes):
            m["wait"] = waits[cid]
        out[cid] = Sample(float(c["time_s"]), passes, r, _num(c.get("requests")), complete, firsts, **m)
    return out


def endpoint_on_this_machine(run_dir: Path) -> bool:
    """Whether the run's S3 endpoint was on this machine: ``s3: local`` (ccp's own loopback server) or an endpoint
    URL on a loopback host."""
    from urllib.parse import urlparse

    from ccp.store.reader import read_run_sweep

    s3 = read_run_sweep(run_dir)[1].get("s3")
    if s3 == "local":
        return True
    url = s3.get("endpoint") if isinstance(s3, dict) else None
    host = (urlparse(str(url)).hostname or "") if url else ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _extrapolated_passes(g: pd.DataFrame, n_requests: float, time_s: float,
                         cpu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pass of a cell timed on a prefix of its requests, extrapolated as the run did its row (open + close + the
    requests timed x all / timed), then all scaled so their median is the row's time; each pass's CPU time by its
    pass's factor (breaker8 F3: judged by the passes the run made, not three made-up ones). Empty when the requests
    were not recorded."""
    out, factors = [], []
    for _, p in g.groupby("pass", sort=True):
        req = p[p["phase"] == "request"]["time_s"].to_numpy(float)
        fixed = float(p.loc[p["phase"] != "request", "time_s"].sum())
        if not len(req) or not np.isfinite(n_requests) or n_requests < len(req):
            return np.zeros(0), np.zeros(0)
        measured = fixed + float(req.sum())
        total = fixed + float(req.sum()) * n_requests / len(req)
        out.append(total)
        factors.append(total / measured if measured > 0 else 1.0)
    passes = np.asarray(out, float)
    mid = float(np.median(passes))
    align = time_s / mid if mid > 0 and np.isfinite(time_s) else 1.0
    cpu = cpu * np.asarray(factors) * align if len(cpu) == len(passes) else cpu
    return passes * align, cpu


def _num(v) -> float:
    return float(v) if _finite(v) else float("nan")


def from_cell(c) -> Sample:
    """A Sample from a cells row alone (no requests.parquet)."""
    return Sample(_num(c.get("time_s")), _passes_from_cells(c), np.zeros(0), _num(c.get("requests")),
                  str(c.get("status")) != "extrapolated", **machine_of(c))
