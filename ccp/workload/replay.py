"""A traced dataset's exact sequence of selections, in the shape of ccp's request plans.

A sweep's ``{trace: FOLDER, dataset: /path}`` access is parsed by config into a spec; the trace is
loaded and its requests planned here (:func:`traced_plan`, used by :func:`ccp.workload.requests.plan_for`
and :mod:`ccp.workload.sweep`); ``ccp diagnose`` (ccp.trace) reads the same sequence.

:func:`replay_sequence` turns the low-level rows of a trace (what HDF5 was asked to do) into
``starts``/``counts`` boxes, in the order each process made them, with the points where the
chunk cache was lost (the last handle of the dataset closed, or its file closed), so a replay can
close and reopen the dataset there. Each process is its own session (its own cache).

How selections become boxes (``ccp.workload.requestplan.RequestPlan`` holds boxes only):

* ``all``/``box``: one box, exact.
* ``regular`` hyperslabs: one box per block (``count`` blocks per dimension, ``stride`` apart).
* ``blocks`` (irregular hyperslabs, e.g. fancy indexing): one box per listed block.
* ``points``: one 1-element box per point.
* more than ``max_boxes`` boxes in one call, or blocks/points not listed in the trace: the
  selection's bounding box (``approximate`` counts these calls).

A call split into several boxes is still one call: ``call_of[i]`` is the index of the
low-level call request ``i`` belongs to. HDF5 visits each chunk once per call; a model fed the
boxes one by one visits a chunk once per box, which only differs when a chunk cannot be kept in
the cache (then the model counts more loads than HDF5 did).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ccp.errors import CcpError
from ccp.hdf5.defaults import chunk_cache_default
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace, load_trace

LOW_APIS = ("DatasetID.read", "DatasetID.write", "fast_reader")


@dataclass(frozen=True)
class CacheInForce:
    nbytes: int
    nslots: int
    w0: float


@dataclass(frozen=True)
class ReplaySequence:
    """One dataset's requests as traced. ``session_starts`` always begins with 0."""

    file: str
    dataset: str
    pids: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    chunks: tuple[int, ...] | None
    filtered: bool
    ops: np.ndarray                 # (n,) "read" / "write"
    plan: RequestPlan               # (n, rank) starts and counts
    call_of: np.ndarray             # (n,) index of the low-level call each box belongs to
    session_starts: np.ndarray      # request indices where a fresh cache starts (reopen / new process)
    session_caches: tuple[CacheInForce, ...]
    session_pids: tuple[int, ...]   # the process of each session
    ncalls: int                     # low-level calls
    approximate: int                # calls replayed by their bounding box

    @property
    def reopens(self) -> int:
        """Times the cache was lost between requests within one process."""
        return len(self.session_starts) - len(set(self.session_pids))

    def sessions(self):
        """(cache, slice of requests) for each session, in order."""
        bounds = list(self.session_starts) + [len(self.plan)]
        for cache, a, b in zip(self.session_caches, bounds[:-1], bounds[1:]):
            yield cache, slice(int(a), int(b))


def _boxes(row, rank: int, max_boxes: int) -> tuple[list, list, bool]:
    sel = row["sel"]
    start = list(row["start"]) if row["start"] is not None else None
    count = list(row["count"]) if row["count"] is not None else None
    if sel in ("all", "box"):
        return [start], [count], False
    if sel == "regular":
        stride, block = list(row["stride"]), list(row["block"])
        n = int(np.prod(count))
        if n > max_boxes:
            lo = start
            hi = [s + (c - 1) * st + b for s, c, st, b in zip(start, count, stride, block)]
            return [lo], [[h - a for a, h in zip(lo, hi)]], True
        starts = [[s + i * st for s, i, st in zip(start, idx, stride)]
                  for idx in itertools.product(*[range(c) for c in count])]
        return starts, [block] * len(starts), False
    if sel == "blocks" and row["blocks"] is not None:
        corners = np.asarray(row["blocks"], np.int64).reshape(-1, 2, rank)
        if len(corners) <= max_boxes:
            return corners[:, 0].tolist(), (corners[:, 1] - corners[:, 0] + 1).tolist(), False
    if sel == "points" and row["points"] is not None:
        pts = np.asarray(row["points"], np.int64).reshape(-1, rank)
        if len(pts) <= max_boxes:
            return pts.tolist(), [[1] * rank] * len(pts), False
    if start is not None and count is not None:      # bounds only
        return [start], [count], True
    return [], [], True


