"""Strided selections (regular hyperslabs) in the reference model: the selected coordinates listed, per dimension.

A request may select, along each dimension d, blocks of ``block[d]`` elements ``stride[d]`` apart inside its box
``start[d] + [0, count[d])``, the box ending with a whole block: what
``H5Sselect_hyperslab(start, stride, nblocks, block)`` selects, ``count = (nblocks - 1) * stride + block``
(``block >= count``: the box itself). HDF5 does one call's selection chunk by chunk: each chunk holding selected
elements once, in C order, with the elements selected in it (``H5D__chunk_io_init``); a chunk read or written
directly moves one piece wherever a run of the chunk's file selection or of its memory selection ends
(``H5VM_opvv``). The file runs are the longest the selection allows (a piece per block along the last dimension
not whole in the chunk). The memory side differs by rank: in rank 1 each chunk's memory selection is one block
(``H5D__create_piece_mem_map_1d``), so runs are the file's; in rank >= 2 a strided selection is not the shape of
the dense buffer, so HDF5 builds each chunk's memory selection element by element (``H5D__piece_mem_cb``,
``H5S_hyper_add_span_element``) and that span tree keeps rows apart (:func:`memory_rows`): an (8, 3) dataset in
one chunk, blocks of 3 whole rows 5 apart, read directly is 6 reads, not 2 (``tests/model/test_strided.py``).

The reference lists the coordinates (:func:`axis_selection`) where the compiled kernel (:mod:`ccp.model.kernels`)
counts them in closed form; ``tests/model/test_strided.py`` holds them to each other and to HDF5.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np


def check_strided(starts: np.ndarray, counts: np.ndarray, strides: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """``blocks`` checked against ``(n, rank)`` starts/counts/strides: a ValueError naming the first bad request;
    returned with blocks that abut (``stride == block``: HDF5 merges them) or cover the box as the box's count."""
    strided = blocks < counts
    bad = strided & ((blocks < 1) | (strides < blocks) | ((counts - blocks) % np.maximum(strides, 1) != 0))
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise ValueError(f"request {i}: stride {tuple(strides[i].tolist())} / block {tuple(blocks[i].tolist())} "
                         f"do not tile its count {tuple(counts[i].tolist())} (blocks >= 1, stride >= block, the "
                         "count ending with a whole block)")
    return np.where(strided & (strides > blocks), blocks, counts).astype(np.int64)


