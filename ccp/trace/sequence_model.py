"""ccp's chunk-cache model run over a traced sequence, and the trace's own costs per call and per chunk.

Shared by the read and the write diagnosis (:mod:`ccp.trace.diagnose`, :mod:`ccp.trace.writes`): the
compiled model (:class:`ccp.model.fast.ArrayModel`, fed the requests in batches) once per session of the
sequence, and the costs fitted on the trace itself that turn its counts into seconds.
"""

from __future__ import annotations

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.model import ChunkGrid
from ccp.model.fast import COLUMNS, ArrayModel
from ccp.trace.cures import (
    BATCH,
    MAX_TOUCHED,
    _block_sequence_loop,
    block_batches,
    block_boxes,
    touched_chunks,
    touched_count,
)
from ccp.workload.replay import ReplaySequence

_HIT, _LOAD, _NW, _NWB = (COLUMNS.index(c) for c in ("chunk_hits", "chunk_loads", "raw_writes", "raw_write_bytes"))
MODEL_BATCH = 200_000      # requests fed to the model at a time (its rows per request are this many at most)
BITMAP_CHUNKS = 1 << 26    # a session's touched chunks are a byte per chunk of the grid up to this many chunks


def _write_codes(seq: ReplaySequence) -> np.ndarray:
    """1 for a write request, 0 for a read, a batch at a time (``seq.ops`` holds Python strings)."""
    out = np.empty(len(seq.ops), np.uint8)
    for a in range(0, len(out), MODEL_BATCH):
        out[a:a + MODEL_BATCH] = seq.ops[a:a + MODEL_BATCH] == "write"
    return out


# ---------------------------------------------------------------------- model over a sequence

def run_model(seq: ReplaySequence, chunks=None, caches=None, merge_sessions: bool = False, per_call: bool = True,
              allocated: bool = True) -> dict:
    """Chunk loads per low-level call (and totals) of ``seq`` under a layout and caches, on the compiled model.

    ``merge_sessions``: one session per process (the file kept open), with its first cache.
    ``per_call=False`` keeps totals only (no per-request rows: a million requests cost no memory).
    ``allocated=False``: the dataset had no chunk when the trace began (created by the program); later
    sessions see what earlier ones wrote, which the model approximates as every chunk allocated.
    """
    chunks = seq.chunks if chunks is None else tuple(chunks)
    n_calls = seq.ncalls
    loads = np.zeros(n_calls if per_call else 0, np.int64)      # per_call=False: no array of the calls' size
    flushes = np.zeros(n_calls if per_call else 0, np.int64)
    tot = np.zeros(len(COLUMNS), np.int64)
    close_flushes = close_bytes = read_loads = 0
    sessions = list(seq.sessions())
    if merge_sessions:
        pid_starts = _pid_starts(seq)
        merged = []
        for a, b in zip(pid_starts, pid_starts[1:] + [len(seq.plan)]):
            cache = next(c for c, s in sessions if s.start >= a)
            merged.append((cache, slice(a, b)))
        sessions = merged
    if caches is not None:
        sessions = [(caches, s) for _, s in sessions]
    codes = _write_codes(seq)
    for k, (cache, sl) in enumerate(sessions):
        params = ChunkCache(int(cache.nbytes), int(cache.nslots), float(cache.w0))
        model = ArrayModel(seq.shape, chunks, seq.itemsize, filtered=seq.filtered and chunks is not None, cache=params,
                           allocated=True if k else allocated, per_request=per_call)
        reads_only = not codes[sl].any()
        for a, b in _batches(seq, sl):       # a batch at a time: no row per request of the whole
            c = model.feed(codes[a:b], seq.plan.starts[a:b], seq.plan.counts[a:b], *seq.plan.hyperslab(a, b),
                           **seq.plan.grouping(a, b))
            tot += c.sum(axis=0)
            if per_call:        # counted over the batch's range of calls (call_of rises with the requests)
                who = seq.call_of[a:b]
                w0, w1 = int(who.min()), int(who.max()) + 1
                loads[w0:w1] += np.bincount(who - w0, weights=c[:, _LOAD], minlength=w1 - w0).astype(np.int64)
                flushes[w0:w1] += np.bincount(who - w0, weights=c[:, _NW], minlength=w1 - w0).astype(np.int64)
                read_loads += int(c[:, _LOAD][codes[a:b] == 0].sum())
            elif reads_only:
                read_loads += int(c[:, _LOAD].sum())
        close = model.close()
        close_flushes += int(close[_NW])
        close_bytes += int(close[_NWB])
    chunk_bytes = int(np.prod(chunks)) * seq.itemsize if chunks else 0
    total_loads = int(tot[_LOAD])
    return {"loads_per_call": loads, "flushes_per_call": flushes, "chunk_loads": total_loads,
            "read_chunk_loads": read_loads, "chunk_hits": int(tot[_HIT]), "chunk_bytes": chunk_bytes,
            "loaded_bytes": total_loads * chunk_bytes, "raw_writes": int(tot[_NW]), "raw_write_bytes": int(tot[_NWB]),
            "close_flushes": close_flushes, "close_flush_bytes": close_bytes, "sessions": len(sessions)}