def replay_sequence(trace: Trace, dataset: str, pid: int | None = None, file: str | None = None,
                    max_boxes: int = 65536, op: str | None = None) -> ReplaySequence:
    """The exact sequence of ``dataset``'s selections in ``trace`` (one process with ``pid``; only
    ``op`` requests, "read" or "write", when given; open/close boundaries are kept either way)."""
    file, dataset = trace.find_dataset(dataset, file)
    layout = trace.layout(file, dataset) or {}
    if not layout:
        raise CcpError(f"{trace.path}: no layout recorded for {file}:{dataset}")
    t = trace.table
    rows = t[(t["file"] == file) & (t["dataset"] == dataset)]
    if pid is not None:
        if pid not in {int(p) for p in rows["pid"].unique()}:
            raise CcpError(f"{trace.path}: pid {pid} made no call on {dataset} (pids: "
                           f"{', '.join(str(int(p)) for p in sorted(rows['pid'].unique()))})")
        rows = rows[rows["pid"] == pid]
    rank = len(layout["shape"])
    starts, counts, ops, call_of, session_starts, caches, pids, session_pids = [], [], [], [], [], [], [], []
    ncalls = approximate = 0
    for p, prow in rows.groupby("pid", sort=True):
        pids.append(int(p))
        cache = None
        fresh = True           # a new session starts at the next request
        for r in prow.sort_values("seq").to_dict("records"):
            if r["kind"] == "event":
                if r["op"] == "dataset_open" and not pd.isna(r["cache_nbytes"]):
                    cache = CacheInForce(int(r["cache_nbytes"]), int(r["cache_nslots"]), float(r["cache_w0"]))
                    if not fresh and caches[-1] is None:    # opened during the session's first call
                        caches[-1] = cache
                elif r["op"] == "dataset_close":
                    fresh = True
                continue
            if r["kind"] != "call" or r["api"] not in LOW_APIS or r["sel"] in ("none", "unknown", None):
                continue
            if op is not None and r["op"] != op:
                continue
            b_starts, b_counts, approx = _boxes(r, rank, max_boxes)
            if not b_starts:
                continue
            if fresh:
                session_starts.append(len(starts))
                caches.append(cache)
                session_pids.append(int(p))
                fresh = False
            approximate += approx
            starts.extend(b_starts)
            counts.extend(b_counts)
            ops.extend([r["op"]] * len(b_starts))
            call_of.extend([ncalls] * len(b_starts))
            ncalls += 1
    fallback = _first_cache(rows) or library_cache(trace)
    caches = [c or fallback for c in caches]
    chunks = tuple(layout["chunks"]) if layout.get("chunks") else None
    return ReplaySequence(
        file=file, dataset=dataset, pids=tuple(pids), shape=tuple(layout["shape"]), dtype=layout["dtype"],
        itemsize=int(layout["itemsize"]), chunks=chunks, filtered=bool(layout.get("filters")),
        ops=np.asarray(ops, dtype=object), plan=RequestPlan(np.asarray(starts, np.int64).reshape(-1, rank),
                                                             np.asarray(counts, np.int64).reshape(-1, rank)),
        call_of=np.asarray(call_of, np.int64), session_starts=np.asarray(session_starts, np.int64),
        session_caches=tuple(caches), session_pids=tuple(session_pids), ncalls=ncalls, approximate=approximate)


def library_cache(trace: Trace) -> CacheInForce:
    """The chunk cache HDF5 gave a dataset in the traced program: the default of the HDF5 version the trace
    recorded (``environment.hdf5``), else of the HDF5 in this process. For a trace with no cache recorded."""
    version = None
    text = str((trace.header.get("environment") or {}).get("hdf5") or "")
    try:
        version = tuple(int(v) for v in text.split(".")[:3]) if text else None
    except ValueError:       # a version string ccp cannot read: this process's library is the best guess
        version = None
    d = chunk_cache_default(version)
    return CacheInForce(d.nbytes, d.nslots, d.w0)


def _first_cache(rows) -> CacheInForce | None:
    """The cache of the first dataset open in the trace (a forked child inherits its parent's)."""
    opens = rows[(rows["kind"] == "event") & (rows["op"] == "dataset_open") & rows["cache_nbytes"].notna()]
    if not len(opens):
        return None
    r = opens.iloc[0]
    return CacheInForce(int(r["cache_nbytes"]), int(r["cache_nslots"]), float(r["cache_w0"]))


def traced_plan(trace_dir, dataset: str, shape=None, pid: int | None = None, op: str = "read"):
    """What a sweep's ``{trace: TRACE, dataset: /path, pid: N}`` access replays.

    Returns ``(plan, reopen_before, caches)``: the ``RequestPlan`` of the traced ``op`` requests,
    the request indices before which the program's chunk cache was lost (close and reopen the
    dataset there; a new process also starts there), and the cache each session had. ``shape``,
    when given, must be the traced dataset's shape (a sweep's layouts keep the shape).
    """
    seq = replay_sequence(load_trace(trace_dir), dataset, pid=pid, op=op)
    if shape is not None and tuple(int(s) for s in shape) != tuple(seq.shape):
        raise CcpError(f"{trace_dir}: {seq.dataset} was traced with shape {list(seq.shape)}, "
                       f"the sweep's dataset has {list(shape)}")
    if not len(seq.plan):
        raise CcpError(f"{trace_dir}: no {op} requests on {seq.dataset} in the trace")
    return seq.plan, seq.session_starts[1:].copy(), seq.session_caches
