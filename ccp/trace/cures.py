"""The cures ``ccp diagnose`` proposes, as inputs both the prediction and ``--verify``'s replay use.

A cache of a given size (:func:`cache_for`), chunk shapes like the reads (:func:`chunk_candidates`) and
the traced requests as whole-chunk reads (:func:`block_sequence`). Their own module because
:mod:`ccp.trace.diagnose` predicts with them and :mod:`ccp.trace.verify` measures with them, and
``diagnose --verify`` calls verify: neither imports the other for these.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import DEFAULT_W0, MIN_NSLOTS
from ccp.model import ChunkGrid
from ccp.workload.replay import ReplaySequence
from ccp.workload.requestplan import RequestPlan

MAX_NSLOTS = 1_000_003    # a prime; 8 MB of hash table is the most a cure asks a program to spend on slots


def _next_prime(n: int) -> int:
    n = max(int(n), 2)
    while any(n % p == 0 for p in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def cache_for(nbytes: int, chunk_bytes: int) -> ChunkCache:
    """A cache of ``nbytes`` with a prime slot count about 100x the chunks it holds."""
    held = max(1, nbytes // max(chunk_bytes, 1))
    return ChunkCache(int(nbytes), _next_prime(min(max(100 * held, MIN_NSLOTS), MAX_NSLOTS)), DEFAULT_W0)


def most_common_row(rows: np.ndarray, shape) -> tuple[int, ...]:
    """The most frequent row of ``rows`` (values within 0..shape), ties to the smallest: one int64 key per row
    where the shape allows (np.unique over rows sorts them lexicographically, ~10x slower)."""
    rows = np.asarray(rows, np.int64)
    base = np.asarray(shape, np.int64) + 1
    if len(rows) and float(np.prod(base.astype(float))) < 2.0 ** 62 and (rows >= 0).all() and (rows < base).all():
        mult = np.concatenate([np.cumprod(base[::-1])[::-1][1:], [1]])
        keys, freq = np.unique(rows @ mult, return_counts=True)
        key = int(keys[int(np.argmax(freq))])
        return tuple(int(key // m % b) for m, b in zip(mult, base))
    shapes, freq = np.unique(rows, axis=0, return_counts=True)
    return tuple(int(x) for x in shapes[int(np.argmax(freq))])


def chunk_candidates(seq: ReplaySequence) -> list[tuple[int, ...]]:
    """Chunk shapes like the most common read: as it is, and grown to 64 KiB and 1 MiB (at most 4 MiB)."""
    reads = seq.plan.counts[seq.ops == "read"]
    if not len(reads):
        return []
    base = list(most_common_row(reads, seq.shape))
    full, item = list(seq.shape), seq.itemsize
    out = []
    for target in (0, 64 * 1024, 1024 * 1024):
        shape = list(base)
        for d in reversed(range(len(shape))):          # grow the fastest-varying dims first
            while np.prod(shape) * item < target and shape[d] < full[d]:
                shape[d] = min(full[d], shape[d] * 2)
        for d in range(len(shape)):                    # cut the slowest-varying dims first
            while np.prod(shape) * item > 4 * 1024 * 1024 and shape[d] > 1:
                shape[d] = -(-shape[d] // 2)
        cand = tuple(max(1, x) for x in shape)
        if cand not in out and cand != tuple(seq.chunks or ()):
            out.append(cand)
    return out


MAX_TOUCHED = 20_000_000   # (request, chunk) pairs listed at once; beyond, working sets are bounded from boxes


def touched_chunks(shape, chunks, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(request index, C-order chunk index) of every chunk each request touches, in request then C order.

    Vectorised one dimension at a time; None when there would be more than MAX_TOUCHED pairs."""
    grid = np.asarray(ChunkGrid(tuple(shape), tuple(chunks)).grid, np.int64)
    ch = np.asarray(chunks, np.int64)
    lo = starts // ch
    hi = (starts + counts - 1) // ch
    span_all = np.where((counts > 0).all(axis=1, keepdims=True), hi - lo + 1, 0)
    if float(np.prod(span_all.astype(float), axis=1).sum()) > MAX_TOUCHED:
        return None
    ids = np.arange(len(starts), dtype=np.int64)
    lin = np.zeros(len(starts), np.int64)
    for d in range(starts.shape[1]):
        span = span_all[ids, d]
        rep = np.repeat(ids, span)
        within = np.arange(len(rep), dtype=np.int64) - np.repeat(np.cumsum(span) - span, span)
        lin = np.repeat(lin, span) * grid[d] + lo[rep, d] + within
        ids = rep
    return ids, lin


