"""``ccp diagnose --verify``: measure the top cure by replaying the traced reads with and without it.

Both sides are the same replay (h5py high-level reads of the traced boxes, in order, reopening the
file where the program's cache was lost), so the ratio is the cure's effect, not the difference
between the program and a replay. The user's file is opened read-only; a repack cure is measured
on a temporary copy of the dataset with the new chunks and the file's own filters. The page cache
is warm on both sides (the file was just read); repeats give the median.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import replace

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import DEFAULT_W0
from ccp.trace.cures import block_sequence
from ccp.trace.libraries import is_local_path
from ccp.workload.replay import ReplaySequence, replay_sequence
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace


def replay_reads(path: str, dataset: str, seq: ReplaySequence, merge: bool = False, cache=None) -> float:
    """Seconds to replay ``seq``'s reads on ``path`` (one open per session, or per process if ``merge``)."""
    import h5py

    bounds = list(seq.session_starts) + [len(seq.plan)]
    sessions = list(zip(seq.session_caches, bounds[:-1], bounds[1:], seq.session_pids))
    if merge:
        merged: list[tuple] = []
        for c, a, b, pid in sessions:
            if merged and merged[-1][3] == pid:
                merged[-1] = (merged[-1][0], merged[-1][1], b, pid)
            else:
                merged.append((c, a, b, pid))
        sessions = merged
    t0 = time.perf_counter()
    for c, a, b, _ in sessions:
        c = cache or c
        with h5py.File(path, "r", rdcc_nbytes=int(c.nbytes), rdcc_nslots=int(c.nslots), rdcc_w0=float(c.w0)) as f:
            d = f[dataset]
            for i in range(int(a), int(b)):
                st, ct = seq.plan.starts[i], seq.plan.counts[i]
                d[tuple(slice(int(s), int(s + n)) for s, n in zip(st, ct))]
    return time.perf_counter() - t0


def _rechunked_copy(src_path: str, dataset: str, chunks, tmp: str) -> str:
    import h5py
    from h5py import h5d, h5s

    from ccp.hdf5 import plists

    out = os.path.join(tmp, "rechunked.h5")
    with h5py.File(src_path, "r") as f, h5py.File(out, "w") as g:
        src = f[dataset]
        dcpl = plists.relaid_dcpl(src.id, "chunked", tuple(int(c) for c in chunks), None)   # its own filters and fill
        parent = os.path.dirname(dataset.rstrip("/")) or "/"
        grp = g.require_group(parent)
        h5d.create(grp.id, os.path.basename(dataset).encode(), src.id.get_type(), h5s.create_simple(src.shape), dcpl=dcpl)
        dst = g[dataset]
        step = max(1, (64 << 20) // max(1, int(np.prod(src.shape[1:])) * src.dtype.itemsize)) if src.ndim else 1
        for i in range(0, src.shape[0], step):
            dst[i:i + step] = src[i:i + step]
    return out


def verify_top(trace: Trace, diag: dict, repeats: int = 3) -> dict:
    """Measure the top cure of one dataset's diagnosis; returns before/after seconds (None: not measured) and how."""
    cure = diag["cures"][0]
    file, dataset = diag["file"], diag["dataset"]
    how = cure.get("apply") or {}
    unmeasured = None   # said in words by format_diagnosis, never printed as a time or a speed-up
    if not is_local_path(file):
        return {"cure": cure["cure"], "before_s": unmeasured, "after_s": unmeasured,
                "note": "the program read a file object with no local path (fsspec, BytesIO): --verify replays local "
                        "files only"}
    if not os.path.isfile(file):
        return {"cure": cure["cure"], "before_s": unmeasured, "after_s": unmeasured,
                "note": f"{file} is not there any more: nothing to replay"}
    seq = replay_sequence(trace, dataset, file=file, op="read")
    name = cure["cure"]
    with tempfile.TemporaryDirectory(prefix="ccp-verify-") as tmp:
        after_path, after_seq, merge, cache = file, seq, False, None
        kind = how.get("kind")
        if kind == "repack":
            after_path = _rechunked_copy(file, dataset, how["chunks"], tmp)
        elif kind == "blocks":
            after_seq = block_sequence(seq)
        elif kind == "batched":
            npid = len(set(seq.session_pids))
            pids = tuple(sorted(set(seq.session_pids)))
            after_seq = replace(seq, ops=np.full(npid, "read", dtype=object),
                                plan=RequestPlan(np.tile(how["start"], (npid, 1)), np.tile(how["count"], (npid, 1))),
                                call_of=np.arange(npid, dtype=np.int64), ncalls=npid,
                                session_starts=np.arange(npid, dtype=np.int64),
                                session_caches=tuple(seq.session_caches[seq.session_pids.index(p)] for p in pids),
                                session_pids=pids)
        elif kind == "keep_open":
            merge = True
        elif kind == "cache":
            merge = bool(how.get("merge"))
            cache = ChunkCache(int(how["nbytes"]), int(how["nslots"]), DEFAULT_W0)
        else:
            return {"cure": name, "before_s": unmeasured, "after_s": unmeasured, "note": "this cure has no replay"}
        before, after = [], []
        for _ in range(repeats):
            before.append(replay_reads(file, dataset, seq))
            after.append(replay_reads(after_path, dataset, after_seq, merge=merge, cache=cache))
    b, a = statistics.median(before), statistics.median(after)
    return {"cure": name, "before_s": b, "after_s": a, "repeats": repeats,
            "note": f"replay of the traced reads, median of {repeats}, warm page cache"
                    + ("; repack measured on a temporary copy" if after_path != file else "")}
