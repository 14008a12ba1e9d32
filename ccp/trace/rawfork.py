"""A fork Python did not see (libc's ``fork()`` from a C extension or ctypes: no at-fork hook runs), told apart in the
child's buffers (stdlib at import: loaded into traced programs).

Such a child finds its pid changed only at its first write, its buffers holding its parent's calls (the parent's to
write) followed by its own. Dropping them all lost the child's first calls unreported (breaker6 F3: 548 of 5,000).
The kernel gives the child's start time (``/proc/self/stat``, in clock ticks since boot: 10 ms): a call that ended
before that tick began is its parent's, one that began after the tick ended is the child's own. A call inside the
tick cannot be told: it is dropped and counted as lost, and the trace says so (never counted twice, never kept as
the child's when it may be the parent's).
"""

from __future__ import annotations

import os
import time

from ccp.trace.fastpath import WIDTH

MARGIN_NS = 1_000_000       # the two clocks read one after the other, and rounding: a call this near is not told


def start_window_ns() -> tuple[int, int] | None:
    """(earliest, latest) perf_counter_ns this process can have been made at, None when the kernel does not say."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat.rsplit(b")", 1)[1].split()[19])      # field 22: starttime, clock ticks since boot
        tick_ns = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
        boot_less_perf = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.perf_counter_ns()
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    start = ticks * tick_ns - boot_less_perf
    return start - MARGIN_NS, start + tick_ns + MARGIN_NS


def own_calls(flat: list, window: tuple[int, int] | None) -> tuple[list, int]:
    """Of one fast-path list (``WIDTH`` values a call: seq, t0, t1, ...), the calls the child made (a copy), and how
    many calls could not be told (neither surely the parent's nor surely the child's)."""
    calls = len(flat) // WIDTH
    if window is None:
        return [], calls
    earliest, latest = window
    t0, t1 = flat[1::WIDTH], flat[2::WIDTH]
    first_own = calls
    while first_own > 0 and t0[first_own - 1] > latest:      # the child's calls come last: appended after the fork
        first_own -= 1
    parents = sum(1 for end in t1[:first_own] if end < earliest)
    return flat[first_own * WIDTH:calls * WIDTH], first_own - parents


def own_records(buf: list, window: tuple[int, int] | None) -> tuple[list, int]:
    """Of the buffered records, the calls and events the child made (a copy), and how many calls or events could not
    be told. Records with no time (handles, layouts) are the parent's: the child names its live handles again."""
    kept, unknown = [], 0
    for r in buf:
        if type(r) is not dict or "t0_ns" not in r:
            continue
        t0 = r["t0_ns"]
        if window is not None and t0 > window[1]:
            kept.append(r)
        elif window is None or t0 + r.get("wall_ns", 0) >= window[0]:
            unknown += 1
    return kept, unknown
