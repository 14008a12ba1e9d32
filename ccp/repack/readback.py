"""The read-back of chunks the fast path wrote, without decoding the input a second time.

The writer records, for each target chunk it encodes, a CRC-32 of the exact bytes it handed to the
encoder (the chunk in memory, edge chunks padded with the fill value): :class:`WrittenChunks`. After the
output is closed and opened again, :func:`check_written` reads every stored chunk back through HDF5's
chunk index of that file (``read_direct_chunk``: the bytes and filter mask any reader gets), decodes it
with the filter pipeline the output file records for the dataset, in threads, and compares its CRC with
the one recorded. A chunk that decodes to other bytes, a chunk missing or extra, a wrong filter
parameter: each is a difference. Then a few whole target chunks (the first two and the last two) are
read through HDF5's own filters from both files and compared value by value, so the library and ccp's
decoder are held to agree, and the input's values to the output's, on every run.

This replaces a second decode of the whole input through HDF5 (10,000 small chunks on the 6458 case:
as long as the copy itself); the checks above still read every chunk of the output from the file.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import zlib
from collections.abc import Callable

from ccp.hdf5.filters import codecs, pipeline_from_dcpl

SAMPLED_CHUNKS = 4
BATCH_BYTES = 1 << 20


class WrittenChunks:
    """CRC-32 of each target chunk as encoded, by chunk offset (filled from the encoder threads)."""

    def __init__(self) -> None:
        self.crc: dict[tuple[int, ...], int] = {}
        self._lock = threading.Lock()

    def record(self, offset: tuple[int, ...], data) -> None:
        value = zlib.crc32(data)      # releases the GIL on large buffers
        with self._lock:
            self.crc[tuple(offset)] = value


def _stored_offsets(dsid) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    if dsid.get_storage_size() and dsid.get_num_chunks():
        dsid.chunk_iter(lambda info: out.append(tuple(info.chunk_offset)))
    return out


def check_written(db, written: WrittenChunks, itemsize: int, threads: int,
                  same_region: Callable[[tuple], bool] | None) -> str | None:
    """None when every stored chunk of ``db`` (the output dataset, opened again) decodes to the bytes the
    writer encoded and the sampled regions equal the input's; else what differs. ``same_region(slices)``
    compares a region of the input and the output read through HDF5 (None: no sampled regions). Returns
    "unchecked" when this check does not apply (no Python decoder for the output's filters): the caller
    then compares every value."""
    dcpl = db.get_create_plist()
    chunks = dcpl.get_chunk()
    chunk_bytes = itemsize
    for c in chunks:
        chunk_bytes *= c
    decode, _ = codecs.decoder(pipeline_from_dcpl(dcpl).steps, itemsize, chunk_bytes)
    if decode is None:
        return "unchecked"
    stored = _stored_offsets(db)
    if sorted(stored) != sorted(written.crc):
        extra = len(set(stored) - set(written.crc))
        missing = len(set(written.crc) - set(stored))
        return f"{extra} chunk(s) stored that were not written, {missing} written chunk(s) not stored"

    def crc_of(offs):
        out = []
        for off in offs:
            mask, raw = db.read_direct_chunk(off)   # h5py serialises HDF5 calls; the decoding runs in parallel
            data = decode(raw, mask)
            out.append((off, len(data) == chunk_bytes, zlib.crc32(data)))
        return out

    # a group of chunks per task, about BATCH_BYTES, a few tasks per thread: thousands of tiny chunks would
    # otherwise cost more in the pool's futures than in their decoding
    per = max(1, min(BATCH_BYTES // max(1, chunk_bytes), len(stored) // (4 * max(1, threads))))
    groups = [stored[i:i + per] for i in range(0, len(stored), per)]
    with cf.ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="ccp-readback") as pool:
        for group in pool.map(crc_of, groups):
            for off, whole, crc in group:
                if not whole:
                    return f"the chunk at {off} decodes to a wrong size"
                if crc != written.crc[off]:
                    return f"the chunk at {off} reads back other values than were written"
    if same_region is None:
        return None
    shape = db.shape
    # the first and the last chunks in C order (the dataset's two corners, edge chunks included), in
    # neighbouring pairs: a pair shares its input chunks, which HDF5's chunk cache then decodes once
    picks = sorted(stored)
    if len(picks) > SAMPLED_CHUNKS:
        picks = picks[:SAMPLED_CHUNKS // 2] + picks[-(SAMPLED_CHUNKS - SAMPLED_CHUNKS // 2):]
    for off in picks:
        slices = tuple(slice(o, min(o + c, d)) for o, c, d in zip(off, chunks, shape))
        if not same_region(slices):
            return f"values differ in {slices} (read through HDF5 from both files)"
    return None
