"""A traced dataset's sequence of selections built from the trace's rows a batch at a time.

:class:`SequenceBuilder` is fed a dataset's rows in (pid, seq) order, batch after batch (``ccp diagnose``
reads ``calls.parquet`` 200,000 rows at a time; :func:`replay_sequence` (below) feeds it a
table in memory :data:`BATCH` rows at a time), turns each batch's calls into boxes at once and keeps only
those (int64 starts/counts, the call each box belongs to, one op code a box) and the session state between
batches: the process, the cache of the last dataset open and whether the next box starts a fresh cache.
:meth:`SequenceBuilder.finish` gives the :class:`~ccp.workload.replay.ReplaySequence`. One builder serves
both, so a trace streamed and a trace loaded whole replay the same sequence
(``tests/trace/test_diagnose_batches.py`` holds them to the same diagnosis at several batch sizes)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.errors import CcpError
from ccp.workload.replay import (
    BOX_COLUMNS,
    LOW_APIS,
    MAX_EXTENT,
    REPLAY_COLUMNS,
    ReplaySequence,
    _boxes,
    _cache_of,
    _is,
    _matrix,
    _Rows,
    library_cache,
    scalar_matrix,
)
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace, load_trace

BATCH = 200_000         # rows fed at a time by replay_sequence (a table in memory is never copied whole)
OPS = np.array(["read", "write"], dtype=object)     # indexed by op code: a pointer a request, two strings in all


class OutOfOrder(Exception):
    """The rows do not come in (pid, seq) order: the caller replays from the whole table instead."""


class SequenceBuilder:
    """One dataset's ``op`` requests ("read" or "write"), built from its rows batch by batch."""

    def __init__(self, where, file: str, dataset: str, layout: dict, op: str | None, max_boxes: int = 65536,
                 in_order: bool = False) -> None:
        """``op`` None: reads and writes; ``in_order``: the caller sorted the rows (keys are not checked)."""
        self.where, self.file, self.dataset, self.layout, self.op = where, file, dataset, layout, op
        self.rank = len(layout["shape"])
        self.max_boxes = max_boxes
        self.starts: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.call_of: list[np.ndarray] = []
        self.points: list[np.ndarray] = []      # per box: a point of a point selection (one call, in order)
        self.strides: list[np.ndarray | None] = []    # per batch: a regular hyperslab's strides and blocks (None:
        self.blocks: list[np.ndarray | None] = []     # the batch has none; finish() fills in the boxes' counts)
        self.nreq = self.ncalls = self.approximate = 0
        self.bounded: list[np.ndarray] = []      # per batch: the calls replayed by their bounding box
        self.reach = np.asarray(layout["shape"], np.int64)      # the largest extent a request reached
        self.session_starts: list[int] = []
        self.caches: list[ChunkCache | None] = []
        self.session_pids: list[int] = []
        self.pids: list[int] = []
        self.cache: ChunkCache | None = None
        self.fresh = True
        self.last_pid: int | None = None          # the process of the last row walked (the session walk)
        self.last_kept_pid: int | None = None     # the process of the last kept row (process starts)
        self.first_cache: ChunkCache | None = None
        self.order: tuple[int, int] | None = None
        self.in_order = in_order

    def add(self, rows) -> None:
        """The next rows of this dataset (a DataFrame of the trace's columns, file order)."""
        if not len(rows):
            return
        pid_all = rows["pid"].to_numpy(np.int64)
        seq_all = rows["seq"].to_numpy(np.int64)
        if not self.in_order:
            self._check_order(pid_all, seq_all)
        kind_event = _is(rows["kind"], ["event"])
        if self.first_cache is None:
            opens = np.flatnonzero(kind_event & _is(rows["op"], ["dataset_open"]) & rows["cache_nbytes"].notna().to_numpy(bool))
            if len(opens):
                self.first_cache = _cache_of(rows.iloc[int(opens[0])])
        is_low = (_is(rows["kind"], ["call"]) & _is(rows["api"], LOW_APIS) & rows["sel"].notna().to_numpy(bool)
                  & ~_is(rows["sel"], ("none", "unknown")))
        if self.op is not None:
            is_low &= _is(rows["op"], [self.op])
        is_event = kind_event & _is(rows["op"], ("dataset_open", "dataset_close"))
        pos = np.flatnonzero(is_low | is_event)
        if not len(pos):
            return
        low = is_low[pos]
        pids_col = pid_all[pos]
        low_rows = pos[low]
        sel = rows["sel"].iloc[low_rows]
        plain = _is(sel, ("all", "box"))
        nbox = np.ones(len(low_rows), np.int64)
        extra: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        hyper: dict[int, tuple[list, list]] = {}     # the regular hyperslabs' strides and blocks, by row
        boxed = np.flatnonzero(~plain)
        bounded_rows: list[int] = []      # rows replayed by their bounding box
        if len(boxed):      # the columns of these rows as Python lists at once: no pandas row a call
            picked = rows[BOX_COLUMNS].iloc[low_rows[boxed]]
            for j, values in zip(boxed.tolist(), zip(*(picked[c].tolist() for c in BOX_COLUMNS))):
                r_starts, r_counts, approx, r_strides, r_blocks = _boxes(dict(zip(BOX_COLUMNS, values)), self.rank,
                                                                         self.max_boxes)
                extra[j] = (np.asarray(r_starts, np.int64).reshape(-1, self.rank),
                            np.asarray(r_counts, np.int64).reshape(-1, self.rank))
                if r_strides is not None and r_blocks is not None:
                    hyper[j] = (r_strides, r_blocks)
                nbox[j] = len(r_starts)
                self.approximate += approx
                if approx and len(r_starts):
                    bounded_rows.append(j)
        pstarts = _matrix(rows["start"].iloc[low_rows[plain]], self.rank)
        pcounts = _matrix(rows["count"].iloc[low_rows[plain]], self.rank)
        if self.rank == 0 and (pstarts is None or pcounts is None):     # a netCDF4 scalar traced before the fix
            pstarts = scalar_matrix(rows["start"].iloc[low_rows[plain]], 0)
            pcounts = scalar_matrix(rows["count"].iloc[low_rows[plain]], 1)
        if pstarts is None or pcounts is None:
            raise CcpError(f"{self.where}: {self.dataset}: a selection's start/count is missing or not of rank "
                           f"{self.rank} (the trace is damaged)")
        offsets = np.concatenate([[0], np.cumsum(nbox)])
        starts = np.zeros((int(offsets[-1]), self.rank), np.int64)
        counts = np.zeros((int(offsets[-1]), self.rank), np.int64)
        starts[offsets[:-1][plain]] = pstarts
        counts[offsets[:-1][plain]] = pcounts
        for k, (b_starts, b_counts) in extra.items():
            if len(b_starts):
                starts[offsets[k]:offsets[k + 1]] = b_starts
                counts[offsets[k]:offsets[k + 1]] = b_counts
        if len(starts) and ((starts < 0).any() or (counts < 0).any() or (starts > MAX_EXTENT).any()
                            or (counts > MAX_EXTENT).any()):
            raise CcpError(f"{self.where}: {self.dataset}: a selection's start/count is outside 0..2**62 "
                           "(the trace is damaged)")
        strides = blocks = None
        if hyper:       # a box's own count is its stride and block
            strides, blocks = counts.copy(), counts.copy()
            for k, (b_strides, b_blocks) in hyper.items():
                strides[offsets[k]] = b_strides[0]
                blocks[offsets[k]] = b_blocks[0]
        self.strides.append(strides)
        self.blocks.append(blocks)
        has = nbox > 0
        call_index = self.ncalls + np.cumsum(has) - 1
        if bounded_rows:
            self.bounded.append(call_index[bounded_rows].astype(np.int64))
        self.call_of.append(np.repeat(call_index, nbox).astype(np.int64))
        self.codes.append(np.repeat(_is(rows["op"].iloc[low_rows], ["write"]).astype(np.uint8), nbox))
        self.points.append(np.repeat(_is(sel, ["points"]), nbox))
        if len(starts):
            self.reach = np.maximum(self.reach, (starts + counts).max(axis=0))
        self.starts.append(starts)
        self.counts.append(counts)
        self._sessions(rows, pos, low, pids_col, has, offsets)
        self.ncalls += int(has.sum())
        self.nreq += int(offsets[-1])

    def _check_order(self, pid_all: np.ndarray, seq_all: np.ndarray) -> None:
        """Raise OutOfOrder unless these rows follow the last ones, each (pid, seq) after the one before."""
        prev = (np.concatenate([[self.order[0]], pid_all[:-1]]), np.concatenate([[self.order[1]], seq_all[:-1]])) \
            if self.order is not None else (pid_all[:-1], seq_all[:-1])
        now = (pid_all, seq_all) if self.order is not None else (pid_all[1:], seq_all[1:])
        if not ((now[0] > prev[0]) | ((now[0] == prev[0]) & (now[1] > prev[1]))).all():
            raise OutOfOrder(f"{self.dataset}: rows not in (pid, seq) order")
        self.order = (int(pid_all[-1]), int(seq_all[-1]))

    def _sessions(self, rows, pos, low, pids_col, has, offsets) -> None:
        """replay_sequence's walk over the events, each process's first row and the first boxed call after
        each of them (and this batch's first boxed call: a session may have been left fresh by the last batch)."""
        low_pos = np.flatnonzero(low)
        boxed_pos = low_pos[has]
        ev_pos = np.flatnonzero(~low)
        first = self.last_kept_pid if self.last_kept_pid is not None else pids_col[0] - 1
        pid_starts = np.flatnonzero(np.diff(pids_col, prepend=first) != 0)
        self.last_kept_pid = int(pids_col[-1])
        marks = np.union1d(ev_pos, pid_starts)
        nxt = np.searchsorted(boxed_pos, marks)
        nxt = nxt[nxt < len(boxed_pos)]
        visit = np.union1d(np.union1d(marks, boxed_pos[nxt]), boxed_pos[:1]).astype(np.int64)
        opens = _is(rows["op"].iloc[pos[ev_pos]], ["dataset_open"])
        is_open = dict(zip(ev_pos.tolist(), opens.tolist()))
        for m in visit.tolist():
            p = int(pids_col[m])
            if p != self.last_pid:
                self.pids.append(p)
                self.last_pid, self.cache, self.fresh = p, None, True
            if not low[m]:
                if is_open[m]:
                    c = _cache_of(rows.iloc[int(pos[m])])
                    if c is not None:
                        self.cache = c
                        if not self.fresh and self.caches and self.caches[-1] is None:
                            self.caches[-1] = self.cache
                else:
                    self.fresh = True
                continue
            k = int(np.searchsorted(low_pos, m))
            if self.fresh and has[k]:
                self.session_starts.append(self.nreq + int(offsets[k]))
                self.caches.append(self.cache)
                self.session_pids.append(p)
                self.fresh = False

    def finish(self, library_cache: Callable[[], ChunkCache]) -> ReplaySequence:
        """The sequence; ``library_cache()`` is the cache of a session whose open recorded none (and no open
        of the dataset did)."""
        rank = self.rank
        starts = np.concatenate(self.starts) if self.starts else np.zeros((0, rank), np.int64)
        self.starts = []
        strides = blocks = None
        if any(x is not None for x in self.strides):
            strides = np.concatenate([c if x is None else x for c, x in zip(self.counts, self.strides)])
            blocks = np.concatenate([c if x is None else x for c, x in zip(self.counts, self.blocks)])
        self.strides, self.blocks = [], []
        counts = np.concatenate(self.counts) if self.counts else np.zeros((0, rank), np.int64)
        self.counts = []
        codes = np.concatenate(self.codes) if self.codes else np.zeros(0, np.uint8)
        call_of = np.concatenate(self.call_of) if self.call_of else np.zeros(0, np.int64)
        points = np.concatenate(self.points) if self.points else np.zeros(0, bool)
        self.codes, self.call_of, self.points = [], [], []
        fallback = self.first_cache or library_cache()
        chunks = tuple(int(c) for c in self.layout["chunks"]) if self.layout.get("chunks") else None
        shape = tuple(int(s) for s in self.layout["shape"])
        if len(starts):
            shape = tuple(int(v) for v in self.reach)
            if math.prod(shape) > MAX_EXTENT:
                raise CcpError(f"{self.where}: {self.dataset}: selections (start + count) reach {list(shape)}, more "
                               "than 2**62 elements (the trace is damaged)")
        return ReplaySequence(
            file=self.file, dataset=self.dataset, pids=tuple(self.pids), shape=shape, dtype=self.layout["dtype"],
            itemsize=int(self.layout["itemsize"]), chunks=chunks, filtered=bool(self.layout.get("filters")),
            ops=OPS[codes], plan=RequestPlan(starts, counts, strides=strides, blocks=blocks, calls=call_of,
                                             points=points if points.any() else None),
            call_of=call_of, session_starts=np.asarray(self.session_starts, np.int64),
            session_caches=tuple(c or fallback for c in self.caches), session_pids=tuple(self.session_pids),
            ncalls=self.ncalls, approximate=self.approximate,
            bounded=np.concatenate(self.bounded) if self.bounded else None)


