"""Who else was on the machine: a side's load per CPU and the share of a CPU its passes got, what they excuse of a
slowdown and what they raise a pass's own CPU time by. The verdict rule (:mod:`ccp.report.stats`) asks these; the
share (``cpu_ratio``, CPU over wall time of the passes) is the load-proof one: competitors cut it at once, while the
1-minute load average lags a minute and can point the other way (breaker10 B1)."""

from __future__ import annotations

import numpy as np

from ccp.report.sample import REMEASURED, Sample
from ccp.units import format_ratio

CONTENTION_SLOWDOWN = 1.5      # how much more than load / CPUs a contended pass may be slowed (shared caches, SMT)
# what competitors may raise a pass's own CPU time by: 1.57x under three busy loops (breaker10 B1), 1.9-1.94x under
# one memory-bound process whose CPU share showed nothing (breaker11); the CPU time alone decides only beyond it
# and 2.28-2.51x with no competitor's share cut to show it, every pass apart, on this shared VM (breaker12 D1; the
# run-delay runs' Q1 -> Q3, tests/report/data/run_delay_passes.json): a per-instruction slowdown no share shows
COMPETITORS_CPU = 3.0
# what the same work's CPU time per pass moved by between two runs of one sweep, every pass apart, nothing recorded to
# show why: 2.82x between two quiet runs minutes apart (tests/report/data/pace_passes.json Q1 -> Q2: a 2-request pass
# at 0.90-1.23 ms against 2.84-2.96), 3.85x under one memory-bound competitor (noisy_compare F, 08:22), 4.05x between
# two runs of a tester's on a busy machine, their shares uncut (breaker14 E1, tests/report/data/breaker14_passes.json),
# 4.28x and 4.55x between a run that wrote its own work files and one that reused them (breaker14 E1: such cells cost
# 3.5-6.3 ms a pass in 14 of 14 runs that wrote them, 10.6-16.8 ms in 16 of 16 that reused them: the malloc thresholds
# a worker inherited, set the same in every measuring process since, ccp.measurement.allocator),
# 4.77x under one memory-bound competitor (noisy_compare F at 64d956d, 11:30) (the largest seen since).
# A run measures each cell's passes in one forked worker, so its passes share that process's memory (where its pages
# lie, what the CPU's caches keep, which other tenants of this VM's host thrash) and the machine's state of those
# seconds: they replicate the pass, not the process or the run. Two separate runs' CPU times alone witness a
# difference only beyond this; passes measured alternating in one process (compare --remeasure) share all of that,
# and their bar is the pass's own
RUNS_CPU = 6.0
RUNS_SEEN = 4.77               # the largest of those, the one a verdict names
# what the same work's CPU time per pass moved by between two cells of one run, every pass apart: a run measures each
# cell in its own forked worker, so its cells differ by the worker as two runs do, over seconds rather than minutes:
# cells that differ only in a chunk cache all of them fit in moved up to 2.05x, at random among the caches (4 caches,
# 12 groups, 16 runs quiet, under a memory-bound competitor, under one switched on and off every 4 s:
# benchmarks/identical_cells.py, tests/report/data/identical_cells.json); with the pass's bar alone the report
# called one of two such cells 1.72x slower (Mann-Whitney p = 0.0079, its CPU time 1.8x). The CPU time alone decides
# between two cells of one run only beyond this
WORKERS_CPU = 2.5
WORKERS_SEEN = 2.05
# what competitors that cut a pass's share of a CPU raise identical work's CPU time per pass by: 5.3x seen (a 2-request
# pass under 4 busy loops and a memory-bound process, noisy_compare B and F); a slower side whose share was cut is a
# regression by its CPU time alone only beyond this (breaker14 E3: 26.8x was "undecided", with no bound at all)
COMPETITORS_CUT_CPU = 6.0
LOAD_MARGIN = 0.5              # "more load" is at least this much more load per CPU ...
LOAD_RATIO = 1.25              # ... and this many times it (equal loads, as --remeasure has, never are)
CROWDED_MARGIN = 0.25          # ... or whose load per CPU was this much higher (above 1)
CROWDED_SHARE = 0.7            # a side whose passes got under this share of the other's CPU share had competitors
MAX_LOAD_PER_CPU = 1000.0      # a recorded load per CPU above this is not a load (a damaged or edited run)