def _batches(seq: ReplaySequence, sl: slice) -> list[tuple[int, int]]:
    """Requests ``sl`` in batches of about MODEL_BATCH, each ending where a call ends (a call of several boxes, a
    list index or points, is fed to the model whole: one call, each chunk once)."""
    calls = seq.plan.calls
    out, a = [], sl.start
    while a < sl.stop:
        b = min(sl.stop, a + MODEL_BATCH)
        if calls is not None and b < sl.stop and calls[b] == calls[b - 1]:
            b = min(sl.stop, int(np.searchsorted(calls, calls[b - 1], side="right")))    # call_of rises
        out.append((a, b))
        a = b
    return out


def run_blocks(seq: ReplaySequence, allocated: bool = True) -> tuple[int, dict]:
    """(number of whole-chunk requests, ``run_model(block_sequence(seq), per_call=False, allocated=allocated)``),
    the blocks made and fed to the model a batch at a time: never the whole block sequence in memory."""
    if touched_count(seq.shape, seq.chunks, seq.plan.starts, seq.plan.counts) > MAX_TOUCHED:
        blocks = _block_sequence_loop(seq)      # (block_sequence's own choice: the count is known here)
        return blocks.ncalls, run_model(blocks, per_call=False, allocated=allocated)
    chunks = seq.chunks
    assert chunks is not None, "whole-chunk reads need a chunked layout"
    codes = _write_codes(seq)
    tot = np.zeros(len(COLUMNS), np.int64)
    close_flushes = close_bytes = read_loads = nblocks = nsessions = 0
    model: ArrayModel | None = None
    current, writes, loads = -1, False, 0

    def close() -> None:
        nonlocal close_flushes, close_bytes, read_loads
        if model is not None:
            c = model.close()
            close_flushes += int(c[_NW])
            close_bytes += int(c[_NWB])
            read_loads += 0 if writes else loads

    for req, lin, sess in block_batches(seq):
        lo, cnt = block_boxes(seq, lin)
        ops = codes[req]
        cuts = [0, *(np.flatnonzero(np.diff(sess) != 0) + 1).tolist(), len(sess)]
        for a, b in zip(cuts, cuts[1:]):
            if a == b:
                continue
            if int(sess[a]) != current:                  # a new session: a fresh cache (the blocks' session rule)
                close()
                current = int(sess[a])
                cache = seq.session_caches[current]
                params = ChunkCache(int(cache.nbytes), int(cache.nslots), float(cache.w0))
                model = ArrayModel(seq.shape, chunks, seq.itemsize, filtered=seq.filtered, cache=params,
                                   allocated=True if nsessions else allocated, per_request=False)
                nsessions += 1
                writes, loads = False, 0
            assert model is not None
            c = model.feed(ops[a:b], lo[a:b], cnt[a:b])[0]
            tot += c
            writes = writes or bool(ops[a:b].any())
            loads += int(c[_LOAD])
        nblocks += len(lin)
    close()
    chunk_bytes = int(np.prod(chunks)) * seq.itemsize
    total_loads = int(tot[_LOAD])
    return nblocks, {"loads_per_call": np.zeros(0, np.int64), "flushes_per_call": np.zeros(0, np.int64),
                     "chunk_loads": total_loads, "read_chunk_loads": read_loads, "chunk_hits": int(tot[_HIT]),
                     "chunk_bytes": chunk_bytes, "loaded_bytes": total_loads * chunk_bytes, "raw_writes": int(tot[_NW]),
                     "raw_write_bytes": int(tot[_NWB]), "close_flushes": close_flushes,
                     "close_flush_bytes": close_bytes, "sessions": nsessions}


def _pid_starts(seq: ReplaySequence) -> list[int]:
    """Request index where each process's requests begin."""
    out = []
    for i, (start, pid) in enumerate(zip(seq.session_starts, seq.session_pids)):
        if i == 0 or pid != seq.session_pids[i - 1]:
            out.append(int(start))
    return out


# ---------------------------------------------------------------------- costs

