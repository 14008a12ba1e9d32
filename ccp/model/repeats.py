"""Where a request plan repeats itself: runs of requests that are the same requests again, P apart.

A program that reads the same selections over and over (an epoch loop, a benchmark, a test) gives a plan
whose requests ``[s, e)`` satisfy ``request[i] == request[i - P]``. The chunk cache is a deterministic
machine: if its state after one period of such a run equals its state before, every later period of the run
gives the same counts and leaves the same state, so the model may walk one period and copy its counts
(:meth:`ccp.model.fast._Handle.feed_plan` does, and checks the state equality itself). This module only finds
the runs: a hash per request, the previous request with the same hash (as far as a table of TABLE_SLOTS
remembers), and the run that distance extends to; every run returned is checked on the requests themselves (a hash collision costs a missed run, never a
wrong one).
"""

from __future__ import annotations

import numba
import numpy as np

MIN_PERIODS = 3          # a run worth walking once: at least this many periods (one walked, one checked, the rest copied)
TABLE_SLOTS = 1 << 15    # _previous_same's table: 512 KiB
_MIX = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def _row_hashes(codes, starts, counts):
    """One 64-bit hash a request (op code, start and count in every dimension)."""
    n, rank = starts.shape
    out = np.empty(n, np.uint64)
    for i in range(n):
        h = np.uint64(codes[i]) + _MIX
        for d in range(rank):
            for v in (starts[i, d], counts[i, d]):
                h ^= np.uint64(v) + _MIX + (h << np.uint64(6)) + (h >> np.uint64(2))
                h *= np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(31)
        out[i] = h
    return out


@numba.njit(cache=True, nogil=True)
def _previous_same(h):
    """For each request, the index of the last earlier request with the same hash, or -1: none, or forgotten. A
    direct-mapped table of at most TABLE_SLOTS entries (it stays in the CPU's cache: a table as big as the plan
    cost 40 ms per 200,000 requests); a hash that shares its slot with another one since is forgotten, which costs
    a missed run at worst (one previous request found in a run's second period is enough)."""
    n = h.shape[0]
    size = 1
    while size < 2 * n and size < TABLE_SLOTS:
        size *= 2
    mask = np.uint64(size - 1)
    keys = np.zeros(size, np.uint64)
    last = np.full(size, -1, np.int64)
    prev = np.full(n, -1, np.int64)
    for i in range(n):
        slot = (h[i] ^ (h[i] >> np.uint64(29))) & mask
        if last[slot] >= 0 and keys[slot] == h[i]:
            prev[i] = last[slot]
        keys[slot] = h[i]
        last[slot] = i
    return prev


@numba.njit(cache=True, nogil=True)
def _candidate_runs(h, prev, min_periods):
    """Runs ``(start, end, period)``, in order and disjoint, where the hashes repeat with that period for at least
    ``min_periods`` periods. Greedy: at request i the period is the distance to the last request with the same
    hash, tried at the next request when it does not last; once the failed tries compared 8 hashes a request, a
    distance that does not last is skipped past instead (linear time; a run missed costs only time)."""
    n = h.shape[0]
    out = np.empty((n // max(min_periods, 1) + 1, 3), np.int64)
    k = 0
    last_end = 0
    i = 0
    work = 0
    budget = 8 * n + 1024
    while i < n:
        j = prev[i]
        if j < 0:
            i += 1
            continue
        p = i - j
        length = 0
        while i + length < n and h[i + length] == h[j + length]:
            length += 1
        end = i + length
        start = max(j, last_end)
        while start > last_end and h[start - 1] == h[start - 1 + p]:      # it may have begun before j
            start -= 1
            length += 1
        if end - start >= min_periods * p:
            out[k, 0] = start
            out[k, 1] = end
            out[k, 2] = p
            k += 1
            last_end = end
            i = end
        else:
            work += length
            i += 1 if work < budget else length + 1     # past the budget, a distance that failed is skipped past
    return out[:k]


def periodic_runs(codes: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                  min_periods: int = MIN_PERIODS) -> list[tuple[int, int, int]]:
    """Runs ``(start, end, period)`` of a plan (op codes ``(n,)``, int64 starts and counts ``(n, rank)``) in which
    every request equals the one ``period`` before it (checked on the requests, not on their hashes), each at least
    ``min_periods`` periods long; in order, disjoint."""
    if len(codes) < min_periods:
        return []
    h = _row_hashes(codes, starts, counts)
    runs = []
    for s, e, p in _candidate_runs(h, _previous_same(h), min_periods).tolist():
        if (np.array_equal(codes[s + p:e], codes[s:e - p]) and np.array_equal(starts[s + p:e], starts[s:e - p])
                and np.array_equal(counts[s + p:e], counts[s:e - p])):
            runs.append((s, e, p))
    return runs
