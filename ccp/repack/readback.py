"""The read-back of chunks the fast path wrote, without decoding the input a second time.

Each target chunk is checked twice, once where it is made and once where it is stored:

* in the task that encodes it (:meth:`WrittenChunks.record`): the encoded bytes are decoded at once with
  the filter pipeline of the output dataset (its creation property list, what the file records) and must
  give back the exact bytes handed to the encoder (the chunk in memory, edge chunks padded with the fill
  value). This runs in the copy's threads, beside the copy, while the chunk is still in the cache; a
  CRC-32 of the encoded bytes is kept.
* after the output is closed and opened again (:func:`check_written`): every stored chunk is found through
  HDF5's chunk index of that file (offsets, addresses, sizes, filter masks: what any reader gets), its
  stored bytes are read (``pread`` in long runs, checked against HDF5's ``read_direct_chunk`` on the first
  chunk) and their CRC must equal the one kept for that offset, with a filter mask of 0. A chunk that
  decodes to other bytes, a chunk missing or extra, stored bytes that differ, a recorded pipeline other
  than the one the chunks were checked with: each is a difference.

Then a few whole target chunks (the first two and the last two) are read through HDF5's own filters from
both files and compared value by value, so the library and ccp's decoder are held to agree, and the
input's values to the output's, on every run.

This replaces a second decode of the whole input through HDF5 (10,000 small chunks on the 6458 case: as
long as the copy itself), and a decode of the output after the copy (it now runs inside the copy, on
every core).
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable

from ccp.hdf5.filters import codecs, pipeline_from_dcpl

SAMPLED_CHUNKS = 4
# the sampled regions are read from the input a hyperslab of whole source chunks of about this size at a time
SAMPLE_SLAB_BYTES = 4 * 2**20
BATCH_BYTES = 1 << 20
SMALL_COMPARE_BYTES = 64 * 1024


def _crc32():
    """CRC-32 (zlib's, the same values) by ISA-L when it is installed: 5x faster than zlib's on the 6458 job's
    430 kB chunks (4 ms against 20 ms for 43 MB, one thread), 0.12 us against 0.62 us on 770-byte ones."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.crc32
    return isal_zlib.crc32


crc32 = _crc32()


def pipeline_key(dcpl) -> tuple:
    """The filter pipeline a dataset creation property list records: ids and stored cd_values."""
    return tuple((s.id, tuple(s.stored)) for s in pipeline_from_dcpl(dcpl).steps)


class WrittenChunks:
    """What the writer encoded, checked as it goes: CRC-32 of each chunk's encoded bytes by chunk offset
    (filled from the encoder threads), and the offsets whose encoded bytes decoded to other bytes.

    ``dcpl``: the output dataset's creation property list; its filters decode each chunk as it is recorded
    (none decodable in Python: nothing is decoded, :func:`check_written` then says "unchecked")."""

    def __init__(self, dcpl=None, itemsize: int = 1, chunk_bytes: int | None = None) -> None:
        self.crc: dict[tuple[int, ...], int] = {}
        self.wrong: list[tuple[int, ...]] = []
        self.decode = None
        self.pipeline: tuple = ()
        if dcpl is not None:
            self.pipeline = pipeline_key(dcpl)
            self.decode, _ = codecs.decoder(pipeline_from_dcpl(dcpl).steps, itemsize, chunk_bytes)
        self._lock = threading.Lock()

    def record(self, offset: tuple[int, ...], data, encoded) -> None:
        """``data``: the chunk's bytes as handed to the encoder (a uint8 array); ``encoded``: what the encoder
        made of them, as written."""
        same = True
        if self.decode is not None and self.pipeline:
            same = _same_bytes(self.decode(encoded, 0), data)
        value = crc32(encoded)
        with self._lock:
            self.crc[tuple(offset)] = value
            if not same:
                self.wrong.append(tuple(offset))

    def record_group(self, offsets, crcs, wrong) -> None:
        """Chunks their writer decoded and compared itself: ``crcs[k]``, the CRC-32 of the encoded bytes of the
        chunk at ``offsets[k]``; ``wrong``: the offsets whose encoding did not give their bytes back."""
        with self._lock:
            self.crc.update(zip(map(tuple, offsets), crcs))
            self.wrong.extend(map(tuple, wrong))


def _same_bytes(a, b) -> bool:
    """Whether two buffers hold the same bytes: libc's memcmp on them where they are contiguous (no copy, the
    GIL released; a copy of 800 kB chunks cost more in page faults than the comparison), else a comparison
    of copies."""
    size_a = len(a) if type(a) is bytes else memoryview(a).nbytes
    if size_a <= SMALL_COMPARE_BYTES:      # small chunks: copies cost less than the foreign call
        return _as_bytes(a) == _as_bytes(b)
    import numpy as np

    x, y = np.frombuffer(a, dtype=np.uint8), np.frombuffer(b, dtype=np.uint8)
    if x.size != y.size:
        return False
    memcmp = _memcmp()
    if memcmp is None:  # pragma: no cover - no C library to call
        return x.tobytes() == y.tobytes()
    return memcmp(x.__array_interface__["data"][0], y.__array_interface__["data"][0], x.size) == 0


def _as_bytes(buf) -> bytes:
    if type(buf) is bytes:
        return buf
    tobytes = getattr(buf, "tobytes", None)      # numpy arrays, memoryviews: their bytes in C order
    return tobytes() if tobytes is not None else bytes(buf)


_MEMCMP: list = []


def _memcmp():
    if not _MEMCMP:
        try:
            import ctypes

            fn = ctypes.CDLL(None).memcmp
            fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
            fn.restype = ctypes.c_int
            _MEMCMP.append(fn)
        except (OSError, AttributeError):  # pragma: no cover - no C library to call
            _MEMCMP.append(None)
    return _MEMCMP[0]


def _stored_chunks(dsid) -> dict[tuple[int, ...], tuple[int, int, int]]:
    """Chunk offset -> (file address, stored size, filter mask), from the dataset's chunk index."""
    out: dict[tuple[int, ...], tuple[int, int, int]] = {}
    if dsid.get_storage_size() and dsid.get_num_chunks():
        def add(info):
            out[tuple(info.chunk_offset)] = (info.byte_offset, info.size, info.filter_mask)
        dsid.chunk_iter(add)
    return out


def _stored_crcs(db, stored: dict, path: str | None):
    """``(offset, CRC-32 of its stored bytes)`` for every chunk of ``stored``: read with ``pread`` in runs of
    neighbouring chunks (about BATCH_BYTES each) when the file's addresses are its OS offsets (checked on the
    first chunk against HDF5's own read), else chunk by chunk through HDF5."""
    fd = None
    if path is not None and stored:
        first = next(iter(stored))
        addr, size, _ = stored[first]
        try:
            fd = os.open(path, os.O_RDONLY)
            if os.pread(fd, size, addr) != db.read_direct_chunk(first)[1]:
                os.close(fd)
                fd = None
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    if fd is None:
        for off in stored:
            yield off, crc32(db.read_direct_chunk(off)[1])
        return
    try:
        order = sorted(stored, key=lambda o: stored[o][0])
        i = 0
        while i < len(order):
            start = stored[order[i]][0]
            end = start + stored[order[i]][1]
            j = i + 1
            while j < len(order) and stored[order[j]][0] == end and end - start < BATCH_BYTES:
                end += stored[order[j]][1]
                j += 1
            run = memoryview(os.pread(fd, end - start, start))
            if len(run) != end - start:
                raise OSError(f"short read of {path}")
            for off in order[i:j]:
                addr, size, _ = stored[off]
                yield off, crc32(run[addr - start:addr - start + size])
            i = j
    finally:
        os.close(fd)


def check_written(db, written: WrittenChunks, itemsize: int, threads: int,
                  same_regions: Callable[[list[tuple]], bool] | None, path: str | None = None) -> str | None:
    """None when every stored chunk of ``db`` (the output dataset, opened again from the file ``path``) holds
    the bytes the writer encoded (each checked to decode to what it was made from) and the sampled regions
    equal the input's; else what differs. ``same_regions(regions)`` compares regions of the input and the
    output read through HDF5 (None: no sampled regions). Returns "unchecked" when this check does not apply
    (no Python decoder for the output's filters, or the file records another pipeline than the chunks were
    decoded with): the caller then compares every value."""
    dcpl = db.get_create_plist()
    chunks = dcpl.get_chunk()
    if written.decode is None or pipeline_key(dcpl) != written.pipeline:
        return "unchecked"
    if written.wrong:
        return f"the chunk at {min(written.wrong)} reads back other values than were written"
    stored = _stored_chunks(db)
    if stored.keys() != written.crc.keys():
        extra = len(stored.keys() - written.crc.keys())
        missing = len(written.crc.keys() - stored.keys())
        return f"{extra} chunk(s) stored that were not written, {missing} written chunk(s) not stored"
    for off, (_, _, mask) in stored.items():
        if mask:
            return f"the chunk at {off} is stored with filter mask {mask}, written with 0"
    for off, crc in _stored_crcs(db, stored, path):
        if crc != written.crc[off]:
            return f"the chunk at {off} is stored with other bytes than were written"
    if same_regions is None:
        return None
    shape = db.shape
    # the first and the last chunks in C order (the dataset's two corners, edge chunks included)
    picks = sorted(stored)
    if len(picks) > SAMPLED_CHUNKS:
        picks = picks[:SAMPLED_CHUNKS // 2] + picks[-(SAMPLED_CHUNKS - SAMPLED_CHUNKS // 2):]
    regions = [tuple(slice(o, min(o + c, d)) for o, c, d in zip(off, chunks, shape)) for off in picks]
    if same_regions(regions):   # in one read: a source chunk under several of them is decoded once
        return None
    for slices in regions:      # which one differs
        if not same_regions([slices]):
            return f"values differ in {slices} (read through HDF5 from both files)"
    return f"values differ in {regions} (read through HDF5 from both files)"  # pragma: no cover - one of them does