def share_per_cpu(s: Sample) -> float:
    """The side's load per CPU, or NaN when the load or the CPU count is not a valid number (breaker9 G3, G4, G6)."""
    load, cpus = s.load, s.cpus
    if not (np.isfinite(load) and np.isfinite(cpus)) or load < 0 or cpus < 1 or load / cpus > MAX_LOAD_PER_CPU:
        return float("nan")
    return load / cpus


def more_loaded(fast: Sample, slow: Sample) -> bool:
    """The slower side was measured under a really higher load per CPU than the faster (both known): at least
    LOAD_MARGIN more per CPU and LOAD_RATIO times it. Equal loads, as every --remeasure has, never are (G7)."""
    f, s = share_per_cpu(fast), share_per_cpu(slow)
    return bool(np.isfinite(f) and np.isfinite(s) and s >= f + LOAD_MARGIN and s >= f * LOAD_RATIO)


def more_crowded(fast: Sample, slow: Sample) -> bool:
    """The slower side had more competitors for its CPUs: its passes got a clearly smaller share of a CPU than the
    faster's (CROWDED_SHARE: competitors cut it at once, while the 1-minute load average lags and can point the
    other way: breaker10 B1, 0.49 against 0.97 under a decaying 7.7 against a stale 9.0), flagged contended when the
    faster was not, or its load per CPU above 1 and CROWDED_MARGIN above the faster's (both known). Its CPU bar is
    then CONTENTION_SLOWDOWN."""
    if cpu_share_cut(fast, slow):
        return True
    f, s = share_per_cpu(fast), share_per_cpu(slow)
    if np.isfinite(f) and np.isfinite(s):
        # more by at least CROWDED_MARGIN per CPU, half a process on 2 CPUs (breaker10 B4: 2.55 against 2.50 per CPU,
        # printed "5.1 vs 5.1", raised the bar)
        return bool(s >= 1.0 and s >= f + CROWDED_MARGIN) or (slow.contended and not fast.contended and s >= f)
    return slow.contended and not fast.contended


def crowded(s: Sample) -> bool:
    """Its passes got under CROWDED_SHARE of a CPU (recorded) while waiting on no GET: other processes had the rest.
    Equally crowded sides are not "more" crowded, yet competitors raise each side's own CPU time per pass by its own
    amount: identical work's rose 1.68x between two runs whose passes both got 0.29-0.30 of a CPU (breaker12 D1)."""
    return bool(np.isfinite(s.cpu_share) and 0 <= s.cpu_share < CROWDED_SHARE and not waits_on_gets(s))


def waits_on_gets(s: Sample) -> bool:
    """Its passes recorded time waiting on GETs (an S3 cell): a share of a CPU cut by waiting, not by competitors."""
    return len(s.wait) > 0 and bool(np.nansum(s.wait) > 0)


def cpu_share_cut(fast: Sample, slow: Sample) -> bool:
    """The slower side's passes got under CROWDED_SHARE of the CPU share the faster's got (both recorded, the same
    kind of wait: cells that wait for different things differ in share by their work)."""
    f, s = fast.cpu_share, slow.cpu_share
    return bool(np.isfinite(f) and np.isfinite(s) and 0 < f <= 2 and 0 <= s and s < CROWDED_SHARE * f
                and fast.path == slow.path)


def share_note(fast: Sample, slow: Sample) -> str:
    if not cpu_share_cut(fast, slow):
        return ""
    return f" (its passes got {slow.cpu_share:.2f} of a CPU, the faster's {fast.cpu_share:.2f})"


def load_room(fast: Sample, slow: Sample) -> float:
    """The ratio the slower side's higher load explains: CONTENTION_SLOWDOWN x max(1, its load per CPU) over the
    faster's (a process sharing C CPUs at a load of L runs about L / C times slower when L > C)."""
    return CONTENTION_SLOWDOWN * max(1.0, share_per_cpu(slow)) / max(1.0, share_per_cpu(fast))


def load_explains(fast: Sample, slow: Sample, ratio: float) -> str:
    """Why the load ``slow`` was measured under can make its passes ``ratio`` times ``fast``'s, or "": both loads
    known, the slower side's really higher per CPU, and the ratio within what it explains (the CPU bar is the
    caller's)."""
    if not more_loaded(fast, slow):
        return ""
    room = load_room(fast, slow)
    if ratio > room:
        return ""
    return f"the slower side was measured under more load, which explains up to {format_ratio(room)}: the machine's"


