"""The chunks of one call on several boxes, compiled: what :func:`ccp.model.union.call_chunks` lists element by
element, counted from row segments (a union of boxes) or points (a point selection), for the chunked kernel.

A row is one position of every dimension but the last; a box is a segment ``[a, b)`` of the last dimension on each
of its rows. The union's segments, sorted in C order and merged where they overlap or abut, are the call's elements
in HDF5's order; each is cut at the chunks' column edges into pieces of one chunk. Two pieces that follow each
other in that order (so one apart in memory) are one read of a chunk read directly when they lie in the same chunk,
the first ends at the chunk's last column, the second starts at its first, one row of the chunk later.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}


@numba.njit(**_JIT)
def _aggregate(lin, nel, brk):
    """Per chunk, in C order of the chunks (``lin`` sorted, stable): ``(lins, elements, pieces)`` from per-piece
    chunk index, element count and whether the piece starts a new read (1) or continues the one before (0)."""
    order = np.argsort(lin, kind="mergesort")
    m = 0
    for k in range(order.shape[0]):
        if k == 0 or lin[order[k]] != lin[order[k - 1]]:
            m += 1
    lins = np.empty(m, np.int64)
    nsel = np.zeros(m, np.int64)
    pieces = np.zeros(m, np.int64)
    j = -1
    for k in range(order.shape[0]):
        p = order[k]
        if k == 0 or lin[p] != lin[order[k - 1]]:
            j += 1
            lins[j] = lin[p]
        nsel[j] += nel[p]
        pieces[j] += brk[p]
    return lins, nsel, pieces


@numba.njit(**_JIT)
def _points(starts, counts, a, b, chunks, grid):
    """A point selection's chunks: its points (a box's elements in C order) in the order listed, repeats kept."""
    rank = chunks.shape[0]
    total = 0
    for i in range(a, b):
        v = 1
        for d in range(rank):
            v *= counts[i, d]
        total += v
    lin = np.empty(total, np.int64)
    loc = np.empty(total, np.int64)
    nel = np.ones(total, np.int64)
    brk = np.ones(total, np.int64)
    x = np.empty(rank, np.int64)
    k = 0
    for i in range(a, b):
        empty = False
        for d in range(rank):
            x[d] = starts[i, d]
            if counts[i, d] == 0:
                empty = True
        if empty:
            continue
        while True:
            cl = 0
            ll = 0
            for d in range(rank):
                cl = cl * grid[d] + x[d] // chunks[d]
                ll = ll * chunks[d] + x[d] % chunks[d]
            lin[k] = cl
            loc[k] = ll
            if k > 0 and lin[k - 1] == cl and loc[k - 1] + 1 == ll:
                brk[k] = 0          # one apart on disk and in memory: the same read
            k += 1
            d = rank - 1
            while d >= 0:
                x[d] += 1
                if x[d] < starts[i, d] + counts[i, d]:
                    break
                x[d] = starts[i, d]
                d -= 1
            if d < 0:
                break
    return _aggregate(lin[:k], nel[:k], brk[:k])


@numba.njit(**_JIT)
def _union(starts, counts, a, b, chunks, grid):
    """A union of boxes' chunks, from its row segments (module docstring)."""
    rank = chunks.shape[0]
    last = rank - 1
    ext = np.empty(rank, np.int64)          # the grid's extent in elements (rows are linear over it)
    for d in range(rank):
        ext[d] = grid[d] * chunks[d]
    nrows = 0
    for i in range(a, b):
        v = 1
        for d in range(rank):
            v *= counts[i, d] if d < last else min(counts[i, d], 1)
        nrows += v
    key = np.empty(nrows, np.int64)          # the segment's first element, C order over the grid's extent
    seg_end = np.empty(nrows, np.int64)      # its end along the last dimension (exclusive)
    x = np.empty(rank, np.int64)
    k = 0
    for i in range(a, b):
        empty = False
        for d in range(rank):
            x[d] = starts[i, d]
            if counts[i, d] == 0:
                empty = True
        if empty:
            continue
        while True:
            row = 0
            for d in range(last):
                row = row * ext[d] + x[d]
            key[k] = row * ext[last] + starts[i, last]
            seg_end[k] = starts[i, last] + counts[i, last]
            k += 1
            d = last - 1
            while d >= 0:
                x[d] += 1
                if x[d] < starts[i, d] + counts[i, d]:
                    break
                x[d] = starts[i, d]
                d -= 1
            if d < 0:
                break
    order = np.argsort(key[:k], kind="mergesort")
    # merged segments: (row, first, end) along the last dimension
    m_row = np.empty(k, np.int64)
    m_a = np.empty(k, np.int64)
    m_b = np.empty(k, np.int64)
    m = 0
    width = ext[last]
    for j in range(k):
        p = order[j]
        row = key[p] // width
        s = key[p] - row * width
        if m > 0 and m_row[m - 1] == row and s <= m_b[m - 1]:
            m_b[m - 1] = max(m_b[m - 1], seg_end[p])
        else:
            m_row[m] = row
            m_a[m] = s
            m_b[m] = seg_end[p]
            m += 1
    c_last = chunks[last]
    npieces = 0
    for j in range(m):
        npieces += (m_b[j] - 1) // c_last - m_a[j] // c_last + 1
    lin = np.empty(npieces, np.int64)
    nel = np.empty(npieces, np.int64)
    brk = np.ones(npieces, np.int64)
    q = 0
    prev_lin = -1
    prev_local_row = -1
    prev_end_edge = False
    for j in range(m):
        rest = m_row[j]
        row_lin = 0             # the row's chunk (all dimensions but the last), C order over the grid
        local_row = 0           # the row's place in its chunk, C order over the chunk's rows
        scale = 1
        lscale = 1
        for d in range(last - 1, -1, -1):
            xd = rest % ext[d]
            rest //= ext[d]
            row_lin += (xd // chunks[d]) * scale
            local_row += (xd % chunks[d]) * lscale
            scale *= grid[d]
            lscale *= chunks[d]
        s = m_a[j]
        while s < m_b[j]:
            col = s // c_last
            e = min(m_b[j], (col + 1) * c_last)
            cl = row_lin * grid[last] + col
            lin[q] = cl
            nel[q] = e - s
            if prev_lin == cl and prev_end_edge and s == col * c_last and local_row == prev_local_row + 1:
                brk[q] = 0      # contiguous in the chunk on disk and next in memory: one read
            prev_lin = cl
            prev_local_row = local_row
            prev_end_edge = e == (col + 1) * c_last
            q += 1
            s = e
    return _aggregate(lin, nel, brk)


@numba.njit(**_JIT)
def call_chunk_list(starts, counts, a, b, points, chunks, grid):
    """Requests ``[a, b)`` as one call: ``(lins, elements, pieces)`` of each chunk it touches, C order of the chunks
    (``points``: a point selection, else the union of the boxes)."""
    if points:
        return _points(starts, counts, a, b, chunks, grid)
    return _union(starts, counts, a, b, chunks, grid)
