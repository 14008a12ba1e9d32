"""A traced dataset's exact sequence of selections, in the shape of ccp's request plans.

A sweep's ``{trace: FOLDER, dataset: /path}`` access is parsed by config into a spec; the trace is
loaded and its requests planned by :func:`ccp.workload.replay_batches.traced_plan` (used by
:func:`ccp.workload.requests.plan_for` and :mod:`ccp.workload.sweep`); ``ccp diagnose`` (ccp.trace) reads the
same sequence. This module holds the pieces; :mod:`ccp.workload.replay_batches` builds the sequence from them.

:func:`ccp.workload.replay_batches.replay_sequence` turns the low-level rows of a trace (what HDF5 was asked to do) into
``starts``/``counts`` boxes, in the order each process made them, with the points where the
chunk cache was lost (the last handle of the dataset closed, or its file closed), so a replay can
close and reopen the dataset there. Each process is its own session (its own cache).

How selections become requests (``ccp.workload.requestplan.RequestPlan``):

* ``all``/``box``: one box, exact.
* ``regular`` hyperslabs (``count`` blocks per dimension, ``stride`` apart, e.g. ``a[::3]``): one request, the
  hyperslab itself (its box, strides and blocks), for any layout: the model visits each chunk holding selected
  elements once per call, in HDF5's order, with those elements (chunk loads exact), and counts a chunk read
  directly (unfiltered, bigger than the cache) one read per piece contiguous on disk and in memory, as HDF5 does
  (``tests/model/test_strided.py`` against HDF5 under the log VFD, on layouts other than the traced one too;
  ``tests/workload/test_replay_strided.py``: the two gaps a box per chunk had, ``a[::3]`` of 100 elements read
  directly from 10-element chunks, 34 reads not 10, and 2-element chunks, 34 loads not 20).
* ``blocks`` (irregular hyperslabs, e.g. a list index ``d[[0, 5, 9]]``): one box per listed block, the boxes one
  call (below).
* ``points`` (a point selection, e.g. h5py's boolean mask): one 1-element box per point, in order, one call.
* a call of more than 4,096 blocks or points: the recorder writes their list as runs in arithmetic progression
  when that is short enough (:func:`listed_items` decodes it), e.g. a 5,001-row list index ``d[[0, 2, ..., 9998,
  99998]]`` as two runs; the boxes are then those of the blocks or points, as above.
* more than ``max_boxes`` blocks or points in one call, blocks/points not listed in the trace, or a damaged
  regular hyperslab: the selection's bounding box (``approximate`` counts these calls).

A call split into several boxes (blocks, points) is still one call: ``call_of[i]`` is the index of the
low-level call request ``i`` belongs to, and the plan carries it (``RequestPlan.calls``, with ``points`` for a point
selection's boxes), so the model takes the boxes as the one call HDF5 made (:mod:`ccp.model.union`): each chunk
once per call, in C order, with all the call's elements in it, a chunk read directly one read per run contiguous on
disk and in memory. Fed box by box it visited a chunk once per box, which over-counted loads wherever a chunk was
not kept in the cache between boxes (``tests/trace/test_diagnose_list_index.py``: 140 loads predicted where the
replay measured 60). A regular hyperslab is one request.
"""

from __future__ import annotations

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
    bounded: np.ndarray | None = None   # which low-level calls those are (indices of calls; None: none)

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


def _regular(row: dict, rank: int):
    """A regular hyperslab row as one request: ``(start, box, stride, block)`` lists, the box ``(count - 1) * stride
    + block`` per dimension; blocks that abut (or a single one) are the box (stride = block = the box's count).
    None if the row is damaged (missing lists, a rank other than the dataset's, or blocks HDF5 would refuse)."""
    try:
        start, count, stride, block = ([int(v) for v in row[k]] for k in ("start", "count", "stride", "block"))
    except (TypeError, ValueError):
        return None
    if not all(len(v) == rank for v in (start, count, stride, block)):
        return None
    box, out_stride, out_block = [], [], []
    for c, t, b in zip(count, stride, block):
        if c < 0 or b < 0 or (c > 1 and t < b) or (c > 0 and b == 0):
            return None
        extent = (c - 1) * t + b if c > 0 else 0
        box.append(extent)
        gaps = c > 1 and t > b
        out_stride.append(t if gaps else extent)
        out_block.append(b if gaps else extent)
    return start, box, out_stride, out_block


def _boxes(row, rank: int, max_boxes: int) -> tuple[list, list, bool, list | None, list | None]:
    """A low-level row's selection as requests: ``(starts, counts, approximate, strides, blocks)`` (lists; strides
    and blocks None unless the row is a regular hyperslab, then one request; see the module's docstring)."""
    row = {k: _present(row[k]) for k in BOX_COLUMNS}   # a missing list of an Arrow list column reads as NA: None
    sel = row["sel"]
    start = list(row["start"]) if row["start"] is not None else None
    count = list(row["count"]) if row["count"] is not None else None
    if sel in ("all", "box"):
        return [start], [count], False, None, None
    if sel == "regular" and start is not None and count is not None:   # else damaged: like bounds-only, below
        one = _regular(row, rank)
        if one is not None:
            return [one[0]], [one[1]], False, [one[2]], [one[3]]
    if sel == "blocks" and row["blocks"] is not None:
        corners = listed_items(row["blocks"], 2 * rank, max_boxes)
        if corners is not None:
            corners = corners.reshape(-1, 2, rank)
            return corners[:, 0].tolist(), (corners[:, 1] - corners[:, 0] + 1).tolist(), False, None, None
    if sel == "points" and row["points"] is not None:
        pts = listed_items(row["points"], rank, max_boxes)
        if pts is not None:
            return pts.tolist(), [[1] * rank] * len(pts), False, None, None
    if start is not None and count is not None:      # bounds only
        return [start], [count], True, None, None
    return [], [], True, None, None


RUNS = -1       # first value of a list the recorder wrote as runs (ccp.trace.selections._listed)


def listed_items(values, width: int, most: int) -> np.ndarray | None:
    """A trace's ``blocks`` or ``points`` list as an ``(n, width)`` array (None: more than ``most`` items, or a list
    that does not decode). The recorder writes a large call's list as runs, ``[RUNS, n, *first, *step, ...]``:
    ``n`` items ``first + k * step`` each; else the items one after the other."""
    flat = np.asarray(values, np.int64).ravel()
    if not len(flat) or flat[0] != RUNS:
        return flat.reshape(-1, width) if len(flat) % max(width, 1) == 0 and len(flat) // max(width, 1) <= most \
            else None
    runs = flat[1:]
    if len(runs) % (1 + 2 * width):
        return None
    runs = runs.reshape(-1, 1 + 2 * width)
    lengths = runs[:, 0]
    if (lengths < 1).any() or int(lengths.sum()) > most:
        return None
    k = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)    # index within its run
    return np.repeat(runs[:, 1:1 + width], lengths, axis=0) + k[:, None] * np.repeat(runs[:, 1 + width:], lengths,
                                                                                     axis=0)


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
