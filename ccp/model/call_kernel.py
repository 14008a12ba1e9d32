"""The compiled kernel of calls on several boxes (:mod:`ccp.model.union`): :func:`_grouped_kernel` walks a plan whose
``grp`` codes group boxes into calls, handing runs of single-box calls to :func:`ccp.model.kernels._chunked_kernel`
as they are (its speed untouched) and each grouped call to :func:`_call_visits`, which visits the call's chunks once
each, in C order, through the same cache state.
"""

from __future__ import annotations

import numba
import numpy as np

from ccp.model.kernels import (
    _BR,
    _BW,
    _HEAD,
    _HIT,
    _INDEX,
    _JIT,
    _LOAD,
    _MISSING,
    _NBUSED,
    _NPRE,
    _NR,
    _NUSED,
    _NW,
    _TAIL,
    _chunked_kernel,
    _evict,
    _flush_chunk,
    _preemptible,
    _prune,
)
from ccp.model.union import _OWN, _POINTS, _POINTS_MORE, _UNION_MORE
from ccp.model.union_kernels import call_chunk_list


@numba.njit(inline="always")
def _through_cache(e, slot, lin, write, naccessed, allocated, res, r, st, ent, rd, wr, dirty, prv, nxt, filtered,
                   stored, chunk_bytes, alloc, keep, total, w0, whole_ok):
    """A chunk that goes through the cache code (``H5D__chunk_lock``/``unlock``): ``e`` its entry (-1: not
    cached), ``slot`` its hash slot, ``naccessed`` the bytes the call selects in it; ``whole_ok``: a write of the
    whole chunk needs no read (not for a point selection, which HDF5 reads the chunk for all the same)."""
    # ---- lock
    if e >= 0:
        res[r, _HIT] += 1
        q = nxt[e]
        if q >= 0:                     # a hit moves the entry one place towards the tail
            p = prv[e]
            after = nxt[q]
            if p >= 0:
                nxt[p] = q
            else:
                st[_HEAD] = q
            prv[q] = p
            nxt[q] = e
            prv[e] = q
            nxt[e] = after
            if after >= 0:
                prv[after] = e
            else:
                st[_TAIL] = e
    else:
        relax = write and whole_ok and naccessed == chunk_bytes
        if not relax and allocated:
            res[r, _LOAD] += 1
            res[r, _NR] += 1
            size = stored[lin] if stored.shape[0] > 0 else chunk_bytes
            if size < 0:
                st[_MISSING] = 1
            else:
                res[r, _BR] += size
        if keep:
            if ent[slot] >= 0:
                _evict(slot, res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc)
            _prune(res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc, total, w0)
            ent[slot] = lin
            rd[slot] = chunk_bytes
            wr[slot] = chunk_bytes
            dirty[slot] = 0
            st[_NBUSED] += chunk_bytes
            st[_NUSED] += 1
            t = st[_TAIL]
            prv[slot] = t
            nxt[slot] = -1
            if t >= 0:
                nxt[t] = slot
            else:
                st[_HEAD] = slot
            st[_TAIL] = slot
            e = slot
    # ---- unlock
    if e < 0:
        if write and _flush_chunk(lin, res, r, filtered, stored, chunk_bytes, alloc):
            st[_MISSING] = 1
    else:
        was = _preemptible(rd[e], wr[e], chunk_bytes)
        if write:
            dirty[e] = 1
            wr[e] -= min(wr[e], naccessed)
        else:
            rd[e] -= min(rd[e], naccessed)
        if _preemptible(rd[e], wr[e], chunk_bytes) != was:
            st[_NPRE] += -1 if was else 1