def replay_sequence(trace: Trace, dataset: str, pid: int | None = None, file: str | None = None,
                    max_boxes: int = 65536, op: str | None = None, positions=None) -> ReplaySequence:
    """The exact sequence of ``dataset``'s selections in ``trace`` (one process with ``pid``; only
    ``op`` requests, "read" or "write", when given; open/close boundaries are kept either way).

    The rows, in (pid, seq) order, go through :class:`SequenceBuilder` a batch at
    a time (the builder ``ccp diagnose`` streams a trace through), vectorised over the calls: only the events
    and the calls that are not plain boxes are walked one by one. The shape is the layout's, grown to the
    largest extent a request reached (a writer appending to a resizable dataset). ``positions``: the
    trace table's row numbers of this file and dataset when the caller has them (a big trace is scanned once)."""
    file, dataset = trace.find_dataset(dataset, file)
    layout = trace.layout(file, dataset) or {}
    if not layout:
        raise CcpError(f"{trace.path}: no layout recorded for {file}:{dataset}")
    t = trace.table
    if positions is None:
        positions = np.flatnonzero(_is(t["file"], [file]) & _is(t["dataset"], [dataset]))
    rows = _Rows(t, positions)
    if pid is not None:
        pids_here = rows["pid"].to_numpy(np.int64)
        if pid not in set(pids_here.tolist()):
            raise CcpError(f"{trace.path}: pid {pid} made no call on {dataset} (pids: "
                           f"{', '.join(str(int(p)) for p in sorted(set(pids_here.tolist())))})")
        rows = rows.subset(pids_here == pid)
    pid_all = rows["pid"].to_numpy(np.int64)
    seq_all = rows["seq"].to_numpy(np.int64)
    base = np.arange(len(t)) if rows.positions is None else rows.positions
    if len(rows) > 1 and not ((np.diff(pid_all) > 0) | ((np.diff(pid_all) == 0) & (np.diff(seq_all) > 0))).all():
        base = base[np.lexsort((seq_all, pid_all))]      # the loader sorts; a table that is not gets sorted here
    # the batch builder over the rows in (pid, seq) order: one walk for a table in memory and for one read in batches
    builder = SequenceBuilder(trace.path, file, dataset, layout, op, max_boxes, in_order=True)
    builder.first_cache = _first_cache(rows)           # in table order, as the trace holds it
    columns = [t.columns.get_loc(c) for c in REPLAY_COLUMNS]
    for a in range(0, len(base), BATCH):
        builder.add(t.iloc[base[a:a + BATCH], columns])
    return builder.finish(lambda: library_cache(trace))