def run_queue_explains(fast: Sample, slow: Sample, threshold: float) -> str:
    """Why the slower side's passes are slower, by what each timed part recorded of its wait for a CPU (its run delay,
    schema 7), or "": both sides recorded it for every pass, neither waits on GETs, and the slower side's timed parts
    (wall time over their whole span) less that wait are within ``threshold`` of the faster's less theirs: the rest of the difference is time runnable but
    not running, the competitors' (the caller has found the CPU time per pass within its bar). The share of a CPU
    cannot say this: a sleep, a lock or I/O cut it as competitors do (breaker13 E1: a 50 ms sleep a pass, 2.5-5.7x,
    passed as the machine's by the share), while the run delay counts the CPU's wait alone."""
    if not records_run_delay(fast, slow) or waits_on_gets(fast) or waits_on_gets(slow) or fast.path != slow.path:
        return ""
    # each timed part's wall time less its wait for a CPU, both over the part's whole span (its requests' times leave
    # out the loop between them: in a few-ms pass its run delay exceeded their sum)
    own_f = float(np.median(np.maximum(fast.span - fast.run_delay, 0.0)))
    own_s = float(np.median(np.maximum(slow.span - slow.run_delay, 0.0)))
    if own_f <= 0 or own_s / own_f >= threshold:
        return ""
    df, ds = float(np.median(fast.run_delay)), float(np.median(slow.run_delay))
    return (f"the slower side's passes waited {_ms(ds)} a pass for a CPU (runnable, not running), the faster's "
            f"{_ms(df)}; less that wait they are {format_ratio(own_s / own_f)} the faster's: the machine's")


def separate_runs(a: Sample, b: Sample) -> bool:
    """The two sides' passes were measured by two different runs (their origins known and not the same): each side's
    share their own processes and minutes, so the CPU time alone decides only beyond RUNS_CPU. Cells of one run, and
    the passes compare --remeasure measures alternating in one process, are not."""
    return bool(a.origin and b.origin and a.origin != b.origin)


def one_run(a: Sample, b: Sample) -> bool:
    """Two cells of one run: each measured in its own worker process, seconds or minutes apart (WORKERS_CPU); not the
    passes compare --remeasure measures alternating in one process."""
    return bool(a.origin and a.origin == b.origin and a.origin != REMEASURED)


def cpu_ceiling(light: Sample, heavy: Sample) -> float:
    """The ratio of CPU time per pass, the same work, below which passes measured in two processes witness nothing:
    RUNS_CPU between two runs, WORKERS_CPU between two cells of one run; 0 for passes measured alternating in one
    process (or of unknown origin)."""
    return RUNS_CPU if separate_runs(light, heavy) else WORKERS_CPU if one_run(light, heavy) else 0.0


def ceiling_text(light: Sample, heavy: Sample) -> str:
    """Why the CPU time alone decides only beyond :func:`cpu_ceiling`, in words for a verdict ("" when it is 0)."""
    if separate_runs(light, heavy):
        return (f"between two runs (each measures a cell's passes in one process: where its memory lies and what the "
                f"CPU's caches keep are the run's, not the cell's; identical runs moved up to {RUNS_SEEN:g}x)")
    if one_run(light, heavy):
        return (f"between two cells of one run (each measured in its own worker process: where its memory lies and "
                f"what the CPU's caches keep are the worker's, not the cell's; identical cells moved up to "
                f"{WORKERS_SEEN:g}x)")
    return ""


def records_run_delay(fast: Sample, slow: Sample) -> bool:
    """Both sides recorded every timed part's wait for a CPU (schema 7): that, not the load average, says how much of
    a slowdown was the machine's."""
    return all(len(s.run_delay) == len(s.span) == len(s.passes) > 0 for s in (fast, slow))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def why_no_excuse(fast: Sample, slow: Sample, ratio: float) -> str:
    if not (np.isfinite(share_per_cpu(fast)) and np.isfinite(share_per_cpu(slow))):
        return "the load is not known on both sides"
    if not more_loaded(fast, slow):
        return "the slower side's load per CPU was not really higher"
    return f"its higher load explains only up to {format_ratio(load_room(fast, slow))}"



def load_note(a: Sample, b: Sample) -> str:
    if np.isnan(a.load) and np.isnan(b.load):
        return ""
    return f" (load {load_text(a)} vs {load_text(b)})"


def load_text(s: Sample) -> str:
    if np.isnan(s.load):
        return "not recorded"
    if np.isfinite(share_per_cpu(s)):
        return f"{s.load:.1f}/{s.cpus:g} CPUs"
    return f"{s.load:.3g}/{s.cpus:g} CPUs: not a valid load"