def axis_selection(start: int, count: int, stride: int, block: int) -> np.ndarray:
    """The coordinates selected along one dimension, increasing."""
    if block >= count:
        return np.arange(start, start + count, dtype=np.int64)
    firsts = start + stride * np.arange((count - block) // stride + 1, dtype=np.int64)
    return (firsts[:, None] + np.arange(block, dtype=np.int64)).ravel()


def selection_axes(start: Sequence[int], count: Sequence[int], stride: Sequence[int] | None,
                   block: Sequence[int] | None) -> list[np.ndarray]:
    """:func:`axis_selection` of every dimension (``stride``/``block`` None: the box)."""
    if stride is None or block is None:
        stride = block = count
    return [axis_selection(int(s), int(c), int(t), int(b)) for s, c, t, b in zip(start, count, stride, block)]


def chunk_pieces(axes: list[np.ndarray], chunks: Sequence[int]) -> Iterator[tuple[tuple[int, ...], list[np.ndarray]]]:
    """``(chunk coords, the coordinates selected in it per dimension)`` for each chunk holding selected elements,
    in C order (HDF5's order within one call)."""
    per_dim = []
    for coords, c in zip(axes, chunks):
        which = coords // int(c)
        per_dim.append({int(k): coords[which == k] for k in np.unique(which)})
    for cc in itertools.product(*(sorted(d) for d in per_dim)):
        yield cc, [d[k] for d, k in zip(per_dim, cc)]


def _pieces(coords: np.ndarray) -> int:
    """Runs of consecutive coordinates."""
    return 1 + int(np.count_nonzero(np.diff(coords) != 1)) if len(coords) else 0


def memory_rows(sizes: Sequence[int], mem: Sequence[int]) -> int:
    """How many leading dimensions split a chunk's memory selection into separate pieces when HDF5 built it element
    by element (``H5D__piece_mem_cb``: a strided call in rank >= 2): the dims ``[0, D)`` of the returned D, each of
    their index combinations its own run. ``sizes``: the chunk's selected elements per dimension (a box in the dense
    memory buffer of extent ``mem``).

    ``H5S_hyper_add_span_element`` never merges the first dimension's spans (one per row) and, below it, merges a
    completed span into the spans before it only when the next one is appended (the last stays apart). With every
    middle dimension holding at most 2 rows the tree is a regular hyperslab (``H5S__hyper_rebuild``): its iterator
    (``H5S__hyper_iter_get_seq_list_opt``) runs one sequence per block of the last dimension not flattened, a
    dimension flattened only when it holds one block as wide as the memory extent (the last one: all of it; a
    middle one: an extent of 1). A middle dimension holding 3 rows or more leaves spans of unequal size: the span
    iterator (``H5S__hyper_iter_get_seq_list_gen``) then merges whatever is contiguous in memory."""
    rank = len(sizes)
    if any(sizes[d] >= 3 for d in range(1, rank - 1)):
        d = rank - 1
        while d >= 0 and sizes[d] == mem[d]:
            d -= 1
        return max(d, 0)
    if sizes[rank - 1] < mem[rank - 1]:
        return rank - 1
    return 1 + max([0] + [d for d in range(1, rank - 1) if mem[d] > 1])


def direct_pieces(inside: list[np.ndarray], chunks: Sequence[int], mem: Sequence[int], rows: bool = False) -> int:
    """File operations to move a chunk's selected coordinates (``inside``, per dimension) straight between the
    chunk on disk (full ``chunks`` dims) and the dense memory buffer (``mem``: selected elements per dimension):
    ``H5VM_opvv`` of the file's runs and the memory's, a piece wherever either ends. ``rows``: the memory
    selection was built element by element (:func:`memory_rows`), else it is the file's shape (runs as long as
    memory allows)."""
    rank = len(inside)
    if rank == 0:
        return 1
    sizes = [len(a) for a in inside]
    if rows and rank > 1:
        kf = rank - 1
        while kf > 0 and sizes[kf] == chunks[kf]:
            kf -= 1
        depth = memory_rows(sizes, mem)
        if depth > kf:
            return math.prod(sizes[:depth])
        return math.prod(sizes[:kf]) * _pieces(inside[kf])
    k = rank - 1
    while k > 0 and sizes[k] == chunks[k] and sizes[k] == mem[k]:
        k -= 1
    return math.prod(sizes[:k]) * _pieces(inside[k])


def contiguous_pieces(axes: list[np.ndarray], shape: Sequence[int], itemsize: int) -> tuple[np.ndarray, int]:
    """A contiguous dataset's pieces for a selection: byte offsets in C order and the (common) piece length."""
    rank = len(shape)
    if any(len(a) == 0 for a in axes):
        return np.empty(0, np.int64), 0
    if rank == 0:
        return np.zeros(1, np.int64), itemsize
    k = rank - 1
    while k > 0 and len(axes[k]) == shape[k]:
        k -= 1
    el_strides = [math.prod(shape[d + 1:]) for d in range(rank)]
    ks = axes[k]
    run_starts = ks[np.flatnonzero(np.diff(ks, prepend=ks[0] - 2) != 1)]
    run = len(ks) // len(run_starts) * math.prod(shape[k + 1:])
    off = np.zeros(1, np.int64)
    for d in range(k):
        off = (off[:, None] + axes[d][None, :] * el_strides[d]).ravel()
    off = (off[:, None] + run_starts[None, :] * el_strides[k]).ravel()
    return off * itemsize, run * itemsize
