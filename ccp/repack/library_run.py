"""The library path's planned copy of a chunked dataset (:mod:`ccp.repack.library` plans it): source chunks decoded
by HDF5 one whole chunk at a time and kept by ccp's reader for later hyperslabs, each hyperslab of whole target
chunks written by HDF5 with no chunk cache and read back at once to check its values."""

from __future__ import annotations

import math
import statistics
import time

import numpy as np
from h5py import h5d

from ccp.errors import CcpError
from ccp.hdf5 import lowlevel as low
from ccp.hdf5 import plists
from ccp.hdf5.filters.plugins import lossy_plugin
from ccp.repack.compare import lossy_tolerance
from ccp.repack.library import library_pass, piece_bytes
from ccp.repack.plan import Slab, plan_slabs
from ccp.repack.rechunk import MemoryBudget, fix_allocator, pass_room
from ccp.repack.stages import REREAD_WARN_FACTOR


def checks_each_slab(tgt, tid) -> bool:
    """Whether the copy's values are checked slab by slab as written (exact filters), so that the read-back after
    the copy compares the dataset's properties only; a lossy filter's values are compared there, with its bound."""
    pipeline = tgt.pipeline
    lossy = any(lossy_plugin(step.id, step.cd_values or ()) for step in pipeline.steps)
    return not lossy and lossy_tolerance(pipeline, tid) is None


def run_planned(writer, budget: MemoryBudget, reader_type) -> None:
    """Copy ``writer``'s dataset (a :class:`ccp.repack.chunks.DatasetWriter` on the library path) within ``budget``;
    ``reader_type``: the writer's source reader class (passed in: chunks imports this module)."""
    tgt = writer.tgt
    chunks = tgt.layout.chunk_shape
    src_chunks = tuple(writer.src.chunks)
    room = pass_room(budget, chunks, tgt.itemsize, writer.threads, tgt.shape, src_chunks)
    lp = writer.pass_plan = library_pass(tgt.shape, src_chunks, chunks, tgt.itemsize, room, budget.buffer_bytes)
    if lp.memory_bytes > room // 2:
        fix_allocator()     # the plan fills its room: freed chunk buffers must not stay resident beside it
    nsrc = lp.count.source_chunks
    if nsrc and lp.count.chunk_reads >= REREAD_WARN_FACTOR * nsrc:
        from ccp.repack.library import once_bytes

        need = once_bytes(tgt.shape, src_chunks, chunks, tgt.itemsize) + budget.memory_bytes - room
        need += need // 7       # pass_room's slack
        tgt.notes.append(f"reads each source chunk {lp.count.chunk_reads / nsrc:.1f} times on average "
                         f"({lp.count.chunk_reads} reads of {nsrc} chunks) within --memory; --memory "
                         f"{-(-need // 2**20)}MiB reads each once")
    # the output with no chunk cache: each whole target chunk of a hyperslab encoded straight to the file, and
    # read back from it (not from a cache) by the check
    parent = writer.dst.parent
    name = writer.dst.name.rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")
    writer.dsid.close()
    writer.dsid = h5d.open(parent.id, name, dapl=plists.dapl(1, 0, 1.0))
    import h5py

    writer.dst = h5py.Dataset(writer.dsid)
    reader = writer._reader = reader_type(writer.src, writer.pool, lp.cache_bytes)
    if reader.decode is None:
        reader.decode_through_hdf5()
    check = checks_each_slab(tgt, writer.tid)
    plan = plan_slabs(tgt.shape, chunks, tgt.itemsize, lp.buffer_bytes)
    writer.buffer_used = plan.slab_bytes
    for index, slab in enumerate(plan):
        writer.slabs += 1
        if (reader.sparse or reader.unwritten) and not reader.region_allocated(slab.start, slab.count):
            writer.advance(slab.size * tgt.itemsize)    # nothing stored: both read as the fill value
            continue
        arr = reader.read(slab, index, plan)
        _write_slab(writer, slab, arr, chunks, check)
        del arr
        writer.advance(slab.size * tgt.itemsize)
    if check:
        tgt.verified = True


