"""The compiled kernels of :mod:`ccp.model.fast` (numba): HDF5's chunk cache and sieve buffer over flat arrays.

Semantics are :class:`ccp.model.cache.DatasetModel`'s, line for line where it matters (lock, unlock,
evict, the two-pointer prune, the sieve callbacks); the state is the caller's arrays, so plans can be
fed in batches. Counts go into ``res`` rows in the order of ``COLUMNS`` (``ccp.model.fast``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

_HIT, _LOAD, _EVICT, _NR, _BR, _NW, _BW = range(7)          # res columns (fast.COLUMNS order)
# chunked-kernel scalar state (one int64 array so helpers can update it in place)
_HEAD, _TAIL, _NUSED, _NBUSED, _INDEX, _MISSING, _NPRE = range(7)   # _NPRE: entries pointer 0 may evict
_JIT: dict[str, Any] = {"cache": True, "nogil": True}


# ============================================================================== chunked kernel
_FDIV_MAX = 1 << 52


@numba.njit(inline="always")
def _div(a, b):
    """``a // b`` for 0 <= a < 2**52, 0 < b: a float division corrected to the exact quotient
    (64-bit integer division costs 40-90 cycles on common x86 cores, and the kernel does one per
    dimension and end of every request)."""
    if a >= _FDIV_MAX:
        return a // b
    q = np.int64(np.float64(a) / np.float64(b))
    if q * b > a:
        q -= 1
    elif (q + 1) * b <= a:
        q += 1
    return q


# A request's selection along one dimension: the elements x of [s, s + cnt) with (x - s) % st < bl (a regular
# hyperslab: its blocks of bl elements, st apart; ``cnt`` ends with a whole block). ``bl >= cnt``: the box itself.
@numba.njit(inline="always")
def _sel_before(x, s, cnt, st, bl):
    """Selected elements below ``x``."""
    y = x - s
    if y <= 0:
        return 0
    if y > cnt:
        y = cnt
    q = _div(y, st)
    return q * bl + min(y - q * st, bl)


@numba.njit(inline="always")
def _pieces_in(a, b, s, cnt, st, bl):
    """Blocks of the selection that meet ``[a, b)`` (each a piece contiguous along this dimension)."""
    ya = min(max(a - s, 0), cnt)
    yb = min(max(b - s, 0), cnt)
    if yb <= ya:
        return 0
    ended = _div(ya - bl, st) + 1 if ya >= bl else 0
    return _div(yb + st - 1, st) - ended


@numba.njit(inline="always")
def _memory_rows(ext, mem, rank):
    """:func:`ccp.model.strided.memory_rows` of a chunk holding ``ext`` selected elements per dimension."""
    irregular = False
    for d in range(1, rank - 1):
        if ext[d] >= 3:
            irregular = True
    if irregular:
        d = rank - 1
        while d >= 0 and ext[d] == mem[d]:
            d -= 1
        return max(d, 0)
    if ext[rank - 1] < mem[rank - 1]:
        return rank - 1
    depth = 1
    for d in range(1, rank - 1):
        if mem[d] > 1:
            depth = d + 1
    return depth


@numba.njit(inline="always")
def _next_selected(x, s, cnt, st, bl):
    """The first selected element at or after ``x``, or -1."""
    y = max(x - s, 0)
    if y >= cnt:
        return -1
    q = _div(y, st)
    if y - q * st >= bl:
        y = (q + 1) * st
        if y >= cnt:
            return -1
    return s + y


@numba.njit(inline="always")
def _preemptible(rd, wr, size):
    """Pointer 0 of the prune evicts only chunks fully read and/or fully written."""
    return (rd == 0 and wr == 0) or (rd == 0 and wr == size) or (rd == size and wr == 0)


@numba.njit(inline="always")
def _flush_chunk(lin, res, r, filtered, stored, chunk_bytes, alloc):
    if filtered:
        size = stored[lin] if stored.shape[0] > 0 else chunk_bytes
        if size < 0:
            res[r, _NW] += 1          # unknown stored size: count it, report the gap
            return True
        res[r, _BW] += size
    else:
        res[r, _BW] += chunk_bytes
    res[r, _NW] += 1
    if alloc.shape[0] > 0:
        alloc[lin] = 1
    return False


@numba.njit(**_JIT)
def _evict(e, res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc):
    if _preemptible(rd[e], wr[e], chunk_bytes):
        st[_NPRE] -= 1
    if dirty[e]:
        if _flush_chunk(ent[e], res, r, filtered, stored, chunk_bytes, alloc):
            st[_MISSING] = 1
        dirty[e] = 0
    p, q = prv[e], nxt[e]
    if p >= 0:
        nxt[p] = q
    else:
        st[_HEAD] = q
    if q >= 0:
        prv[q] = p
    else:
        st[_TAIL] = p
    prv[e] = -1
    nxt[e] = -1
    ent[e] = -1
    st[_NBUSED] -= chunk_bytes
    st[_NUSED] -= 1
    res[r, _EVICT] += 1


@numba.njit(**_JIT)
def _prune(res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc, total, w0):
    """``H5D__chunk_cache_prune`` as in DatasetModel._prune (two pointers from the head).

    When no entry is preemptible, pointer 0 only walks: pointer 1 starts at the head after
    ``w = int(nused * w0)`` steps if pointer 0 is still on the list then (``w < nused``), and from
    there evicts from the head until the new chunk fits. That outcome is computed without the walk
    (the walk is what makes big caches of partly read chunks slow to simulate)."""
    size = chunk_bytes
    if st[_NBUSED] + size <= total:
        return
    w = int(st[_NUSED] * w0)
    if st[_NPRE] == 0:
        if w >= st[_NUSED]:
            return
        while st[_HEAD] >= 0 and st[_NBUSED] + size > total:
            _evict(st[_HEAD], res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc)
        return
    p0 = st[_HEAD]
    p1 = -1
    while (p0 >= 0 or p1 >= 0) and st[_NBUSED] + size > total:
        if w == 0:
            p1 = st[_HEAD]
        n0 = nxt[p0] if p0 >= 0 else -1
        n1 = nxt[p1] if p1 >= 0 else -1
        for i in range(2):
            if st[_NBUSED] + size <= total:
                break
            cur = -1
            if i == 0 and p0 >= 0 and _preemptible(rd[p0], wr[p0], size):
                cur = p0
            elif i == 1 and p1 >= 0:
                cur = p1
            if cur >= 0:
                if p0 == cur:
                    p0 = -1
                if n0 == cur:
                    n0 = nxt[cur]
                if p1 == cur:
                    p1 = -1
                if n1 == cur:
                    n1 = nxt[cur]
                _evict(cur, res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc)
        p0 = n0
        p1 = n1
        w -= 1


@numba.njit(**_JIT)
def _chunked_kernel(ops, starts, counts, strides, blocks, chunks, bits, grid, itemsize, chunk_bytes, filtered, keep,
                    nslots, total, w0, stored, alloc, per_request, res, row0, close, ent, rd, wr, dirty, prv, nxt, st):
    """Walk requests (request i into row ``row0 + i`` of res, or row 0 if not per_request), then,
    if ``close``, the close (last row). The cache state (one row per slot, and ``st``) lives in
    the caller's arrays, so a long plan can be fed in batches. Returns 1 if a needed stored chunk
    size was unknown (``stored[lin] < 0``), else 0.

    ``strides``/``blocks`` ``(n, rank)`` (or ``(0, rank)``: every request a box): request i selects, along
    dimension d, the blocks of ``blocks[i, d]`` elements ``strides[i, d]`` apart in its box (``blocks >= counts``:
    the box). As HDF5 does for one call, each chunk holding selected elements is visited once, in C order, with
    the elements selected in it; a chunk read or written directly costs one operation per piece of its file runs and
    its memory runs (rank >= 2: rows apart as :func:`ccp.model.strided.memory_rows` says)."""
    rank = chunks.shape[0]
    n = ops.shape[0]
    enabled = nslots > 0 and total > 0
    hyper = strides.shape[0] > 0
    lo = np.empty(rank, np.int64)
    hi = np.empty(rank, np.int64)
    c = np.empty(rank, np.int64)
    ext = np.empty(rank, np.int64)
    sv = np.empty(rank, np.int64)       # this request's stride and block per dimension (a box: its count, twice)
    bv = np.empty(rank, np.int64)
    mem = np.empty(rank, np.int64)      # selected elements per dimension (the memory buffer's shape)
    for i in range(n):
        r = row0 + i if per_request else 0
        write = ops[i] == 1
        if not write and st[_INDEX] == 0 and st[_NUSED] == 0:
            continue                               # H5D__read shortcut: no chunk index yet, nothing cached
        st[_INDEX] = 1
        empty = False
        strided = False
        for d in range(rank):
            if counts[i, d] == 0:
                empty = True
            sv[d] = counts[i, d]
            bv[d] = counts[i, d]
            mem[d] = counts[i, d]
            last = starts[i, d] + counts[i, d] - 1
            if hyper and blocks[i, d] < counts[i, d] and counts[i, d] > 0:
                strided = True
                sv[d] = strides[i, d]
                bv[d] = blocks[i, d]
                mem[d] = _sel_before(starts[i, d] + counts[i, d], starts[i, d], counts[i, d], sv[d], bv[d])
            lo[d] = _div(starts[i, d], chunks[d])
            hi[d] = _div(last, chunks[d]) if counts[i, d] > 0 else lo[d]
            c[d] = lo[d]
        if empty:
            continue
        while True:
            # ---- one chunk, coordinates c: linear index, hash key, selected elements
            lin = 0
            key = c[0]
            nsel = 1
            for d in range(rank):
                lin = lin * grid[d] + c[d]
                if d > 0:
                    key = (key << bits[d]) ^ c[d]
                if strided and bv[d] < counts[i, d]:
                    ext[d] = (_sel_before((c[d] + 1) * chunks[d], starts[i, d], counts[i, d], sv[d], bv[d])
                              - _sel_before(c[d] * chunks[d], starts[i, d], counts[i, d], sv[d], bv[d]))
                else:
                    a = max(starts[i, d], c[d] * chunks[d])
                    b = min(starts[i, d] + counts[i, d], (c[d] + 1) * chunks[d])
                    ext[d] = b - a
                nsel *= ext[d]
            naccessed = nsel * itemsize
            e = -1
            slot = -1
            if enabled:
                slot = key - _div(key, nslots) * nslots
                if ent[slot] == lin:
                    e = slot
            allocated = alloc.shape[0] == 0 or alloc[lin] != 0
            cached = filtered or keep
            if write and not allocated:
                cached = True
            if cached:
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
                    relax = write and naccessed == chunk_bytes
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
            elif allocated:
                # ---- bypass: one operation per piece contiguous in the chunk on disk and in memory
                k = rank - 1
                depth = 0
                if strided and rank > 1:              # memory map built element by element (strided.memory_rows)
                    while k > 0 and ext[k] == chunks[k]:
                        k -= 1
                    depth = _memory_rows(ext, mem, rank)
                else:
                    while k > 0 and ext[k] == chunks[k] and ext[k] == mem[k]:
                        k -= 1
                nruns = 1
                if depth > k:
                    for d in range(depth):
                        nruns *= ext[d]
                else:
                    for d in range(k):
                        nruns *= ext[d]
                    if strided and bv[k] < counts[i, k]:      # one piece per block along dimension k
                        nruns *= _pieces_in(c[k] * chunks[k], (c[k] + 1) * chunks[k], starts[i, k], counts[i, k],
                                            sv[k], bv[k])
                if write:
                    res[r, _NW] += nruns
                    res[r, _BW] += naccessed
                else:
                    res[r, _NR] += nruns
                    res[r, _BR] += naccessed
            # ---- next chunk in C order (holding selected elements: a strided dimension skips the chunks between)
            d = rank - 1
            while d >= 0:
                c[d] += 1
                if strided and bv[d] < counts[i, d] and c[d] <= hi[d]:
                    x = _next_selected(c[d] * chunks[d], starts[i, d], counts[i, d], sv[d], bv[d])
                    c[d] = hi[d] + 1 if x < 0 else _div(x, chunks[d])
                if c[d] <= hi[d]:
                    break
                c[d] = lo[d]
                d -= 1
            if d < 0:
                break
    if close:
        r = res.shape[0] - 1
        while st[_HEAD] >= 0:
            _evict(st[_HEAD], res, r, st, ent, rd, wr, dirty, prv, nxt, filtered, stored, chunk_bytes, alloc)
    return st[_MISSING]


# =========================================================================== contiguous kernel
@numba.njit(**_JIT)
def _contig_kernel(ops, starts, counts, strides, blocks, shape, itemsize, cap, storage, per_request, res, row0, close,
                   cst):
    """The sieve buffer of DatasetModel._sieve_read/_sieve_write, pieces generated in order.
    State in ``cst``: sieve address (-1: none), size, dirty, dataset allocated. ``strides``/``blocks`` as in
    :func:`_chunked_kernel`: the pieces are the selection's, in C order, one per block along the last dimension
    that is not whole."""
    rank = shape.shape[0]
    n = ops.shape[0]
    hyper = strides.shape[0] > 0
    strides_el = np.ones(max(rank, 1), np.int64)
    for d in range(rank - 2, -1, -1):
        strides_el[d] = strides_el[d + 1] * shape[d + 1]
    idx = np.zeros(max(rank, 1), np.int64)
    lim = np.zeros(max(rank, 1), np.int64)
    sv = np.ones(max(rank, 1), np.int64)
    bv = np.ones(max(rank, 1), np.int64)
    loc = cst[0]
    size = cst[1]
    sdirty = cst[2] != 0
    allocated = cst[3] != 0
    for i in range(n):
        r = row0 + i if per_request else 0
        write = ops[i] == 1
        if not allocated:
            if not write:
                continue                            # fill value, no I/O
            allocated = True                        # allocated on the first write, no fill I/O
        empty = False
        for d in range(rank):
            if counts[i, d] == 0:
                empty = True
            sv[d] = counts[i, d]
            bv[d] = counts[i, d]
            if hyper and blocks[i, d] < counts[i, d]:
                sv[d] = strides[i, d]
                bv[d] = blocks[i, d]
        if empty:
            continue
        k = max(rank - 1, 0)
        while k > 0 and counts[i, k] == shape[k] and bv[k] >= counts[i, k]:
            k -= 1
        run = 1
        for d in range(k + 1, rank):
            run *= counts[i, d]
        # pieces: an odometer over the selected elements of dims [0, k) and the blocks of dim k
        for d in range(k):
            idx[d] = 0
            lim[d] = _sel_before(starts[i, d] + counts[i, d], starts[i, d], counts[i, d], sv[d], bv[d])
        if rank:
            idx[k] = 0
            lim[k] = _div(counts[i, k] + sv[k] - 1, sv[k])
        length = (bv[k] if rank else 1) * run * itemsize
        base = 0
        for d in range(k + 1, rank):
            base += starts[i, d] * strides_el[d]
        while True:
            off = base
            for d in range(k):
                q = _div(idx[d], bv[d])
                off += (starts[i, d] + q * sv[d] + idx[d] - q * bv[d]) * strides_el[d]
            if rank:
                off += (starts[i, k] + idx[k] * sv[k]) * strides_el[k]
            addr = off * itemsize
            # ---- one piece [addr, addr + length)
            if loc >= 0 and addr >= loc and addr + length <= loc + size:
                if write:
                    sdirty = True                   # lands in the sieve buffer
            elif length > cap:
                if loc >= 0 and size > 0 and ((addr <= loc < addr + length) or (addr <= loc + size - 1 < addr + length)):
                    if sdirty:
                        res[r, _NW] += 1
                        res[r, _BW] += size
                        sdirty = False
                    if write:
                        loc = -1
                        size = 0
                if write:
                    res[r, _NW] += 1
                    res[r, _BW] += length
                else:
                    res[r, _NR] += 1
                    res[r, _BR] += length
            elif write and loc >= 0 and sdirty and length + size <= cap and (addr + length == loc or addr == loc + size):
                if addr + length == loc:
                    loc = addr
                size += length
            else:
                if sdirty:
                    res[r, _NW] += 1
                    res[r, _BW] += size
                    sdirty = False
                loc = addr
                size = min(cap, storage - addr)
                if not write or size > length:
                    res[r, _NR] += 1
                    res[r, _BR] += size
                sdirty = write
            # ---- next piece: odometer over dims [0, k]
            d = k if rank else -1
            while d >= 0:
                idx[d] += 1
                if idx[d] < lim[d]:
                    break
                idx[d] = 0
                d -= 1
            if d < 0:
                break
    if close and sdirty:
        res[res.shape[0] - 1, _NW] += 1
        res[res.shape[0] - 1, _BW] += size
        sdirty = False
    cst[0] = loc
    cst[1] = size
    cst[2] = 1 if sdirty else 0
    cst[3] = 1 if allocated else 0


@numba.njit(**_JIT)
def _tiles(shape, block, order, i0, i1, starts, counts):
    """Requests [i0, i1) of tile_requests(shape, block, order): block coordinates in mixed radix over
    the block grid, ``order[-1]`` fastest (decoded once, then counted like an odometer)."""
    rank = shape.shape[0]
    nb = np.empty(rank, np.int64)
    b = np.empty(rank, np.int64)
    rem = i0
    for j in range(rank - 1, -1, -1):
        d = order[j]
        nb[d] = (shape[d] + block[d] - 1) // block[d]
        b[d] = rem % nb[d]
        rem //= nb[d]
    for i in range(i0, i1):
        for d in range(rank):
            s = b[d] * block[d]
            starts[i - i0, d] = s
            counts[i - i0, d] = min(block[d], shape[d] - s)
        for j in range(rank - 1, -1, -1):
            d = order[j]
            b[d] += 1
            if b[d] < nb[d]:
                break
            b[d] = 0