def fit_costs(user_wall, user_hdf5, low_hdf5, low_loads, call_prior_s: float = 0.0, load_prior_s: float = 0.0) -> dict:
    """Per-call Python cost, per-call HDF5 cost and HDF5 cost per chunk load, from the trace.

    HDF5's cost per call is measured on the calls that loaded nothing (their median). With fewer than 3 of them the
    trace cannot tell a call's fixed cost from its loads' (one load per call: calls and loads are collinear), and
    the cheapest call per load is only an upper bound of it: taken as the cost, it handed ~29% of a gzip chunk's
    decode time to a 7.1 ms "per-call" cost that no cache or repack cure removes (audit22 A1: a 1.1 MiB cache
    priced 7.19 s, measured 56 ms). Given this machine's prices of a call that loads nothing and of one chunk load
    (``call_prior_s``, ``load_prior_s``: :mod:`ccp.trace.chunk_price`), the trace's HDF5 time is split in their
    proportion instead, both scaled alike (a busy machine slows a decode and a call together), never above that
    bound and never above an idle call's time."""
    user_wall, user_hdf5 = np.asarray(user_wall, float), np.asarray(user_hdf5, float)
    low_hdf5, low_loads = np.asarray(low_hdf5, float), np.asarray(low_loads, float)
    python = float(np.median(np.maximum(user_wall - user_hdf5, 0))) if len(user_wall) else 0.0
    idle = low_hdf5[low_loads == 0]
    if len(idle) >= 3:
        per_call = float(np.median(idle))
    else:                     # no call without loads: the cheapest call per load bounds the fixed cost
        per_call = float(np.min(low_hdf5 / np.maximum(low_loads, 1))) if len(low_hdf5) else 0.0
        if len(idle):
            per_call = min(per_call, float(idle.min()))
        priced = call_prior_s * len(low_hdf5) + load_prior_s * float(low_loads.sum())
        if call_prior_s > 0 and load_prior_s > 0 and low_loads.sum() and priced > 0:
            per_call = min(per_call, call_prior_s * float(low_hdf5.sum()) / priced)
    rest = max(float(low_hdf5.sum()) - per_call * len(low_hdf5), 0.0)
    per_load = rest / low_loads.sum() if low_loads.sum() else 0.0
    return {"python_per_call_s": python, "hdf5_per_call_s": per_call, "hdf5_per_load_s": per_load}


def predict_time(costs: dict, user_calls: int, low_calls: int, loads: int, load_ratio: float = 1.0) -> float:
    return (user_calls * costs["python_per_call_s"] + low_calls * costs["hdf5_per_call_s"]
            + loads * costs["hdf5_per_load_s"] * load_ratio)


# ---------------------------------------------------------------------- cure candidates

def working_set(seq: ReplaySequence, chunks) -> tuple[int, int]:
    """(largest number of distinct chunks one session touches, that in bytes)."""
    if not chunks or not len(seq.plan):
        return 0, 0
    chunk_bytes = int(np.prod(chunks)) * seq.itemsize
    bounds = list(seq.session_starts) + [len(seq.plan)]
    most = 0
    if touched_count(seq.shape, chunks, seq.plan.starts, seq.plan.counts) > MAX_TOUCHED:
        # too many to list: each session's chunks, bounded by its requests' boxes
        for a, b in zip(bounds[:-1], bounds[1:]):
            lo = seq.plan.starts[a:b].min(axis=0) // np.asarray(chunks)
            hi = (seq.plan.starts[a:b] + seq.plan.counts[a:b] - 1).max(axis=0) // np.asarray(chunks)
            most = max(most, int(np.prod(hi - lo + 1)))
        return most, most * chunk_bytes
    nchunks = int(np.prod(ChunkGrid(tuple(seq.shape), tuple(chunks)).grid, dtype=float))
    # one bitmap for every session, cleared where a session set it: a fresh grid-sized one per session cost
    # a trace that reopens often its grid's size at every open
    seen = np.zeros(nchunks, bool) if nchunks <= BITMAP_CHUNKS else None
    for a, b in zip(bounds[:-1], bounds[1:]):     # each session's distinct chunks, its requests a batch at a time
        parts = []
        for x in range(a, b, BATCH):
            y = min(b, x + BATCH)
            pairs = touched_chunks(seq.shape, chunks, seq.plan.starts[x:y], seq.plan.counts[x:y],
                                   *seq.plan.hyperslab(x, y))
            assert pairs is not None, "fewer pairs than MAX_TOUCHED in all, so in a batch"
            found = np.unique(pairs[1])
            if seen is not None:
                found = found[~seen[found]]
                seen[found] = True
            parts.append(found)
        if seen is not None:
            n = sum(len(p) for p in parts)
            for p in parts:
                seen[p] = False
        else:
            n = len(np.unique(np.concatenate(parts))) if parts else 0
        most = max(most, n)
    return most, most * chunk_bytes


FIXED_CHUNK_S = 20e-6   # HDF5's fixed cost of one chunk load or write (index lookup, one I/O call), at most


def chunk_cost_ratio(per_chunk_s: float, old_bytes: int, new_bytes: int) -> float:
    """Cost of moving a ``new_bytes`` chunk over that of an ``old_bytes`` one, from the trace's own cost per
    chunk: a fixed part (at most FIXED_CHUNK_S) plus the rest in proportion to the bytes. Deterministic: the
    same trace gives the same ratio (no timing at diagnosis)."""
    if per_chunk_s <= 0 or old_bytes <= 0:
        return max(new_bytes, 1) / max(old_bytes, 1)
    fixed = min(per_chunk_s, FIXED_CHUNK_S) / 2 if per_chunk_s <= FIXED_CHUNK_S else FIXED_CHUNK_S
    per_byte = (per_chunk_s - fixed) / old_bytes
    return (fixed + per_byte * new_bytes) / per_chunk_s
