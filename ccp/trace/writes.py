"""``ccp diagnose`` for the writes a traced program made to one dataset.

The same model as for reads (:mod:`ccp.trace.sequence_model`) run over the traced write boxes: which
writes covered only part of a chunk, how many chunks HDF5 had to read back to complete them (a
partial chunk evicted before it was full, or already in the file), how many chunks went through the
filter pipeline to the file during the writes and at the close, and the append pattern. Times use the
trace's own costs: per user call, per low-level call and per chunk moved (read back or written),
the last fitted on the writes' HDF5 time. Cures: a cache that holds the partial chunks, whole-chunk
writes, and chunks shaped for the append; each predicted by the model on the cured sequence.

A write kept only as its bounding box (more blocks or points than the trace lists a call:
:mod:`ccp.trace.diagnose_bounds`) is modelled as writing the whole box: its chunk counts, and every sum
over the sequence holding it, are upper bounds, said "at most"; no cost is fitted on those calls, no chunk
cache is sized on them and no cure's speed-up is given (a ratio of two upper bounds bounds nothing).
"""

from __future__ import annotations

import numpy as np

from ccp.trace.cures import cache_for, most_common_row, partial_requests
from ccp.trace.diagnose_bounds import exact_calls
from ccp.trace.libraries import create_chunks_code, whole_chunks_write_code, write_cache_code
from ccp.trace.ranking import rank_cures
from ccp.trace.sequence_model import chunk_cost_ratio, fit_costs, predict_time, run_blocks, run_model, working_set
from ccp.units import format_bytes, format_seconds, shape_str
from ccp.workload.replay import ReplaySequence

APPEND_CHUNK_BYTES = 1024 * 1024      # chunks for an append: about this many bytes (h5py's guess aims lower)


def _append_axis(seq: ReplaySequence, first_shape) -> int | None:
    """The axis the writes advance along (the dataset grew along it, or the write starts climb it)."""
    grew = [d for d, (a, b) in enumerate(zip(first_shape, seq.shape)) if b > a]
    if grew:
        return grew[0]
    if len(seq.plan) < 4:
        return None
    for d in range(len(seq.shape)):
        col = seq.plan.starts[:, d]
        steps = np.diff(col)
        if (steps >= 0).all() and (steps > 0).mean() > 0.5 and (seq.plan.counts[:, d] < seq.shape[d]).all():
            return d
    return None


