"""Calls that select many boxes (a list index, a point selection, irregular hyperslabs) as HDF5 does them: one call.

A program's ``d[[0, 5, 9, 14]]`` (h5py: the union of one hyperslab per index, ``H5S_SELECT_OR``), ``d[mask]`` (h5py:
``H5Sselect_elements``, the points in C order) or a low-level point or irregular hyperslab selection is ONE
``H5Dread``; a trace records it as its blocks or points, and a model fed them box after box visits a chunk once per
box. What HDF5 2.0 does instead (``src/H5Dchunk.c``, ``H5D__chunk_io_init_selections``; read, not copied; each
point below checked under the log VFD by ``tests/model/test_union.py``):

* **Which chunks, in what order.** The call's chunk map is built from the whole file selection: for a hyperslab
  selection (regular or not) ``H5D__create_piece_file_map_hyper`` intersects it with each chunk; for points
  ``H5D__piece_file_cb`` drops each point into its chunk's piece. Either way the pieces sit in a skip list keyed
  by the chunk's C-order index (``H5VM_array_offset_pre`` over ``down_chunks``), and the read walks that list:
  **each chunk holding selected elements once per call, in C order**, with all the elements selected in it
  (what decides a cached chunk's hit or load and its ``rd_count``).
* **The elements.** A hyperslab union is a set: blocks that overlap or abut merge (``H5S_SELECT_OR``), and its
  elements are taken in C order, the memory buffer (h5py's: dense, the selected shape) filled in that order.
  A point selection is a list: its points in the order given, repeats kept (a repeated point is read twice),
  each point's memory position its place in the list. A point selection written through the cache reads its
  chunk even when its points cover the whole chunk (a union of boxes that covers it does not: ``H5D__chunk_write``
  tests the chunk map's ``fsel_type``). One selected element is the exception: HDF5 maps it by its single-element
  path, which never sets ``fsel_type`` (the map comes from a free list, the field holds whatever the last map
  left); HDF5 was seen to write such a 1-element chunk without reading it every time, so the model does too.
* **A chunk read directly** (unfiltered and bigger than the cache; ``H5D__select_io`` over the chunk's file and
  memory sequence lists, ``H5VM_opvv``): one read per run of the chunk's selected elements, taken in the
  selection's order, that is contiguous both in the chunk on disk (the next element's offset in the chunk is
  one more) and in memory (its memory position is one more). So ``d[[0, 5, 9, 14]]`` of 10-element chunks read
  directly is 4 reads, ``[0, 1, 2]`` is one; boxes in consecutive rows of a chunk merge when each ends at the
  chunk's last column and the next starts at its first with nothing selected between them (rank-adjacent in
  memory); the points ``[7, 5, 6]`` are 2 reads (7, then 5-6) and ``[15, 5, 16, 6]`` 4 (5 and 6 are one apart
  on disk but not in memory).

:func:`call_chunks` is the reference's form of this, element by element (clear, slow); the compiled kernel
(:mod:`ccp.model.call_kernel`, :mod:`ccp.model.union_kernels`) counts the same from row segments, and
``tests/model/test_union.py`` holds the two to each other and to HDF5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MultiBox:
    """One call on several boxes: ``starts``/``counts`` ``(k, rank)``; ``points``: a point selection (the boxes are
    its points, in order, repeats kept), else the union of the boxes (an irregular hyperslab)."""

    op: str
    starts: np.ndarray
    counts: np.ndarray
    points: bool = False

    @classmethod
    def of(cls, op: str, starts: Sequence[Sequence[int]], counts: Sequence[Sequence[int]] | None = None,
           points: bool = False) -> MultiBox:
        """From lists; ``counts`` None: one element each (points)."""
        s = np.asarray(starts, np.int64).reshape(len(starts), -1)
        c = np.ones_like(s) if counts is None else np.asarray(counts, np.int64).reshape(s.shape)
        return cls(op, s, c, points)


def selected_elements(starts: np.ndarray, counts: np.ndarray, shape: Sequence[int], points: bool) -> np.ndarray:
    """The call's elements as ``(m, rank)`` coordinates in the order HDF5 takes them (module docstring): the union
    of the boxes in C order, or the points as listed (a point's box, if bigger than one element, in C order)."""
    rank = len(shape)
    parts = []
    for s, c in zip(starts.tolist(), counts.tolist()):
        if any(v == 0 for v in c):
            continue
        grids = np.meshgrid(*[np.arange(a, a + n, dtype=np.int64) for a, n in zip(s, c)], indexing="ij")
        parts.append(np.stack([g.ravel() for g in grids], axis=1).reshape(-1, rank))
    if not parts:
        return np.zeros((0, rank), np.int64)
    coords = np.concatenate(parts)
    if points:
        return coords
    lin = np.ravel_multi_index(tuple(coords.T), tuple(int(v) for v in shape)) if rank else np.zeros(1, np.int64)
    return coords[np.unique(lin, return_index=True)[1]]


def call_chunks(starts: np.ndarray, counts: np.ndarray, shape: Sequence[int], chunks: Sequence[int],
                points: bool) -> list[tuple[tuple[int, ...], int, int]]:
    """``(chunk coords, elements selected in it, direct pieces)`` for each chunk the call touches, in C order of
    the chunks: what HDF5 visits (module docstring). Direct pieces: runs contiguous in the chunk on disk and in
    memory (the reads of a chunk read directly)."""
    coords = selected_elements(starts, counts, shape, points)
    rank = len(shape)
    if not len(coords):
        return []
    ch = np.asarray(chunks, np.int64)
    grid = tuple(-(-int(s) // int(c)) for s, c in zip(shape, chunks))
    scaled = coords // ch
    lin = np.ravel_multi_index(tuple(scaled.T), grid) if rank else np.zeros(len(coords), np.int64)
    local = np.ravel_multi_index(tuple((coords % ch).T), tuple(int(c) for c in chunks)) if rank \
        else np.zeros(len(coords), np.int64)
    memory = np.arange(len(coords), dtype=np.int64)
    out = []
    order = np.argsort(lin, kind="stable")        # each chunk's elements keep the selection's order
    lin_sorted = lin[order]
    bounds = np.flatnonzero(np.diff(lin_sorted, prepend=-1) != 0).tolist() + [len(order)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        mine = order[a:b]
        breaks = (np.diff(local[mine]) != 1) | (np.diff(memory[mine]) != 1)
        out.append((tuple(int(v) for v in scaled[mine[0]]), b - a, 1 + int(np.count_nonzero(breaks))))
    return out


#: The compiled kernel's ``grp`` codes (:func:`group_codes`): a call of its own; the first box of a union of boxes,
#: a box continuing it; the first point of a point selection, a point continuing it.
GROUP_CODES = (_OWN, _UNION, _UNION_MORE, _POINTS, _POINTS_MORE) = range(5)
NO_GROUPS = np.zeros(0, np.uint8)      # the kernel's grp when every request is a call of its own


def group_codes(calls, points, n: int) -> np.ndarray:
    """The chunked kernel's ``grp`` codes (:data:`GROUP_CODES`) of ``n`` requests from ``calls``
    ``(n,)``, the call each request belongs to (consecutive equal values: one call), and ``points`` (None, or
    ``(n,)`` bools: the call's boxes are the points of a point selection, read from its first request). A call of
    one box (not a point selection) is a call of its own; :data:`NO_GROUPS` when every call is."""
    calls = np.asarray(calls, np.int64).reshape(-1)
    if len(calls) != n:
        raise ValueError(f"{len(calls)} call numbers for {n} requests")
    if n == 0:
        return NO_GROUPS
    first = np.ones(n, bool)
    first[1:] = calls[1:] != calls[:-1]
    begins = np.flatnonzero(first)
    sizes = np.diff(np.append(begins, n))
    pts = np.zeros(n, bool) if points is None else np.asarray(points, bool).reshape(-1)
    if len(pts) != n:
        raise ValueError(f"{len(pts)} point flags for {n} requests")
    grouped = (sizes > 1) | pts[begins]        # a point selection of one point too (a point's box may be more)
    if not grouped.any():
        return NO_GROUPS
    many = np.repeat(grouped, sizes)
    of_points = np.repeat(pts[begins], sizes)
    grp = np.zeros(n, np.uint8)
    grp[many & first] = np.where(of_points[many & first], _POINTS, _UNION)
    grp[many & ~first] = np.where(of_points[many & ~first], _POINTS_MORE, _UNION_MORE)
    return grp

