"""The chunk-cache model of :mod:`ccp.model.cache`, compiled: same semantics, flat arrays, numba.

:class:`ccp.model.cache.DatasetModel` stays the reference (readable, one object per cache entry);
this module walks the same requests over flat arrays in a numba-compiled kernel, several hundred
times faster per CPU second (``benchmarks/model_speed.py``), and the tests hold both to HDF5 and to
each other request by request.

State, one row per hash slot (HDF5 keeps at most one chunk per slot, so a slot names its entry):
the chunk's C-order index over the grid (-1: empty), its ``rd``/``wr`` countdowns, dirty flag and
the doubly linked LRU list (``prev``/``next`` slot numbers). Chunks allocated while the handle is
open are a byte per chunk of the grid (only when some chunk starts unallocated). Per request the
kernel writes one row of seven counts (:data:`COLUMNS`); the last row is the dataset close.

The kernels are in :mod:`ccp.model.kernels`. Entry points: :func:`simulate_fast` takes exactly
:func:`ccp.model.simulate`'s arguments; :func:`simulate_arrays` takes a request plan as arrays (no
Python tuple per request); :func:`simulate_tiling` generates a tiling in the kernel. They return
:class:`Predictions`, a sequence of :class:`RequestPrediction` backed by one int64 array, whose
:meth:`Predictions.total` (and :func:`ccp.model.summarise`) sums columns without a Python loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.model.cache import DEFAULT_SIEVE_BUF_SIZE, Allocated, Request, RequestPrediction, check_strided
from ccp.model.call_kernel import _grouped_kernel
from ccp.model.grid import ChunkGrid, Coords
from ccp.model.kernels import (
    _HIT,
    _LOAD,
    _NR,
    _NUSED,
    _NW,
    _chunked_kernel,
    _contig_kernel,
    _tiles,
)
from ccp.model.repeats import periodic_runs
from ccp.model.union import _POINTS_MORE, _UNION_MORE, NO_GROUPS, MultiBox, group_codes

#: Columns of :attr:`Predictions.counts`, in RequestPrediction's field order.
COLUMNS = ("chunk_hits", "chunk_loads", "evictions", "raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes")
OPS = ("read", "write", "close", "total")   # Predictions.ops codes 0-3 ("total": all requests summed)
MAX_TRIES = 4                 # periods of a repeating run walked waiting for the state to come back (then: walk on)
VISIT_BYTES = 64              # a run is tried when the chunk visits it may skip, at so many state bytes each, exceed
                              # the state bytes copied and compared by MAX_TRIES tries


def _prediction(counts, op: str) -> RequestPrediction:
    """One row of counts (COLUMNS order) as a RequestPrediction."""
    hits, loads, evictions, reads, read_bytes, writes, write_bytes = (int(v) for v in counts)
    return RequestPrediction(hits, loads, evictions, reads, read_bytes, writes, write_bytes, op)


@dataclass(frozen=True, eq=False)
class Predictions(Sequence):
    """Per-request predictions as arrays: ``counts[i]`` holds :data:`COLUMNS` of request ``i``.

    The last row is the dataset close (``ops[-1] == 2``). Indexing gives a :class:`RequestPrediction`
    (a slice gives a Predictions), so code written for :func:`ccp.model.simulate`'s list works as is.
    """

    counts: np.ndarray      # (n + 1, 7) int64, or (2, 7): all requests summed, then the close
    ops: np.ndarray         # (n + 1,) uint8: 0 read, 1 write, 2 close (3: the summed row)
    n: int = -1             # requests predicted (needed when the rows are summed)

    @property
    def n_requests(self) -> int:
        """How many requests were predicted (not counting the close)."""
        return self.n if self.n >= 0 else len(self.ops) - 1

    @property
    def per_request(self) -> bool:
        return not (len(self.ops) and self.ops[0] == 3)

    def classes(self) -> np.ndarray:
        """Per request, a class of requests the model says do the same work: equal
        ``(chunk_loads, raw_reads, raw_writes, chunk_hits > 0)``, numbered in sorted order of
        those tuples (what ``np.unique(keys, axis=0, return_inverse=True)`` numbers)."""
        if not self.per_request:
            raise ValueError("classes need per-request predictions (per_request=True)")
        c = self.counts[:-1]
        keys = np.stack([c[:, _LOAD], c[:, _NR], c[:, _NW], (c[:, _HIT] > 0).astype(np.int64)], axis=1)
        if len(keys) == 0:
            return np.zeros(0, np.int64)
        if int(keys[:, :3].max()) < (1 << 20):      # pack into one int64: same order, far faster
            packed = (keys[:, 0] << 41) | (keys[:, 1] << 21) | (keys[:, 2] << 1) | keys[:, 3]
            return np.unique(packed, return_inverse=True)[1].ravel().astype(np.int64)
        return np.unique(keys, axis=0, return_inverse=True)[1].ravel().astype(np.int64)

    def __len__(self) -> int:
        return len(self.ops)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Predictions(self.counts[i], self.ops[i])   # rows as they are (n from their count)
        row = self.counts[i]
        return _prediction(row, OPS[int(self.ops[i])])

    def __iter__(self):
        for row, op in zip(self.counts.tolist(), self.ops.tolist()):
            yield _prediction(row, OPS[op])

    def column(self, name: str) -> np.ndarray:
        return self.counts[:, COLUMNS.index(name)]

    def total(self) -> RequestPrediction:
        """Same as ``summarise(self)``, vectorised."""
        return _prediction(self.counts.sum(axis=0), "total")

    def __add__(self, other: Predictions) -> Predictions:
        """Request-wise sum of two handles' predictions (a copy: the source's reads and the
        destination's writes happen in the same requests); ops are this one's."""
        if len(other) != len(self):
            raise ValueError(f"cannot add predictions of {len(self)} and {len(other)} requests")
        return Predictions(self.counts + other.counts, self.ops, self.n)


# ================================================================================== Python side
def _op_codes(ops: str | Sequence[str] | np.ndarray, n: int) -> np.ndarray:
    if isinstance(ops, str):
        if ops not in ("read", "write"):
            raise ValueError(f"op must be 'read' or 'write', not {ops!r}")
        return np.full(n, OPS.index(ops), np.uint8)
    arr = np.asarray(ops)
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.uint8)
        if len(codes) and codes.max() > 1:
            raise ValueError("op codes must be 0 (read) or 1 (write)")
    else:
        bad = sorted({str(o) for o in arr.tolist()} - {"read", "write"})
        if bad:
            raise ValueError(f"op must be 'read' or 'write', not {bad[0]!r}")
        codes = (arr == "write").astype(np.uint8)
    if len(codes) != n:
        raise ValueError(f"{len(codes)} ops for {n} requests")
    return codes


def _per_chunk(grid: ChunkGrid, fn: Callable[[Coords], object], dtype) -> np.ndarray:
    """``fn`` evaluated on every chunk of the grid (C order); a KeyError/LookupError gives -1."""
    out = np.empty(grid.nchunks, dtype)
    for i, coords in enumerate(grid.iter_chunks()):
        try:
            out[i] = fn(coords)
        except LookupError:
            out[i] = -1
    return out


def chunk_size_table(shape: Sequence[int], chunks: Sequence[int], sizes_by_offset: dict,
                     default: int | None = None) -> np.ndarray:
    """Stored bytes per chunk (C order over the grid) from ``{chunk offset in elements: bytes}`` as
    ``DatasetID.chunk_iter`` gives it; chunks missing from it get ``default`` (median if None)."""
    grid = ChunkGrid(tuple(shape), tuple(chunks))
    if default is None:
        default = int(np.median(list(sizes_by_offset.values()))) if sizes_by_offset else grid.chunk_nbytes(1)
    table = np.full(grid.nchunks, int(default), np.int64)
    if sizes_by_offset:
        offs = np.array(list(sizes_by_offset.keys()), np.int64).reshape(len(sizes_by_offset), grid.rank)
        vals = np.fromiter(sizes_by_offset.values(), np.int64, len(sizes_by_offset))
        scaled = offs // np.asarray(chunks, np.int64)
        ok = np.all((scaled >= 0) & (scaled < np.asarray(grid.grid, np.int64)) & (offs % np.asarray(chunks) == 0), axis=1)
        table[np.ravel_multi_index(tuple(scaled[ok].T), grid.grid)] = vals[ok]
    return table


def _check_slabs(shape: Coords, starts: np.ndarray, counts: np.ndarray) -> None:
    bad = np.any((starts < 0) | (counts < 0) | (starts + counts > np.asarray(shape, np.int64)), axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"selection {tuple(starts[i].tolist())}+{tuple(counts[i].tolist())} outside shape {shape}")


class _Handle:
    """One open dataset handle's compiled-model state; :meth:`feed` walks a batch of requests."""

    def __init__(self, shape: Coords, chunks: Sequence[int] | None, itemsize: int, filtered: bool,
                 cache: ChunkCache, stored_chunk_bytes, allocated: Allocated, sieve_buf_size: int) -> None:
        self.shape, self.itemsize, self.per_request = shape, int(itemsize), True
        self.shape_arr = np.asarray(shape, np.int64)
        if chunks is None:
            if filtered:
                raise ValueError("filters need a chunked layout")
            ChunkGrid(shape, tuple(max(s, 1) for s in shape))     # rank/shape validation as the reference
            self.grid = None
            self.storage = math.prod(shape) * self.itemsize
            self.cap = min(int(sieve_buf_size), self.storage)
            if allocated is None or callable(allocated):
                alloc0 = True
            elif isinstance(allocated, bool):
                alloc0 = allocated
            else:
                alloc0 = len(allocated) > 0
            self.cst = np.array([-1, 0, 0, int(alloc0)], np.int64)
            return
        grid = self.grid = ChunkGrid(shape, tuple(chunks))
        rank = grid.rank
        self.bits = np.asarray(grid.encode_bits(), np.int64)
        if rank > 1 and int(self.bits[1:].sum()) + max(int(grid.grid[0]) - 1, 0).bit_length() > 62:
            raise ValueError(f"chunk grid {grid.grid} too large for 64-bit hash keys")
        self.chunks_arr = np.asarray(grid.chunks, np.int64)
        self.grid_arr = np.asarray(grid.grid, np.int64)
        self.chunk_bytes = grid.chunk_nbytes(self.itemsize)
        if stored_chunk_bytes is None:
            self.stored = np.zeros(0, np.int64)
        elif isinstance(stored_chunk_bytes, np.ndarray):
            self.stored = np.ascontiguousarray(stored_chunk_bytes, np.int64).ravel()
            if len(self.stored) != grid.nchunks:
                raise ValueError(f"{len(self.stored)} stored chunk sizes for {grid.nchunks} chunks")
        else:
            self.stored = _per_chunk(grid, stored_chunk_bytes, np.int64)
        index_exists = not (allocated is False or (isinstance(allocated, Collection) and len(allocated) == 0))
        if allocated is None or allocated is True:
            self.alloc = np.zeros(0, np.uint8)
        elif allocated is False:
            self.alloc = np.zeros(grid.nchunks, np.uint8)
        elif callable(allocated):
            self.alloc = _per_chunk(grid, lambda c: bool(allocated(c)), np.uint8)
        else:
            self.alloc = np.zeros(grid.nchunks, np.uint8)
            for cc in allocated:
                cc = tuple(int(v) for v in cc)
                if len(cc) == rank and all(0 <= v < g for v, g in zip(cc, grid.grid)):
                    self.alloc[grid.linear_index(cc)] = 1
        self.filtered = bool(filtered)
        self.keep = cache.holds(self.chunk_bytes)
        self.nslots = int(cache.nslots) if cache.enabled else 0
        self.nbytes, self.w0 = int(cache.nbytes), float(cache.w0)
        ns = max(self.nslots, 1)
        self.slots = (np.full(ns, -1, np.int64), np.zeros(ns, np.int64), np.zeros(ns, np.int64),
                      np.zeros(ns, np.uint8), np.full(ns, -1, np.int64), np.full(ns, -1, np.int64))
        self.st = np.array([-1, -1, 0, 0, int(index_exists), 0, 0], np.int64)   # _HEAD .. _NPRE

    def feed(self, codes: np.ndarray, starts: np.ndarray, counts: np.ndarray, res: np.ndarray, row0: int,
             close: bool, strides: np.ndarray | None = None, blocks: np.ndarray | None = None,
             grp: np.ndarray | None = None) -> None:
        """Requests into ``res`` from row ``row0``; ``strides``/``blocks``: a strided selection's (see
        :func:`simulate_arrays`), None: boxes; ``grp``: boxes grouped into calls (:func:`group_codes`), None: each
        request a call. A contiguous dataset takes a call's boxes one after the other."""
        if strides is None or blocks is None:
            strides = blocks = np.zeros((0, starts.shape[1]), np.int64)
        if grp is None:
            grp = NO_GROUPS
        if self.grid is None:
            if len(codes) or close:
                _contig_kernel(codes, starts, counts, strides, blocks, self.shape_arr, self.itemsize, self.cap,
                               self.storage, self.per_request, res, row0, close, self.cst)
            return
        args = (self.chunks_arr, self.bits, self.grid_arr, self.itemsize, self.chunk_bytes, self.filtered, self.keep,
                self.nslots, self.nbytes, self.w0, self.stored, self.alloc, self.per_request, res, row0, close,
                *self.slots, self.st)
        if len(grp):
            missing = _grouped_kernel(codes, starts, counts, strides, blocks, grp, *args)
        else:
            missing = _chunked_kernel(codes, starts, counts, strides, blocks, *args)
        if missing:
            raise KeyError("stored_chunk_bytes has no size for a chunk the requests load or flush")

    def _state(self) -> tuple[np.ndarray, ...]:
        """The arrays (views) of the kernel's state that decide its next counts. The order of the LRU list
        decides only which entry a prune evicts: a cache whose slots all full fit in it never prunes, and then
        the list's order (``prv``/``nxt``, head and tail) is left out (a hit's move drifts it period after period)."""
        if self.grid is None:
            return (self.cst,)
        ent, rd, wr, dirty, prv, nxt = self.slots
        if self.nslots * self.chunk_bytes <= self.nbytes:
            return ent, rd, wr, dirty, self.st[_NUSED:], self.alloc
        return ent, rd, wr, dirty, prv, nxt, self.st, self.alloc

    def feed_plan(self, codes: np.ndarray, starts: np.ndarray, counts: np.ndarray, res: np.ndarray,
                  strides: np.ndarray | None = None, blocks: np.ndarray | None = None,
                  grp: np.ndarray | None = None) -> None:
        """:meth:`feed` of requests into ``res`` rows 0.. (no close), a run that repeats itself
        (:func:`ccp.model.repeats.periodic_runs`) walked only until a period leaves the state as it found it:
        from there each period repeats that one's counts and state exactly, so they are copied. With ``grp`` (calls
        of several boxes) a run repeats only if its calls do, and it is cut to begin and end where calls begin."""
        pos = 0
        state_bytes = sum(a.nbytes for a in self._state())
        keys = (starts, counts)
        if strides is not None and blocks is not None:     # a run repeats only if its strides and blocks do
            keys = (np.hstack([starts, strides]), np.hstack([counts, blocks]))
        grouped = grp is not None and len(grp) > 0
        if grouped:
            assert grp is not None
            keys = (np.hstack([keys[0], grp[:, None].astype(np.int64)]), np.hstack([keys[1], np.zeros((len(grp), 1),
                                                                                                     np.int64)]))
            begins = np.flatnonzero((grp != _UNION_MORE) & (grp != _POINTS_MORE))

        def part(a, b):
            sb = (strides[a:b], blocks[a:b]) if strides is not None and blocks is not None else (None, None)
            return (*sb, grp[a:b] if grouped and grp is not None else None)

        for s, e, p in periodic_runs(codes, *keys):
            if grouped:         # whole calls only: from the first call that begins in the run to the last
                at = int(np.searchsorted(begins, s))
                if at == len(begins):
                    continue
                s = int(begins[at])
                e = e if e == len(codes) else int(begins[np.searchsorted(begins, e, side="right") - 1])
                if e - s < 2 * p:
                    continue
            if self._visits(starts[s:s + p], counts[s:s + p]) * ((e - s) // p - 2) * VISIT_BYTES \
                    < MAX_TRIES * state_bytes:
                continue            # copying and comparing states would cost more than the visits it may skip
            self.feed(codes[pos:s], starts[pos:s], counts[pos:s], res, pos, False, *part(pos, s))
            pos = self._feed_run(codes, starts, counts, res, s, e, p, part)
        self.feed(codes[pos:], starts[pos:], counts[pos:], res, pos, False, *part(pos, len(codes)))

    def _visits(self, starts: np.ndarray, counts: np.ndarray) -> int:
        """Chunks the kernel visits for these requests (requests, on a contiguous dataset)."""
        if self.grid is None:
            return len(starts)
        first = starts // self.chunks_arr
        last = (starts + np.maximum(counts, 1) - 1) // self.chunks_arr
        return int(np.prod(last - first + 1, axis=1).sum())

    def _feed_run(self, codes, starts, counts, res, a: int, e: int, p: int, part) -> int:
        """Requests ``[a, e)`` (each the request ``p`` before it) period by period until one leaves the state as
        it was (then every further whole period is that one's counts: copied) or MAX_TRIES periods did not;
        returns where the walk stopped."""
        for _ in range(MAX_TRIES):
            if a + p > e:
                break
            before = tuple(x.copy() for x in self._state())
            total_before = None if self.per_request else res[0].copy()
            self.feed(codes[a:a + p], starts[a:a + p], counts[a:a + p], res, a, False, *part(a, a + p))
            a += p
            if all(np.array_equal(x, y) for x, y in zip(before, self._state())):
                k = (e - a) // p
                if k:
                    if self.per_request:
                        res[a:a + k * p] = np.tile(res[a - p:a], (k, 1))
                    else:
                        assert total_before is not None
                        res[0] += k * (res[0] - total_before)
                return a + k * p
        return a


def _result(n: int, codes: np.ndarray | None, per_request: bool) -> tuple[np.ndarray, np.ndarray]:
    if not per_request:
        return np.zeros((2, len(COLUMNS)), np.int64), np.array([3, 2], np.uint8)
    assert codes is not None, "per-request results need the requests' op codes"
    ops = np.empty(n + 1, np.uint8)
    ops[:n] = codes
    ops[n] = 2
    return np.zeros((n + 1, len(COLUMNS)), np.int64), ops


def _plan_arrays(shape: tuple[int, ...], ops, starts, counts, strides=None, blocks=None):
    """A plan's op codes and ``(n, rank)`` int64 starts, counts, strides and blocks (None, None: boxes), checked
    (what :func:`simulate_arrays` and :meth:`ArrayModel.feed` take): a ValueError naming what is wrong."""
    rank = len(shape)
    starts = np.ascontiguousarray(starts, dtype=np.int64).reshape(-1, rank)
    counts = np.ascontiguousarray(counts, dtype=np.int64).reshape(-1, rank)
    if starts.shape != counts.shape:
        raise ValueError(f"starts {starts.shape} and counts {counts.shape} differ")
    codes = _op_codes(ops, len(starts))
    _check_slabs(shape, starts, counts)
    if (strides is None) != (blocks is None):
        raise ValueError("strides and blocks go together")
    if strides is not None:
        strides = np.ascontiguousarray(strides, dtype=np.int64).reshape(-1, rank)
        blocks = np.ascontiguousarray(blocks, dtype=np.int64).reshape(-1, rank)
        if strides.shape != starts.shape or blocks.shape != starts.shape:
            raise ValueError(f"strides {strides.shape} and blocks {blocks.shape} differ from starts {starts.shape}")
        blocks = check_strided(starts, counts, strides, blocks)     # abutting blocks: the box (HDF5 merges them)
    return codes, starts, counts, strides, blocks


def simulate_arrays(shape: Sequence[int], chunks: Sequence[int] | None, itemsize: int, *, filtered: bool,
                    cache: ChunkCache, ops: str | Sequence[str] | np.ndarray, starts, counts,
                    stored_chunk_bytes: None | Callable[[Coords], int] | np.ndarray = None,
                    allocated: Allocated = None, sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE,
                    per_request: bool = True, skip_repeats: bool = True, strides=None, blocks=None, calls=None,
                    points=None) -> Predictions:
    """:func:`ccp.model.simulate` for a plan given as arrays: ``starts``/``counts`` ``(n, rank)``.

    ``strides``/``blocks`` ``(n, rank)`` make requests strided selections (regular hyperslabs, as
    :meth:`ccp.model.cache.DatasetModel.request` takes them): request i selects, along dimension d, blocks of
    ``blocks[i, d]`` elements ``strides[i, d]`` apart inside its box ``starts[i, d] + [0, counts[i, d])``, which
    ends with a whole block (``blocks >= counts``: the whole box). One HDF5 call: each chunk holding selected
    elements is visited once, with them.

    ``calls`` ``(n,)`` groups boxes into calls (consecutive requests with the same number: one call on the union
    of their boxes, or with ``points[i]`` the points of a point selection, as :mod:`ccp.model.union` describes):
    each chunk of the call visited once; the call's counts are in its first request's row, its other rows zero.
    A call's requests are taken as boxes (their strides and blocks, if any, are not read); on a contiguous dataset
    they are taken one by one.

    ``ops`` is one op for all requests or one per request. ``stored_chunk_bytes`` may also be an
    array of stored bytes per chunk in C order over the grid (see :func:`chunk_size_table`).
    ``per_request=False`` keeps no row per request (memory: 56 bytes a request otherwise): the
    result has two rows, all requests summed (op ``"total"``) and the close. ``skip_repeats``: a run of
    requests that repeats itself is walked until a period leaves the cache as it found it, the rest copied
    (:meth:`_Handle.feed_plan`: the same counts, exactly; False walks every request).
    """
    shape = tuple(int(s) for s in shape)
    codes, starts, counts, strides, blocks = _plan_arrays(shape, ops, starts, counts, strides, blocks)
    n = len(starts)
    grp = _groups(calls, points, n)
    h = _Handle(shape, chunks, itemsize, filtered, cache, stored_chunk_bytes, allocated, sieve_buf_size)
    h.per_request = bool(per_request)
    res, out_ops = _result(n, codes, per_request)
    if skip_repeats:
        h.feed_plan(codes, starts, counts, res, strides, blocks, grp)
        h.feed(codes[:0], starts[:0], counts[:0], res, n, True)
    else:
        h.feed(codes, starts, counts, res, 0, True, strides, blocks, grp)
    return Predictions(res, out_ops, n)


def _groups(calls, points, n: int) -> np.ndarray | None:
    """:func:`group_codes` of a plan's ``calls``/``points`` (None: none given, or every call one box)."""
    if calls is None:
        return None
    grp = group_codes(calls, points, n)
    return grp if len(grp) else None


class ArrayModel:
    """One open dataset handle on the compiled model, fed a request plan in batches.

    :func:`simulate_arrays` walks a whole plan at once; this keeps the handle's state (cache slots,
    LRU list, preemptible count, allocated chunks; the sieve buffer for a contiguous dataset) between
    calls, so :meth:`feed` on consecutive slices of a plan then :meth:`close` gives exactly the rows
    :func:`simulate_arrays` gives for the whole plan (``tests/model/test_array_model.py``): a trace of
    10^7 requests is modelled in bounded memory. Arguments are :func:`simulate_arrays`'s.
    """

    def __init__(self, shape: Sequence[int], chunks: Sequence[int] | None, itemsize: int, *, filtered: bool,
                 cache: ChunkCache, stored_chunk_bytes: None | Callable[[Coords], int] | np.ndarray = None,
                 allocated: Allocated = None, sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE,
                 per_request: bool = True, skip_repeats: bool = True) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.skip_repeats = bool(skip_repeats)
        self._handle = _Handle(self.shape, chunks, itemsize, filtered, cache, stored_chunk_bytes, allocated,
                               sieve_buf_size)
        self._handle.per_request = self.per_request = bool(per_request)
        self.n_requests = 0
        self.closed = False
        self._last_call: int | None = None

    def feed(self, ops: str | Sequence[str] | np.ndarray, starts, counts, strides=None, blocks=None, calls=None,
             points=None) -> np.ndarray:
        """The next requests: their counts, one row per request (:data:`COLUMNS`), or one row of their sum
        when ``per_request`` is False. ``strides``/``blocks``: strided selections, ``calls``/``points``: calls of
        several boxes, as :func:`simulate_arrays` (a batch begins with a call: a ValueError if its first request
        continues the last batch's last call)."""
        if self.closed:
            raise RuntimeError("dataset handle is closed")
        codes, starts, counts, strides, blocks = _plan_arrays(self.shape, ops, starts, counts, strides, blocks)
        grp = _groups(calls, points, len(starts))
        if calls is not None and len(starts):
            first, last = int(np.asarray(calls).reshape(-1)[0]), int(np.asarray(calls).reshape(-1)[-1])
            if first == self._last_call:
                raise ValueError(f"this batch begins inside call {first}, which the last batch began: feed whole calls")
            self._last_call = last
        res = np.zeros((len(starts) if self.per_request else 1, len(COLUMNS)), np.int64)
        if self.skip_repeats:
            self._handle.feed_plan(codes, starts, counts, res, strides, blocks, grp)
        else:
            self._handle.feed(codes, starts, counts, res, 0, False, strides, blocks, grp)
        self.n_requests += len(starts)
        return res

    def close(self) -> np.ndarray:
        """The dataset close (dirty chunks or sieve buffer flushed): its row of counts."""
        if self.closed:
            raise RuntimeError("dataset handle is closed")
        res = np.zeros((1, len(COLUMNS)), np.int64)
        empty = np.zeros((0, len(self.shape)), np.int64)
        self._handle.feed(np.zeros(0, np.uint8), empty, empty, res, 0, True)
        self.closed = True
        return res[0]


TILE_BATCH = 1 << 16


def simulate_tiling(shape: Sequence[int], chunks: Sequence[int] | None, itemsize: int, *, filtered: bool,
                    cache: ChunkCache, op: str, block: Sequence[int], order: Sequence[int] | None = None,
                    stored_chunk_bytes: None | Callable[[Coords], int] | np.ndarray = None,
                    allocated: Allocated = None, sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE,
                    per_request: bool = False, max_requests: int | None = None) -> Predictions:
    """:func:`simulate_arrays` of ``ccp.workload.requests.tile_requests(shape, block, order)`` (its
    first ``max_requests``) without building the plan: requests are generated in batches inside the
    compiled code, so a 10 M-request tiling needs neither its 480 MB of plan nor the time to make it.
    """
    shape = tuple(int(s) for s in shape)
    rank = len(shape)
    block_arr = np.asarray(block, np.int64).reshape(rank)
    if (block_arr < 1).any():
        raise ValueError(f"block {tuple(block)} must be >= 1 in every dimension")
    order_arr = np.asarray(list(order) if order is not None else range(rank), np.int64).reshape(rank)
    if sorted(order_arr.tolist()) != list(range(rank)):
        raise ValueError(f"order {tuple(order_arr.tolist())} is not a permutation of the dimensions")
    n = math.prod(-(-s // b) for s, b in zip(shape, block_arr.tolist()))
    if max_requests is not None:
        n = min(n, int(max_requests))
    h = _Handle(shape, chunks, itemsize, filtered, cache, stored_chunk_bytes, allocated, sieve_buf_size)
    h.per_request = bool(per_request)
    code = OPS.index(op) if op in ("read", "write") else _op_codes(op, 1)[0]
    codes = np.full(min(n, TILE_BATCH), code, np.uint8)
    res, out_ops = _result(n, np.full(n, code, np.uint8) if per_request else None, per_request)
    starts = np.empty((len(codes), rank), np.int64)
    counts = np.empty((len(codes), rank), np.int64)
    shape_arr = np.asarray(shape, np.int64)
    i = 0
    while True:
        j = min(n, i + TILE_BATCH)
        _tiles(shape_arr, block_arr, order_arr, i, j, starts, counts)
        h.feed(codes[:j - i], starts[:j - i], counts[:j - i], res, i, j == n)
        if j == n:
            break
        i = j
    return Predictions(res, out_ops, n)


def simulate_fast(shape: Sequence[int], chunks: Sequence[int] | None, itemsize: int, *, filtered: bool,
                  cache: ChunkCache, requests: Iterable[Request],
                  stored_chunk_bytes: None | Callable[[Coords], int] | np.ndarray = None,
                  allocated: Allocated = None, sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE) -> Predictions:
    """Drop-in for :func:`ccp.model.simulate` (same arguments, a sequence of the same predictions)."""
    listed = list(requests)
    if any(isinstance(r, MultiBox) for r in listed):
        return _simulate_calls(shape, chunks, itemsize, filtered=filtered, cache=cache, requests=listed,
                               stored_chunk_bytes=stored_chunk_bytes, allocated=allocated,
                               sieve_buf_size=sieve_buf_size)
    reqs = [r for r in listed if not isinstance(r, MultiBox)]
    rank = len(shape)
    for r in reqs:
        if any(len(v) != rank for v in r[1:]):
            raise ValueError(f"selection rank mismatch: {'/'.join(str(tuple(v)) for v in r[1:])} for shape "
                             f"{tuple(shape)}")
    starts = np.array([r[1] for r in reqs], np.int64).reshape(len(reqs), rank)
    counts = np.array([r[2] for r in reqs], np.int64).reshape(len(reqs), rank)
    strides = blocks = None
    if any(len(r) > 3 for r in reqs):      # (op, start, count, stride, block): a box is its own block
        strides = np.array([r[3] if len(r) > 3 else r[2] for r in reqs], np.int64).reshape(len(reqs), rank)
        blocks = np.array([r[4] if len(r) > 3 else r[2] for r in reqs], np.int64).reshape(len(reqs), rank)
    return simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache, ops=[r[0] for r in reqs],
                           starts=starts, counts=counts, stored_chunk_bytes=stored_chunk_bytes,
                           allocated=allocated, sieve_buf_size=sieve_buf_size, strides=strides, blocks=blocks)


def _simulate_calls(shape, chunks, itemsize, *, filtered, cache, requests, stored_chunk_bytes, allocated,
                   sieve_buf_size):
    """:func:`ccp.model.fast.simulate_fast` of requests some of which are :class:`~ccp.model.union.MultiBox` calls (boxes only):
    the boxes fed with their call numbers, then one row a call (the sum of its boxes' rows)."""
    from ccp.model.fast import COLUMNS, OPS, Predictions, simulate_arrays  # numba only where it is used

    rank = len(shape)
    starts: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    ops: list[str] = []
    calls: list[int] = []
    points: list[bool] = []
    for k, r in enumerate(requests):
        if isinstance(r, MultiBox):
            s = np.asarray(r.starts, np.int64).reshape(-1, rank)
            starts.append(s)
            counts.append(np.asarray(r.counts, np.int64).reshape(s.shape))
            ops += [r.op] * len(s)
            calls += [k] * len(s)
            points += [r.points] * len(s)
        else:
            if len(r) > 3:
                raise ValueError("strided requests and calls of several boxes do not mix in one simulate_fast")
            starts.append(np.asarray(r[1], np.int64).reshape(1, rank))
            counts.append(np.asarray(r[2], np.int64).reshape(1, rank))
            ops.append(r[0])
            calls.append(k)
            points.append(False)
    st = np.concatenate(starts) if starts else np.zeros((0, rank), np.int64)
    ct = np.concatenate(counts) if counts else np.zeros((0, rank), np.int64)
    pred = simulate_arrays(shape, chunks, itemsize, filtered=filtered, cache=cache, ops=ops, starts=st, counts=ct,
                           stored_chunk_bytes=stored_chunk_bytes, allocated=allocated, sieve_buf_size=sieve_buf_size,
                           calls=np.asarray(calls, np.int64), points=np.asarray(points, bool))
    n = len(requests)
    rows = np.zeros((n + 1, len(COLUMNS)), np.int64)
    np.add.at(rows, np.asarray(calls, np.int64), pred.counts[:-1])
    rows[n] = pred.counts[-1]
    out_ops = np.empty(n + 1, np.uint8)
    out_ops[:n] = [OPS.index(r.op if isinstance(r, MultiBox) else r[0]) for r in requests]
    out_ops[n] = 2
    return Predictions(rows, out_ops, n)
