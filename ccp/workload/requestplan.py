"""The request plan type: the selections a cell reads or writes, in order.

Its own module because both planners build it: :mod:`ccp.workload.requests` (tilings, random blocks,
and :func:`~ccp.workload.requests.plan_for`, which dispatches to the replay) and
:mod:`ccp.workload.replay` (a traced sequence); neither imports the other for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RequestPlan:
    """``starts[i]`` and ``counts[i]`` are the i-th request's box (edge blocks clipped).

    ``strides``/``blocks`` (None: every request is its box) make request i a strided selection, one HDF5 call
    on a regular hyperslab: along dimension d, blocks of ``blocks[i, d]`` elements ``strides[i, d]`` apart in its
    box, which ends with a whole block (``blocks[i, d] >= counts[i, d]``: the whole box along d). The model
    (``ccp.model.fast.simulate_arrays``) takes them as they are.

    ``calls`` (None: each request a call of its own) groups boxes into the calls that made them: consecutive requests
    with the same number are one HDF5 call on the union of their boxes (a list index, irregular hyperslabs), or with
    ``points`` the points of one point selection, in order; the model takes them so (:mod:`ccp.model.union`:
    each chunk once per call), :meth:`grouping` gives them for a range of requests."""

    starts: np.ndarray   # (n, rank) int64
    counts: np.ndarray   # (n, rank) int64
    reopen_before: np.ndarray | None = None   # replays: requests before which the program lost its cache
    strides: np.ndarray | None = None         # (n, rank) int64, with blocks
    blocks: np.ndarray | None = None
    calls: np.ndarray | None = None           # (n,) int64: the call each request belongs to
    points: np.ndarray | None = None          # (n,) bool: the request is a point of a point selection

    def __len__(self) -> int:
        return len(self.starts)

    def hyperslab(self, a: int, b: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(strides, blocks)`` of requests ``[a, b)``, or (None, None) for a plan of boxes."""
        if self.strides is None or self.blocks is None:
            return None, None
        return self.strides[a:b], self.blocks[a:b]

    def grouping(self, a: int, b: int) -> dict:
        """``calls``/``points`` of requests ``[a, b)`` as :meth:`ccp.model.fast.ArrayModel.feed` takes them ({}: every
        request a call of its own)."""
        if self.calls is None:
            return {}
        return {"calls": self.calls[a:b], "points": None if self.points is None else self.points[a:b]}

    def as_boxes(self, chunks=None, max_boxes: int = 65536) -> RequestPlan:
        """The plan with each strided request as boxes (C order) that select the same elements by several calls
        instead of one, for what takes boxes only (the S3 GET model, explain's chunk checks): a box per block, or
        with ``chunks`` the blocks in each chunk as one run of as many elements (:func:`_axis_runs`: few boxes, the
        chunks and their element counts kept, the elements themselves only for that layout). A request of more
        than ``max_boxes`` boxes stays its bounding box. ``calls`` says which request each box comes from (the call
        it belongs to, when the plan had calls): its chunks are needed together."""
        if self.strides is None or self.blocks is None:
            return self
        starts: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        first: list[int] = []
        memo: dict[tuple, tuple[np.ndarray, np.ndarray] | None] = {}
        rank = self.starts.shape[1]
        for i in range(len(self.starts)):
            first.append(first[-1] + len(starts[-1]) if first else 0)      # this request's first box
            if not (self.blocks[i] < self.counts[i]).any():
                starts.append(self.starts[i][None])
                counts.append(self.counts[i][None])
                continue
            runs = []
            for d in range(rank):
                s, c, t, b = (int(x[i, d]) for x in (self.starts, self.counts, self.strides, self.blocks))
                key = (s, c, t, b, None if chunks is None else int(chunks[d]))
                if key not in memo:
                    memo[key] = _axis_runs(s, (c - b) // max(t, 1) + 1 if 0 < b < c else 1, t if b < c else c,
                                           min(b, c), key[4])
                runs.append(memo[key])
            listed = [r for r in runs if r is not None]
            n = math.prod(len(r[0]) for r in listed) if len(listed) == rank else max_boxes + 1
            if n > max_boxes or n == 0:
                starts.append(self.starts[i][None])
                counts.append(self.counts[i][None])
                continue
            grids = [np.meshgrid(*[r[k] for r in listed], indexing="ij") for k in (0, 1)]
            starts.append(np.stack([g.ravel() for g in grids[0]], axis=1).reshape(-1, rank))
            counts.append(np.stack([g.ravel() for g in grids[1]], axis=1).reshape(-1, rank))
        if not starts:
            return RequestPlan(self.starts, self.counts, self.reopen_before)
        new_starts = np.concatenate(starts).astype(np.int64)
        reopen = None
        if self.reopen_before is not None:      # request r's first box; r == n (past the end) stays past the end
            reopen = np.append(np.asarray(first, np.int64), len(new_starts))[np.asarray(self.reopen_before, np.int64)]
        # a request's boxes are its call's (a strided call's runs too): what needs its chunks together sees them so
        nbox = np.diff(np.append(np.asarray(first, np.int64), len(new_starts)))
        calls = np.repeat(np.arange(len(self.starts)) if self.calls is None else self.calls, nbox)
        points = None if self.points is None else np.repeat(self.points, nbox)
        return RequestPlan(new_starts, np.concatenate(counts).astype(np.int64), reopen, calls=calls, points=points)


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


def _axis_runs(start: int, count: int, stride: int, block: int, chunk: int | None):
    """One dimension of a regular hyperslab (``count`` blocks) as runs ``(first, length)``: per block when ``chunk``
    is None; else grouped by the chunk they fall in (:func:`_per_chunk`). None: too many to list."""
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


@dataclass(frozen=True)
class Hyperslabs:
    """Strided requests as the calls that make them: ``H5Sselect_hyperslab(start, stride, nblocks, block)`` per
    request (rows of ``(n, rank)`` int64) and ``shapes``, the elements each selects per dimension (its dense
    memory buffer). A dimension a request covers whole is one block of its count."""

    stride: np.ndarray
    nblocks: np.ndarray
    block: np.ndarray
    shapes: np.ndarray

    @classmethod
    def of(cls, counts, strides, blocks) -> Hyperslabs:
        """From a plan's ``counts``/``strides``/``blocks`` (:class:`RequestPlan`: blocks ``>= counts`` along a
        dimension select the box's count whole)."""
        counts = np.asarray(counts, np.int64).reshape(len(counts), -1)
        strides = np.asarray(strides, np.int64).reshape(counts.shape)
        blocks = np.asarray(blocks, np.int64).reshape(counts.shape)
        gaps = blocks < counts
        nblocks = np.where(gaps, (counts - blocks) // np.maximum(strides, 1) + 1, 1)
        block = np.where(gaps, blocks, counts)
        return cls(np.where(gaps, strides, 1), nblocks, block, nblocks * block)

    def axes(self, i: int) -> list[np.ndarray]:
        """Request i's selected coordinates per dimension, relative to its box's start (to pick a box's values)."""
        return [(np.arange(n, dtype=np.int64)[:, None] * t + np.arange(b, dtype=np.int64)).ravel()
                for n, t, b in zip(self.nblocks[i].tolist(), self.stride[i].tolist(), self.block[i].tolist())]

    def pick(self, i: int, box: np.ndarray) -> np.ndarray:
        """The elements request i selects, dense, from the values of its whole box."""
        if not box.ndim or (self.nblocks[i] == 1).all():
            return box
        return box[np.ix_(*self.axes(i))]
