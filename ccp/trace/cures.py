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
MAX_TOUCHED = 20_000_000  # (request, chunk) pairs listed at once; beyond, working sets are bounded from boxes
BATCH = 200_000           # requests handled at a time by the functions over a whole sequence


def next_prime(n: int) -> int:
    n = max(int(n), 2)
    while any(n % p == 0 for p in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def cache_for(nbytes: int, chunk_bytes: int) -> ChunkCache:
    """A cache of ``nbytes`` with a prime slot count about 100x the chunks it holds."""
    held = max(1, nbytes // max(chunk_bytes, 1))
    return ChunkCache(int(nbytes), next_prime(min(max(100 * held, MIN_NSLOTS), MAX_NSLOTS)), DEFAULT_W0)


def most_common_row(rows: np.ndarray, shape, mask: np.ndarray | None = None) -> tuple[int, ...]:
    """The most frequent row of ``rows`` (of ``rows[mask]`` when given; values within 0..shape), ties to the
    smallest: one int64 key per row where the shape allows, counted a batch at a time (np.unique over rows
    sorts them lexicographically, ~10x slower, and needs the rows copied)."""
    rows = np.asarray(rows, np.int64)
    base = np.asarray(shape, np.int64) + 1
    if len(rows) and float(np.prod(base.astype(float))) < 2.0 ** 62:
        mult = np.concatenate([np.cumprod(base[::-1])[::-1][1:], [1]])
        keys, freqs = [], []
        for a in range(0, len(rows), BATCH):
            part = rows[a:a + BATCH] if mask is None else rows[a:a + BATCH][mask[a:a + BATCH]]
            if not ((part >= 0).all() and (part < base).all()):
                break
            k, f = np.unique(part @ mult, return_counts=True)
            keys.append(k)
            freqs.append(f)
        else:
            k, inverse = np.unique(np.concatenate(keys), return_inverse=True)
            freq = np.bincount(inverse.ravel(), weights=np.concatenate(freqs), minlength=len(k))
            if len(k):
                key = int(k[int(np.argmax(freq))])
                return tuple(int(key // m % b) for m, b in zip(mult, base))
    picked = rows if mask is None else rows[mask]
    shapes, freq = np.unique(picked, axis=0, return_counts=True)
    return tuple(int(x) for x in shapes[int(np.argmax(freq))])


def chunk_candidates(seq: ReplaySequence) -> list[tuple[int, ...]]:
    """Chunk shapes like the most common read: as it is, and grown to 64 KiB and 1 MiB (at most 4 MiB)."""
    is_read = np.empty(len(seq.ops), bool)
    for a in range(0, len(is_read), BATCH):
        is_read[a:a + BATCH] = seq.ops[a:a + BATCH] == "read"
    if not is_read.any():
        return []
    base = list(most_common_row(seq.plan.counts, seq.shape, is_read))
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




def selected_before(x: np.ndarray, start: np.ndarray, count: np.ndarray, stride: np.ndarray,
                    block: np.ndarray) -> np.ndarray:
    """Elements of a strided selection along one dimension (blocks of ``block``, ``stride`` apart in
    ``start + [0, count)``; ``RequestPlan``'s form) below ``x``, elementwise."""
    y = np.clip(x - start, 0, count)
    step = np.maximum(stride, 1)
    return (y // step) * block + np.minimum(y % step, block)


def holds_selection(coords: np.ndarray, chunks, starts, counts, strides, blocks) -> np.ndarray:
    """Per row: whether chunk ``coords[i]`` (scaled) holds an element request i selects, its box touching it:
    False where a strided dimension's blocks pass the chunk by (HDF5 does not visit it)."""
    keep = np.ones(len(coords), bool)
    for d in range(coords.shape[1] if coords.ndim == 2 else 0):
        s, c, t, b = starts[:, d], counts[:, d], strides[:, d], blocks[:, d]
        strided = b < c
        if strided.any():
            lo = coords[:, d] * int(chunks[d])
            inside = selected_before(lo + int(chunks[d]), s, c, t, b) - selected_before(lo, s, c, t, b)
            keep &= ~strided | (inside > 0)
    return keep


def touched_chunks(shape, chunks, starts: np.ndarray, counts: np.ndarray, strides: np.ndarray | None = None,
                   blocks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(request index, C-order chunk index) of every chunk each request touches, in request then C order;
    ``strides``/``blocks`` (a plan's strided requests): only the chunks holding selected elements.

    Vectorised one dimension at a time; None when there would be more than MAX_TOUCHED pairs (of the requests'
    boxes)."""
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
    if strides is not None and blocks is not None and len(lin) and (blocks < counts).any():
        coords = np.stack(np.unravel_index(lin, tuple(int(g) for g in grid)), axis=1).astype(np.int64)
        coords = coords.reshape(len(lin), starts.shape[1])
        keep = holds_selection(coords, chunks, starts[ids], counts[ids], strides[ids], blocks[ids])
        ids, lin = ids[keep], lin[keep]
    return ids, lin


def touched_count(shape, chunks, starts: np.ndarray, counts: np.ndarray) -> float:
    """How many (request, chunk) pairs :func:`touched_chunks` would list, counted a batch at a time."""
    ch = np.asarray(chunks, np.int64)
    total = 0.0
    for a in range(0, len(starts), BATCH):
        st, ct = starts[a:a + BATCH], counts[a:a + BATCH]
        span = np.where((ct > 0).all(axis=1, keepdims=True), (st + ct - 1) // ch - st // ch + 1, 0)
        total += float(np.prod(span.astype(float), axis=1).sum())
    return total


def partial_requests(seq: ReplaySequence, chunks) -> np.ndarray:
    """Per request: whether it covers only part of some chunk it touches (exact for boxes; a strided one covers
    its chunks whole only if its blocks and their gaps are whole chunks)."""
    ch = np.asarray(chunks, np.int64)
    shape = np.asarray(seq.shape, np.int64)
    out = np.empty(len(seq.plan), bool)
    for a in range(0, len(out), BATCH):          # a batch at a time: no (n, rank) temporaries of the whole plan
        st, ct = seq.plan.starts[a:a + BATCH], seq.plan.counts[a:a + BATCH]
        end = st + ct
        aligned = (st % ch == 0) & ((end % ch == 0) | (end == shape))
        sd, bk = seq.plan.hyperslab(a, a + BATCH)
        if sd is not None and bk is not None:
            aligned &= (bk >= ct) | ((bk % ch == 0) & (sd % ch == 0))
        out[a:a + BATCH] = ~aligned.all(axis=1) & (ct > 0).all(axis=1)
    return out


def block_batches(seq: ReplaySequence):
    """:func:`block_sequence`'s whole-chunk requests a batch of ``seq``'s requests at a time: per batch
    (the request each block comes from, the block's C-order chunk index, its session), the last chunk carried
    over so a run of requests in one chunk is one block across batches too. Needs at most MAX_TOUCHED pairs."""
    last_lin = last_sess = -1
    for a in range(0, len(seq.plan), BATCH):
        pairs = touched_chunks(seq.shape, seq.chunks, seq.plan.starts[a:a + BATCH], seq.plan.counts[a:a + BATCH],
                               *seq.plan.hyperslab(a, a + BATCH))
        assert pairs is not None, "fewer pairs than MAX_TOUCHED in all, so in a batch"
        req, lin = pairs
        req = req + a
        sess = np.searchsorted(seq.session_starts, req, side="right") - 1
        first = np.ones(len(lin), bool)
        first[1:] = (lin[1:] != lin[:-1]) | (sess[1:] != sess[:-1])
        if len(lin):
            first[0] = lin[0] != last_lin or sess[0] != last_sess
            last_lin, last_sess = int(lin[-1]), int(sess[-1])
        yield req[first], lin[first], sess[first]


def block_boxes(seq: ReplaySequence, lin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, counts) of whole chunks given by C-order index (edge chunks clipped to the shape)."""
    assert seq.chunks is not None, "whole-chunk reads need a chunked layout"
    rank = len(seq.shape)
    grid = ChunkGrid(seq.shape, seq.chunks).grid
    ch = np.asarray(seq.chunks, np.int64)
    lo = np.empty((len(lin), rank), np.int64)
    cnt = np.empty((len(lin), rank), np.int64)
    for a in range(0, len(lin), BATCH):
        coords = np.stack(np.unravel_index(lin[a:a + BATCH], grid), axis=1).astype(np.int64).reshape(-1, rank)
        lo[a:a + BATCH] = coords * ch
        cnt[a:a + BATCH] = np.minimum(ch, np.asarray(seq.shape, np.int64) - lo[a:a + BATCH])
    return lo, cnt


def block_sequence(seq: ReplaySequence) -> ReplaySequence:
    """The requests as whole chunks: each run of requests inside one chunk becomes one read of it."""
    if touched_count(seq.shape, seq.chunks, seq.plan.starts, seq.plan.counts) > MAX_TOUCHED:
        return _block_sequence_loop(seq)
    assert seq.chunks is not None, "whole-chunk reads need a chunked layout"
    parts = list(block_batches(seq))
    req, lin, sess = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64) for i in range(3))
    del parts
    starts_of = np.flatnonzero(np.diff(sess, prepend=-1) != 0)
    first_sessions = sess[starts_of]
    del sess
    lo, cnt = block_boxes(seq, lin)
    return replace(seq, ops=seq.ops[req], plan=RequestPlan(lo, cnt), call_of=np.arange(len(lin), dtype=np.int64),
                   session_starts=starts_of.astype(np.int64),
                   session_caches=tuple(seq.session_caches[int(s)] for s in first_sessions),
                   session_pids=tuple(seq.session_pids[int(s)] for s in first_sessions), ncalls=len(lin))


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
        strides, blocks = seq.plan.hyperslab(i, i + 1)
        for c in grid.chunks_touched(tuple(seq.plan.starts[i]), tuple(seq.plan.counts[i])):
            if c == last or (strides is not None and not holds_selection(
                    np.asarray([c], np.int64), seq.chunks, seq.plan.starts[i:i + 1], seq.plan.counts[i:i + 1],
                    strides, blocks)[0]):
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
