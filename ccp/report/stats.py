"""Noise-aware judgements, as asv and pyperf users expect: a confidence interval per cell and "faster" / "slower"
only when a difference is both significant and larger than a stated threshold.

- ``Sample``: what a run holds about one cell's time: its median pass, every timed pass's total and (from
  requests.parquet) every timed request.
- ``ci95``: the 95% confidence interval of a cell's pass time from its per-request samples (the requests of a pass
  are its cost: requests x mean request time, +- 1.96 standard errors, plus the median open and close).
- the pass tests (``mann_whitney``, ``pass_p``, ...) are :mod:`ccp.report.significance`'s, re-exported here.
- ``judge``: "faster", "slower", "tie", "noise", "undecided" or "unknown" for B against A, by one rule (RULE,
  stated on every page and in ``ccp compare --help``): (1) the slower side did materially more of some I/O count
  (noise cannot change a count; +0.01% explains nothing): real, whatever the load; an extrapolated cell's counts
  are estimates and never rule (1) evidence; (2) S3 cells with the same GETs whose GET wait grew while the CPU time
  did not: the endpoint or network is slower; (3) the same work: real when the passes (the unit of replication)
  differ and the CPU time per pass moved beyond its bar, every pass apart in it (between two runs, beyond 6x:
  a run's passes share one process; between two cells of one run, each in its own worker, beyond 2.5x). The load
  may excuse a slowdown
  ("noise", the machine's) only within what the passes' recorded wait for a CPU (schema 7), or else a really higher
  load per CPU, explains and with the CPU time within its bar; a slowdown the rule
  cannot clear otherwise is "undecided" (too few passes, wall time apart alone, CPU moved without passes apart),
  never a tie and never the machine's (breaker9 G1-G7).
The "cheapest change" rule that orders the report's, ``ccp advise``'s and ``ccp diagnose``'s cures is in
:mod:`ccp.report.cheapest`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ccp.report.competitors import (
    COMPETITORS_CPU,
    COMPETITORS_CUT_CPU,
    CONTENTION_SLOWDOWN,
    ceiling_text,
    cpu_ceiling,
    cpu_share_cut,
    crowded,
    load_explains,
    load_note,
    more_crowded,
    more_loaded,
    records_run_delay,
    run_queue_explains,
    separate_runs,
    share_note,
    why_no_excuse,
)
from ccp.report.run_samples import endpoint_on_this_machine, from_cell, machine_of, samples
from ccp.report.sample import MAX_REQUEST_SAMPLES, WAIT_COLUMNS, WORK_COLUMNS, Sample
from ccp.report.significance import (
    ALPHA,
    exact_u_p,
    fmt_p,
    least_p,
    mann_whitney,
    pass_p,
    passes_needed,
    signed_rank_p,
    too_few_passes,
)
from ccp.units import format_ratio

__all__ = ["ALPHA", "CONTENTION_SLOWDOWN", "exact_u_p", "fmt_p", "least_p", "mann_whitney", "pass_p", "passes_needed",
           "signed_rank_p", "too_few_passes", "MAX_REQUEST_SAMPLES", "WAIT_COLUMNS", "WORK_COLUMNS", "Sample", "cpu_share_cut",
           "endpoint_on_this_machine", "from_cell", "machine_of", "samples"]

THRESHOLD = 1.25         # a ratio of median pass times under this is a tie, however significant
MIN_PASSES_APART = 3     # "every pass apart" (wall and CPU) needs at least this many passes per cell
RULE = ("a difference is real when (1) the slower side did materially more of some I/O count (requests, raw reads and "
        "bytes, GETs: beyond 5% of the smaller count; more of all of them, or a mix), whatever the load; a local "
        "cell's raw reads and an S3 cell's GETs are different work, and so are different GET counts; an extrapolated "
        "cell's counts are estimates and never decide; or (2) two S3 cells make the same GETs and the time waiting on "
        "them grew while the CPU time did not: the endpoint or network is slower; or (3) with the same work (or less "
        "on the slower side) the passes differ (Mann-Whitney on pass times, p < 0.05, which needs 4 passes a side, or "
        "every pass apart in wall and CPU time) and the CPU time per pass moved beyond its bar, every pass apart in it "
        "(the threshold, at least 1.25x; 1.5x when the slower side had more competitors: under 0.7 of the faster's "
        "share of a CPU, or of a whole CPU, or a higher load; within 2.25x then undecided; between two runs, beyond 6x "
        "too: each run measures a cell's passes in one process, and two runs of identical work moved up to 4.77x so; "
        "between two cells of one run, each measured in its own worker process, beyond 2.5x: identical cells moved up "
        "to 2.05x; within them undecided, and compare --remeasure, alternating both in one process, decides by the "
        "pass's own bar), "
        "and never by the CPU time "
        "alone within 6x when the slower side's share was cut (competitors evict a pass's caches too); the same work whose passes, enough of them, are not apart shows no difference, whatever the "
        "medians; with the same work, B's CPU time per pass beyond its bar in every pass while the wall time does not "
        "call B slower (the baseline's passes got a cut share of a CPU) is never a tie or faster: slower when A's "
        "share was cut and B's CPU time is 3x A's or more (6x between two runs), else undecided; in a comparison of two runs, a tie over an "
        "A whose share was cut is undecided too (A's competitors keep its times up). The load excuses a slowdown "
        "(noise: the machine's) only with the CPU time within its bar, the faster side's passes not under 0.7 of a CPU "
        "(its competitors raised its CPU time too), and: where both runs recorded each pass's wait for a "
        "CPU (runnable, not running), the slower side's passes less that wait within the threshold of the faster's less "
        "theirs; else both loads known, the slower side's per CPU really higher (by 0.5 and 25%) and the ratio within "
        "1.5 x its max(1, load/CPU) over the faster's. "
        "Anything else beyond the threshold is undecided (too few passes, passes apart in wall time only, CPU time "
        "moved without the passes apart, an extrapolated cell): never a tie, never the machine's")
MATERIAL = 0.05                # a count that differs by less than this share of the smaller is the same work (G22)


# what decided a verdict: the I/O counts (rule 1), the GET wait (rule 2), the passes (rule 3: apart, or not apart
# with enough of them), the load (it excuses the difference, or the rule cannot clear it of it), too few passes or
# none recorded, an extrapolated cell, the threshold (a tie), nothing to test (one pass each, no usable time)
WORK, ENDPOINT, PASSES, LOAD, FEW, ESTIMATED, THRESHOLD_BASIS, NOTHING = (
    "work", "endpoint", "passes", "load", "few", "estimated", "threshold", "nothing")
BASES = (WORK, ENDPOINT, PASSES, LOAD, FEW, ESTIMATED, THRESHOLD_BASIS, NOTHING)


@dataclass(frozen=True)
class Verdict:
    word: str          # faster | slower | tie | noise (same work, the machine's) | undecided (too few passes) |
    #                    unknown (one pass each, no counts): B against A
    ratio: float       # time B / time A
    p: float           # U test p-value (NaN when not computed)
    why: str           # one phrase: how it was judged
    basis: str = ""    # what decided it, one of BASES: the headline and tables sort verdicts by this, never by the
    #                    words of ``why`` (which change as the rule's wording does)
    cpu_ratio: float = float("nan")   # B's CPU time per pass over A's when that decided against the wall time, or
    #                    left the cell undecided (the wall time tied, overlapped or pointed the other way): a gate
    #                    measures such a cell by it, not by ``ratio``; NaN otherwise

    @property
    def differs(self) -> bool:
        return self.word in ("faster", "slower")


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


def endpoint_slower(fast: Sample, slow: Sample, threshold: float = THRESHOLD) -> str | None:
    """Rule (2): why ``slow``'s time is the GETs waiting longer, or None. Both S3 cells with the same GETs; the
    median pass's GET wait grew by at least half the wall time's growth, every pass of ``slow`` waited longer than
    every pass of ``fast``, and the CPU time per pass stayed within ``threshold`` (waiting on a network moves no
    CPU time, so the pass-and-CPU rule can never call it real). Not when only the slower side was measured under
    contention: a process waiting for a busy CPU inside a GET waits longer too."""
    if io_kind(fast) != "s3" or io_kind(slow) != "s3" or not len(fast.wait) or not len(slow.wait):
        return None
    if slow.contended and not fast.contended or more_loaded(fast, slow):
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
        return f"CPU time per pass within {format_ratio(cpu)}"
    return "CPU time not recorded"


def _secs(v: float) -> str:
    from ccp.units import format_seconds

    return format_seconds(v)


def _count(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def judge(a: Sample, b: Sample, threshold: float = THRESHOLD, alpha: float = ALPHA) -> Verdict:
    """B against A by RULE: faster, slower, tie (within the threshold), noise (the same work; the load explains the
    time difference: the machine's), undecided (beyond the threshold and the rule cannot clear it) or unknown (one
    pass each and no counts: nothing to test). The wall time first, then the CPU time per pass against it
    (:func:`_cpu_against_wall`: B's beyond A's is never a tie, "not apart" or faster)."""
    v = _by_time(a, b, threshold, alpha)
    return _cpu_against_wall(a, b, v, threshold) or v


def cpu_bar(fast: Sample, slow: Sample, threshold: float) -> float:
    """The ratio of ``slow``'s CPU time per pass over ``fast``'s beyond which the CPU time witnesses a difference: the
    threshold, never below THRESHOLD (the CPU time is the load-proof witness, but not to within a tighter gate than
    --threshold's default), and CONTENTION_SLOWDOWN when ``slow`` had more competitors: they raise a pass's own CPU
    time too (shared caches, a core's two threads: 1.3x under two busy loops, breaker8 F1), as when ``slow``'s passes
    got under CROWDED_SHARE of a CPU however crowded ``fast`` was (:func:`crowded`). Rule (3), the CPU witness
    against the wall time and compare's check of a remeasured cell all use this one bar."""
    return max(threshold, THRESHOLD, CONTENTION_SLOWDOWN if more_crowded(fast, slow) or crowded(slow) else 1.0)


def _cpu_against_wall(a: Sample, b: Sample, v: Verdict, threshold: float) -> Verdict | None:
    """The CPU time per pass against a verdict of the wall time, or None when it changes nothing (breaker11 C2). The
    same work (every count equal, the same waits, both measured whole) and every pass of one side above every pass of
    the other in CPU time (MIN_PASSES_APART a side), beyond :func:`cpu_bar`, while the wall time does not say that
    side is slower: the wall time of the other side was kept up by something else (competitors on A, a baseline
    measured on a busy machine, cut its share of a CPU at once). The heavier side is slower when the lighter's passes
    got a cut share of a CPU (what kept its wall time up) and the ratio is beyond COMPETITORS_CPU too (competitors the
    share does not show raised identical work's CPU time per pass 1.9x). B heavier otherwise: undecided, never a tie,
    "not apart" or faster (an undecided B slower in wall time keeps its own reason). A heavier otherwise: the wall
    time's verdict stands (B used less CPU: never a regression)."""
    if v.basis in (ENDPOINT, NOTHING) or a.path != b.path or not (a.complete and b.complete) \
            or work_change(a, b)[0] != "same":
        return None       # the GET wait decided, no usable time, other waits, estimates or other work
    if not all(len(s.cpu) == len(s.passes) >= MIN_PASSES_APART for s in (a, b)):
        return None
    if a.cpu.max() < b.cpu.min():
        light, heavy, names = a, b, ("A", "B")
    elif b.cpu.max() < a.cpu.min():
        light, heavy, names = b, a, ("B", "A")
    else:
        return None
    b_heavy = names[1] == "B"
    r = float(np.median(heavy.cpu)) / max(float(np.median(light.cpu)), 1e-12)
    bar = cpu_bar(light, heavy, threshold)
    if r < bar or (v.differs and (v.word == "slower") == b_heavy):
        return None       # within its bar, or the wall time already calls the heavier side slower
    ceiling = cpu_ceiling(light, heavy)
    band = max(bar, COMPETITORS_CPU, ceiling)
    lo, hi = names
    wall = v.ratio if b_heavy else 1 / v.ratio
    ls, hs = light.cpu_share, heavy.cpu_share
    shares = f"{lo}'s passes got {ls:.2f} of a CPU, {hi}'s {hs:.2f}"
    moved = f"{hi}'s CPU time per pass {format_ratio(r)} {lo}'s"
    cpu_b = r if b_heavy else 1 / r
    if r >= band and cpu_share_cut(heavy, light):
        return Verdict("slower" if b_heavy else "faster", v.ratio, v.p,
                       f"the same work; {moved}, every pass apart, while its wall time is {format_ratio(wall)}: {shares}: "
                       f"{lo}'s wall time was kept up by its cut share of a CPU, and {hi}'s extra CPU time, beyond the "
                       f"{format_ratio(band)} competitors can cost, is its own work" + load_note(a, b), basis=PASSES,
                       cpu_ratio=cpu_b)
    if not b_heavy or v.word == "undecided" and v.ratio >= 1:
        return None       # B used less CPU (never a regression), or the wall time already leaves B undecided slower
    if not (np.isfinite(ls) and np.isfinite(hs)):
        reason = "the CPU share is not recorded on both sides: which had competitors is not known"
    elif cpu_share_cut(light, heavy):
        reason = f"{shares}: competitors on {hi} raise its own CPU time too"
    elif not cpu_share_cut(heavy, light):
        reason = (f"{shares}: no cut share of a CPU explains why the wall time does not follow it, and competitors the "
                  "share does not show (a memory-bound one) raised identical work's 1.9x")
    elif band == ceiling:
        reason = f"{shares}: the CPU time alone decides only beyond {format_ratio(band)} {ceiling_text(light, heavy)}"
    else:
        reason = (f"{shares}: the CPU time alone decides only beyond {format_ratio(band)} (competitors the share does not show "
                  "raised identical work's 1.9x)")
    return Verdict("undecided", v.ratio, v.p, f"the same work; {moved} (every pass apart, beyond {format_ratio(bar)}) while its "
                   f"wall time is {format_ratio(wall)}: {reason}: the rule cannot clear it (measure A and B again on a quiet "
                   "machine)" + load_note(a, b), basis=LOAD, cpu_ratio=cpu_b)


def _by_time(a: Sample, b: Sample, threshold: float, alpha: float) -> Verdict:
    """B against A by the counts, then the passes' wall time and CPU time as rule (3) reads them."""
    ta, tb = a.time_s, b.time_s
    if not (np.isfinite(ta) and np.isfinite(tb)) or ta <= 0 or tb <= 0:
        return Verdict("unknown", float("nan"), float("nan"), "no usable time (" + ", ".join(
            f"{side} {_time_text(t)}" for side, t in (("A", ta), ("B", tb)) if not (np.isfinite(t) and t > 0)) + ")", basis=NOTHING)
    ratio = tb / ta
    word = "slower" if ratio > 1 else "faster"
    if max(ratio, 1 / ratio) < threshold:
        return Verdict("tie", ratio, float("nan"), f"within {threshold:g}x", basis=THRESHOLD_BASIS)
    estimated = _extrapolated(a, b)
    fast, slow = (a, b) if word == "slower" else (b, a)
    change, what = work_change(a, b)
    if change == "kind":        # a local file's reads against GETs: what was measured, not a count's estimate
        return Verdict(word, ratio, float("nan"), f"different work: {what}", basis=WORK)
    if not estimated:
        if _gets_differ(a, b):
            return Verdict(word, ratio, float("nan"), f"different work: {what}", basis=WORK)
        up = _counts_up(fast, slow)
        if up:
            # rule (1): the slower side did materially more of some I/O (all of it, or a mix: fewer but bigger reads)
            return Verdict(word, ratio, float("nan"), f"{'different' if change == 'mixed' else 'more' if word == 'slower' else 'less'} work: {what}"
                           + (f" (up on the slower side: {up})" if change == "mixed" else ""), basis=WORK)
    else:
        change, what = "unknown", ""
    v = _by_passes(a, b, fast, slow, ratio, word, change, what, threshold, alpha)
    if estimated and v.word not in ("slower", "faster"):
        # an extrapolated cell's counts and passes are estimates: only measured passes that decide may stand
        return Verdict("undecided", ratio, v.p, f"{estimated}; {v.why}", basis=ESTIMATED)
    return v


def _by_passes(a: Sample, b: Sample, fast: Sample, slow: Sample, ratio: float, word: str, change: str, what: str,
               threshold: float, alpha: float) -> Verdict:
    """Rules (2) and (3): the same work, or less of it on the slower side."""
    waited = endpoint_slower(fast, slow, threshold)
    if waited is not None:
        wa, wb = float(np.median(a.wait)), float(np.median(b.wait))
        grew = f"GET wait {_secs(wa)} -> {_secs(wb)} a pass, the same GETs, {waited}"
        return Verdict(word, ratio, float("nan"),
                       f"the GETs waited {'longer' if word == 'slower' else 'less'} ({grew}): the two read through "
                       "different storage settings" if a.path != b.path else
                       f"the endpoint/network is {word} ({grew}): not this machine's load" + load_note(a, b), basis=ENDPOINT)
    same = ("the same work" if change == "same" else "different work (" + what + ")" if what else
            "estimated work" if not (a.complete and b.complete) else "unmeasured work")
    fp, sp, fc, sc, quiet = _quiet_passes(fast, slow)
    slow_quieted = bool(quiet) and len(sp) < len(slow.passes)
    n_f, n_s = len(fp), len(sp)
    n_a, n_b = (n_f, n_s) if fast is a else (n_s, n_f)
    if n_a < 1 or n_b < 1:
        return Verdict("undecided", ratio, float("nan"), f"{same}; no passes recorded" + load_note(a, b), basis=FEW)
    if n_a == 1 and n_b == 1 and change in ("same", "unknown"):
        return Verdict("unknown", ratio, float("nan"), "one pass each: cannot tell noise from a difference"
                       + load_note(a, b), basis=NOTHING)
    p = pass_p(sp, fp)
    # cells that wait for different things (an emulated 20 ms per GET against none): the wall time is the test,
    # the CPU time says nothing about it
    waits_differ = a.path != b.path
    has_cpu = len(fc) == n_f and len(sc) == n_s and not waits_differ
    apart = (min(n_f, n_s) >= MIN_PASSES_APART and fp.max() < sp.min()
             and (waits_differ or (has_cpu and fc.max() < sc.min())))
    decided = p < alpha or apart
    # the CPU time's bar (cpu_bar): up to CONTENTION_SLOWDOWN is the competitors' when the slower side had more
    slow_crowded = more_crowded(fast, slow) or crowded(slow)
    bar = cpu_bar(fast, slow, threshold)
    cpu_ratio = float(np.median(sc)) / max(float(np.median(fc)), 1e-12) if has_cpu else float("nan")
    counted = f"{n_a} vs {n_b} passes" + quiet
    if has_cpu and cpu_ratio >= bar:
        moved = f"CPU time per pass {format_ratio(cpu_ratio)} (beyond {format_ratio(bar)})"
        if not decided:
            return Verdict("undecided", ratio, p, f"{same}; {moved} but the passes are not apart ({counted}, "
                           f"{fmt_p(p)})" + _short(n_a, n_b, alpha) + load_note(a, b), basis=PASSES)
        cut_room = max(COMPETITORS_CUT_CPU, cpu_ceiling(fast, slow))
        if cpu_share_cut(fast, slow) and cpu_ratio < cut_room:
            # competitors that cut a pass's share of a CPU also evict what it kept in the CPU's caches between passes:
            # a 2-request pass's own CPU time rose 5.3x, every pass apart, identical work under 4 busy loops and a
            # memory-bound one (benchmarks/noisy_compare.py, B and F); beyond that it is the cell's (breaker14 E3: 26.8x
            # was undecided)
            return Verdict("undecided", ratio, p, f"{same}; {moved}, but measured under competitors"
                           + share_note(fast, slow) + f", which raise a pass's own CPU time too (identical work's "
                           f"rose 5.3x so; a regression only beyond {format_ratio(cut_room)}): the rule cannot clear it (measure both again on a "
                           "quiet machine, or ccp compare --remeasure)" + load_note(a, b), basis=LOAD)
        if slow_crowded and cpu_ratio < bar * CONTENTION_SLOWDOWN:
            # a few-ms pass's own CPU time rose up to 1.9x under two busy loops the load average had not caught up
            # with yet (benchmarks/noisy_compare.py): a regression or the competitors, the rule cannot tell
            return Verdict("undecided", ratio, p, f"{same}; {moved}, within the {format_ratio(bar * CONTENTION_SLOWDOWN)} "
                           "competitors can cost a pass measured under contention" + share_note(fast, slow)
                           + ": the rule cannot clear it (measure both again on a quiet machine)" + load_note(a, b),
                           basis=LOAD)
        if not (min(len(fc), len(sc)) >= MIN_PASSES_APART and fc.max() < sc.min()):
            # the medians beyond the bar but a pass of the faster side cost as much CPU as one of the slower: identical
            # work's CPU time per pass moved 2.1x within one run and 2.51x between two, every count equal (breaker12
            # D1: a pass at 3.30 ms, the others 6.59-6.92, against 2.64-3.69): a witness only when every pass is apart
            return Verdict("undecided", ratio, p, f"{same}; {moved}, but not every pass apart in CPU time (the "
                           f"faster side's costliest {_secs(float(fc.max()))}, the slower's cheapest "
                           f"{_secs(float(sc.min()))}): the same work's CPU time per pass moves so on a busy machine, "
                           "the rule cannot clear it (measure both again on a quiet machine, or ccp compare "
                           "--remeasure)" + load_note(a, b), basis=LOAD)
        ceiling = cpu_ceiling(fast, slow)
        if cpu_ratio < ceiling:
            # every pass apart in CPU time, but each side's passes share one process and its minutes (RUNS_CPU,
            # WORKERS_CPU: identical work moved so between two runs, and between two cells of one run): a regression
            # or the process, the rule cannot tell. Two runs: --remeasure can clear it (the load's advice); two cells of
            # one run: nothing the run can do, said in the verdict's own reason (the basis of the passes, not the load)
            runs = separate_runs(fast, slow)
            remedy = ("ccp compare --remeasure measures both again alternating in one process" if runs else
                      "a run replicates a cell's passes in one worker, not the worker: more passes cannot clear it")
            return Verdict("undecided", ratio, p, f"{same}; {moved}, every pass apart, but within the {format_ratio(ceiling)} "
                           f"the same work's CPU time per pass moves {ceiling_text(fast, slow)}: the rule cannot "
                           f"clear it ({remedy})" + load_note(a, b), basis=LOAD if runs else PASSES)
        how = "every pass apart in wall and CPU time" if apart and not p < alpha else f"Mann-Whitney on passes, {fmt_p(p)}"
        return Verdict(word, ratio, p, f"{how}; {moved}" + ("" if change == "same" else f"; {same}") + load_note(a, b), basis=PASSES)
    if waits_differ and decided:
        how = "every pass apart in wall time (the two wait for different things)" if apart and not p < alpha else \
            f"Mann-Whitney on passes, {fmt_p(p)}"
        return Verdict(word, ratio, p, how + ("" if change == "same" else f"; {same}"), basis=PASSES)
    pass_ratio = float(np.median(sp)) / max(float(np.median(fp)), 1e-12)
    if least_p(n_a, n_b) >= alpha and pass_ratio >= threshold:
        return Verdict("undecided", ratio, p, f"{same}; {too_few_passes(n_a, n_b, alpha)}" + quiet + load_note(a, b), basis=FEW)
    if not decided and (fast.summary or slow.summary) and pass_ratio >= threshold:
        # a run without requests.parquet keeps its fastest, median and slowest pass only: order statistics of an
        # unknown number of passes, no sample to test (breaker9 G6)
        return Verdict("undecided", ratio, p, f"{same}; a side's passes not recorded (its cells row keeps the "
                       "fastest, median and slowest only): nothing to test them with" + load_note(a, b), basis=FEW)
    if not decided and pass_ratio >= threshold and not (has_cpu and cpu_ratio < bar):
        # the passes overlap, their medians beyond the threshold, and no CPU time shows the work per pass the same:
        # one slow pass on the faster side (a load spike, a warm run's first pass) makes the test fail while every
        # pass of the other side is 8-17x its median (breaker10 B8: a 14.8x CPU regression passed as the machine's)
        return Verdict("undecided", ratio, p, f"{same}; passes not apart (Mann-Whitney on {counted}, {fmt_p(p)}) but "
                       f"their medians {format_ratio(pass_ratio)} apart and no CPU time per pass on both sides to show the work "
                       "the same: the load cannot be ruled out" + load_note(a, b), basis=LOAD)
    if not decided:
        # enough passes and they overlap, or the passes themselves within the threshold (the row's median moved,
        # the passes did not): no difference to explain
        return Verdict("noise", ratio, p, f"{same}; passes not apart (Mann-Whitney on {counted}, {fmt_p(p)}"
                       + (f"; the passes within {format_ratio(pass_ratio)}" if pass_ratio < threshold else "") + ")"
                       + load_note(a, b), basis=PASSES)
    if not has_cpu:
        # passes apart in wall time alone: load shifts whole passes, and without the CPU time (a run before schema 4,
        # or without requests.parquet) nothing tells the machine's from the cells' (breaker8 F5)
        return Verdict("undecided", ratio, p, f"{same}; passes apart ({fmt_p(p)}) but CPU time not recorded on both "
                       "sides: the load cannot be ruled out (ccp compare --remeasure "
                       f"{passes_needed(alpha)} decides, for local cells)" + load_note(a, b), basis=LOAD)
    # less CPU time on the slower side is waiting (competitors, I/O), not a small rise (breaker11 C6)
    # within 1.25x either way it is no more a fall than a rise (breaker12 D3: "fell (0.99x)" on identical work)
    moved = f"moved only {format_ratio(cpu_ratio)}" if cpu_ratio >= 1 / THRESHOLD else \
        f"fell ({cpu_ratio:.2g}x): the slower side waited, not worked"
    # judged on the slower side's quiet passes: its load (the busiest pass's) excuses nothing of them. Where both runs
    # recorded each pass's wait for a CPU (schema 7) that decides, not the 1-minute load average: a pass that slept or
    # waited on a lock is no slower for the machine's load (breaker13 E4: the load excused a 6.41x sleep)
    by_run_queue = records_run_delay(fast, slow)
    # a faster side whose passes got under CROWDED_SHARE of a CPU had its own CPU time raised by its competitors (up to
    # 3.7x), so the slower side's "within the bar" shows nothing of its work (breaker14 E2: a planted bounce-buffer
    # regression, 1.31x of an inflated baseline, passed as the machine's)
    fast_crowded = crowded(fast)
    if slow_quieted or fast_crowded:
        excuse = ""
    elif by_run_queue:
        excuse = run_queue_explains(fast, slow, threshold)
    else:
        excuse = load_explains(fast, slow, max(ratio, 1 / ratio))
    if excuse:
        return Verdict("noise", ratio, p, f"{same}; the CPU time per pass {moved}; {excuse}" + load_note(a, b), basis=LOAD)
    why_not = ("its quiet passes had no load to excuse them" if slow_quieted else
               f"the faster side's passes got {fast.cpu_share:.2f} of a CPU: its competitors raised its CPU time per "
               "pass too, so the CPU time cannot show the work the same" if fast_crowded else
               "less the time they waited for a CPU (runnable, not running) its passes are still beyond the threshold: "
               "they waited for something else (a sleep, a lock, I/O) or worked more" if by_run_queue else
               why_no_excuse(fast, slow, max(ratio, 1 / ratio)))
    return Verdict("undecided", ratio, p, f"{same}; the passes are apart ({fmt_p(p)}) in wall time but the CPU time per "
                   f"pass {moved}, and {why_not}: "
                   "the rule cannot clear it (measure both again on a quiet machine)" + load_note(a, b), basis=LOAD)


def _short(n_a: int, n_b: int, alpha: float) -> str:
    return f"; {too_few_passes(n_a, n_b, alpha)}" if least_p(n_a, n_b) >= alpha else ""


def _time_text(t: float) -> str:
    if not np.isfinite(t):
        return "not a number" if np.isnan(t) else "infinite"
    return "0 s" if t == 0 else f"{t:g} s (negative)"


def _extrapolated(a: Sample, b: Sample) -> str:
    """Why the pair's counts and passes are estimates, or "": a cell timed on a prefix of its requests (a time
    budget) had its counts and time extrapolated from that prefix, never measured (breaker9 G21)."""
    parts = [f"{side} extrapolated" + (f" from {_count(s.timed)} of {_count(s.n_requests)} requests a pass"
                                       if np.isfinite(s.timed) and np.isfinite(s.n_requests) else "")
             for side, s in (("A", a), ("B", b)) if not s.complete]
    if not parts:
        return ""
    return ("; ".join(parts) + ": counts and times estimated, not measured (run the cell whole, without "
            "--time-budget, or ccp compare --remeasure for local cells)")


def _counts_up(fast: Sample, slow: Sample) -> str:
    """The counts the slower side did materially more of (each beyond MATERIAL of the smaller), as text; "" none."""
    if not fast.work or not slow.work:
        return ""
    df, ds = dict(fast.work), dict(slow.work)
    up = [(k, df[k], ds[k]) for k in WORK_COLUMNS if k in df and k in ds and _material(df[k], ds[k]) and ds[k] > df[k]]
    return ", ".join(f"{k.replace('_', ' ')} {_count(vf)} -> {_count(vs)}" for k, vf, vs in up[:3])


def _material(x: float, y: float) -> bool:
    """Two counts differ by at least MATERIAL of the smaller (+0.01% explains nothing: breaker9 G22)."""
    return x != y and abs(y - x) >= MATERIAL * min(abs(x), abs(y))


def _quiet_passes(fast: Sample, slow: Sample):
    """(fast passes, slow passes, fast CPU, slow CPU, note): each side's passes, less its contended ones when the run
    recorded the load per pass and enough quiet ones are left (one busy pass of five does not make a run busy)."""
    out, note = [], ""
    for s in (fast, slow):
        passes, cpu = s.passes, s.cpu
        busy = s.pass_busy
        if len(busy) == len(passes) and busy.any() and (~busy).sum() >= passes_needed():
            passes = passes[~busy]
            cpu = cpu[~busy] if len(cpu) == len(busy) else cpu
            note = " (their quiet passes)"
        out += [passes, cpu]
    return out[0], out[2], out[1], out[3], note