@numba.njit(**_JIT)
def _call_visits(ops, starts, counts, i, j, points, chunks, bits, grid, itemsize, chunk_bytes, filtered, keep, nslots,
                 total, w0, stored, alloc, res, r, ent, rd, wr, dirty, prv, nxt, st):
    """Requests ``[i, j)`` as one call (:func:`_grouped_kernel`): each chunk it touches once, in C order, with all
    the call's elements in it (:func:`ccp.model.union_kernels.call_chunk_list`); counts into row ``r``."""
    write = ops[i] == 1
    if not write and st[_INDEX] == 0 and st[_NUSED] == 0:
        return                                     # H5D__read shortcut: no chunk index yet, nothing cached
    st[_INDEX] = 1
    rank = chunks.shape[0]
    enabled = nslots > 0 and total > 0
    c = np.empty(rank, np.int64)
    lins, nsels, npieces = call_chunk_list(starts, counts, i, j, points, chunks, grid)
    # one element selected: HDF5's single-element path, which never sets the selection type (module docstring)
    whole_ok = not points or (lins.shape[0] == 1 and nsels[0] == 1)
    for m in range(lins.shape[0]):
        lin = lins[m]
        rest = lin
        for d in range(rank - 1, -1, -1):
            c[d] = rest % grid[d]
            rest //= grid[d]
        key = c[0]
        for d in range(1, rank):
            key = (key << bits[d]) ^ c[d]
        naccessed = nsels[m] * itemsize
        e = -1
        slot = -1
        if enabled:
            slot = key % nslots
            if ent[slot] == lin:
                e = slot
        allocated = alloc.shape[0] == 0 or alloc[lin] != 0
        if filtered or keep or (write and not allocated):
            _through_cache(e, slot, lin, write, naccessed, allocated, res, r, st, ent, rd, wr, dirty, prv, nxt,
                           filtered, stored, chunk_bytes, alloc, keep, total, w0, whole_ok)
        elif allocated:                            # read or written directly: a read or write per piece
            if write:
                res[r, _NW] += npieces[m]
                res[r, _BW] += naccessed
            else:
                res[r, _NR] += npieces[m]
                res[r, _BR] += naccessed


@numba.njit(**_JIT)
def _grouped_kernel(ops, starts, counts, strides, blocks, grp, chunks, bits, grid, itemsize, chunk_bytes, filtered,
                    keep, nslots, total, w0, stored, alloc, per_request, res, row0, close, ent, rd, wr, dirty, prv, nxt,
                    st):
    """:func:`_chunked_kernel` of a plan with calls of several boxes: ``grp`` ``(n,)`` codes
    (:data:`ccp.model.union.GROUP_CODES`). A call's counts go in its first box's row (the others stay zero); runs of
    requests that are calls of their own go to :func:`_chunked_kernel` as they are (its speed untouched)."""
    n = ops.shape[0]
    has_hyper = strides.shape[0] > 0
    # int64 and bool values, not the literals 0 and False: numba types a callee by the arguments it first sees,
    # and a literal gave _call_visits, call_chunk_list, _union, _points and _chunked_kernel a second compiled
    # version each (19 signatures compiled, ~55 s on a fresh clone; 14 without them)
    a = np.int64(0)
    i = np.int64(0)
    not_closing = np.bool_(False)
    while i < n:
        if grp[i] == _OWN:
            i += 1
            continue
        if i > a:
            sv = strides[a:i] if has_hyper else strides
            bv = blocks[a:i] if has_hyper else blocks
            if _chunked_kernel(ops[a:i], starts[a:i], counts[a:i], sv, bv, chunks, bits, grid, itemsize, chunk_bytes,
                               filtered, keep, nslots, total, w0, stored, alloc, per_request, res, row0 + a, not_closing,
                               ent, rd, wr, dirty, prv, nxt, st):
                st[_MISSING] = 1
        j = i + 1
        while j < n and (grp[j] == _UNION_MORE or grp[j] == _POINTS_MORE):
            j += 1
        _call_visits(ops, starts, counts, i, j, grp[i] == _POINTS, chunks, bits, grid, itemsize, chunk_bytes,
                     filtered, keep, nslots, total, w0, stored, alloc, res, row0 + i if per_request else 0, ent, rd,
                     wr, dirty, prv, nxt, st)
        a = i = j
    sv = strides[a:n] if has_hyper else strides
    bv = blocks[a:n] if has_hyper else blocks
    _chunked_kernel(ops[a:n], starts[a:n], counts[a:n], sv, bv, chunks, bits, grid, itemsize, chunk_bytes, filtered,
                    keep, nslots, total, w0, stored, alloc, per_request, res, row0 + a, close, ent, rd, wr, dirty, prv,
                    nxt, st)
    return st[_MISSING]