def _first_cache(rows: _Rows) -> ChunkCache | None:
    """The cache of the first dataset open in the trace (a forked child inherits its parent's)."""
    opens = np.flatnonzero(_is(rows["kind"], ["event"]) & _is(rows["op"], ["dataset_open"])
                           & rows["cache_nbytes"].notna().to_numpy(bool))
    return _cache_of(rows.row(opens[0])) if len(opens) else None


def traced_plan(trace_dir, dataset: str, shape=None, pid: int | None = None, op: str = "read", strided: bool = False):
    """What a sweep's ``{trace: TRACE, dataset: /path, pid: N}`` access replays.

    Returns ``(plan, reopen_before, caches)``: the ``RequestPlan`` of the traced ``op`` requests,
    the request indices before which the program's chunk cache was lost (close and reopen the
    dataset there; a new process also starts there), and the cache each session had. ``shape``,
    when given, must be the traced dataset's shape (a sweep's layouts keep the shape). ``strided``: a regular
    hyperslab call is one strided request (what the model and a sweep's runners take: one call, as the program
    made it, exact for any layout); else boxes, a run per chunk of the traced layout (``RequestPlan.as_boxes``:
    the chunks touched, for what takes boxes only).
    """
    seq = replay_sequence(load_trace(trace_dir), dataset, pid=pid, op=op)
    if shape is not None and tuple(int(s) for s in shape) != tuple(seq.shape):
        raise CcpError(f"{trace_dir}: {seq.dataset} was traced with shape {list(seq.shape)}, "
                       f"the sweep's dataset has {list(shape)}")
    if not len(seq.plan):
        raise CcpError(f"{trace_dir}: no {op} requests on {seq.dataset} in the trace")
    plan = replace(seq.plan, reopen_before=seq.session_starts[1:].copy())
    if not strided:
        plan = plan.as_boxes(seq.chunks)
    assert plan.reopen_before is not None
    return plan, plan.reopen_before, seq.session_caches
