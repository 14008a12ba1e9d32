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

import itertools
import math
import zlib
from collections import deque
from collections.abc import Callable

import numpy as np

from ccp.repack.rechunk import TASK_BYTES

TASKS_PER_THREAD = 4
SHUFFLE_ID = 2
DEFLATE_ID = 1
FLETCHER32_ID = 3
SMALL_CHUNK_BYTES = 64 * 1024


def _inflate(data, mask: int = 0) -> bytes:
    return zlib.decompress(data)


def chunks_per_task(band_chunks: int, target_bytes: int, threads: int) -> int:
    """Target chunks one task cuts and encodes: about TASK_BYTES, a few tasks per thread in each band."""
    by_bytes = max(1, TASK_BYTES // max(1, target_bytes))
    by_spread = max(1, band_chunks // max(1, TASKS_PER_THREAD * threads))
    return max(1, min(by_bytes, by_spread))


class GroupCodec:
    """The target's filter pipeline applied to a group of target chunks at once where it can: a leading byte
    shuffle is one numpy transpose of the whole group (HDF5's shuffle: each chunk's elements as an (n, size)
    byte matrix, transposed), the steps after it run chunk by chunk. Each chunk's encoding is decoded again
    at once by those steps and compared with the bytes they were given; its CRC is recorded
    (:class:`ccp.repack.readback.WrittenChunks`). A trailing fletcher32 on small chunks is computed for the
    whole group in one call (:func:`ccp.hdf5.filters.codecs.fletcher32_many`, held to HDF5's checksum by
    tests/hdf5; the read-back's sampled chunks go through HDF5, which verifies it) and appended after the check
    of the steps before it. The shuffle is the copy's own transpose: the read-back's
    sampled chunks, read through HDF5 from both files, hold it to HDF5's."""

    def __init__(self, steps, itemsize: int, chunk_bytes: int, deflate: str):
        from ccp.hdf5.filters import codecs

        steps = tuple(steps)
        self.shuffle = 0
        if steps and steps[0].id == SHUFFLE_ID:
            size = steps[0].stored[0] if steps[0].stored else itemsize
            if size > 1 and chunk_bytes % size == 0:
                self.shuffle, steps = size, steps[1:]
        # a trailing fletcher32 on small chunks: summed for the whole group at once (codecs.fletcher32_many)
        self.fletcher = bool(steps) and steps[-1].id == FLETCHER32_ID and chunk_bytes <= SMALL_CHUNK_BYTES
        if self.fletcher:
            steps = steps[:-1]
        self.encode, _ = codecs.encoder(steps, itemsize, deflate)
        self.decode, _ = codecs.decoder(steps, itemsize, chunk_bytes) if steps else (None, "")
        # the check's decoder, bytes -> bytes (None: nothing to decode, the encoding is the bytes)
        self.check: Callable | None = None
        if len(steps) == 1 and steps[0].id == DEFLATE_ID and chunk_bytes <= SMALL_CHUNK_BYTES:
            # zlib inflates a small chunk faster than libdeflate, which sets up a decompressor per call (1.4 KiB
            # chunks: 16 us against 25 us); and the check then decodes with another library than the encoder
            self.decode = _inflate
            self.check = zlib.decompress
        elif self.decode is not None:
            decode = self.decode
            self.check = lambda data: decode(data, 0)

    def fused_shuffle(self, itemsize: int) -> int:
        """The shuffle's element size when :func:`box_rows` can shuffle in its own copy (it shuffles by the
        band's element size), else 0."""
        return self.shuffle if self.shuffle == itemsize else 0

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (chunks x bytes, uint8) as the per-chunk steps take them: byte-shuffled when the pipeline
        starts with a shuffle."""
        if not self.shuffle:
            return rows
        n, nbytes = rows.shape
        return np.ascontiguousarray(rows.reshape(n, nbytes // self.shuffle, self.shuffle).transpose(0, 2, 1)).reshape(n, -1)

    def encode_rows(self, rows: np.ndarray, offsets, keep, written, shuffled: bool = False) -> list:
        """Each kept row's encoding, checked and recorded under its offset (in ``written``). ``shuffled``: the
        rows are byte-shuffled already (:func:`box_rows` with :meth:`fused_shuffle`).

        Small rows go to the codecs as bytes cut from one copy of the group (numpy rows as buffers cost more
        per call than the work on a 1.4 KiB chunk), each stage mapped over the whole group (no Python between
        a chunk's calls: the per-chunk cost of 13,824 chunks of 1.4 KiB), and their CRCs go to ``written`` in
        one call."""
        from ccp.repack.readback import _same_bytes, crc32

        prepared = rows if shuffled or not self.shuffle else self.rows(rows)
        del rows       # (the caller passes its box without keeping it: each copy goes as soon as it is used)
        encode, check = self.encode, self.check
        assert encode is not None, "a group encoded without an encoder"
        nbytes = prepared.shape[1] if prepared.ndim == 2 else 0
        kept = [k for k, wanted in enumerate(keep) if wanted]
        offs = [offsets[k] for k in kept]
        if nbytes <= SMALL_CHUNK_BYTES:
            flat = prepared.tobytes()
            del prepared       # the box's copy goes: the chunks are cut from ``flat``
            chunks = [flat[k * nbytes:(k + 1) * nbytes] for k in kept]
            del flat
            encoded = list(map(encode, chunks))
            wrong = [] if check is None else \
                [off for off, back, row in zip(offs, map(check, encoded), chunks) if back != row]
        else:
            chunks = [prepared[k] for k in kept]
            encoded = list(map(encode, chunks))
            wrong = [] if check is None else \
                [off for off, data, row in zip(offs, encoded, chunks) if not _same_bytes(check(data), row)]
        del chunks
        if self.fletcher:   # HDF5's checksum of each chunk's bytes so far, appended (little-endian, as H5Z does)
            from ccp.hdf5.filters.codecs import fletcher32_many

            encoded = [bytes(data) + value.to_bytes(4, "little")
                       for data, value in zip(encoded, fletcher32_many(encoded))]
        written.record_group(offs, list(map(crc32, encoded)), wrong)
        return list(zip(offs, encoded))


def box_rows(arr, band_start, box_start, box_grid, chunks, fill, shuffle: int = 0) -> np.ndarray:
    """The target chunks of a box of the band (``box_grid`` chunks along each axis from the chunk at
    ``box_start``) as rows of bytes, C order of the box's grid: one transposing copy (edge chunks padded with
    the fill value first). ``shuffle``: the element size (``arr``'s) when the rows are wanted byte-shuffled as
    HDF5's shuffle stores them (byte k of every element, then byte k + 1): the same copy does it, the byte
    axis moved in front of the chunk's axes."""
    lo = [b - s for b, s in zip(box_start, band_start)]
    hi = [min(a + n * c, e) for a, n, c, e in zip(lo, box_grid, chunks, arr.shape)]
    sub = arr[tuple(slice(a, b) for a, b in zip(lo, hi))]
    full = tuple(n * c for n, c in zip(box_grid, chunks))
    if sub.shape != full:      # edge chunks: the rest is the fill value
        padded = np.empty(full, dtype=arr.dtype)
        padded[...] = fill
        padded[tuple(slice(0, n) for n in sub.shape)] = sub
        sub = padded
    ndim = len(chunks)
    split_shape = [x for n, c in zip(box_grid, chunks) for x in (n, c)]
    order = list(range(0, 2 * ndim, 2)) + list(range(1, 2 * ndim, 2))
    if shuffle > 1 and shuffle == arr.dtype.itemsize:
        split = sub.view(np.uint8).reshape(split_shape + [shuffle])
        order = order[:ndim] + [2 * ndim] + order[ndim:]
    else:
        split = sub.reshape(split_shape)
    rows = np.ascontiguousarray(split.transpose(order)).reshape(math.prod(box_grid), -1)
    return rows.view(np.uint8)


def _encode_box(arr, band_start, box_start, box_grid, chunks, fill, codec: GroupCodec, offsets, keep, written):
    rows = box_rows(arr, band_start, box_start, box_grid, chunks, fill, codec.fused_shuffle(arr.dtype.itemsize))
    return codec.encode_rows(rows, offsets, keep, written, shuffled=codec.fused_shuffle(arr.dtype.itemsize) > 1)


def band_boxes(band, chunks, per: int):
    """The band's target chunks in boxes of about ``per`` chunks, C order: ``(first chunk's offset, chunks
    along each axis, offsets in C order)``. A box is a run along one axis of the band's chunk grid, the axes
    after it whole: the first axis whose inner grid holds at most ``per`` chunks."""
    first = [(s // c) * c for s, c in zip(band.start, chunks)]
    grid = [-(-(s + n - f) // c) for s, n, f, c in zip(band.start, band.count, first, chunks)]
    ndim = len(grid)
    axis = next(k for k in range(ndim) if math.prod(grid[k + 1:]) <= per)
    run = max(1, per // math.prod(grid[axis + 1:]))
    for outer in itertools.product(*(range(g) for g in grid[:axis])):
        for i in range(0, grid[axis], run):
            box_grid = [1] * axis + [min(run, grid[axis] - i)] + grid[axis + 1:]
            start = [f + j * c for f, j, c in zip(first, [*outer, i], chunks)] + first[axis + 1:]
            offsets = list(itertools.product(*(range(o, o + n * c, c) for o, n, c in zip(start, box_grid, chunks))))
            yield tuple(start), tuple(box_grid), offsets


def chunk_writer(dsid):
    """``write(chunks)``: writes ``(offset, encoded bytes)`` pairs in order with HDF5's ``H5Dwrite_chunk``.

    Called through ctypes (h5py's own libhdf5) while holding h5py's lock, so that no other h5py call runs
    meanwhile, but not the GIL: the encoder threads run their Python while HDF5 inserts a chunk (8 us of each
    chunk's 9 us in h5py's ``write_direct_chunk``, which holds the GIL throughout). A chunk HDF5 refuses is
    written again through h5py, whose exception then says why. Without the library handle: h5py's call."""
    import ctypes

    from ccp.hdf5 import lowlevel as low

    lib = low.library()
    if lib is None or not hasattr(lib, "H5Dwrite_chunk"):
        def write_h5py(chunks) -> None:
            for off, data in chunks:
                dsid.write_direct_chunk(off, data, 0)
        return write_h5py
    from h5py._objects import phil

    fn = lib.H5Dwrite_chunk
    fn.argtypes = (ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                   ctypes.c_void_p)
    fn.restype = ctypes.c_int
    ident = dsid.id
    coords = ctypes.c_uint64 * len(dsid.shape)

    def write(chunks) -> None:
        with phil:
            for off, data in chunks:
                if fn(ident, 0, 0, coords(*off), len(data), data if type(data) is bytes else bytes(data)) < 0:
                    dsid.write_direct_chunk(off, data, 0)     # raises HDF5's error (or writes it after all)
    return write


def run_bands(reader, pool, dsid, chunks: tuple[int, ...], codec: GroupCodec, written, advance, plan, threads: int,
              max_pending: int) -> int:
    """Copy every band of ``plan`` through one dense array per band; returns the bands copied."""
    shape = tuple(reader.shape)
    itemsize = reader.dtype.itemsize
    target_bytes = math.prod(chunks) * itemsize
    pending: deque = deque()
    bands = 0

    write_chunks = chunk_writer(dsid)

    def write_ready(block_until: int) -> None:
        while pending and (len(pending) > block_until or pending[0][0].done()):
            fut, nbytes = pending.popleft()
            write_chunks(fut.result())
            advance(nbytes)

    try:
        for band_index, band in enumerate(plan):
            bands += 1
            if not reader.region_allocated(band.start, band.count):
                advance(band.size * itemsize)     # nothing stored: never written, reads as the fill value
                continue
            arr = reader.read(band, band_index, plan)
            band_chunks = math.prod(-(-n // c) for n, c in zip(band.count, chunks))
            per = chunks_per_task(band_chunks, target_bytes, threads)
            for start, box_grid, offsets in band_boxes(band, chunks, per):
                keep = [True] * len(offsets)
                nbytes = skipped = 0
                if reader.sparse:
                    for k, off in enumerate(offsets):
                        count = tuple(min(c, d - o) for c, d, o in zip(chunks, shape, off))
                        size = math.prod(count) * itemsize
                        if not reader.region_allocated(off, count):
                            keep[k] = False     # no source chunk under it: never written, reads as the fill value
                            skipped += size
                        else:
                            nbytes += size
                    advance(skipped)
                else:   # the box's elements inside the dataset, axis by axis
                    nbytes = itemsize * math.prod(min(o + n * c, d) - o
                                                  for o, n, c, d in zip(start, box_grid, chunks, shape))
                if not nbytes:
                    continue
                fut = pool.submit(_encode_box, arr, band.start, start, box_grid, chunks, reader.fill, codec, offsets,
                                  keep, written)
                pending.append((fut, nbytes))
                write_ready(max_pending)
            write_ready(0)    # this band's chunks written before the next band is read: one band in memory
            del arr
    finally:
        for fut, _ in pending:
            fut.cancel()
    return bands


def timed_band(reader, chunks: tuple[int, ...], codec: GroupCodec | None, block: tuple[int, ...],
               sample_bytes: int, rounds: int = 3, pool=None, min_seconds: float = 0.0) -> dict[str, float]:
    """CPU seconds (per thread) of the band path's stages, for ``ccp repack --plan``: decoding source chunks
    into a band (``decode``, per source chunk: the stored ones under the region, up to 1024, once), cutting
    target chunks out of it (``place``: :func:`box_rows`) and encoding them with their check and CRC
    (``encode``: :meth:`GroupCodec.encode_rows`), per target byte, median of ``rounds``, on the target chunks
    of a region of the band of about ``sample_bytes`` (the encoder's speed depends on the real values: the
    region holds them, however many source chunks that takes); ``ratio``: raw bytes over encoded bytes
    (``whole`` 0 when the region's values were partly repeated chunks: its ratio is then not the data's).
    With ``pool`` the rounds run in its threads at once, one per thread, as the copy's tasks do (up to
    ``rounds``, stopping once ``min_seconds`` of wall time are spent), and ``cores`` is the CPU they got over
    the wall time they took (what the copy's threads will get, its GIL and this machine's load in it).
    Nothing is written."""
    import statistics
    import time

    from ccp.repack.readback import WrittenChunks

    shape = tuple(reader.shape)
    band = [min(b, d) for b, d in zip(block, shape)]
    # the sample region: whole target chunks of the band, last axes first, about sample_bytes
    from ccp.repack.plan import plan_slabs

    region = tuple(min(r, b) for r, b in zip(plan_slabs(tuple(band), chunks, reader.dtype.itemsize,
                                                        sample_bytes).block, band))
    src = reader.chunks
    offs = [o for o in itertools.islice(chunks_in_box(region, src), 1024) if o in reader.stored]
    arr = np.empty(region, dtype=reader.dtype)
    planes = arr.view(np.uint8).reshape(arr.shape + (reader.itemsize,)) if reader.decode_unshuffled else None
    t0 = time.thread_time()
    for o in offs:      # as the band's read decodes them (ccp.repack.chunks._SourceReader.place)
        sl = tuple(slice(a, min(a + c, r)) for a, c, r in zip(o, src, region))
        reader.place(o, None, arr, planes, sl, tuple(slice(0, s.stop - s.start) for s in sl))
    decode = (time.thread_time() - t0) / max(1, len(offs))
    whole = len(offs) == math.prod(-(-r // c) for r, c in zip(region, src))   # every value the region's own
    if not offs:
        arr[...] = reader.fill
    elif not whole:
        # past 1024 source chunks (or unallocated ones): decoded chunks again, data of the same kind
        decoded = [reader.decoded(o) for o in offs[:64]]
        done = set(offs)
        for k, o in enumerate(chunks_in_box(region, src)):
            if o not in done:
                sl = tuple(slice(a, min(a + c, r)) for a, c, r in zip(o, src, region))
                arr[sl] = decoded[k % len(decoded)][tuple(slice(0, s.stop - s.start) for s in sl)]
        del decoded
    grid = tuple(-(-r // c) for r, c in zip(region, chunks))
    zero = (0,) * len(region)
    offsets = list(itertools.product(*(range(n) for n in grid)))

    def one_round(_=None) -> tuple[float, float, int, float, float]:
        t2 = time.thread_time()
        fused = codec.fused_shuffle(reader.dtype.itemsize) if codec is not None else 0
        rows = box_rows(arr, zero, zero, grid, chunks, reader.fill, fused)
        t3 = time.thread_time()
        nbytes, count = max(1, rows.nbytes), len(rows)
        encoded = nbytes
        if codec is not None and codec.encode is not None:
            encoded = sum(len(data) for _, data in
                          codec.encode_rows(rows, offsets, [True] * len(offsets), WrittenChunks(), shuffled=fused > 1))
        del rows
        t4 = time.thread_time()
        return (t3 - t2) / nbytes, (t4 - t3) / nbytes, count, nbytes / max(1, encoded), t4 - t2

    threads = 1 if pool is None else pool._max_workers
    results: list = []
    wall = 0.0
    while len(results) < max(1, rounds):     # a round per thread at once, until min_seconds of wall time
        wall0 = time.perf_counter()
        results += list(map(one_round, range(threads))) if pool is None else list(pool.map(one_round, range(threads)))
        wall += time.perf_counter() - wall0
        if wall >= min_seconds:
            break
    wall = max(1e-6, wall)
    return {"decode": decode, "place": statistics.median(r[0] for r in results),
            "encode": statistics.median(r[1] for r in results), "chunks": results[0][2],
            "ratio": statistics.median(r[3] for r in results), "whole": float(whole),
            "cores": max(1e-3, min(float(threads), sum(r[4] for r in results) / wall))}


def chunks_in_box(box, chunks):
    """Offsets of the chunks a box from the origin overlaps, in C order."""
    return itertools.product(*(range(0, b, c) for b, c in zip(box, chunks)))
