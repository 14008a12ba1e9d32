"""A traced dataset's exact sequence of selections, in the shape of ccp's request plans.

A sweep's ``{trace: FOLDER, dataset: /path}`` access is parsed by config into a spec; the trace is
loaded and its requests planned by :func:`ccp.workload.replay_batches.traced_plan` (used by
:func:`ccp.workload.requests.plan_for` and :mod:`ccp.workload.sweep`); ``ccp diagnose`` (ccp.trace) reads the
same sequence. This module holds the pieces; :mod:`ccp.workload.replay_batches` builds the sequence from them.

:func:`ccp.workload.replay_batches.replay_sequence` turns the low-level rows of a trace (what HDF5 was asked to do) into
``starts``/``counts`` boxes, in the order each process made them, with the points where the
chunk cache was lost (the last handle of the dataset closed, or its file closed), so a replay can
close and reopen the dataset there. Each process is its own session (its own cache).

How selections become boxes (``ccp.workload.requestplan.RequestPlan`` holds boxes only):

* ``all``/``box``: one box, exact.
* ``regular`` hyperslabs (``count`` blocks per dimension, ``stride`` apart): on a chunked dataset one box per
  chunk they touch, holding exactly the elements selected in it (HDF5 visits each chunk once per call);
  on a contiguous one, one box per block.
* ``blocks`` (irregular hyperslabs, e.g. fancy indexing): one box per listed block.
* ``points``: one 1-element box per point.
* more than ``max_boxes`` boxes in one call, or blocks/points not listed in the trace: the
  selection's bounding box (``approximate`` counts these calls).

A call split into several boxes is still one call: ``call_of[i]`` is the index of the
low-level call request ``i`` belongs to. HDF5 visits each chunk once per call; a model fed the
boxes one by one visits a chunk once per box, which only differs when a chunk cannot be kept in
the cache (then the model counts more loads than HDF5 did).

A regular hyperslab's box per chunk holds the chunk's selected elements as one run, so it is the selection only
for the traced layout and a chunk the cache keeps (``tests/workload/test_replay_strided.py``: the loads, raw reads
and bytes of a box per block). Known gaps, measured: a chunk read directly (bigger than the cache, unfiltered)
counts one read per box where HDF5 reads each block (``a[::3]``, 10-element chunks, no cache: 10 reads, not 34);
a candidate layout with chunks smaller than the stride sees the run, not the strided elements (2-element chunks:
20 loads, not 34). Exact for every layout would take the hyperslab itself (start, stride, count, block) in the
kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import DEFAULT_W0, chunk_cache_default
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace

MAX_EXTENT = 2 ** 62       # the model's int64 arithmetic
REPLAY_COLUMNS = ("kind", "pid", "seq", "api", "op", "sel", "start", "count", "stride", "block", "blocks", "points",
                  "cache_nbytes", "cache_nslots", "cache_w0")      # what a sequence is built from
LOW_APIS = ("DatasetID.read", "DatasetID.write", "fast_reader", "Variable._get", "Variable._put")   # + netCDF4-python's


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
    session_caches: tuple[ChunkCache, ...]
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


BOX_COLUMNS = ["sel", "start", "count", "stride", "block", "blocks", "points"]    # what _boxes reads of a row


def _present(value):
    """``value``, or None for a missing one (None, NA, NaN); a list or array is always present."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value


MAX_COORDS = 1 << 22      # selected coordinates listed along one dimension; beyond, the bounding box


def _per_chunk(first: np.ndarray, nsel: np.ndarray, last: np.ndarray):
    """One run per chunk for the coordinates selected in it (the first, how many, the last): ``nsel`` long, inside
    the chunk (so it covers the chunk whole only when the selection does), from the first selected coordinate, the
    last chunk's ending at the last selected one (bounding boxes stay the selection's). One chunk with gaps in it:
    ``(first, nsel - 1)`` and ``(last, 1)``."""
    first, nsel = first.copy(), nsel.copy()
    if len(first) == 1 and first[0] + nsel[0] - 1 < last[0]:
        return np.array([first[0], last[0]]), np.array([nsel[0] - 1, 1])
    if len(first):
        first[-1] = last[-1] - nsel[-1] + 1
    return first, nsel


_RUNS: dict[tuple, tuple[np.ndarray, np.ndarray] | None] = {}
MAX_RUNS_KEPT, MAX_RUN_LENGTH_KEPT = 4096, 4096     # _axis_runs' memory: entries, and runs in one entry


