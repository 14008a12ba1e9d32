"""A pure model of HDF5's raw-data I/O for one open dataset handle: chunk cache and sieve buffer.

Predicts, request by request, what HDF5 2.0 does to the file for ``H5Dread``/``H5Dwrite`` of a
hyperslab ``(start, count)`` into/out of a dense C-order memory buffer of shape ``count`` with the
dataset's own datatype (no type conversion): raw-data file operations (as the log VFD counts
``H5FD_MEM_DRAW`` reads and writes), chunks loaded, cache hits and evictions. The last prediction
of :func:`simulate` is the dataset close, which flushes dirty chunks (or a dirty sieve buffer).

Behaviour follows ``src/H5Dchunk.c`` / ``src/H5Dcontig.c`` (read, not copied):

* lookup: the chunk sits in slot ``ChunkGrid.slot(coords, nslots)`` (bit-packed scaled coords,
  see :mod:`ccp.model.grid`), one chunk per slot.
* "cacheable" (``H5D__chunk_cacheable``): filtered chunks always go through the cache code, even
  when too big to be kept (then they are read+decoded, used and dropped -- every request again).
  Unfiltered chunks larger than ``nbytes`` bypass it: the selection moves straight between file
  and memory, one file operation per piece contiguous both in the chunk on disk and in the memory
  buffer (``H5VM_opvv``; chunked datasets have no sieve buffer). Exception: a *write* to a chunk
  not yet allocated goes through the cache code to get the fill value (HDF5's default fill
  settings), so it is written whole, at once, if it cannot be kept.
* lock (``H5D__chunk_lock``): a hit moves the entry one place towards the tail of the LRU list (not
  to the tail). A miss reads the whole stored chunk, unless the write covers the whole chunk (no
  read) or the chunk is not allocated (fill value, no read). A chunk that fits
  (``chunk_bytes <= nbytes`` and ``nslots > 0``) is inserted at the tail after evicting its slot's
  occupant and pruning.
* prune (``H5D__chunk_cache_prune``): two pointers walk from the head; pointer 0 evicts only
  entries fully read and/or fully written (``rd_count``/``wr_count`` counting down from the full
  chunk size by the bytes selected in each access, so edge chunks never qualify); pointer 1 starts
  ``int(nused * w0)`` steps later and evicts anything. With ``w0 == 1`` pointer 1 never starts and
  the cache can exceed ``nbytes``.
* evicting or closing writes a dirty chunk whole (filtered: its compressed size).
* contiguous layout: no chunk cache, but the dataset's sieve buffer (``min(sieve_buf_size,
  dataset bytes)``, 64 KiB by default) as in ``H5D__contig_{read,write}vv_sieve_cb``.

Assumptions (see LIMITS.md): serial HDF5, VFD without vector/selection I/O (sec2, log), no page
buffer, default fill value settings (fill defined, fill time IFSET), no
``H5O_LAYOUT_CHUNK_DONT_FILTER_PARTIAL_BOUND_CHUNKS``, fixed extent while the handle is open.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Optional, Union, cast

import numpy as np

from ccp.chunkcache import HDF5_2X, ChunkCache
from ccp.model.grid import ChunkGrid, Coords
from ccp.model.strided import check_strided, chunk_pieces, contiguous_pieces, direct_pieces, selection_axes
from ccp.model.union import MultiBox, call_chunks

#: HDF5 2.0.0 defaults (``H5Pget_chunk_cache`` on a fresh dapl: 8191 slots, 8 MiB, w0 0.75).
DEFAULT_NBYTES = HDF5_2X.nbytes
DEFAULT_NSLOTS = HDF5_2X.nslots
DEFAULT_W0 = HDF5_2X.w0
#: HDF5 default sieve buffer size (``H5Pget_sieve_buf_size``).
DEFAULT_SIEVE_BUF_SIZE = 64 * 1024

Request = Union[tuple[str, Sequence[int], Sequence[int]],      # (op, start, count): a box
                tuple[str, Sequence[int], Sequence[int], Sequence[int], Sequence[int]],    # + stride, block
                MultiBox]                                        # one call on several boxes
Allocated = Union[None, bool, Callable[[Coords], bool], Collection[Coords]]


@dataclass(frozen=True)
class RequestPrediction:
    """What one request (or the close, ``op == "close"``) does to the file."""

    chunk_hits: int = 0        # chunks found in the cache
    chunk_loads: int = 0       # chunks read whole from the file (and decoded if filtered)
    evictions: int = 0         # cache entries dropped (slot collision, pruning, or the close)
    raw_reads: int = 0         # H5FD_MEM_DRAW read operations
    raw_read_bytes: int = 0
    raw_writes: int = 0        # H5FD_MEM_DRAW write operations
    raw_write_bytes: int = 0
    op: str = "read"


_COUNT_FIELDS = tuple(f.name for f in fields(RequestPrediction) if f.name != "op")


def summarise(predictions: Iterable[RequestPrediction]) -> RequestPrediction:
    """Totals of a sequence of predictions (``op == "total"``)."""
    total = getattr(predictions, "total", None)
    if callable(total):                 # ccp.model.fast.Predictions: column sums, no Python loop
        return total()
    tot = dict.fromkeys(_COUNT_FIELDS, 0)
    for p in predictions:
        for k in _COUNT_FIELDS:
            tot[k] += getattr(p, k)
    return RequestPrediction(**tot, op="total")


class _Tally:
    __slots__ = _COUNT_FIELDS
    chunk_hits: int              # the count fields of RequestPrediction (set in __init__)
    chunk_loads: int
    evictions: int
    raw_reads: int
    raw_read_bytes: int
    raw_writes: int
    raw_write_bytes: int

    def __init__(self) -> None:
        for k in _COUNT_FIELDS:
            setattr(self, k, 0)

    def read(self, nbytes: int, n: int = 1) -> None:
        self.raw_reads += n
        self.raw_read_bytes += n * nbytes

    def write(self, nbytes: int, n: int = 1) -> None:
        self.raw_writes += n
        self.raw_write_bytes += n * nbytes

    def freeze(self, op: str) -> RequestPrediction:
        return RequestPrediction(**{k: getattr(self, k) for k in _COUNT_FIELDS}, op=op)


class _Entry:
    __slots__ = ("coords", "slot", "rd", "wr", "dirty", "prev", "next")

    def __init__(self, coords: Coords, slot: int, size: int) -> None:
        self.coords = coords
        self.slot = slot
        self.rd = size           # bytes remaining to be read (H5D_rdcc_ent_t.rd_count)
        self.wr = size           # bytes remaining to be written (wr_count)
        self.dirty = False
        self.prev: Optional[_Entry] = None
        self.next: Optional[_Entry] = None


def _allocated_predicate(allocated: Allocated) -> Callable[[Coords], bool]:
    if allocated is None or allocated is True:
        return lambda c: True
    if allocated is False:
        return lambda c: False
    if callable(allocated):
        return lambda c: bool(allocated(c))
    known = {tuple(int(v) for v in c) for c in allocated}
    return known.__contains__


class DatasetModel:
    """Mutable state of one open dataset handle; feed it requests one by one.

    ``chunks=None`` models a contiguous dataset (sieve buffer only). ``stored_chunk_bytes(coords)``
    gives a chunk's size on disk (what a load reads and, for filtered data, what a flush writes);
    default: the uncompressed full chunk. ``allocated`` says which chunks exist in the file when
    the handle opens (None/True: all, False/empty: none, or a predicate / collection of coords;
    False or an empty collection also means the chunk index does not exist yet, so reads before
    the first write do nothing at all); for a contiguous dataset only its truth value matters.
    """

    def __init__(self, shape: Sequence[int], chunks: Optional[Sequence[int]], itemsize: int, *,
                 filtered: bool = False, cache: ChunkCache = HDF5_2X,
                 stored_chunk_bytes: Optional[Callable[[Coords], int]] = None,
                 allocated: Allocated = None, sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.itemsize = int(itemsize)
        self.cache = cache
        self.closed = False
        if chunks is None:
            if filtered:
                raise ValueError("filters need a chunked layout")
            self.grid: Optional[ChunkGrid] = None
            self.filtered = False
            self._storage_bytes = math.prod(self.shape) * self.itemsize
            self._sieve_cap = min(int(sieve_buf_size), self._storage_bytes)
            self._sieve_loc: Optional[int] = None
            self._sieve_size = 0
            self._sieve_dirty = False
            if allocated is None or callable(allocated):
                self._contig_allocated = True
            elif isinstance(allocated, bool):
                self._contig_allocated = allocated
            else:
                self._contig_allocated = len(allocated) > 0
            return
        self.grid = ChunkGrid(self.shape, tuple(chunks))
        self.filtered = bool(filtered)
        self.chunk_bytes = self.grid.chunk_nbytes(self.itemsize)
        self._stored = stored_chunk_bytes or (lambda c: self.chunk_bytes)
        self._initially_allocated = _allocated_predicate(allocated)
        # H5D__read skips a dataset whose chunk index does not exist yet and has nothing cached
        # (fill value, no chunk-cache activity at all). The index is created by the first write.
        self._index_exists = not (allocated is False or
                                  (isinstance(allocated, Collection) and len(allocated) == 0))
        self._written: set[Coords] = set()          # chunks allocated while the handle is open
        self._slots: dict[int, _Entry] = {}
        self._head: Optional[_Entry] = None
        self._tail: Optional[_Entry] = None
        self._nused = 0
        self._nbytes_used = 0
        self._keep = cache.holds(self.chunk_bytes)

    # ================================================================ public
    def request(self, op: str, start: Sequence[int], count: Sequence[int], stride: Sequence[int] | None = None,
                block: Sequence[int] | None = None) -> RequestPrediction:
        """One call on the box ``(start, count)``, or with ``stride``/``block`` on a strided selection in it
        (:mod:`ccp.model.strided`)."""
        if self.closed:
            raise RuntimeError("dataset handle is closed")
        if op not in ("read", "write"):
            raise ValueError(f"op must be 'read' or 'write', not {op!r}")
        start = tuple(int(v) for v in start)
        count = tuple(int(v) for v in count)
        if (stride is None) != (block is None):
            raise ValueError("stride and block go together")
        if stride is not None and block is not None:
            if len(stride) != len(count) or len(block) != len(count):
                raise ValueError(f"selection rank mismatch: {tuple(stride)}/{tuple(block)} for count {count}")
            block = tuple(check_strided(*(np.asarray([v], np.int64).reshape(1, -1)
                                          for v in (start, count, stride, block)))[0].tolist())
        axes = selection_axes(start, count, stride, block)
        t = _Tally()
        if self.grid is None:
            self._contig_request(t, op, start, count, axes)
        else:
            self.grid.check_slab(start, count)
            self._chunked_request(t, op, axes, rows=any(len(a) < c for a, c in zip(axes, count)))
        return t.freeze(op)

    def call(self, call: MultiBox) -> RequestPrediction:
        """One call on several boxes (:class:`ccp.model.union.MultiBox`: a union of boxes or a point selection), as
        HDF5 does it: each chunk holding selected elements once, in C order, with all of them (:mod:`ccp.model.union`).
        A contiguous dataset takes the boxes one after the other (LIMITS.md)."""
        if self.closed:
            raise RuntimeError("dataset handle is closed")
        if call.op not in ("read", "write"):
            raise ValueError(f"op must be 'read' or 'write', not {call.op!r}")
        starts = np.asarray(call.starts, np.int64).reshape(len(call.starts), -1)
        counts = np.asarray(call.counts, np.int64).reshape(starts.shape)
        if starts.shape[1] != len(self.shape):
            raise ValueError(f"selection rank mismatch: {starts.shape[1]} for shape {self.shape}")
        t = _Tally()
        if self.grid is None:
            for s, c in zip(starts.tolist(), counts.tolist()):
                self._contig_request(t, call.op, tuple(s), tuple(c), selection_axes(s, c, None, None))
            return t.freeze(call.op)
        grid = self.grid
        for s, c in zip(starts.tolist(), counts.tolist()):
            grid.check_slab(tuple(s), tuple(c))
        if call.op == "read" and not self._index_exists and self._nused == 0:
            return t.freeze(call.op)
        self._index_exists = True
        pieces = call_chunks(starts, counts, self.shape, grid.chunks, call.points)
        # one element selected: HDF5's single-element path, which never sets the selection type (ccp.model.union)
        whole_ok = not call.points or (len(pieces) == 1 and pieces[0][1] == 1)
        for coords, nsel, npieces in pieces:
            self._visit(t, call.op, coords, nsel * self.itemsize, functools.partial(int, npieces), whole_ok=whole_ok)
        return t.freeze(call.op)

    def close(self) -> RequestPrediction:
        """Dataset close: flush (and drop) everything, head of the list first."""
        t = _Tally()
        if not self.closed:
            if self.grid is None:
                if self._sieve_dirty:
                    t.write(self._sieve_size)
                    self._sieve_dirty = False
            else:
                while self._head is not None:
                    self._evict(t, self._head)
            self.closed = True
        return t.freeze("close")

    def cached_chunks(self) -> list[Coords]:
        """Chunks in the cache, head (next to be preempted) first."""
        out, e = [], getattr(self, "_head", None)
        while e is not None:
            out.append(e.coords)
            e = e.next
        return out

    def is_allocated(self, coords: Coords) -> bool:
        return coords in self._written or self._initially_allocated(coords)

    # ================================================================ chunked layout
    def _chunked_request(self, t: _Tally, op: str, axes: list[np.ndarray], rows: bool = False) -> None:
        grid = self.grid
        assert grid is not None
        if op == "read" and not self._index_exists and self._nused == 0:
            return
        self._index_exists = True
        mem = [len(a) for a in axes]
        for coords, inside in chunk_pieces(axes, grid.chunks):
            self._visit(t, op, coords, math.prod(len(a) for a in inside) * self.itemsize,
                        functools.partial(direct_pieces, inside, grid.chunks, mem, rows))

    def _visit(self, t: _Tally, op: str, coords: Coords, naccessed: int, pieces: Callable[[], int],
               whole_ok: bool = True) -> None:
        """One chunk of a call: ``naccessed`` bytes selected in it; ``pieces()``: the reads or writes if the chunk
        is accessed directly; ``whole_ok``: a write of the whole chunk through the cache needs no read (a point
        selection's does: HDF5 reads the chunk all the same, measured)."""
        ent = self._lookup(coords)
        allocated = self.is_allocated(coords)
        if op == "read":
            if self.filtered or self._keep:
                ent = self._lock(t, coords, ent, allocated, relax=False)
                self._unlock(t, coords, ent, dirty=False, naccessed=naccessed)
            elif allocated:
                t.raw_reads += pieces()
                t.raw_read_bytes += naccessed
            # else: never written, not cacheable -> fill value, no I/O
        else:
            if self.filtered or self._keep or not allocated:
                whole = whole_ok and naccessed == self.chunk_bytes
                ent = self._lock(t, coords, ent, allocated, relax=whole)
                self._unlock(t, coords, ent, dirty=True, naccessed=naccessed)
            else:
                t.raw_writes += pieces()
                t.raw_write_bytes += naccessed

    def _lookup(self, coords: Coords) -> Optional[_Entry]:
        if not self.cache.enabled:
            return None
        ent = self._slots.get(cast(ChunkGrid, self.grid).slot(coords, self.cache.nslots))   # chunked: a grid
        return ent if ent is not None and ent.coords == coords else None

    def _lock(self, t: _Tally, coords: Coords, ent: Optional[_Entry], allocated: bool,
              relax: bool) -> Optional[_Entry]:
        if ent is not None:
            t.chunk_hits += 1
            self._move_back(ent)
            return ent
        if relax:
            pass                                  # whole chunk overwritten: no read
        elif allocated:
            t.chunk_loads += 1
            t.read(self._stored(coords))
        # else: chunk not in the file: filled with the fill value, no I/O
        if not self._keep:
            return None
        slot = cast(ChunkGrid, self.grid).slot(coords, self.cache.nslots)
        occupant = self._slots.get(slot)
        if occupant is not None:
            self._evict(t, occupant)
        self._prune(t, self.chunk_bytes)
        ent = _Entry(coords, slot, self.chunk_bytes)
        self._slots[slot] = ent
        self._nbytes_used += self.chunk_bytes
        self._nused += 1
        if self._tail is not None:
            self._tail.next = ent
            ent.prev = self._tail
            self._tail = ent
        else:
            self._head = self._tail = ent
        return ent

    def _unlock(self, t: _Tally, coords: Coords, ent: Optional[_Entry], dirty: bool, naccessed: int) -> None:
        if ent is None:
            if dirty:                             # uncached chunk: written back at once
                self._flush_chunk(t, coords)
            return
        if dirty:
            ent.dirty = True
            ent.wr -= min(ent.wr, naccessed)
        else:
            ent.rd -= min(ent.rd, naccessed)

    def _flush_chunk(self, t: _Tally, coords: Coords) -> None:
        t.write(self._stored(coords) if self.filtered else self.chunk_bytes)
        self._written.add(coords)

    def _move_back(self, ent: _Entry) -> None:
        """Swap the entry with its successor (the C code's 'LRU': one place per hit)."""
        nxt = ent.next
        if nxt is None:
            return
        prev = ent.prev
        after = nxt.next
        if prev is not None:
            prev.next = nxt
        else:
            self._head = nxt
        nxt.prev = prev
        nxt.next = ent
        ent.prev = nxt
        ent.next = after
        if after is not None:
            after.prev = ent
        else:
            self._tail = ent

    def _evict(self, t: _Tally, ent: _Entry) -> None:
        if ent.dirty:
            self._flush_chunk(t, ent.coords)
            ent.dirty = False
        if ent.prev is not None:
            ent.prev.next = ent.next
        else:
            self._head = ent.next
        if ent.next is not None:
            ent.next.prev = ent.prev
        else:
            self._tail = ent.prev
        ent.prev = ent.next = None
        del self._slots[ent.slot]
        self._nbytes_used -= self.chunk_bytes
        self._nused -= 1
        t.evictions += 1

    def _preemptible(self, ent: _Entry) -> bool:
        size = self.chunk_bytes
        return (ent.rd == 0 and ent.wr == 0) or (ent.rd == 0 and ent.wr == size) or (ent.rd == size and ent.wr == 0)

    def _prune(self, t: _Tally, size: int) -> None:
        total = self.cache.nbytes
        w = int(self._nused * self.cache.w0)
        p0: Optional[_Entry] = self._head
        p1: Optional[_Entry] = None
        while (p0 is not None or p1 is not None) and self._nbytes_used + size > total:
            if w == 0:
                p1 = self._head
            n0 = p0.next if p0 is not None else None
            n1 = p1.next if p1 is not None else None
            for i in (0, 1):
                if self._nbytes_used + size <= total:
                    break
                cur = None
                if i == 0 and p0 is not None and self._preemptible(p0):
                    cur = p0
                elif i == 1 and p1 is not None:
                    cur = p1
                if cur is not None:
                    if p0 is cur:
                        p0 = None
                    if n0 is cur:
                        n0 = cur.next
                    if p1 is cur:
                        p1 = None
                    if n1 is cur:
                        n1 = cur.next
                    self._evict(t, cur)
            p0, p1 = n0, n1
            w -= 1

    # ================================================================ contiguous layout
    def _contig_request(self, t: _Tally, op: str, start: Coords, count: Coords, axes: list[np.ndarray]) -> None:
        ChunkGrid(self.shape, tuple(max(s, 1) for s in self.shape)).check_slab(start, count)
        if not self._contig_allocated:
            if op == "read":
                return                              # fill value, no I/O
            self._contig_allocated = True           # allocated on first write (default fill: no I/O)
        offsets, run_bytes = contiguous_pieces(axes, self.shape, self.itemsize)
        if len(offsets) == 0:
            return
        if op == "read":
            self._sieve_read(t, offsets, run_bytes)
        else:
            self._sieve_write(t, offsets, run_bytes)

    def _contig_pieces(self, start: Coords, count: Coords) -> tuple[np.ndarray, int]:
        """A box's pieces in a contiguous dataset: byte offsets in C order and their length (``ccp.remote``)."""
        return contiguous_pieces(selection_axes(start, count, None, None), self.shape, self.itemsize)

    def _within(self, addr: int, length: int) -> bool:
        return self._sieve_loc is not None and addr >= self._sieve_loc and \
            addr + length <= self._sieve_loc + self._sieve_size

    def _overlaps(self, addr: int, length: int) -> bool:
        if self._sieve_loc is None or self._sieve_size == 0:
            return False
        s0, s1 = self._sieve_loc, self._sieve_loc + self._sieve_size
        end = addr + length
        return (addr <= s0 < end) or (addr <= s1 - 1 < end)

    def _new_sieve(self, t: _Tally, addr: int, length: int, reading: bool) -> None:
        self._sieve_loc = addr
        self._sieve_size = min(self._sieve_cap, self._storage_bytes - addr)
        if reading or self._sieve_size > length:
            t.read(self._sieve_size)
        self._sieve_dirty = not reading

    def _skip_within(self, offsets: np.ndarray, i: int, length: int) -> int:
        """Index of the first piece from i on that does not lie inside the sieve buffer."""
        if not self._within(int(offsets[i]), length):
            return i
        end = cast(int, self._sieve_loc) + self._sieve_size     # _within held: the sieve has a location
        return int(np.searchsorted(offsets, end - length, side="right"))

    def _flush_sieve(self, t: _Tally) -> None:
        if self._sieve_dirty:
            t.write(self._sieve_size)
            self._sieve_dirty = False

    def _sieve_read(self, t: _Tally, offsets: np.ndarray, length: int) -> None:
        i, n, cap = 0, len(offsets), self._sieve_cap
        while i < n:
            j = self._skip_within(offsets, i, length)
            if j != i:
                i = j
                continue
            addr = int(offsets[i])
            if length > cap:
                if self._overlaps(addr, length):
                    self._flush_sieve(t)
                t.read(length)
            else:
                self._flush_sieve(t)
                self._new_sieve(t, addr, length, reading=True)
            i += 1

    def _sieve_write(self, t: _Tally, offsets: np.ndarray, length: int) -> None:
        i, n, cap = 0, len(offsets), self._sieve_cap
        while i < n:
            j = self._skip_within(offsets, i, length)
            if j != i:
                self._sieve_dirty = True
                i = j
                continue
            addr = int(offsets[i])
            if length > cap:
                if self._overlaps(addr, length):
                    self._flush_sieve(t)
                    self._sieve_loc, self._sieve_size = None, 0
                t.write(length)
            elif (self._sieve_loc is not None and self._sieve_dirty and length + self._sieve_size <= cap
                  and (addr + length == self._sieve_loc or addr == self._sieve_loc + self._sieve_size)):
                if addr + length == self._sieve_loc:
                    self._sieve_loc = addr
                self._sieve_size += length
            else:
                self._flush_sieve(t)
                self._new_sieve(t, addr, length, reading=False)
            i += 1


def simulate(shape: Sequence[int], chunks: Optional[Sequence[int]], itemsize: int, *, filtered: bool,
             cache: ChunkCache, requests: Iterable[Request],
             stored_chunk_bytes: Optional[Callable[[Coords], int]] = None, allocated: Allocated = None,
             sieve_buf_size: int = DEFAULT_SIEVE_BUF_SIZE) -> list[RequestPrediction]:
    """Predictions for each request of one dataset handle, then one for its close (``op="close"``).

    ``requests`` yields ``(op, start, count)`` with op ``"read"`` or ``"write"``, or ``(op, start, count,
    stride, block)`` for a strided selection (:meth:`DatasetModel.request`), or a
    :class:`~ccp.model.union.MultiBox`, one call on several boxes (:meth:`DatasetModel.call`); see
    :class:`DatasetModel` for the other arguments.
    """
    model = DatasetModel(shape, chunks, itemsize, filtered=filtered, cache=cache,
                         stored_chunk_bytes=stored_chunk_bytes, allocated=allocated,
                         sieve_buf_size=sieve_buf_size)
    out = [model.call(r) if isinstance(r, MultiBox) else model.request(*r) for r in requests]
    out.append(model.close())
    return out