def _write_slab(writer, slab: Slab, arr: np.ndarray, chunks, check: bool) -> None:
    """Write the hyperslab a piece of whole target chunks at a time (:data:`ccp.repack.library.PIECE_BYTES`) and,
    with ``check``, read each piece back from the output at once and compare its bytes with what was written
    (values move in their file type: equal values are equal bytes)."""
    tgt = writer.tgt
    for piece in plan_slabs(slab.count, chunks, tgt.itemsize, piece_bytes(chunks, tgt.itemsize)):
        local = piece.slices
        where = tuple(slice(s + p.start, s + p.stop) for s, p in zip(slab.start, local))
        part = np.ascontiguousarray(arr[local])
        low.write_slab(writer.dsid, writer.tid, where, part)
        if not check:
            continue
        back = low.read_slab(writer.dsid, writer.tid, where).view(arr.dtype)
        if not np.array_equal(back.view(np.uint8), part.view(np.uint8)):
            detail = f"values differ in {where}"
            first = tgt.pipeline.steps[0] if tgt.pipeline.steps else None
            if first is not None and first.id == 6:     # as the read-back after the copy says it (ccp.repack.compare)
                detail += (f"; scaleoffset:{first.args[0]} keeps too few bits for these integers: give SOFF=0,IN "
                           "(automatic)")
            raise CcpError(f"{tgt.path}: the copy read back differs from the input ({detail}); nothing written")
        del back


# ------------------------------------------------------------------ the plan's forecast (ccp repack --plan)

def forecast_library(ds, tgt, planner, budget: MemoryBudget, threads: int, main_share: float, base: int,
                     reader_type) -> dict:
    """The fields of a :class:`ccp.repack.forecast.DatasetForecast` for the planned library copy of ``tgt``: the
    pass the copy takes, its reads (replayed, scaled to the chunks stored), and its time from this dataset's own
    chunks timed here: HDF5's read of a source chunk's whole region, and its write of a real target chunk (the
    middle one) with no chunk cache into an in-memory file and the read back of it, all in the main thread."""
    from ccp.repack.rechunk import RAW_SECONDS_PER_BYTE, SECONDS_PER_RECHUNK, index_bytes, readback_bytes

    chunks = tgt.layout.chunk_shape
    src_chunks = tuple(ds.chunks)
    room = pass_room(budget, chunks, tgt.itemsize, threads, tgt.shape, src_chunks)
    lp = library_pass(tgt.shape, src_chunks, chunks, tgt.itemsize, room, budget.buffer_bytes)
    reader = reader_type(ds, None, 0)
    try:
        stored = len(reader.stored)
        read_s = _timed_source_chunk(reader)
        write_s, check_s = _timed_target_chunk(ds, tgt, planner, reader, chunks)
    finally:
        reader.close()
    count = lp.count
    reads = round(count.chunk_reads * stored / count.source_chunks) if count.source_chunks else 0
    written_chunks = math.ceil(count.target_chunks * min(1.0, stored / max(1, count.source_chunks)))
    estimate = planner.estimate(ds, tgt)
    written = tgt.raw_bytes if estimate is None else estimate
    cpu = (reads * read_s + written_chunks * (write_s + (check_s if checks_each_slab(tgt, reader.tid) else 0))
           + 2 * tgt.raw_bytes * RAW_SECONDS_PER_BYTE + SECONDS_PER_RECHUNK)
    peak = max(base + lp.memory_bytes + index_bytes(tgt.shape, src_chunks, chunks),
               base + readback_bytes(chunks, tgt.itemsize, threads))
    avg_stored = tgt.stored_bytes / stored if stored else 0
    note = ""
    if count.source_chunks and count.chunk_reads >= REREAD_WARN_FACTOR * count.source_chunks:
        note = (f"reads each source chunk {count.chunk_reads / count.source_chunks:.1f} times on average "
                f"({count.chunk_reads} reads of {count.source_chunks} chunks) within --memory")
    order = (f"library: {tgt.reason}; hyperslabs of {'x'.join(map(str, lp.block))} elements in C order, HDF5 "
             f"decoding each source chunk whole (kept for a later hyperslab while the cache has room) and encoding "
             f"the target chunks, each hyperslab read back and compared as written")

    def mb(seconds: float, nbytes: int) -> float | None:
        return round(nbytes / seconds / 1e6, 1) if seconds > 0 else None

    return dict(path=tgt.path, source_chunks=src_chunks, target_chunks=chunks, method="library", read_order=order,
                buffer_bytes=lp.buffer_bytes, cache_bytes=min(lp.cache_bytes, count.peak_cache_bytes),
                hyperslab=lp.block, source_chunk_reads=reads, source_chunks_stored=stored,
                bytes_read=round(reads * avg_stored), bytes_written=written, peak_memory_bytes=peak,
                predicted_seconds=round(cpu / main_share, 3),
                decode_mb_per_s=mb(read_s, math.prod(src_chunks) * tgt.itemsize),
                encode_mb_per_s=mb(write_s, math.prod(chunks) * tgt.itemsize), stages=(), note=note)