def _axis_runs(start: int, count: int, stride: int, block: int, chunk: int | None):
    """:func:`_axis_runs_of`, remembered (read-only arrays) when short: a program's calls share their dimensions'
    selections (``a[t, ::2]`` for each t: the ``::2``)."""
    key = (start, count, stride, block, chunk)
    if key in _RUNS:
        return _RUNS[key]
    runs = _axis_runs_of(start, count, stride, block, chunk)
    if runs is None or len(runs[0]) <= MAX_RUN_LENGTH_KEPT:
        if len(_RUNS) >= MAX_RUNS_KEPT:
            _RUNS.clear()
        if runs is not None:
            for a in runs:
                a.setflags(write=False)
        _RUNS[key] = runs
    return runs


def _axis_runs_of(start: int, count: int, stride: int, block: int, chunk: int | None):
    """One dimension of a regular hyperslab as runs ``(first, length)``: per block when ``chunk`` is None; else
    grouped by the chunk they fall in (:func:`_per_chunk`). None: too many to list."""
    if stride == block or count == 1:               # the blocks abut (or there is one): one run
        return np.array([start], np.int64), np.array([(count - 1) * stride + block], np.int64)
    if chunk is None or (block == 1 and stride >= chunk):     # a run per block (each in a chunk of its own)
        if count > MAX_COORDS:
            return None
        return start + stride * np.arange(count, dtype=np.int64), np.full(count, block, np.int64)
    if block == 1:          # closed form: the elements i in chunk k are ceil((k*chunk - start) / stride) .. (exclusive)
        k = np.arange(start // chunk, (start + (count - 1) * stride) // chunk + 1, dtype=np.int64)
        i_lo = np.clip(-((start - k * chunk) // stride), 0, count)
        i_hi = np.clip(-((start - (k + 1) * chunk) // stride), 0, count)
        keep = i_hi > i_lo
        i_lo, i_hi = i_lo[keep], i_hi[keep]
        return _per_chunk(start + i_lo * stride, i_hi - i_lo, start + (i_hi - 1) * stride)
    if count * block > MAX_COORDS:
        return None
    coords = (start + stride * np.arange(count, dtype=np.int64))[:, None] + np.arange(block, dtype=np.int64)
    coords = coords.ravel()                         # increasing: HDF5 keeps block <= stride
    firsts = np.flatnonzero(np.diff(coords // chunk, prepend=-1) != 0)
    ends = np.append(firsts[1:], len(coords))
    return _per_chunk(coords[firsts], ends - firsts, coords[ends - 1])


def _boxes(row, rank: int, max_boxes: int, chunks=None) -> tuple[list | np.ndarray, list | np.ndarray, bool]:
    """A low-level row's selection as boxes, starts and counts (lists, or ``(n, rank)`` int64 arrays for a regular
    hyperslab; see the module's docstring); ``chunks``: the layout's, to group a regular hyperslab's blocks by the
    chunk they fall in (None: contiguous, a box per block)."""
    row = {k: _present(row[k]) for k in BOX_COLUMNS}   # a missing list of an Arrow list column reads as NA: None
    sel = row["sel"]
    start = list(row["start"]) if row["start"] is not None else None
    count = list(row["count"]) if row["count"] is not None else None
    if sel in ("all", "box"):
        return [start], [count], False
    if sel == "regular" and start is not None and count is not None:   # else damaged: like bounds-only, below
        stride, block = list(row["stride"]), list(row["block"])
        runs = [_axis_runs(int(s), int(c), int(st), int(b), None if chunks is None else int(chunks[d]))
                for d, (s, c, st, b) in enumerate(zip(start, count, stride, block))]
        n = math.prod(len(r[0]) for r in runs) if all(r is not None for r in runs) else max_boxes + 1
        if n > max_boxes:
            lo = start
            hi = [s + (c - 1) * st + b for s, c, st, b in zip(start, count, stride, block)]
            return [lo], [[h - a for a, h in zip(lo, hi)]], True
        lengths = tuple(len(r[0]) for r in runs if r is not None)
        starts = np.empty((rank, *lengths), np.int64)
        counts = np.empty((rank, *lengths), np.int64)
        for d, r in enumerate(runs):        # the runs' product in C order (the last dimension fastest), broadcast
            assert r is not None
            along = (1,) * d + (-1,) + (1,) * (rank - d - 1)
            starts[d] = r[0].reshape(along)
            counts[d] = r[1].reshape(along)
        return starts.reshape(rank, n).T, counts.reshape(rank, n).T, False
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


def _matrix(col, rank: int) -> np.ndarray | None:
    """A column of equal-length lists (numpy arrays, lists, or an Arrow list column) as an ``(n, rank)``
    int64 array, without a Python object per row where the storage allows; None if any is missing or ragged."""
    n = len(col)
    if not n:
        return np.zeros((0, rank), np.int64)
    if isinstance(col.dtype, pd.ArrowDtype):
        import pyarrow as pa

        arr = pa.chunked_array(col.array._pa_array).combine_chunks() if hasattr(col.array, "_pa_array") else None
        if arr is None or arr.null_count:
            return None
        lengths = np.diff(np.asarray(arr.offsets))
        values = np.asarray(arr.flatten(), dtype=np.int64) if len(arr.flatten()) else np.zeros(0, np.int64)
    else:
        vals = col.to_numpy(dtype=object)
        try:
            lengths = np.fromiter((len(v) for v in vals), np.int64, n)
            values = (np.concatenate(list(vals)).astype(np.int64, copy=False) if rank else np.zeros(0, np.int64))
        except (TypeError, ValueError, OverflowError):
            return None
    if (lengths != rank).any() or len(values) != n * rank:
        return None
    return values.reshape(n, rank)


def scalar_matrix(col, legacy: int) -> np.ndarray | None:
    """A scalar dataset's start (``legacy`` 0) or count (``legacy`` 1) column as an ``(n, 0)`` array: each entry
    empty, or the ``[legacy]`` a recorder before the fix wrote for a netCDF4 scalar variable (rank 1 for a
    rank-0 dataset: it is the scalar); None if any entry is something else (a damaged trace)."""
    out = np.zeros((len(col), 0), np.int64)
    if _matrix(col, 0) is not None:
        return out
    m = _matrix(col, 1)
    if m is not None and (m == legacy).all():
        return out
    for v in col.to_numpy(dtype=object):      # a mix of both forms: row by row
        try:
            ok = v is not None and len(v) <= 1 and all(int(x) == legacy for x in v)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return None
    return out


class _Rows:
    """Some rows of a trace table, by position, read a column at a time: a million-row table is never
    copied whole (``rows["op"]`` is that column's rows; ``rows.row(i)`` one row)."""

    def __init__(self, table, positions: np.ndarray | None = None) -> None:
        self.table, self.positions = table, positions

    def __len__(self) -> int:
        return len(self.table) if self.positions is None else len(self.positions)

    def __getitem__(self, column: str):
        col = self.table[column]
        return col if self.positions is None else col.iloc[self.positions]

    def row(self, i: int):
        return self.table.iloc[int(i) if self.positions is None else int(self.positions[int(i)])]

    def subset(self, mask: np.ndarray) -> _Rows:
        base = np.arange(len(self.table)) if self.positions is None else self.positions
        return _Rows(self.table, base[mask])


def _is(col, values) -> np.ndarray:
    """Boolean mask of a text column's rows equal to one of ``values`` (missing: False), vectorised."""
    return col.isin(list(values)).fillna(False).to_numpy(bool)


def _cache_of(r) -> ChunkCache | None:
    if pd.isna(r["cache_nbytes"]) or pd.isna(r["cache_nslots"]):
        return None
    w0 = r["cache_w0"]
    return ChunkCache(int(r["cache_nbytes"]), int(r["cache_nslots"]), DEFAULT_W0 if pd.isna(w0) else float(w0))


#: netCDF-C's default chunk cache per variable, as ``netCDF4.get_chunk_cache()`` reports it here (netCDF4 1.7.5):
#: 64 MiB, 1000 slots, preemption 0.75 (HDF5's w0, which netCDF-C keeps) -- not HDF5's 8 MiB: a netCDF4-python reader
#: gets this one.
NETCDF_C_CACHE = (64 * 1024 * 1024, 1000, DEFAULT_W0)


def _read_through_netcdf4(trace: Trace) -> bool:
    """Whether the program read through netCDF4-python (netCDF-C): its calls are Variable calls, or the
    header's ``libraries`` names it."""
    libs = trace.header.get("libraries")
    if isinstance(libs, (list, dict)) and "netCDF4" in libs:
        return True
    apis = trace.table["api"].dropna().unique() if "api" in trace.table.columns else []
    return any(str(a).startswith("Variable") or "netCDF4" in str(a) for a in apis)


def library_cache(trace: Trace) -> ChunkCache:
    """The chunk cache a dataset had in the traced program when the trace did not record it: netCDF-C's
    default for a netCDF4-python reader (:data:`NETCDF_C_CACHE`, or the one the trace recorded), else
    the default of the HDF5 version the trace recorded (``environment.hdf5``), else of this process's HDF5."""
    if _read_through_netcdf4(trace):
        recorded = (trace.header.get("environment") or {}).get("netcdf_chunk_cache")
        if isinstance(recorded, (list, tuple)) and len(recorded) == 3:
            return ChunkCache(int(recorded[0]), int(recorded[1]), float(recorded[2]))
        return ChunkCache(*NETCDF_C_CACHE)
    version = None
    text = str((trace.header.get("environment") or {}).get("hdf5") or "")
    try:
        version = tuple(int(v) for v in text.split(".")[:3]) if text else None
    except ValueError:       # a version string ccp cannot read: this process's library is the best guess
        version = None
    d = chunk_cache_default(version)
    return ChunkCache(d.nbytes, d.nslots, d.w0)
