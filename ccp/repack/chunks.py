"""Writing one changed dataset: the fast path (raw chunks, Python codecs in threads) and the
library path (hyperslabs in the file datatype through HDF5)."""

from __future__ import annotations

import itertools
import math
import os
from collections import deque

import h5py
import numpy as np
from h5py import h5d

from ccp.errors import CcpError
from ccp.hdf5 import lowlevel as low
from ccp.hdf5 import plists
from ccp.hdf5.filters import codecs, pipeline_from_dcpl
from ccp.repack.band import GroupCodec, run_bands
from ccp.repack.decide import _h5_message, _layout_of, _Planner, _Target
from ccp.repack.library import planned as library_planned
from ccp.repack.pipeline import ChunkPipeline
from ccp.repack.plan import chunks_in, plan_slabs
from ccp.repack.readback import WrittenChunks
from ccp.repack.rechunk import PassPlan, fix_allocator, pass_room, pending_chunks, plan_pass
from ccp.repack.stages import plan_copy, reread_note

# ------------------------------------------------------------------ reading the source

SHUFFLE_ID = 2

class _SourceReader:
    """Hyperslabs of the source dataset in its file representation (byte order kept)."""

    def __init__(self, ds, pool, cache_budget: int):
        self.ds = ds
        self.pool = pool
        self.tid = low.file_type(ds.id.get_type())
        self.itemsize = self.tid.get_size()
        # values are bytes here: numpy never interprets them, so no type mapping can change one
        # (an unsigned integer of the same size when there is one: numpy copies those faster, bit for bit)
        self.dtype = np.dtype(f"u{self.itemsize}" if self.itemsize in (1, 2, 4, 8) else f"V{self.itemsize}")
        self.shape = ds.shape
        dcpl = ds.id.get_create_plist()
        self.fill = low.fill_bytes(dcpl, self.tid).view(self.dtype).reshape(())
        self.chunks = ds.chunks
        self.decode = None
        self.why_library = ""
        self.fd: int | None = None  # the file opened read-only by the OS, when chunks are read with pread
        self.stored: dict = {}      # chunk offset -> (file address, stored size, filter mask), chunked sources
        self.allocated = self.stored.keys()
        self.cache: dict = {}
        self.cache_bytes = 0
        self.cache_budget = cache_budget
        self.chunk_reads = 0  # stored source chunks read (a chunk read twice counts twice)
        self.hdf5_chunks = None  # a handle with no chunk cache when HDF5 decodes whole chunks (decode_through_hdf5)
        self.sparse = False
        # a contiguous dataset never written has no storage: it reads as its fill value, or (fill value
        # undefined) not at all; the copy, not written either, reads back the same
        self.unwritten = dcpl.get_layout() == h5d.CONTIGUOUS and ds.id.get_storage_size() == 0
        if self.chunks is None or dcpl.get_layout() != h5d.CHUNKED:
            self.why_library = f"{_layout_of(dcpl, ds)} source"
            return
        # the chunk index, read once: where each allocated chunk is stored and which filters it skipped
        if ds.id.get_storage_size() and ds.id.get_num_chunks():
            def add(info):
                self.stored[tuple(info.chunk_offset)] = (info.byte_offset, info.size, info.filter_mask)
            ds.id.chunk_iter(add)
        self.allocated = self.stored.keys()
        self.total_chunks = math.prod(-(-d // c) for d, c in zip(self.shape, self.chunks))
        self.sparse = len(self.allocated) < self.total_chunks
        if low.unfiltered_edges(dcpl):
            self.why_library = "its partial edge chunks are stored unfiltered"
            return
        if low.has_vlen(self.tid) or low.has_reference(self.tid):
            self.why_library = "variable-length data or references live outside the chunks"
            return
        steps = pipeline_from_dcpl(dcpl).steps
        chunk_bytes = math.prod(self.chunks) * self.itemsize
        self.decode, self.why_library = codecs.decoder(steps, self.itemsize, chunk_bytes)
        if self.decode is not None:
            self.fd = _raw_file(ds, self.stored)
        # a leading byte shuffle of whole elements: the filters after it decoded, the byte planes then copied
        # straight into the band's bytes (4 strided copies of a 55 KB map: 0.09 ms, against 0.36 ms for the
        # shuffle's transpose and then placing the chunk; results/prof/unsh.py)
        self.decode_unshuffled = None
        if (self.decode is not None and steps and steps[0].id == SHUFFLE_ID and self.itemsize > 1
                and (steps[0].stored[0] if steps[0].stored else self.itemsize) == self.itemsize):
            self.decode_unshuffled = codecs.decoder(steps[1:], self.itemsize, chunk_bytes)[0] if len(steps) > 1 \
                else (lambda data, mask=0: data)

    @property
    def python_decoded(self) -> bool:
        return self.decode is not None

    def decode_through_hdf5(self) -> None:
        """Source chunks read one whole chunk's region at a time through a handle with no chunk cache: HDF5 decodes
        each once and keeps none, and :meth:`read` keeps those a later hyperslab needs as it keeps Python-decoded
        ones (the library path, :mod:`ccp.repack.library`; for filters ccp has no decoder for, and any other)."""
        name = self.ds.name.encode("utf-8", "surrogateescape")
        self.hdf5_chunks = h5d.open(self.ds.file.id, name, dapl=plists.dapl(1, 0, 1.0))

    def _hdf5_chunk(self, off) -> np.ndarray:
        """The source chunk at ``off`` decoded by HDF5 (its part within the dataset)."""
        slices = tuple(slice(o, min(o + c, d)) for o, c, d in zip(off, self.chunks, self.shape))
        return low.read_slab(self.hdf5_chunks, self.tid, slices).view(self.dtype)

    def read_library(self, slab) -> np.ndarray:
        """A hyperslab read by HDF5 with the file datatype as memory type: the stored bytes
        (variable-length data as memory sequences of the same base type: free with release())."""
        return low.read_slab(self.ds.id, self.tid, slab.slices).view(self.dtype)

    def release(self, arr) -> None:
        low.reclaim(self.tid, arr)

    def region_allocated(self, start, count) -> bool:
        """Whether any source chunk under this region is allocated (chunked sources)."""
        if self.unwritten:
            return False
        if not self.sparse:
            return True
        ranges = [range((s // c) * c, s + n, c) for s, n, c in zip(start, count, self.chunks)]
        return any(off in self.allocated for off in itertools.product(*ranges))

    def _decode_chunk(self, raw, mask):
        decode = self.decode
        assert decode is not None, "a chunk decoded without a Python decoder"
        data = decode(raw, mask)
        need = math.prod(self.chunks) * self.itemsize
        if len(data) != need:
            raise CcpError(f"{self.ds.name}: a decoded chunk has {len(data)} bytes, expected {need}")
        return np.frombuffer(data, dtype=self.dtype).reshape(self.chunks)

    def decoded(self, off) -> np.ndarray:
        """The stored source chunk at ``off``, read (``pread`` when it can: no HDF5 lock) and decoded."""
        mask, raw = self._raw(off)
        return self._decode_chunk(raw, mask)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.hdf5_chunks is not None:
            self.hdf5_chunks.close()
            self.hdf5_chunks = None

    def _raw(self, off) -> tuple[int, bytes]:
        addr, size, mask = self.stored[off]
        if self.fd is not None:
            raw = os.pread(self.fd, size, addr)
            if len(raw) == size:
                return mask, raw
        return self.ds.id.read_direct_chunk(off)

    def _decode_batch(self, batch, arr) -> list:
        """Decode source chunks and place them in ``arr``; returns the chunks kept for later hyperslabs.

        ``batch`` items are ``(off, raw or None, dst_sl, src_sl, keep)``; with raw None the chunk's bytes
        are read here with pread (the OS call releases the GIL; HDF5's calls would hold h5py's lock)."""
        kept = []
        planes = arr.view(np.uint8).reshape(arr.shape + (self.itemsize,)) if self.decode_unshuffled else None
        for off, raw, dst_sl, src_sl, keep in batch:
            chunk = self.place(off, raw, arr, planes, dst_sl, src_sl, keep)
            if keep:
                kept.append((off, chunk))
        return kept

    def place(self, off, raw, arr, planes, dst_sl, src_sl, keep: bool = False):
        """Decode the source chunk at ``off`` (``raw``: its ``(mask, bytes)``, None: read here) into
        ``arr[dst_sl]`` (its ``src_sl`` part); returns the decoded chunk, or None when it went straight into
        ``planes`` (``arr``'s bytes, one axis more: the element's bytes), unshuffled there by byte plane."""
        if self.hdf5_chunks is not None:
            chunk = self._hdf5_chunk(off)
            arr[dst_sl] = chunk[src_sl]
            return chunk
        mask, data = self._raw(off) if raw is None else raw
        if planes is not None and not keep and not mask & 1:
            assert self.decode_unshuffled is not None
            shuffled = self.decode_unshuffled(data, mask >> 1)
            need = math.prod(self.chunks) * self.itemsize
            if len(shuffled) != need:
                raise CcpError(f"{self.ds.name}: a decoded chunk has {len(shuffled)} bytes, expected {need}")
            src = np.frombuffer(shuffled, dtype=np.uint8).reshape((self.itemsize, *self.chunks))
            for k in range(self.itemsize):
                planes[(*dst_sl, k)] = src[(k, *src_sl)]
            return None
        chunk = self._decode_chunk(data, mask)
        arr[dst_sl] = chunk[src_sl]
        return chunk

    def read(self, slab, slab_index: int, plan) -> np.ndarray:
        """The slab's data; source chunks decoded in the pool in a few batches per thread.

        Source chunks that later hyperslabs need too are kept decoded (within ``cache_budget``): each
        allocated source chunk is read from the file once per copy, unless the cache is too small.
        """
        if self.decode is None and self.hdf5_chunks is None:
            return self.read_library(slab)
        arr = np.empty(slab.count, dtype=self.dtype)
        chunk_bytes = math.prod(self.chunks) * self.itemsize
        todo = []
        lasts = {}
        slab_end = tuple(s + n for s, n in zip(slab.start, slab.count))
        for off in chunks_in(slab, self.chunks):
            lo = tuple(max(o, s) for o, s in zip(off, slab.start))
            hi = tuple(min(o + c, e, d) for o, c, e, d in zip(off, self.chunks, slab_end, self.shape))
            dst_sl = tuple(slice(a - s, b - s) for a, b, s in zip(lo, hi, slab.start))
            cached = self.cache.get(off)
            if cached is not None:
                arr[dst_sl] = cached[0][tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, off))]
            elif off not in self.stored:
                arr[dst_sl] = self.fill
            else:
                src_sl = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, off))
                # no later hyperslab needs it: it ends within this one along every axis, or this one reaches the
                # dataset's end there (a chunk spanning a whole axis the hyperslabs cut was reread by each of them)
                inside = all(o + c <= e or e >= d for o, c, e, d in zip(off, self.chunks, slab_end, self.shape))
                keep = False
                if not inside:  # a later hyperslab needs this chunk too
                    last = self._last_slab(off, plan)
                    keep = last > slab_index and self.cache_bytes + chunk_bytes <= self.cache_budget
                    if keep:
                        self.cache_bytes += chunk_bytes
                        lasts[off] = last
                raw = None if self.fd is not None or self.hdf5_chunks is not None else self._raw(off)
                todo.append((off, raw, dst_sl, src_sl, keep))
                self.chunk_reads += 1
        if todo and self.hdf5_chunks is not None:
            # HDF5 decodes under h5py's lock: one after another in this thread, in the file's order
            todo.sort(key=lambda item: self.stored[item[0]][0])
            for off, chunk in self._decode_batch(todo, arr):
                self.cache[off] = (chunk, lasts[off])
            todo = []
        if todo:
            # in the file's order: each batch then reads a run of neighbouring chunks
            todo.sort(key=lambda item: self.stored[item[0]][0])
            nbatch = min(len(todo), 4 * self.pool._max_workers)
            size = -(-len(todo) // nbatch)
            futures = [self.pool.submit(self._decode_batch, todo[i:i + size], arr) for i in range(0, len(todo), size)]
            del todo
            for fut in futures:
                for off, chunk in fut.result():
                    self.cache[off] = (chunk, lasts[off])
        for off in [o for o, (_, last) in self.cache.items() if last <= slab_index]:
            del self.cache[off]
            self.cache_bytes -= chunk_bytes
        return arr

    def _last_slab(self, off, plan) -> int:
        end = tuple(min(o + c, d) - 1 for o, c, d in zip(off, self.chunks, self.shape))
        return plan.slab_index(end)


def _raw_file(ds, stored: dict) -> int | None:
    """The source file opened read-only by the OS, for reading stored chunks with pread in threads.

    Only for a plain file (HDF5's sec2 driver) whose first stored chunk reads the same both ways (a
    userblock or another driver shifts addresses: then HDF5 reads every chunk itself)."""
    try:
        if ds.file.driver != "sec2" or not stored:
            return None
        fd = os.open(ds.file.filename, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    off = next(iter(stored))
    addr, size, mask = stored[off]
    try:
        same = os.pread(fd, size, addr) == ds.id.read_direct_chunk(off)[1]
    except OSError:
        same = False
    if not same:
        os.close(fd)
        return None
    return fd


# ------------------------------------------------------------------ writing one dataset

def _encode_chunk(arr, sl, chunk_shape, fill, encode, written: WrittenChunks, offset):
    part = arr[sl]
    if part.shape != chunk_shape:
        buf = np.empty(chunk_shape, dtype=arr.dtype)
        buf[...] = fill
        buf[tuple(slice(0, n) for n in part.shape)] = part
    else:
        buf = np.ascontiguousarray(part)
    data = buf.reshape(-1).view(np.uint8)
    encoded = encode(data)
    written.record(offset, data, encoded)    # decoded at once: it must give these bytes back
    return encoded


def _recode_chunk(reader, raw, mask, encode, written: WrittenChunks, offset):
    data = np.frombuffer(reader.decode(raw, mask), dtype=np.uint8)
    encoded = encode(data)
    written.record(offset, data, encoded)
    return encoded


class DatasetWriter:
    """Runs the fast or library path for one changed dataset."""

    def __init__(self, src_ds, dst_group, name: bytes, lcpl, tgt: _Target, planner: _Planner, pool,
                 buffer_bytes: int, progress):
        self.src = src_ds
        self.tgt = tgt
        self.pool = pool
        self.buffer = buffer_bytes
        self.buffer_used = 0    # the hyperslab buffer this copy allocated (0: none, the pipeline's chunk by chunk)
        self.progress = progress
        self.threads = pool._max_workers
        dcpl = planner.make_dcpl(src_ds, tgt.layout, None if tgt.keep_filters else tgt.new_pipeline)
        tid = src_ds.id.get_type()
        self.tid = low.file_type(tid)
        if tid.committed():     # the output's copy of the named datatype (ccp.repack.tree), else a private one
            tid = tgt.dst_type if tgt.dst_type is not None else tid.copy()
        try:
            dsid = h5d.create(dst_group.id, name, tid, src_ds.id.get_space(), dcpl=dcpl, lcpl=lcpl)
        except Exception as exc:  # HDF5 says why in its message
            raise CcpError(f"{tgt.path}: HDF5 cannot create it as {tgt.layout.spec} with filters "
                           f"{tgt.pipeline.spec}: {_h5_message(exc)}") from None
        self.dsid = dsid
        self.dst = h5py.Dataset(dsid)
        self.slabs = 0
        self._reader: _SourceReader | None = None
        self.planner = planner
        self.pass_plan: PassPlan | None = None
        self.staged = False   # a stage of a multi-stage copy (or its last pass): never staged again
        self.final_chunks: tuple | None = None   # a stage's: the chunks of the copy's last pass (its read-back's)

    def written_chunks(self) -> WrittenChunks:
        """Where the fast path's tasks check and record each chunk they encode (decoded with the output's filters)."""
        chunk_bytes = math.prod(self.tgt.layout.chunk_shape) * self.tgt.itemsize
        return WrittenChunks(self.dsid.get_create_plist(), self.tgt.itemsize, chunk_bytes)

    def advance(self, nbytes):
        if self.progress is not None and nbytes:
            self.progress("advance", int(nbytes))

    def run(self) -> None:
        tgt = self.tgt
        if tgt.shape == ():
            dcpl = self.src.id.get_create_plist()
            if dcpl.get_layout() == h5d.CONTIGUOUS and self.src.id.get_storage_size() == 0:
                return  # never written: nothing to copy (see _SourceReader.unwritten)
            buf = low.read_slab(self.src.id, self.tid, ())
            try:
                low.write_slab(self.dsid, self.tid, (), buf)
            finally:
                low.reclaim(self.tid, buf)
            self.slabs = 1
            self.advance(tgt.raw_bytes)
            return
        if tgt.raw_bytes == 0 and tgt.shape and 0 in tgt.shape:
            return
        if self.src.chunks is not None and self.src.id.get_num_chunks() == 0:
            return      # no chunk ever written: the new dataset, with the same fill value, reads the same everywhere
        try:
            if tgt.method == "fast":
                self.run_fast()
            else:
                self.run_library()
        finally:
            if self._reader is not None:
                self._reader.close()

    # -------------------------------------------------- library path
    def run_library(self):
        tgt = self.tgt
        budget = getattr(self.planner, "budget", None)
        src_chunks = tuple(self.src.chunks) if self.src.chunks is not None else None
        if budget is not None and library_planned(tgt, src_chunks, self.buffer):
            from ccp.repack.library_run import run_planned

            return run_planned(self, budget, _SourceReader)
        chunks = tgt.layout.chunks if tgt.layout.kind == "chunked" else None
        plan = plan_slabs(tgt.shape, chunks, max(1, tgt.itemsize), self.buffer)
        self.buffer_used = plan.slab_bytes
        if chunks is not None:
            # keep a whole destination chunk in the chunk cache while element blocks fill it
            chunk_bytes = math.prod(chunks) * tgt.itemsize
            dapl = plists.dapl(1009, max(chunk_bytes + 1024 * 1024, 2 * 1024 * 1024), 1.0)
            parent = self.dst.parent
            name = self.dst.name.rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")
            self.dsid.close()
            self.dsid = h5d.open(parent.id, name, dapl=dapl)
            self.dst = h5py.Dataset(self.dsid)
        reader = self._reader = _SourceReader(self.src, self.pool, self.buffer // 2)
        src_plan = plan if plan.mode != "elements-in-chunk" else None
        for i, slab in enumerate(plan):
            self.slabs += 1
            if (reader.sparse or reader.unwritten) and not reader.region_allocated(slab.start, slab.count):
                # nothing stored there: the copy reads back the same fill value (or, undefined, nothing)
                self.advance(slab.size * tgt.itemsize)
                continue
            if reader.python_decoded and src_plan is not None:
                arr = reader.read(slab, i, src_plan)
            else:
                arr = reader.read_library(slab)
            try:
                low.write_slab(self.dsid, self.tid, slab.slices, arr)
            finally:
                reader.release(arr)
            self.advance(slab.size * tgt.itemsize)

    # -------------------------------------------------- fast path
    def run_fast(self):
        tgt = self.tgt
        chunks = tgt.layout.chunk_shape
        encode, why = codecs.encoder(pipeline_from_dcpl(self.dsid.get_create_plist()).steps, tgt.itemsize, tgt.deflate)
        if encode is None:  # pragma: no cover - _method checked the pipeline already
            tgt.method, tgt.reason = "library", why
            return self.run_library()
        buffer, cache = self.buffer, self.buffer // 2
        budget = getattr(self.planner, "budget", None)
        if budget is not None and self.src.chunks is not None and len(self.src.chunks) == len(chunks):
            # the rechunk plan (ccp repack --plan shows the same): buffer and cache within --memory
            room = pass_room(budget, self.final_chunks or chunks, tgt.itemsize, self.threads, tgt.shape,
                             self.src.chunks)
            filtered = bool(pipeline_from_dcpl(self.src.id.get_create_plist()).steps)
            if not self.staged and tuple(self.src.chunks) != tuple(chunks):
                # the plan --plan shows: one pass, or stages when they are predicted faster within the room
                copy_plan = plan_copy(tgt.shape, self.src.chunks, chunks, tgt.itemsize, room, self.threads,
                                      budget.buffer_bytes, filtered)
                if max(p.memory_bytes for p in copy_plan.passes) > room // 2:
                    # the plan fills its room: the allocator's freed holes would not fit beside it (rechunk.fix_allocator)
                    fix_allocator()
                if copy_plan.stages:
                    return self.run_staged(copy_plan.stages)
                note = reread_note(copy_plan, tgt.shape, tgt.itemsize, self.threads, budget.memory_bytes - room)
                if note:
                    tgt.notes.append(note)
            self.pass_plan = plan_pass(tgt.shape, self.src.chunks, chunks, tgt.itemsize, room,
                                       self.threads, budget.buffer_bytes, filtered)
            buffer, cache = self.pass_plan.buffer_bytes, self.pass_plan.cache_bytes
        reader = self._reader = _SourceReader(self.src, self.pool, cache)
        if reader.python_decoded and tuple(self.src.chunks) == tuple(chunks):
            return self.run_recode(reader, encode)
        if not reader.python_decoded:
            tgt.notes.append(f"source read through the library ({reader.why_library})")
        # each hyperslab is encoded as whole target chunks: it holds at least one, whatever the budget left
        plan = plan_slabs(tgt.shape, chunks, tgt.itemsize, max(buffer, math.prod(chunks) * tgt.itemsize))
        written = tgt.written = self.written_chunks()
        # a few encoded chunks per thread in flight: enough to keep every thread busy, little memory
        max_pending = self.pass_plan.pending if self.pass_plan is not None else pending_chunks(self.threads)
        if reader.python_decoded and self.pass_plan is not None and self.pass_plan.band:
            # target chunks of many small pieces: the band as one dense array, cut chunk by chunk (ccp.repack.band)
            self.buffer_used = plan.slab_bytes
            codec = GroupCodec(pipeline_from_dcpl(self.dsid.get_create_plist()).steps, tgt.itemsize,
                               math.prod(chunks) * tgt.itemsize, tgt.deflate)
            self.slabs += run_bands(reader, self.pool, self.dsid, chunks, codec, written, self.advance, plan,
                                    self.threads, self.pass_plan.pending)
            return
        if reader.python_decoded:    # no hyperslab in memory: target chunks one by one in the pool
            pipe = ChunkPipeline(reader, self.pool, self.dsid, chunks, encode, written, self.advance, max_pending)
            try:
                pipe.run(plan, cache)
            finally:
                self.slabs += pipe.bands
            return
        fill = reader.fill
        self.buffer_used = plan.slab_bytes
        pending: deque = deque()
        dsid = self.dsid

        def write_ready(block_until: int):
            while pending and (len(pending) > block_until or pending[0][1].done()):
                off, fut, nbytes = pending.popleft()
                dsid.write_direct_chunk(off, fut.result(), 0)
                self.advance(nbytes)

        try:
            for slab in plan:
                if (reader.sparse or reader.unwritten) and not reader.region_allocated(slab.start, slab.count):
                    self.advance(slab.size * tgt.itemsize)
                    self.slabs += 1
                    continue
                arr = reader.read_library(slab)
                self.slabs += 1
                for off in chunks_in(slab, chunks):
                    count = tuple(min(c, d - o) for c, d, o in zip(chunks, tgt.dims, off))
                    nbytes = math.prod(count) * tgt.itemsize
                    if reader.sparse and not reader.region_allocated(off, count):
                        self.advance(nbytes)
                        continue
                    sl = tuple(slice(o - s, o - s + n) for o, s, n in zip(off, slab.start, count))
                    fut = self.pool.submit(_encode_chunk, arr, sl, chunks, fill, encode, written, off)
                    pending.append((off, fut, nbytes))
                    write_ready(max_pending)
                # finish this hyperslab before reading the next: one hyperslab in memory at a time
                write_ready(0)
                del arr
        finally:
            for _, fut, _ in pending:
                fut.cancel()

    def run_staged(self, stages) -> None:
        """A multi-stage copy: through unfiltered temporary copies chunked as ``stages`` (beside OUT, removed
        at the end), each pass reading every chunk of its input once, then the last pass onto the target."""
        import dataclasses

        from ccp.hdf5.filters import parse_filters
        from ccp.repack.options import Layout

        # beside the output's temporary file, named after it (OUT.ccp-tmp-PID.stageK): a repack killed before
        # its clean-up leaves them to the next repack to OUT, which removes them with the temporary file
        out_tmp = self.dst.file.filename
        paths, files = [], []
        source = self.src
        try:
            for k, mid in enumerate(stages):
                path = f"{out_tmp}.stage{k}"
                paths.append(path)
                files.append(h5py.File(path, "w"))
                stage_tgt = dataclasses.replace(self.tgt, new_layout=Layout("chunked", tuple(mid)),
                                                new_pipeline=parse_filters("none", "filters"), keep_filters=False,
                                                notes=[], method="fast")
                stage = DatasetWriter(source, files[-1], b"stage", None, stage_tgt, self.planner, self.pool,
                                      self.buffer, None)
                stage.staged = True
                stage.final_chunks = self.tgt.layout.chunk_shape
                stage.run()
                source = stage.dst
            self.tgt.notes.append("copied in " + str(len(stages) + 1) + " passes through "
                                  + " -> ".join("x".join(map(str, m)) for m in stages)
                                  + " chunks: predicted faster than one pass within --memory")
            self.src, self.staged = source, True
            self.run_fast()
        finally:
            for f in files:
                f.close()
            for path in paths:
                if os.path.exists(path):
                    os.unlink(path)

    def run_recode(self, reader, encode):
        """Same chunk grid, new filters: each allocated chunk is decoded and re-encoded alone."""
        tgt = self.tgt
        chunks = tgt.layout.chunk_shape
        # a few encoded chunks per thread in flight: enough to keep every thread busy, little memory
        max_pending = 2 * self.threads + 2
        pending: deque = deque()
        src_id, dsid = self.src.id, self.dsid
        offsets = sorted(o for o in reader.allocated if all(x < d for x, d in zip(o, tgt.dims)))
        skipped = tgt.raw_bytes
        written = tgt.written = self.written_chunks()
        try:
            for off in offsets:
                count = tuple(min(c, d - o) for c, d, o in zip(chunks, tgt.dims, off))
                mask, raw = src_id.read_direct_chunk(off)
                pending.append((off, self.pool.submit(_recode_chunk, reader, raw, mask, encode, written, off),
                                math.prod(count) * tgt.itemsize))
                while pending and (len(pending) > max_pending or pending[0][1].done()):
                    o, fut, nbytes = pending.popleft()
                    dsid.write_direct_chunk(o, fut.result(), 0)
                    self.advance(nbytes)
                    skipped -= nbytes
            while pending:
                o, fut, nbytes = pending.popleft()
                dsid.write_direct_chunk(o, fut.result(), 0)
                self.advance(nbytes)
                skipped -= nbytes
            self.slabs = len(offsets)
            self.advance(skipped)
        finally:
            for _, fut, _ in pending:
                fut.cancel()