def _timed_source_chunk(reader, sample_bytes: int = 16 * 2**20) -> float:
    """CPU seconds HDF5 takes to decode one source chunk as the copy has it do (a whole chunk's region through a
    handle with no chunk cache, neighbours in the file one after another): over a run of stored chunks in file
    order from the middle of the dataset (``sample_bytes`` of them decoded, 2 to 64 chunks), after one untimed read (HDF5's first read loads the chunk
    index and sets up the filters). Chunks spread over the file took twice as long each (1.06 ms against 0.53 ms
    for breaker7's Blosc chunks of 400 KB, 300 in a row, load 12)."""
    offsets = sorted(reader.stored, key=lambda off: reader.stored[off][0])
    if not offsets:
        return 0.0
    reader.decode_through_hdf5()
    picks = max(2, min(64, sample_bytes // max(1, math.prod(reader.chunks) * reader.itemsize)))
    first = max(0, len(offsets) // 2 - picks // 2)
    run = offsets[first:first + picks]
    reader._hdf5_chunk(offsets[first - 1] if first else run[0])
    t0 = time.thread_time()
    for off in run:
        reader._hdf5_chunk(off)
    return (time.thread_time() - t0) / len(run)


def _timed_target_chunk(ds, tgt, planner, reader, chunks) -> tuple[float, float]:
    """CPU seconds HDF5 takes to write one real target chunk with the target's filters and no chunk cache, and to
    read it back (medians of three, in a dataset of one chunk in the planner's in-memory probe file)."""
    from h5py import h5s

    shape = tgt.dims
    start = tuple((-(-d // c) // 2) * c for d, c in zip(shape, chunks))
    count = tuple(min(c, d - o) for c, d, o in zip(chunks, shape, start))
    data = low.read_slab(ds.id, reader.tid, tuple(slice(o, o + n) for o, n in zip(start, count)))
    f = planner.probe_file()
    planner._probe_n += 1
    name = f"p{planner._probe_n}".encode()
    dcpl = planner.make_dcpl(ds, tgt.layout, None if tgt.keep_filters else tgt.new_pipeline)
    h5d.create(f.id, name, reader.tid, h5s.create_simple(count, count), dcpl=dcpl).close()
    dsid = h5d.open(f.id, name, dapl=plists.dapl(1, 0, 1.0))
    slices = tuple(slice(0, n) for n in count)
    writes, backs = [], []
    try:
        for _ in range(3):
            t0 = time.thread_time()
            low.write_slab(dsid, reader.tid, slices, data)
            t1 = time.thread_time()
            low.read_slab(dsid, reader.tid, slices)
            backs.append(time.thread_time() - t1)
            writes.append(t1 - t0)
    finally:
        dsid.close()
        del f[name.decode()]
    return statistics.median(writes), statistics.median(backs)
