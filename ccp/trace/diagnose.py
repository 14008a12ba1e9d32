"""``ccp diagnose``: where a traced program's HDF5 time went, what in it is slow, and the cures.

For each dataset the program touched: its share of the program's time; chunk loads per call and
bytes decoded per byte delivered, from ccp's chunk-cache model (``ccp.model``) run over the real
selection sequence with the cache the program had and its reopens (a reopen empties the cache);
findings in plain words; cures ranked by predicted time, each with the exact code or command.

Predicted times use costs fitted on the trace itself (no extra measurement): the h5py Python
layer per user call (median call time minus HDF5 time), HDF5's fixed cost per call (median HDF5
time of calls the model says loaded nothing; with none, the trace's HDF5 time split in the proportion of this
machine's measured price of such a call and of a chunk load, :mod:`ccp.trace.chunk_price`) and its cost per
loaded chunk (the rest of HDF5's time over the chunks the model says were loaded). A cure's time is those costs applied to the
model's counts for the cured sequence.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np

from ccp.errors import CcpError
from ccp.predict.explain import chunk_larger_than_cache
from ccp.trace.check import completeness_line, file_state
from ccp.trace.chunk_price import (
    NUMPY_INDEX_S,
    OVERHEAD_DOMINATES,
    attribute_call_tail,
    call_cost,
    load_cost,
    load_ratio,
    overhead_share,
)
from ccp.trace.collinear import against_prediction, collinear_line, collinear_split, prediction_words
from ccp.trace.cures import cache_for, chunk_candidates, partial_requests
from ccp.trace.diagnose_bounds import bounded_note, exact_calls
from ccp.trace.harm import HARM, dataset_slug, price_cure, tune_workload_yaml
from ccp.trace.libraries import (
    batched_code,
    cache_code,
    dataset_libraries,
    keep_open_code,
    not_hdf5_note,
    program_libraries,
    program_source_calls,
    program_source_matches,
    repack_code,
    untraced_note,
)
from ccp.trace.ranking import RULE, rank_cures
from ccp.trace.remote import remote_diagnosis
from ccp.trace.rows import CallSummary, DatasetRows, table_rows, table_summary
from ccp.trace.sequence_model import fit_costs, predict_time, run_blocks, run_model, working_set
from ccp.trace.writes import diagnose_writes
from ccp.units import format_bytes, format_seconds, shape_str
from ccp.workload.replay import library_cache
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace

TINY_BYTES = 64 * 1024            # a request smaller than this is "tiny"
MIN_GAIN = 0.9                    # a cure must predict at most 90% of the current time


# ---------------------------------------------------------------------- the diagnosis

def _pct(a: float, b: float) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def diagnose_dataset(trace: Trace, file: str, dataset: str, memory: int, program_s: float, state: str = "same",
                     patterns=(), libs=(), rows: DatasetRows | None = None, sequences: dict | None = None) -> dict:
    """One dataset's diagnosis; ``rows``: its rows when the caller read them (a trace read in batches),
    else they are taken from ``trace.table``; ``sequences``, when given, gets the read sequence under ``"read"``
    (``--verify`` replays it: a sequence built in batches is built once)."""
    rows = table_rows(trace, file, dataset) if rows is None else rows
    mine, wuser, low = rows.user_reads, rows.user_writes, rows.low_reads
    layout = trace.layout(file, dataset) or {}
    wall, hdf5 = float(mine["wall_s"].sum()), float(mine["hdf5_s"].sum())
    reads = mine
    delivered = int(reads["bytes"].fillna(0).sum())
    out: dict[str, Any] = {"file": file, "dataset": dataset, "calls": rows.calls, "reads": len(reads),
           "writes": len(wuser), "wall_s": wall, "hdf5_s": hdf5,
           "share": wall / program_s if program_s else None, "bytes_read": delivered,
           "shape": layout.get("shape"), "dtype": layout.get("dtype"), "chunks": layout.get("chunks"),
           "filters": [f["name"] for f in layout.get("filters", [])], "findings": [], "cures": [], "notes": [],
           "library": layout.get("library") or "h5py"}
    if state == "gone":      # deleted or moved since the trace: nothing to repack, tune or replay
        out["notes"].append(f"{file} no longer exists (deleted or moved since the trace): no repack or tune cure for "
                            "it; cures to the program's code still apply")
    if not layout.get("shape"):          # a scalar: one element per call, no layout or cache to change
        out["findings"].append(f"scalar dataset: {len(reads)} read(s) and {len(wuser)} write(s) of its one element; "
                               "nothing in its layout or cache to cure (read it once and keep the value if the "
                               "calls add up)")
        return out
    if layout.get("vlen"):               # ccp.trace.hdf5_types: chunks hold heap references, not the elements
        out["findings"].append(f"variable-length type ({layout.get('dtype')}): its elements live in the file's global "
                               f"heap, not in its chunks; not modelled ({len(reads)} read(s), {len(wuser)} write(s) "
                               "recorded, no cache or chunk cure)")
        return out
    if len(wuser):
        wseq = rows.sequence("write")
        cache = wseq.session_caches[0] if wseq.session_caches else library_cache(trace)
        out["cache"] = {"nbytes": cache.nbytes, "nslots": cache.nslots, "w0": cache.w0}
        out["shape"] = list(wseq.shape)
        out.update(diagnose_writes(wseq, wuser, rows.low_writes, layout, program_s, memory, _pct,
                                    libs))
    if not len(reads):
        return out
    seq = rows.sequence("read")
    if sequences is not None:
        sequences["read"] = seq
    out["reopens"] = seq.reopens
    out["approximate_calls"] = seq.approximate
    bounded = seq.approximate > 0           # the model's counts of those calls, and so its sums, are upper bounds
    most = "at most " if bounded else ""
    cache0 = seq.session_caches[0] if seq.session_caches else library_cache(trace)
    out["cache"] = {"nbytes": cache0.nbytes, "nslots": cache0.nslots, "w0": cache0.w0}
    if not len(seq.plan):
        out["findings"].append("no data moved (every call selected nothing)")
        return out
    base = run_model(seq)
    # the trace's low-level rows in the order the replay saw them: one per low-level call
    low_sorted = low if rows.in_order else low.sort_values(["pid", "seq"])
    low_sorted = low_sorted[~low_sorted["sel"].isin(["none", "unknown"])]
    low_hdf5 = low_sorted["hdf5_s"].to_numpy(float)[:seq.ncalls]
    loads = base["loads_per_call"][:len(low_hdf5)]
    exact = exact_calls(seq, len(low_hdf5))     # a bounding box's loads are not the call's: no cost fitted on them
    low_hdf5, loads = low_hdf5[exact], loads[exact]
    load_price = load_cost(base["chunk_bytes"], seq.filtered) if seq.chunks else 0.0
    # this machine's prices of a call that loads nothing and of a load: how the fit splits the trace's time when no
    # call loaded nothing (one load per call: calls and loads collinear, their costs not told apart by the trace)
    call_price = call_cost(delivered / max(seq.ncalls, 1))
    costs = fit_costs(mine["wall_s"], mine["hdf5_s"], low_hdf5, loads, call_price, load_price)
    split = collinear_split(loads, bool(exact.any()), call_price, load_price, costs)
    if not split:   # collinear: the prices' split stands (a load's floor put every call at 0 ns: breaker11 C7)
        costs = attribute_call_tail(costs, low_hdf5, loads, load_price)
    if not exact.any() and seq.chunks:      # every call a bounding box: this machine's cost of a load instead
        costs = {**costs, "hdf5_per_load_s": load_price}
    del loads, low_hdf5, low_sorted
    base.pop("loads_per_call"), base.pop("flushes_per_call")     # fitted: a 10^7-call trace's 160 MB freed
    out["costs"] = costs
    now = predict_time(costs, len(mine), seq.ncalls, base["chunk_loads"])
    decoded = base["read_chunk_loads"] * base["chunk_bytes"]
    out.update({"chunk_loads": base["chunk_loads"], "chunk_loads_per_call": base["chunk_loads"] / max(len(mine), 1),
                "bytes_decoded": decoded, "decoded_per_delivered": decoded / delivered if delivered else None,
                "predicted_s": now})
    f = out["findings"]
    f.append(f"{_pct(wall, program_s)} of the program's time ({format_seconds(wall)} of {format_seconds(program_s)}) "
             f"in {len(mine)} read call(s); HDF5 itself {format_seconds(hdf5)}")
    if split:       # the cures' times rest on a split the trace did not measure: said, with its prices (breaker11 C7)
        out["collinear_split"] = split
        f.append(collinear_line(split))
    chunks = seq.chunks
    cures = out["cures"]
    user_calls, low_calls = len(mine), seq.ncalls

    def cure(name, why, model, code, n_user=user_calls, n_low=low_calls, ratio=1.0, in_memory=0, bounds=bounded):
        # in_memory: the program's calls that index a block it holds instead (numpy's cost, not h5py's)
        t = predict_time(costs, n_user, n_low, model["chunk_loads"], ratio) + in_memory * NUMPY_INDEX_S
        # bounded: both times are upper bounds, whose ratio bounds nothing
        why += "; its counts include bounding boxes: upper bounds" if bounds else ""
        cures.append({"cure": name, "why": why, "predicted_s": t, "speedup": now / t if t and not bounded else None,
                      "chunk_loads": model["chunk_loads"], "code": code, "bounded": bounds})

    stale = writes_between_reads(low, rows.low_writes) if len(wuser) else False
    if stale:
        out["notes"].append("the program writes this dataset between its reads: no cure that reads a block once and "
                            "keeps it in memory (the block would miss what was written after it was read)")

    def batched(ws_bytes: int) -> None:
        """Read the box all reads fall in once per process, then index it in memory (xarray: .load())."""
        if stale:
            return
        lo = seq.plan.starts.min(axis=0)
        hi = (seq.plan.starts + seq.plan.counts).max(axis=0)
        nbytes = int(np.prod(hi - lo)) * seq.itemsize
        if nbytes > memory or user_calls < 2:
            return
        npid = len(set(seq.session_pids))
        one = replace(seq, ops=np.full(npid, "read", dtype=object),
                      plan=RequestPlan(np.tile(lo, (npid, 1)), np.tile(hi - lo, (npid, 1))),
                      call_of=np.arange(npid, dtype=np.int64), ncalls=npid,
                      session_starts=np.arange(npid, dtype=np.int64),
                      session_caches=tuple(seq.session_caches[seq.session_pids.index(p)] for p in sorted(set(seq.session_pids))),
                      session_pids=tuple(sorted(set(seq.session_pids))))
        # the program's own caches: the cure changes the reading, not the cache (verify replays it so); a cache cut to
        # the block's bytes held no chunk of a block thinner than a chunk, and the model counted 0 chunk loads
        m = run_model(one, per_call=False)
        what = ".load() the cells once" if "xarray" in libs else "read the block once"
        cure(f"{what} ({format_bytes(nbytes)})", f"one read per process of the {shape_str(tuple(hi - lo))} box the "
             f"{user_calls} reads fall in, indexed in memory after: {m['chunk_loads']} chunk loads", m,
             batched_code(dataset, lo.tolist(), hi.tolist(), nbytes, libs, layout.get("dims"), chunks),
             n_user=npid, n_low=npid, in_memory=user_calls, bounds=False)     # one box a process: exact
        cures[-1]["apply"] = {"kind": "batched", "start": lo.tolist(), "count": (hi - lo).tolist()}

    if chunks is None:
        f.append(f"contiguous layout: no chunk cache; {len(mine)} call(s), median "
                 f"{format_bytes(float(np.median(mine['bytes'].fillna(0))))} each")
    else:
        chunk_bytes = base["chunk_bytes"]
        ws_chunks, ws_bytes = working_set(seq, chunks)
        if seq.reopens:
            kept = run_model(seq, merge_sessions=True, per_call=False)
            lost = base["chunk_loads"] - kept["chunk_loads"]
            lru = "xarray" in libs and program_source_matches(trace, r"file_cache_maxsize\s*=")
            opened = ("xarray's file cache, which the program sized (xr.set_options(file_cache_maxsize=...)), closed "
                      "and reopened the file, or xarray reached the variable afresh for a selection, so" if lru else
                      "xarray reached the variable afresh for a selection (a new HDF5 dataset handle each time), "
                      "so" if "xarray" in libs else "file or dataset reopened between reads:")
            f.append(f"{opened} the chunk cache was lost {seq.reopens} time(s); "
                     f"{lost} of {base['chunk_loads']} chunk loads ({format_bytes(lost * chunk_bytes)} decoded) only "
                     "re-read chunks the cache had held" if lost > 0 else
                     f"file or dataset reopened {seq.reopens} time(s), but no chunk was needed again after a reopen")
            if lost > 0:
                cure(".load() the variable once" if "xarray" in libs else "keep the file and dataset open",
                     f"{'read it once and select in memory' if 'xarray' in libs else 'open the file and the dataset once, reuse them'}: "
                     f"{lost} fewer chunk loads", kept, keep_open_code(file, dataset, libs))
                cures[-1]["apply"] = {"kind": "keep_open"}
                if lru:      # a reader setting: xarray keeps every file open once its file cache holds them all
                    cure("xarray's file cache as large as the files read in turn",
                         f"xarray keeps each file open instead of closing and reopening it: at most {lost} fewer chunk "
                         "loads (as many as keeping the file open gives)", kept,
                         "xr.set_options(file_cache_maxsize=128)   # xarray's default; at least the number of files "
                         "the program reads in turn")
                    cures[-1]["apply"] = {"kind": "xarray_file_cache"}
        reloads = base["chunk_loads"] - ws_chunks * len(seq.session_starts)
        if cache0.nbytes < ws_bytes and base["chunk_loads"] > ws_chunks and reloads > 0:
            f.append(f"cache smaller than the working set: the cache holds {format_bytes(cache0.nbytes)}, one session "
                     f"touches {most}{ws_chunks} chunks ({format_bytes(ws_bytes)}), so chunks are evicted and loaded "
                     "again" + (" (if the bounding boxes' chunks are all read)" if bounded else ""))
        if "xarray" in libs and ws_bytes > cache0.nbytes:
            f.append(f"xarray: the cells this program selects span {ws_chunks} chunks ({format_bytes(ws_bytes)}) against "
                     f"a {format_bytes(cache0.nbytes)} chunk cache, and xarray reaches the variable afresh for each "
                     "selection: read the cells once and keep them in memory (.load()), or let dask read whole chunks "
                     "(chunks=)")
        batched(ws_bytes)
        if chunk_bytes < 16 * 1024 and base["chunk_loads"] >= 100 * user_calls:
            f.append(f"tiny chunks: a {shape_str(chunks)} chunk is {format_bytes(chunk_bytes)}; each call loads "
                     f"{most}{base['chunk_loads'] / user_calls:.0f} chunks on average, each with HDF5's fixed cost per chunk "
                     f"(~{format_seconds(costs['hdf5_per_load_s'])} per load here)")
        if larger := chunk_larger_than_cache(chunk_bytes, cache0.nbytes, seq.filtered):
            f.append(larger)      # in the words `ccp advise` and `ccp inspect` use (ccp.predict.explain)
        # the smallest cache that reaches the fewest loads, file kept open when that helps
        merge = seq.reopens > 0
        best = None
        target = min(max(ws_bytes, chunk_bytes), memory)
        sizes = sorted({min(memory, s) for s in [chunk_bytes * 2 ** k for k in range(40)
                                                   if chunk_bytes * 2 ** k <= 2 * target] + [target]} - {0})
        floor = run_model(seq, caches=cache_for(target, chunk_bytes), merge_sessions=merge, per_call=False)
        lo, hi = 0, len(sizes) - 1          # loads fall as the cache grows: bisect for the smallest size at the floor
        while sizes and lo <= hi:
            mid = (lo + hi) // 2
            m = run_model(seq, caches=cache_for(sizes[mid], chunk_bytes), merge_sessions=merge, per_call=False)
            if m["chunk_loads"] <= floor["chunk_loads"]:
                best, hi = (sizes[mid], m), mid - 1
            else:
                lo = mid + 1
        # xarray reaches the variable afresh per selection: a cache it reopens dies with each (its cures instead)
        # bounded: the chunks a bounding box spans are not the ones the reads come back to: no cache sized on them
        no_cache = ("xarray" in libs and merge) or bounded
        if (best and not no_cache and best[0] > cache0.nbytes
                and best[1]["chunk_loads"] < (kept["chunk_loads"] if merge else base["chunk_loads"])):
            c = cache_for(best[0], chunk_bytes)
            lead = "keep the file open and " if merge else ""
            held = max(1, c.nbytes // chunk_bytes)
            # what the cache must hold is what the model found enough: the chunks the reads come back to at once,
            # not every chunk they touch (rows that finish a chunk before the next need one, of 2 touched: audit22 A1)
            cure(f"{lead}a chunk cache of {format_bytes(c.nbytes)}",
                 f"holds {held} chunk{'s' if held > 1 else ''} ({format_bytes(held * chunk_bytes)}), enough by the model "
                 f"for the chunks the reads come back to at once (they touch {ws_chunks} chunks, "
                 f"{format_bytes(ws_bytes)}, in all): {best[1]['chunk_loads']} chunk loads", best[1],
                 cache_code(file, dataset, c.nbytes, c.nslots, libs, merge))
            cures[-1]["apply"] = {"kind": "cache", "nbytes": c.nbytes, "nslots": c.nslots, "merge": merge}
        elif (not bounded and (slots := cache_for(cache0.nbytes, chunk_bytes)).nslots > cache0.nslots
              and cache0.nbytes >= chunk_bytes):
            # enough bytes, too few hash slots: HDF5 keeps one chunk per slot, two chunks hashing alike evict each other
            m = run_model(seq, caches=replace(cache0, nslots=slots.nslots), per_call=False)
            if m["chunk_loads"] < MIN_GAIN * base["chunk_loads"]:
                fits = " (they fit by bytes)" if ws_bytes <= cache0.nbytes else ""
                f.append(f"{cache0.nslots} hash slots for {ws_chunks} chunks{fits}: chunks evict each other by hash; "
                         f"{base['chunk_loads']} chunk loads, {m['chunk_loads']} with {slots.nslots} slots")
                cure(f"a chunk cache of {slots.nslots} slots", f"the same {format_bytes(cache0.nbytes)}, with slots "
                     f"enough for the {ws_chunks} chunks: {m['chunk_loads']} chunk loads", m,
                     cache_code(file, dataset, cache0.nbytes, slots.nslots, libs, False))
                cures[-1]["apply"] = {"kind": "cache", "nbytes": cache0.nbytes, "nslots": slots.nslots, "merge": False}
        # alignment: requests covering only part of the chunks they touch
        partial = int(partial_requests(seq, chunks).sum())
        ratio = out["decoded_per_delivered"]
        if partial and ratio and ratio > 1.5:
            f.append(f"selections misaligned with chunks: {_pct(partial, len(seq.plan))} of requests cover only part of "
                     f"the {shape_str(chunks)} chunks they touch; {most}{ratio:.1f} bytes decoded per byte delivered")
        # tiny requests
        med = float(np.median(mine["bytes"].fillna(0))) if len(mine) else 0.0
        fixed = user_calls * (costs["python_per_call_s"] + costs["hdf5_per_call_s"])
        if user_calls >= 50 and med < TINY_BYTES and fixed > 0.3 * max(now, 1e-12):
            f.append(f"tiny requests dominated by per-call overhead: {user_calls} calls of median {format_bytes(med)}; "
                     f"~{format_seconds(costs['python_per_call_s'] + costs['hdf5_per_call_s'])} fixed cost per call is "
                     f"{_pct(fixed, now)} of this dataset's predicted time")
            nblocks, mb = run_blocks(seq)        # the whole-chunk reads made and modelled a batch at a time
            if nblocks < user_calls * MIN_GAIN and not stale:
                cure(f"read whole {shape_str(chunks)} chunks", f"{nblocks} block reads instead of {user_calls} calls",
                     mb, f'block = dset[i0:i0 + {chunks[0]}, ...]   # one chunk-aligned block, then index it in memory',
                     n_user=nblocks, n_low=nblocks, in_memory=user_calls)
                cures[-1]["apply"] = {"kind": "blocks"}
        if base["chunk_loads"] > max(ws_chunks, 1) * 4 or (ratio and ratio > 4) or chunk_bytes < 16 * 1024:
            cands = chunk_candidates(seq)
            tiny = [c for c in cands if overhead_share(int(np.prod(c)) * seq.itemsize, seq.filtered) > OVERHEAD_DOMINATES]
            cands = [c for c in cands if c not in tiny]
            if tiny and not cands:
                out["notes"].append(f"no repack cure: chunks shaped like the reads ({shape_str(tiny[0])}, "
                                    f"{format_bytes(int(np.prod(tiny[0])) * seq.itemsize)}) would cost HDF5's fixed "
                                    "cost per chunk load (index lookup, filter call) for every few bytes")
            if cands and state == "remote" and file.startswith("<in memory"):
                out["notes"].append(f"{file} is a dataset in memory (diskless or memory=), not a file: no repack "
                                    "cure")
            elif cands and state == "remote" and ("::" in file or file.startswith("<simplecache")):
                out["notes"].append(f"{file} is read through an fsspec caching filesystem's local copy: no repack cure "
                                    "(the program opens the URL, not the copy: repack a copy of the object and "
                                    "upload it)")
            elif cands and state == "remote":
                out["notes"].append(f"{file} is not a local file: no repack cure (copy it locally, repack, and "
                                    "read the copy; or use ccp s3 for paged copies)")
            elif state == "gone":
                pass                     # said once above
            elif cands and state == "changed":
                out["notes"].append(f"{file} changed since the trace: no repack cure (it would rewrite data the "
                                    "program never read); trace the program again")
            elif cands:
                pick: tuple | None = None
                for cand in cands:
                    m = run_model(seq, chunks=cand, caches=cache0, per_call=False)
                    r = load_ratio(chunk_bytes, int(np.prod(cand)) * seq.itemsize, seq.filtered)
                    t = predict_time(costs, user_calls, low_calls, m["chunk_loads"], r)
                    if pick is None or (t, cand) < (pick[0], pick[1]):
                        pick = (t, cand, m, r)
                assert pick is not None
                _, cand, m, r = pick
                cure(f"repack with {shape_str(cand)} chunks",
                     f"chunks shaped like the reads: {m['chunk_loads']} chunk loads instead of {base['chunk_loads']}, "
                     f"each {r:.2g}x the cost of a {shape_str(chunks)} load (a fixed part per load, ~25 us measured, and a "
                     "part per byte); one-time repack cost not included", m,
                     repack_code(file, dataset, cand, repack_output(file, dataset, cand), libs), ratio=r)
                cures[-1]["repack"] = {"chunks": list(cand)}
                cures[-1]["apply"] = {"kind": "repack", "chunks": list(cand)}
                named = [p for p in patterns if len(p) == len(seq.shape)]
                priced = price_cure(seq, cand, costs, cache0, named)
                cures[-1]["patterns"] = priced
                harmed = [p for p in priced if p["slowdown"] and p["slowdown"] > HARM]
                if harmed:
                    h0 = harmed[0]
                    cures[-1]["why"] += (f"; BUT it slows {len(harmed)} other pattern(s) by more than {HARM:.0f}x, worst "
                                         f"{h0['pattern']}: {format_seconds(h0['before_s'])} -> "
                                         f"{format_seconds(h0['after_s'])} per read ({h0['slowdown']:.0f}x): "
                                         "weigh them with `ccp tune` (workload below) before repacking")
                    cures[-1]["tune_yaml"] = tune_workload_yaml(str(trace.path), file, dataset, priced,
                                                                max(cache0.nbytes, min(memory, 64 << 20)), cache0)
    points = int((low["sel"] == "points").sum())
    if points:
        f.append(f"point selections: {points} call(s) select individual elements; HDF5 handles them one element at a "
                 "time (a bounding block read and indexed in memory is usually faster)")
    if wall > 0.01 and (wall - hdf5) > 0.3 * wall and out["library"] == "netCDF4":     # hdf5_s: netCDF-C's calls
        f.append(f"netCDF4-python overhead: {_pct(wall - hdf5, wall)} of the time of these calls was netCDF4-python's "
                 f"Python layer (index parsing, masking and scaling), {format_seconds(hdf5)} was netCDF-C and HDF5")
    elif wall > 0.01 and (wall - hdf5) > 0.3 * wall:
        f.append(f"high-level h5py overhead: {_pct(wall - hdf5, wall)} of the time of these calls was h5py's Python layer "
                 f"(selection parsing, array allocation), {format_seconds(hdf5)} was HDF5 itself")
    out["cures"] = rank_cures([c for c in cures if c["predicted_s"] <= now * MIN_GAIN])   # the cheapest-change rule
    return out


def writes_between_reads(low_reads, low_writes) -> bool:
    """Whether a write to the dataset comes between two of its reads in one process (a block read once would be
    stale after it); True when the order cannot be told (rows without pid and seq, or a writer that does not read)."""
    if not len(low_writes):
        return False
    if {"pid", "seq"} <= set(low_reads.columns):
        span = {int(p): (int(g.min()), int(g.max())) for p, g in low_reads.groupby("pid")["seq"]}
    elif "read_span" in low_reads.attrs:     # a trace read in batches keeps only each process's first and last read
        span = {int(p): (int(a), int(b)) for p, (a, b) in low_reads.attrs["read_span"].items()}
    else:
        return True
    if not {"pid", "seq"} <= set(low_writes.columns):
        return True
    for pid, seqs in low_writes.groupby("pid")["seq"]:
        if int(pid) not in span:
            return True          # another process writes: its order against the reads is not known
        lo, hi = span[int(pid)]
        if ((seqs > lo) & (seqs < hi)).any():
            return True
    return False


def write_tune_workloads(diag: dict, tune_dir) -> None:
    """Write each harmful repack cure's ``ccp tune`` workload (``tune-<dataset>.yaml``) into ``tune_dir``
    (None: write nothing), atomically; the cure gets the path and the command."""
    for d in diag["datasets"]:
        for c in d["cures"]:
            text = c.pop("tune_yaml", None)
            if text is None:
                continue
            slug = dataset_slug(d["dataset"])
            if tune_dir is None:
                c["tune_workload"] = text
                continue
            path = os.path.join(str(tune_dir), f"tune-{slug}.yaml")
            tmp = f"{path}.tmp-{os.getpid()}"
            try:
                with open(tmp, "w") as fh:
                    fh.write(text)
                os.replace(tmp, path)
            except OSError as exc:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                c["tune_workload"] = text
                d["notes"].append(f"could not write {path} ({exc.strerror}); the workload is in --json's tune_workload")
                continue
            c["tune_workload_file"] = path
            c["code"] += f"\nccp tune {path} --budget 3min   # weighs the traced reads and the other patterns"


def combined_repacks(datasets: list[dict]) -> list[str]:
    """One `ccp repack` per file holding every dataset's repack cure, so cures for two datasets can both be
    followed (each cure's own command copies the file with that dataset changed only)."""
    by_file: dict[str, list[str]] = {}
    for d in datasets:
        for c in d["cures"]:
            if "repack" in c:
                by_file.setdefault(d["file"], []).append(f"-l {d['dataset']}:CHUNK={shape_str(c['repack']['chunks'])}")
    out = []
    for file, opts in sorted(by_file.items()):
        if len(opts) > 1:
            stem, ext = os.path.splitext(file)
            out.append(f"ccp repack {' '.join(opts)} {file} {stem}-all-repack-cures{ext or '.h5'}")
    return out


def repack_output(file: str, dataset: str, chunks) -> str:
    """The repacked file's name: the file's, the dataset's and the chunk shape's, so no two cures share one."""
    stem, ext = os.path.splitext(file)
    return f"{stem}-{dataset_slug(dataset, keep='-_.', fill='_')}-{shape_str(chunks)}{ext or '.h5'}"


def diagnose(trace: Trace, memory: int = 1 << 30, verify: bool = False, patterns=(), tune_dir=None,
             summary: CallSummary | None = None) -> dict:
    """Every dataset's diagnosis, busiest first. ``summary``: the calls when the caller read the trace in
    batches (:func:`ccp.trace.stream.diagnose_folder`), else they are taken from ``trace.table``."""
    h = trace.header
    program = float(h.get("wall_s") or 0.0)
    summary = table_summary(trace) if summary is None else summary
    states = {f: file_state(trace, f) for f in summary.files}
    changed = sorted(f for f, s in states.items() if s == "changed")
    if verify and changed:
        raise CcpError(f"{changed[0]}: changed since the trace (its sha256 differs from the one recorded): --verify "
                       "would measure data the program never read; trace the program again")
    libs = program_libraries(trace)
    out: dict[str, Any] = {"trace": str(trace.path), "completeness": completeness_line(trace), "files_changed": changed,
           "libraries": list(libs),
           "file_states": states, "command": h.get("command"), "program_s": program, "calls": summary.calls,
           "reads": summary.reads, "writes": summary.writes,
           "pids": h.get("pids", []), "datasets": [], "untraced": untraced_note(h),
           "not_hdf5": not_hdf5_note(trace.path)}
    if not summary.calls:
        what = "calls on HDF5 datasets" if out["not_hdf5"] else "h5py dataset calls"
        out["message"] = (f"the trace holds no {what} (it is incomplete: calls may have been lost): nothing to "
                          "diagnose" if out["completeness"].startswith("trace INCOMPLETE") else
                          f"the program made no {what}: nothing to diagnose")
        return out
    shapes = [d["shape"] for d in trace.header.get("datasets", []) if isinstance(d, dict)]
    for block in patterns:
        fits = [sh for sh in shapes if len(sh) == len(block) and all(b <= s for b, s in zip(block, sh))]
        if not fits:
            raise CcpError(f"--pattern {shape_str(block)}: no traced dataset has rank {len(block)} and room for it "
                           f"(traced shapes: {', '.join(shape_str(sh) for sh in shapes) or 'none'})")
    multi_file = "xarray" in libs and program_source_calls(trace, "open_mfdataset")
    walls = summary.walls
    keys = sorted(walls, key=lambda k: (-float(walls[k]), str(k[0]), str(k[1])))   # ties by name
    for file, dataset in keys:
        sequences: dict = {}
        d = diagnose_dataset(trace, file, dataset, memory, program, states.get(file, "same"), patterns,
                             dataset_libraries(trace, libs, file, dataset), summary.rows(file, dataset), sequences)
        remote_diagnosis(trace, d)      # a file read through fsspec: GETs per call, fsspec cures
        if multi_file and d["cures"]:
            d["notes"].append("the program calls xr.open_mfdataset: if it opened this file that way, these cures are "
                              "per file, in this file's own index space (isel offsets of this file alone, not of the "
                              "combined dataset; xr.open_dataset(path, ...) stands for this one file)")
        if verify and d["cures"]:       # measured now: the read sequence the diagnosis built is replayed, then freed
            from ccp.trace.verify import verify_top

            d["verified"] = against_prediction(verify_top(trace, d, seq=sequences.get("read")), d["cures"][0])
        out["datasets"].append(d)
    write_tune_workloads(out, tune_dir)
    out["combined_repacks"] = combined_repacks(out["datasets"])
    return out


def format_diagnosis(diag: dict) -> str:
    lines = [(f"{diag.get('completeness', 'trace')}: {diag['trace']}: {diag['calls']} dataset call(s) "
              f"({diag.get('reads', 0)} read(s), {diag.get('writes', 0)} write(s)) in {len(diag['pids'])} process(es); "
              f"program time {format_seconds(diag['program_s'])}")]
    for f in diag.get("files_changed", []):
        lines.append(f"{f} CHANGED since the trace (sha256 differs): the diagnosis is of the file as traced; "
                     "no cure rewrites it (trace again to get them); --verify refuses it")
    for key in ("untraced", "not_hdf5"):
        if diag.get(key):
            lines.append(f"note: {diag[key]}")
    if diag.get("message"):
        return "\n".join(lines + [diag["message"]])
    for d in diag["datasets"]:
        lines.append("")
        lines.append(f"{d['dataset']} in {d['file']}: shape {d['shape']} {d['dtype']}, chunks "
                     f"{shape_str(d['chunks']) if d['chunks'] else 'contiguous'}"
                     f"{', ' + '+'.join(d['filters']) if d['filters'] else ''}"
                     + (f"; {'netCDF-C chunk cache (get_var_chunk_cache)' if d.get('library') == 'netCDF4' else 'cache'} "
                        f"{format_bytes(d['cache']['nbytes'])}/{d['cache']['nslots']} slots"
                        if d.get("cache") and d["chunks"] else ""))      # a contiguous dataset has no chunk cache
        most = "at most " if d.get("approximate_calls") else ""
        if most:        # said before any count it bounds
            lines.append(f"  note: {bounded_note(d['approximate_calls'], d['reads'])}")
        if d["reads"]:
            lines.append(f"  reads: {d['reads']} call(s)")
        if "chunk_loads" in d:
            ratio = d["decoded_per_delivered"]
            lines.append(f"  model over the real sequence: {most}{d['chunk_loads']} chunk loads, "
                         f"{most}{d['chunk_loads_per_call']:.1f} per call, "
                         f"{most}{ratio:.2f} bytes decoded per byte delivered" if ratio else
                         f"  model over the real sequence: {most}{d['chunk_loads']} chunk loads")
            lines.append(f"  time: measured {format_seconds(d['wall_s'])}, predicted from the trace's own costs "
                         f"{most}{format_seconds(d['predicted_s'])}")
        for f in d["findings"]:
            lines.append(f"  - {f}")
        if d["reads"]:
            _format_cures(lines, d["cures"], "the reads'", _small_share(d.get("wall_s"), diag.get("program_s")))
        if d.get("verified"):
            v = d["verified"]
            if v.get("before_s") is None or v.get("after_s") is None:      # ccp.trace.verify: not measured
                lines.append(f"  verified: {v['cure']}: not measured ({v['note']})")
            else:
                ratio_text = f"{v['before_s'] / v['after_s']:.1f}x; " if v["after_s"] else ""
                lines.append(f"  verified: {v['cure']}: replayed {format_seconds(v['before_s'])} -> "
                             f"{format_seconds(v['after_s'])} ({ratio_text}{prediction_words(v)}{v['note']})")
                if v.get("verdict") == "refuted":
                    lines.append(f"  NOT CONFIRMED: {v['cure']} measured slower in every replay, against the model's "
                                 "prediction: do not apply it on this evidence")
                elif v.get("verdict") == "unclear":
                    lines.append(f"  not confirmed: {v['cure']} was not faster in every replay (the machine's noise "
                                 "or a small difference): measure it in the program before applying it")
        if d.get("write_calls"):
            wmost = "at most " if d.get("write_approximate_calls") else ""     # bounding boxes: ccp.trace.writes
            lines.append(f"  writes: {d['write_calls']} call(s)" + (
                f"; model: {wmost}{d['write_chunk_loads']} chunk(s) read back, {wmost}{d['write_chunk_flushes']} written "
                f"during the calls, {wmost}{d['close_chunk_flushes']} at the close; time: measured "
                f"{format_seconds(d['write_wall_s'])}, predicted {wmost}{format_seconds(d['write_predicted_s'])} (cures are "
                f"ranked on calls plus close: {wmost}{format_seconds(d['write_predicted_with_close_s'])})"
                if "write_predicted_s" in d else ""))
            for f in d["write_findings"]:
                lines.append(f"  - {f}")
            _format_cures(lines, d["write_cures"], "the writes'",
                          _small_share(d.get("write_wall_s"), diag.get("program_s")))
        for note in d.get("notes", []):
            lines.append(f"  note: {note}")
    for cmd in diag.get("combined_repacks", []):
        lines.append("")
        lines.append("every repack cure of a file in one copy (each cure's own command changes one dataset):")
        lines.append(f"  {cmd}")
    return "\n".join(lines)


SMALL_SHARE = 0.01     # calls under 1% of the program's time: any cure of them is said to be worth at most that


def _small_share(calls_s, program_s) -> str:
    """'' or a warning that the calls are a negligible share of the program's time (a cure's speed-up is of
    the calls' time only: 1.4x on 0.02% of a program saves nothing a user would notice)."""
    if not calls_s or not program_s or calls_s >= SMALL_SHARE * program_s:
        return ""
    return (f"these calls are {100 * calls_s / program_s:.2g}% of the program's time ({format_seconds(calls_s)} of "
            f"{format_seconds(program_s)}): a cure saves at most that; the program's time is elsewhere")


def _format_cures(lines: list[str], cures: list[dict], whose: str, small: str = "") -> None:
    if not cures:
        lines.append(f"  no cure predicts a gain of 10% or more for {whose} time")
        return
    if small:
        lines.append(f"  note: {small}")
    lines.append(f"  cures, best first ({RULE}; predicted time for {whose} calls):")
    for i, c in enumerate(cures, 1):
        sp = f", {c['speedup']:.1f}x faster" if c.get("speedup") else ""
        most = "at most " if c.get("bounded") else ""
        lines.append(f"  {i}. {c['cure']}: {most}{format_seconds(c['predicted_s'])}{sp} ({c['why']})")
        for code in c["code"].splitlines():
            lines.append(f"       {code}")