def partial_requests(seq: ReplaySequence, chunks) -> np.ndarray:
    """Per request: whether it covers only part of some chunk it touches (exact for boxes)."""
    ch = np.asarray(chunks, np.int64)
    st, ct = seq.plan.starts, seq.plan.counts
    end = st + ct
    aligned = (st % ch == 0) & ((end % ch == 0) | (end == np.asarray(seq.shape, np.int64)))
    return ~aligned.all(axis=1) & (ct > 0).all(axis=1)


def block_sequence(seq: ReplaySequence) -> ReplaySequence:
    """The requests as whole chunks: each run of requests inside one chunk becomes one read of it."""
    rank = len(seq.shape)
    pairs = touched_chunks(seq.shape, seq.chunks, seq.plan.starts, seq.plan.counts)
    if pairs is None:
        return _block_sequence_loop(seq)
    req, lin = pairs
    sess_of_req = np.searchsorted(seq.session_starts, np.arange(len(seq.plan)), side="right") - 1
    sess = sess_of_req[req]
    first = np.ones(len(lin), bool)
    first[1:] = (lin[1:] != lin[:-1]) | (sess[1:] != sess[:-1])
    req, lin, sess = req[first], lin[first], sess[first]
    assert seq.chunks is not None, "whole-chunk reads need a chunked layout"
    grid = ChunkGrid(seq.shape, seq.chunks).grid
    coords = np.stack(np.unravel_index(lin, grid), axis=1).astype(np.int64).reshape(-1, rank)
    ch = np.asarray(seq.chunks, np.int64)
    lo = coords * ch
    cnt = np.minimum(ch, np.asarray(seq.shape, np.int64) - lo)
    starts_of = np.flatnonzero(np.diff(sess, prepend=-1) != 0)
    return replace(seq, ops=seq.ops[req], plan=RequestPlan(lo, cnt), call_of=np.arange(len(lin), dtype=np.int64),
                   session_starts=starts_of.astype(np.int64), session_caches=tuple(seq.session_caches[int(s)] for s in sess[starts_of]),
                   session_pids=tuple(seq.session_pids[int(s)] for s in sess[starts_of]), ncalls=len(lin))


def _block_sequence_loop(seq: ReplaySequence) -> ReplaySequence:
    """:func:`block_sequence` one chunk at a time (for sequences touching too many chunks to list at once)."""
    assert seq.chunks is not None, "whole-chunk reads need a chunked layout"
    grid = ChunkGrid(seq.shape, seq.chunks)
    starts: list = []
    counts: list = []
    ops: list = []
    call_of: list = []
    sess: list = []
    last = None
    session_starts = {int(s) for s in seq.session_starts}
    for i in range(len(seq.plan)):
        if i in session_starts:
            sess.append(len(starts))
            last = None
        for c in grid.chunks_touched(tuple(seq.plan.starts[i]), tuple(seq.plan.counts[i])):
            if c == last:
                continue
            last = c
            lo, hi = grid.chunk_box(c)
            starts.append(lo)
            counts.append([h - a for a, h in zip(lo, hi)])
            ops.append(seq.ops[i])
            call_of.append(len(call_of))
    rank = len(seq.shape)
    return replace(seq, ops=np.asarray(ops, dtype=object),
                   plan=RequestPlan(np.asarray(starts, np.int64).reshape(-1, rank), np.asarray(counts, np.int64).reshape(-1, rank)),
                   call_of=np.asarray(call_of, np.int64), session_starts=np.asarray(sess, np.int64), ncalls=len(call_of))
