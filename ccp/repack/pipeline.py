"""The per-target-chunk pipeline of a rechunking copy (fast path, source chunks decoded in Python).

Target chunks are taken band by band (a band: one hyperslab of whole target chunks of
:func:`ccp.repack.plan.plan_slabs`, bands in C order of their grid, as the plan counts them) and each
target chunk is one task in the thread pool: read its source chunks (``pread``), decode them, place
their pieces into a buffer of the target chunk, record its CRC (:mod:`ccp.repack.readback`), encode it.
The main thread only lists each task's pieces and writes finished chunks in order with
``write_direct_chunk``. No barrier between bands: a few target chunks per thread are in flight, so the
threads decode one target chunk's sources while they encode another's (libdeflate, zlib and numpy's
copies release the GIL).

A source chunk that lies inside one target chunk (issue 6458's 2000x1 -> 20000x10: every one) is read
and decoded by that chunk's task alone, straight into its buffer. One that several target chunks need
is a :class:`_Shared` cell: decoded once, by the first task that reaches it (the others wait for that
decode, which never waits on anything), and freed when the last of them has placed it. A cell a later
band needs too is kept across bands while the plan's cache has room, else decoded again in that band;
:func:`ccp.repack.rechunk.count_pass` counts exactly this policy, so the plan's reads are the copy's.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import deque

import numpy as np

from ccp.repack.plan import chunks_in


class _Shared:
    """One decode of a source chunk that several target chunks (or bands) use."""

    __slots__ = ("off", "users", "claimed", "busy", "chunk", "error", "last_band", "held", "last_user")

    def __init__(self, off: tuple[int, ...], last_band: int):
        self.off = off
        self.users = 1           # the main thread's hold while it lists this band (and later bands) pieces
        self.claimed = False
        self.busy = threading.Lock()     # held by the task decoding it: the others wait on it (cheaper than an Event)
        self.chunk: np.ndarray | None = None
        self.error: BaseException | None = None
        self.last_band = last_band  # the last band whose target chunks need it (kept in the cache until then)
        self.held = True            # the main thread's hold, dropped once it has listed the chunk's last user
        self.last_user: tuple[int, ...] | None = None   # that last user's offset, in the band that lists it


class ChunkPipeline:
    """Writes one dataset's target chunks from Python-decoded source chunks (see the module's text).

    ``reader``: the source (:class:`ccp.repack.chunks._SourceReader`: ``stored``, ``chunks``, ``shape``,
    ``dtype``, ``fill``, ``decoded(off)``, ``chunk_reads``); ``dsid``: the output dataset; ``encode``: the
    target's filter pipeline; ``written``: where each encoded chunk's CRC goes."""

    def __init__(self, reader, pool, dsid, chunks: tuple[int, ...], encode, written, advance, max_pending: int):
        self.reader = reader
        self.pool = pool
        self.dsid = dsid
        self.chunks = tuple(chunks)
        self.encode = encode
        self.written = written
        self.advance = advance
        self.max_pending = max(1, max_pending)
        self.lock = threading.Lock()
        self.cache: dict[tuple[int, ...], _Shared] = {}   # cells kept for a later band
        self.cache_bytes = 0
        self.bands = 0
        self._axes: dict[tuple[int, int, int], list[tuple]] = {}

    # -------------------------------------------------- in the worker threads
    def _decoded(self, cell: _Shared) -> np.ndarray:
        with self.lock:
            mine = not cell.claimed
            if mine:
                cell.claimed = True
                cell.busy.acquire()     # free until now: nobody else claimed it
        if mine:
            try:
                cell.chunk = self.reader.decoded(cell.off)
            except BaseException as exc:
                cell.error = exc
                raise
            finally:
                cell.busy.release()
        else:
            with cell.busy:             # its decode has finished (or failed)
                pass
            if cell.error is not None:
                raise cell.error
        assert cell.chunk is not None
        return cell.chunk

    def _drop_hold(self, cell: _Shared) -> None:
        if cell.held:
            cell.held = False
            self._release(cell)

    def _release(self, cell: _Shared) -> None:
        with self.lock:
            cell.users -= 1
            if cell.users == 0:
                cell.chunk = None    # its last user placed it: the memory goes now

    def _target(self, off, pieces, pad: bool):
        reader = self.reader
        buf = np.empty(self.chunks, dtype=reader.dtype)
        if pad:   # an edge chunk or one with unallocated source chunks: the rest is the fill value
            buf[...] = reader.fill
        for src_off, cell, dst_sl, src_sl in pieces:
            if cell is None:
                buf[dst_sl] = reader.decoded(src_off)[src_sl]
            else:
                try:
                    buf[dst_sl] = self._decoded(cell)[src_sl]
                finally:
                    self._release(cell)
        data = buf.reshape(-1).view(np.uint8)
        encoded = self.encode(data)
        self.written.record(off, data, encoded)    # decoded at once: it must give these bytes back
        return encoded

    # -------------------------------------------------- in the main thread
    def run(self, plan, cache_budget: int) -> None:
        """Copy every band of ``plan`` (a :class:`ccp.repack.plan.SlabPlan` of whole target chunks)."""
        reader = self.reader
        chunks, src_chunks, shape = self.chunks, tuple(reader.chunks), tuple(reader.shape)
        itemsize = reader.dtype.itemsize
        src_chunk_bytes = math.prod(src_chunks) * itemsize
        stored = reader.stored
        pending: deque = deque()

        def write_ready(block_until: int) -> None:
            while pending and (len(pending) > block_until or pending[0][1].done()):
                off, fut, nbytes = pending.popleft()
                self.dsid.write_direct_chunk(off, fut.result(), 0)
                self.advance(nbytes)

        try:
            for band_index, band in enumerate(plan):
                self.bands += 1
                band_cells: dict[tuple[int, ...], _Shared] = {}
                for off in chunks_in(band, chunks):
                    count = tuple(min(c, d - o) for c, d, o in zip(chunks, shape, off))
                    nbytes = math.prod(count) * itemsize
                    pieces, pad = self._pieces(off, count, band_index, plan, band_cells, src_chunk_bytes,
                                               cache_budget, band)
                    if not pieces:    # no source chunk allocated under it: never written, reads as the fill value
                        self.advance(nbytes)
                        continue
                    pieces.sort(key=lambda p: stored[p[0]][0])   # the file's order: neighbouring preads
                    pending.append((off, self.pool.submit(self._target, off, pieces, pad), nbytes))
                    write_ready(self.max_pending)
                # the holds left (a cell whose last user in this band had nothing to write)
                for src_off, cell in band_cells.items():
                    if src_off not in self.cache:
                        self._drop_hold(cell)
                for src_off in [o for o, c in self.cache.items() if c.last_band <= band_index]:
                    self._drop_hold(self.cache.pop(src_off))
                    self.cache_bytes -= src_chunk_bytes
            write_ready(0)
        finally:
            for _, fut, _ in pending:
                fut.cancel()

    def _axis_pieces(self, axis: int, o: int, n: int) -> list[tuple]:
        """Along ``axis``, the source chunks under a target chunk's extent ``[o, o + n)``: ``(source start,
        target slice, source slice, whether the source chunk lies inside the extent)``. Every target chunk in
        the same row of the grid has the same list: they are made once (the main thread's per-piece work)."""
        key = (axis, o, n)
        found = self._axes.get(key)
        if found is None:
            c, d = self.reader.chunks[axis], self.reader.shape[axis]
            found = []
            for s in range((o // c) * c, o + n, c):
                lo, hi = max(s, o), min(s + c, o + n)
                found.append((s, slice(lo - o, hi - o), slice(lo - s, hi - s), s >= o and min(s + c, d) <= o + n))
            self._axes[key] = found
        return found

    def _pieces(self, off, count, band_index: int, plan, band_cells: dict, src_chunk_bytes: int,
                cache_budget: int, band=None) -> tuple[list, bool]:
        """The target chunk at ``off``'s pieces ``(source offset, cell or None, target slices, source
        slices)`` and whether it needs padding with the fill value.

        The main thread holds a shared cell until it has listed the cell's last user: in this band (a cell
        no later band keeps), the target chunk holding the source chunk's far corner within the band (the
        last of a box of target chunks in C order); a cell the cache keeps, the same in its last band."""
        reader = self.reader
        src_chunks, shape, stored = reader.chunks, reader.shape, reader.stored
        pad = count != self.chunks
        pieces: list[tuple] = []
        axes = [self._axis_pieces(k, o, n) for k, (o, n) in enumerate(zip(off, count))]
        for combo in itertools.product(*axes):
            src_off = tuple(a[0] for a in combo)
            if src_off not in stored:
                pad = True
                continue
            dst_sl = tuple(a[1] for a in combo)
            src_sl = tuple(a[2] for a in combo)
            if all(a[3] for a in combo):
                reader.chunk_reads += 1           # inside this target chunk alone: its task decodes it
                pieces.append((src_off, None, dst_sl, src_sl))
                continue
            cell = band_cells.get(src_off) or self.cache.get(src_off)
            if cell is None:
                reader.chunk_reads += 1
                last = plan.slab_index(tuple(min(o + c, d) - 1 for o, c, d in zip(src_off, src_chunks, shape)))
                cell = _Shared(src_off, band_index)
                if last > band_index and self.cache_bytes + src_chunk_bytes <= cache_budget:
                    cell.last_band = last       # kept for the later bands: the cache holds it till then
                    self.cache[src_off] = cell
                    self.cache_bytes += src_chunk_bytes
                # else a later band that needs it decodes it again (the plan counts that read)
            if src_off not in band_cells:
                band_cells[src_off] = cell
                if band is not None and cell.last_band == band_index:
                    # its last user: the target chunk holding its far corner within the band (once per band)
                    cell.last_user = tuple((min(o + c, d, b0 + bn) - 1) // t * t for o, c, d, b0, bn, t in
                                           zip(src_off, src_chunks, shape, band.start, band.count, self.chunks))
            with self.lock:
                cell.users += 1
            pieces.append((src_off, cell, dst_sl, src_sl))
            if cell.last_user == off and cell.last_band == band_index:
                self._drop_hold(cell)        # (the cache counts it till the band's end, as the plan does)
        return pieces, pad


def timed_target(reader, chunks: tuple[int, ...], encode, off: tuple[int, ...], count: tuple[int, ...],
                 plan, written=None) -> dict[str, float]:
    """CPU seconds (this thread) of the stages of one target chunk's region ``off``/``count`` as the copy
    runs them, for ``ccp repack --plan``: listing its pieces (the main thread's work), reading and decoding
    its source chunks, placing them into the chunk's buffer with its CRC, encoding it, and (``written``: a
    :class:`ccp.repack.readback.WrittenChunks` of the target's filters) the check that decodes the encoding
    again; with ``pieces``, ``bytes`` (the region's raw size) and ``encoded`` (its encoded size). Nothing is
    written. Runs in any thread: the plan times several at once, as the copy's threads run them."""
    import time
    import zlib

    pipe = ChunkPipeline(reader, None, None, tuple(count), encode, None, None, 1)
    clock = time.thread_time
    t0 = clock()
    pieces, pad = pipe._pieces(off, count, 0, plan, {}, 0, 0)
    t1 = clock()
    buf = np.empty(count, dtype=reader.dtype)
    if pad:
        buf[...] = reader.fill
    # each piece decoded and placed at once, as the copy's task does (decoding them all first, then placing them,
    # placed cold pieces: the 6458 job's sample then gave 1.02-1.28x the copy's task CPU, load 7)
    decode = 0.0
    for src_off, _, dst_sl, src_sl in pieces:
        d0 = clock()
        chunk = reader.decoded(src_off)
        decode += clock() - d0
        buf[dst_sl] = chunk[src_sl]
    data = buf.reshape(-1).view(np.uint8)
    zlib.crc32(data.data)
    t3 = clock()
    t2 = t1 + decode
    encoded = encode(data) if encode is not None else data
    t4 = time.thread_time()
    if written is not None and encode is not None:
        written.record(off, data, encoded)
    t5 = time.thread_time()
    return {"list": t1 - t0, "decode": t2 - t1, "place": t3 - t2, "encode": t4 - t3, "check": t5 - t4,
            "pieces": len(pieces), "bytes": data.nbytes, "encoded": len(encoded)}