def _append_chunks(seq: ReplaySequence, axis: int, box) -> tuple[int, ...]:
    """Chunks as wide as the written box in every other axis, ~APPEND_CHUNK_BYTES deep along the append."""
    other = int(np.prod([b for d, b in enumerate(box) if d != axis])) * seq.itemsize
    depth = max(1, min(seq.shape[axis], APPEND_CHUNK_BYTES // max(other, 1)))
    return tuple(depth if d == axis else max(1, int(b)) for d, b in enumerate(box))


def diagnose_writes(seq: ReplaySequence, user, low, layout: dict, program_s: float, memory: int,
                    pct, libs=()) -> dict:
    """Facts and cures for the writes of ``seq`` (op "write"); ``user``/``low``: their trace rows."""
    out: dict = {"write_calls": len(user), "write_findings": [], "write_cures": []}
    f, cures = out["write_findings"], out["write_cures"]
    wall, hdf5 = float(user["wall_s"].sum()), float(user["hdf5_s"].sum())
    written = int(user["bytes"].fillna(0).sum())
    out.update({"write_wall_s": wall, "write_hdf5_s": hdf5, "bytes_written": written})
    f.append(f"{pct(wall, program_s)} of the program's time ({format_seconds(wall)}) in {len(user)} write call(s) "
             f"writing {format_bytes(written)}; HDF5 itself {format_seconds(hdf5)}")
    if not len(seq.plan):
        f.append("no data moved (every write selected nothing)")
        return out
    chunks = seq.chunks
    if chunks is None:
        f.append("contiguous layout: writes go straight to the file (no chunk cache, no filters)")
        return out
    # a dataset the program created starts with no chunk in the file: a partial write needs no read-back
    allocated = bool(layout.get("storage_size"))
    bounded = seq.approximate > 0       # a bounding box's chunks are not the call's: the counts are upper bounds
    most = "at most " if bounded else ""
    out["write_approximate_calls"] = int(seq.approximate)
    if bounded:         # said before any count it bounds
        f.append(f"{seq.approximate} of these writes' calls to HDF5 are known only by their bounding box (more blocks "
                 "or points than ccp keeps a call): the model writes each box whole, so the chunk counts and times "
                 "below are upper bounds (at most); no chunk cache is sized and no cost is fitted on those calls")
    base = run_model(seq, allocated=allocated)
    chunk_bytes = base["chunk_bytes"]
    io_per_call = base["loads_per_call"] + base["flushes_per_call"]
    low_sorted = low.sort_values(["pid", "seq"])
    low_sorted = low_sorted[~low_sorted["sel"].isin(["none", "unknown"])]
    low_hdf5 = low_sorted["hdf5_s"].to_numpy(float)[:seq.ncalls]
    exact = exact_calls(seq, len(low_hdf5))     # a bounding box's chunks are not the call's: no cost fitted on them
    costs = fit_costs(user["wall_s"], user["hdf5_s"], low_hdf5[exact], io_per_call[:len(low_hdf5)][exact])
    out["write_costs"] = costs
    moved = base["chunk_loads"] + base["raw_writes"] + base["close_flushes"]
    now = predict_time(costs, len(user), seq.ncalls, moved)      # calls and the close: what cures are ranked on
    in_calls = predict_time(costs, len(user), seq.ncalls, moved - base["close_flushes"])   # comparable to measured
    out.update({"write_chunk_loads": base["chunk_loads"], "write_chunk_flushes": base["raw_writes"],
                "close_chunk_flushes": base["close_flushes"], "write_predicted_s": in_calls,
                "write_predicted_with_close_s": now})
    pipeline = "+".join(x["name"] for x in layout.get("filters", [])) or ""
    # the append pattern and the chunk shape it wants
    first_shape = tuple(int(s) for s in layout.get("shape") or seq.shape)
    axis = _append_axis(seq, first_shape)
    box = most_common_row(seq.plan.counts, seq.shape)
    # writes of the most common box one chunk holds: along every axis (1x1x50 rows fill an 8x40x50 chunk in 320)
    fill = int(np.prod([max(1, int(c) // max(int(b), 1)) for c, b in zip(chunks, box)]))
    per_chunk = fill if axis is not None else None
    if axis is not None:
        grew = seq.shape[axis] > first_shape[axis]
        f.append((f"appends along axis {axis}: {len(user)} write(s) of {shape_str(box)} (most common) grew the dataset "
                  f"from {shape_str(first_shape)} to {shape_str(seq.shape)}" if grew else
                  f"writes advance along axis {axis}: {len(user)} write(s) of {shape_str(box)} (most common)")
                 + f"; a {shape_str(chunks)} chunk ({format_bytes(chunk_bytes)}) takes ~{per_chunk} of them to fill")
    partial = int(partial_requests(seq, chunks).sum())
    if partial:
        rmw = base["chunk_loads"]
        f.append(f"partial-chunk writes: {pct(partial, len(seq.plan))} of write requests cover only part of a chunk; "
                 + (f"the model says HDF5 read {most}{rmw} chunk(s) ({format_bytes(rmw * chunk_bytes)}) back from the file to "
                    "complete them (read-modify-write: the chunk left the cache before it was full, or was already stored)"
                    if rmw else "the cache kept each chunk until it was complete: no chunk was read back"))
    flushed = base["raw_writes"] + base["close_flushes"]
    per_io = costs["hdf5_per_load_s"]
    known = bool(io_per_call[:len(low_hdf5)][exact].sum())    # a call it has moved a chunk: a cost per chunk fitted
    cost = (f"~{format_seconds(per_io)} per chunk moved (fitted on the writes' HDF5 time), "
            f"{most}{format_seconds(per_io * flushed)} in all" if known else
            "its cost is not fitted (every call that moved a chunk is known only by its bounding box)"
            if bounded and io_per_call.sum() else
            "its cost is not in any call's time (no call moved a chunk: HDF5 wrote them at the close)")
    if pipeline:
        f.append(f"filter cost: {most}{flushed} chunk write(s) went through {pipeline} ({format_bytes(chunk_bytes)} each before "
                 f"the filter); {cost}")
    else:
        f.append(f"{most}{flushed} chunk write(s) to the file ({format_bytes(chunk_bytes)} each), no filters; {cost}")
    if base["close_flushes"]:
        f.append(f"flush and close: {most}{base['close_flushes']} dirty chunk(s) ({format_bytes(base['close_flush_bytes'])}) "
                 "were still in the cache at the close and written then, outside every call's time"
                 + (f" (~{format_seconds(per_io * base['close_flushes'])} at the fitted cost per chunk)" if known else ""))
    user_calls, low_calls = len(user), seq.ncalls

    def cure(name, why, model, code, n_user=user_calls, n_low=low_calls, ratio=1.0):
        moved = model["chunk_loads"] + model["raw_writes"] + model["close_flushes"]
        t = predict_time(costs, n_user, n_low, moved, ratio)
        cures.append({"cure": name, "why": why, "predicted_s": t, "speedup": now / t if t and not bounded else None,
                      "chunk_loads": model["chunk_loads"], "code": code, "bounded": bounded})

    cache0 = min(seq.session_caches, key=lambda c: c.nbytes)     # the session that had the least
    if base["chunk_loads"] and not bounded:     # the chunks a bounding box spans are not the ones written again
        _, ws_bytes = working_set(seq, chunks)
        top = min(max(ws_bytes, chunk_bytes), memory)
        sizes = sorted({min(top, chunk_bytes * 2 ** k) for k in range(40) if chunk_bytes * 2 ** (k - 1) < top})
        sizes = [z for z in sizes if z > cache0.nbytes]
        floor = run_model(seq, caches=cache_for(top, chunk_bytes), allocated=allocated, per_call=False)
        lo, hi, pick = 0, len(sizes) - 1, None     # the smallest cache that reads back no more than the largest
        while lo <= hi:
            mid = (lo + hi) // 2
            m = run_model(seq, caches=cache_for(sizes[mid], chunk_bytes), allocated=allocated, per_call=False)
            if m["chunk_loads"] <= floor["chunk_loads"]:
                pick, hi = (sizes[mid], m), mid - 1
            else:
                lo = mid + 1
        if pick is not None:
            c = cache_for(pick[0], chunk_bytes)
            cure(f"a chunk cache of {format_bytes(c.nbytes)} for the writes",
                 "keeps each partial chunk in memory until it is complete: a chunk already in the file is read once, "
                 "not once per write", pick[1],
                 write_cache_code(seq.file, seq.dataset, c.nbytes, c.nslots, libs))
    if partial and user_calls >= 8:
        nblocks, blocks_model = run_blocks(seq, allocated=allocated)
        if nblocks < 0.9 * user_calls:
            cure(f"write whole {shape_str(chunks)} chunks", f"buffer the rows in memory: {nblocks} chunk-aligned "
                 f"write(s) instead of {user_calls}", blocks_model,
                 whole_chunks_write_code(seq.dataset, chunks, libs, box, fill),
                 n_user=nblocks, n_low=nblocks)
    if axis is not None and per_chunk is not None:
        want = _append_chunks(seq, axis, box)
        if want != tuple(chunks) and np.prod(want) > np.prod(chunks):
            m = run_model(seq, chunks=want, allocated=allocated, per_call=False)
            cure(f"create the dataset with {shape_str(want)} chunks", f"chunks about {format_bytes(APPEND_CHUNK_BYTES)} "
                 f"deep along the append axis: {m['raw_writes'] + m['close_flushes']} chunk write(s) instead of {most}{flushed}",
                 m, create_chunks_code(seq.dataset, want, libs),
                 ratio=chunk_cost_ratio(per_io, chunk_bytes, int(np.prod(want)) * seq.itemsize))
    out["write_cures"] = rank_cures([c for c in cures if c["predicted_s"] <= now * 0.9])   # the cheapest-change rule
    return out
