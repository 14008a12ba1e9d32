"""The band path of a rechunking copy: a band of whole target chunks assembled as one dense array.

When each target chunk is made of many small pieces of source chunks (a daily map file transposed to
time series: a 365x1x1 target chunk takes one 4-byte piece from each of 365 source chunks), the
per-target-chunk pipeline (:mod:`ccp.repack.pipeline`) spends its time listing and placing pieces in
Python, millions of them. Here the band is decoded once into one array (each source chunk straight into
it, in the pool: :meth:`ccp.repack.chunks._SourceReader.read`, which keeps a source chunk a later band
needs while the plan's cache has room), then each target chunk is cut out with one numpy slice copy,
its CRC recorded and encoded, a group of target chunks per task so that the pool's overhead does not
dominate, and written in order by the main thread. The band array is part of the plan's memory
(:func:`ccp.repack.rechunk.plan_pass`). Big target chunks made of few pieces keep the pipeline: it holds
no band and overlaps decoding with encoding across bands.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ccp.repack.plan import chunks_in
from ccp.repack.rechunk import TASK_BYTES

TASKS_PER_THREAD = 4


def chunks_per_task(band_chunks: int, target_bytes: int, threads: int) -> int:
    """Target chunks one task cuts and encodes: about TASK_BYTES, a few tasks per thread in each band."""
    by_bytes = max(1, TASK_BYTES // max(1, target_bytes))
    by_spread = max(1, band_chunks // max(1, TASKS_PER_THREAD * threads))
    return max(1, min(by_bytes, by_spread))


def _encode_group(arr, band_start, items, chunk_shape, fill, encode, written) -> list[bytes]:
    out = []
    for off, count in items:
        sl = tuple(slice(o - s, o - s + n) for o, s, n in zip(off, band_start, count))
        part = arr[sl]
        if count != chunk_shape:     # an edge chunk: the rest is the fill value
            buf = np.empty(chunk_shape, dtype=arr.dtype)
            buf[...] = fill
            buf[tuple(slice(0, n) for n in count)] = part
        else:
            buf = np.ascontiguousarray(part)
        data = buf.reshape(-1).view(np.uint8)
        encoded = encode(data)
        written.record(off, data, encoded)    # decoded at once: it must give these bytes back
        out.append(encoded)
    return out


def run_bands(reader, pool, dsid, chunks: tuple[int, ...], encode, written, advance, plan, threads: int,
              max_pending: int) -> int:
    """Copy every band of ``plan`` through one dense array per band; returns the bands copied."""
    shape = tuple(reader.shape)
    itemsize = reader.dtype.itemsize
    target_bytes = math.prod(chunks) * itemsize
    pending: deque = deque()
    bands = 0

    def write_ready(block_until: int) -> None:
        while pending and (len(pending) > block_until or pending[0][1].done()):
            items, fut, nbytes = pending.popleft()
            for (off, _), data in zip(items, fut.result()):
                dsid.write_direct_chunk(off, data, 0)
            advance(nbytes)

    try:
        for band_index, band in enumerate(plan):
            bands += 1
            if not reader.region_allocated(band.start, band.count):
                advance(band.size * itemsize)     # nothing stored: never written, reads as the fill value
                continue
            arr = reader.read(band, band_index, plan)
            todo = []
            skipped = 0
            for off in chunks_in(band, chunks):
                count = tuple(min(c, d - o) for c, d, o in zip(chunks, shape, off))
                if reader.sparse and not reader.region_allocated(off, count):
                    skipped += math.prod(count) * itemsize
                    continue
                todo.append((off, count))
            advance(skipped)
            per = chunks_per_task(len(todo), target_bytes, threads)
            for i in range(0, len(todo), per):
                items = todo[i:i + per]
                nbytes = sum(math.prod(c) for _, c in items) * itemsize
                fut = pool.submit(_encode_group, arr, band.start, items, chunks, reader.fill, encode, written)
                pending.append((items, fut, nbytes))
                write_ready(max_pending)
            write_ready(0)    # this band's chunks written before the next band is read: one band in memory
            del arr
    finally:
        for _, fut, _ in pending:
            fut.cancel()
    return bands


def timed_band(reader, chunks: tuple[int, ...], encode, block: tuple[int, ...], sample_bytes: int) -> dict[str, float]:
    """CPU seconds (this thread) of the band path's stages, for ``ccp repack --plan``: decoding source chunks
    into a band (``decode``, per source chunk: the stored ones under the region, up to 1024), cutting target chunks
    out of it with their CRC (``place``) and encoding them (``encode``), per target byte, on the target chunks
    of a region of the band of about ``sample_bytes`` (at most 1024 target chunks; the encoder's speed depends
    on the real values). Nothing is written."""
    import itertools
    import time
    import zlib

    shape = tuple(reader.shape)
    itemsize = reader.dtype.itemsize
    band = [min(b, d) for b, d in zip(block, shape)]
    # the sample region: whole target chunks of the band, last axes first, about sample_bytes
    from ccp.repack.plan import plan_slabs

    region = tuple(min(r, b) for r, b in zip(plan_slabs(tuple(band), chunks, itemsize, sample_bytes).block, band))
    src = reader.chunks
    offs = [o for o in itertools.islice(chunks_in_box(region, src), 1024) if o in reader.stored]
    arr = np.empty(region, dtype=reader.dtype)
    t0 = time.thread_time()
    decoded = []
    for o in offs:
        chunk = reader.decoded(o)
        sl = tuple(slice(a, min(a + c, r)) for a, c, r in zip(o, src, region))
        arr[sl] = chunk[tuple(slice(0, s.stop - s.start) for s in sl)]
        decoded.append(chunk)
    t1 = time.thread_time()
    if not decoded:
        arr[...] = reader.fill
    else:   # past 1024 source chunks (or unallocated ones): the decoded chunks again, data of the same kind
        done = set(offs)
        for k, o in enumerate(chunks_in_box(region, src)):
            if o not in done:
                sl = tuple(slice(a, min(a + c, r)) for a, c, r in zip(o, src, region))
                arr[sl] = decoded[k % len(decoded)][tuple(slice(0, s.stop - s.start) for s in sl)]
    cut = []
    t2 = time.thread_time()
    for off in itertools.islice(chunks_in_box(region, chunks), 1024):
        count = tuple(min(c, r - o) for c, r, o in zip(chunks, region, off))
        part = np.ascontiguousarray(arr[tuple(slice(o, o + n) for o, n in zip(off, count))])
        data = part.reshape(-1).view(np.uint8)
        zlib.crc32(data.data)
        cut.append(data)
    t3 = time.thread_time()
    if encode is not None:
        for data in cut:
            encode(data)
    t4 = time.thread_time()
    nbytes = max(1, sum(d.nbytes for d in cut))
    return {"decode": (t1 - t0) / max(1, len(offs)), "place": (t3 - t2) / nbytes, "encode": (t4 - t3) / nbytes,
            "chunks": len(cut)}


def chunks_in_box(box, chunks):
    """Offsets of the chunks a box from the origin overlaps, in C order."""
    import itertools

    return itertools.product(*(range(0, b, c) for b, c in zip(box, chunks)))
