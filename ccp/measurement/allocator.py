"""The measuring process's memory allocator, set the same in every run.

glibc's malloc maps a block at or above its mmap threshold afresh (page faults, the kernel zeroing its pages) and
returns it on free; the threshold rises as the process frees large blocks, and a forked worker inherits its parent's.
So a run whose parent had generated and freed the sweep's data (the run that wrote its work files) read a cell's
2-4 MiB chunks into reused heap memory, and a run that reused those files mapped them afresh on every read: the same
cell's CPU time per pass 3.5-6.3 ms against 10.6-16.8 ms, every run of each kind (breaker14 E1; /tmp/e1: 4.9 against
15 ms, 4.8 with these settings). :func:`steady` fixes both thresholds in the measuring process (as a long-running reader
that has freed such blocks before would have them), so what a run measures no longer depends on what ran before it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

# mallopt's parameters (malloc.h) and the values set: blocks up to 32 MiB (glibc's largest dynamic threshold on 64-bit)
# come from the heap and stay there for the next read; the heap's top is returned to the system above 64 MiB free
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20


@functools.cache
def _mallopt():
    """The C library's mallopt, or None (not glibc). Looked up once a process: find_library runs ldconfig, which every
    measure() (a cell, a remeasured pass) would run again."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


def settings() -> dict:
    """What :func:`steady` sets in a measuring process, as a run records it (env.json), without setting it here: {}
    where the C library has no mallopt."""
    return {"mmap_threshold": MMAP_THRESHOLD, "trim_threshold": TRIM_THRESHOLD} if _mallopt() is not None else {}


def steady() -> dict:
    """Set this process's glibc malloc thresholds (MMAP_THRESHOLD, TRIM_THRESHOLD); what was set, as a run records it:
    {} where the C library has no mallopt (not glibc) or refused."""
    mallopt = _mallopt()
    if mallopt is None or mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1 \
            or mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return {}
    return settings()
