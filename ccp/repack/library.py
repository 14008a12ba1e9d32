"""The library path's rechunk plan (breaker7 R4): a chunked source copied onto a chunk grid whose filters ccp
cannot encode (scaleoffset, Blosc, szip, n-bit ...), hyperslabs of whole target chunks written by HDF5.

HDF5's own chunk cache decided the reads before: a hyperslab's ``H5Dread`` decoded every source chunk under it
that its cache (1 MiB by default) did not hold, so breaker7's 4.6 MB scaleoffset chunks were decoded ~12 times
each, and the read-back, comparing every value a source chunk at a time, had HDF5 decode the 584 target chunks
under each (378 MiB at ``--memory 128MiB``). Now the source is read as the fast path reads it
(:class:`ccp.repack.chunks._SourceReader`): each source chunk's region is read whole through a handle with no
chunk cache (HDF5 decodes it once, keeps nothing), and ccp keeps the decoded chunks a later hyperslab needs
within the plan's cache; each hyperslab is written with no chunk cache on the output (HDF5 encodes each whole
target chunk straight to the file) and read back at once, a few MiB at a time, to check its values.

Pure: no I/O. :func:`library_pass` picks the hyperslab buffer (over the fast path's fixed grid of buffers, so
a larger budget has every plan a smaller one has) with the fewest source chunk reads within the room, and
replays the reader's cache policy to count them exactly where that is cheap.
"""

from __future__ import annotations

import functools
import math

from ccp.repack.plan import DEFAULT_BUFFER_BYTES, chunks_in, plan_slabs
from ccp.repack.rechunk import SLACK_SHARE, PassCount, PassPlan, _buffer_grid, count_pass, index_bytes, readback_bytes

# a source chunk read through HDF5: its stored bytes, the filters' decoded buffer and ccp's copy of it
HDF5_READ_COPIES = 3
# each hyperslab is written, then read back, in pieces of whole target chunks of about this size: HDF5 2.0 filters
# every chunk a write or read touches before it writes or places any (a 12 MiB hyperslab of Blosc chunks written
# at once held 19 MiB more than the plan), so a piece is held about three times: HDF5's copies of its chunks,
# their encodings (or the read's decoded chunks) and ccp's buffer
PIECE_BYTES = 2**20
PIECE_COPIES = 4
# what the process gains over its first whole-chunk reads through HDF5 and keeps: +8 to +10.7 MiB over the first 50
# reads of a Blosc (320 KB chunks) and a scaleoffset (160 KB) dataset, then flat (VmRSS; not HDF5's free lists:
# H5garbage_collect and H5set_free_list_limits changed nothing; not glibc's thresholds: 8.3 MiB at 64 KiB)
HDF5_READ_RESERVE = 12 * 2**20
# the replay of the reader's cache (exact reads) when a pass touches at most this many (hyperslab, source chunk)
# pairs; past it count_pass's estimate
_REPLAY_LIMIT = 400_000


def piece_bytes(dst_chunks, itemsize: int) -> int:
    """Bytes of one piece a hyperslab is written and read back in (at least one target chunk)."""
    return max(PIECE_BYTES, math.prod(dst_chunks) * itemsize)


def library_inflight_bytes(src_chunks, dst_chunks, itemsize: int, slab_bytes: int) -> int:
    """What a library pass holds beside its cache: the hyperslab, the larger of a source chunk being read
    (:data:`HDF5_READ_COPIES`) and a piece being written or read back (:data:`PIECE_COPIES`), and what HDF5's
    reads keep (:data:`HDF5_READ_RESERVE`)."""
    src = math.prod(src_chunks) * itemsize
    return (slab_bytes + max(HDF5_READ_COPIES * src, PIECE_COPIES * piece_bytes(dst_chunks, itemsize))
            + HDF5_READ_RESERVE)


def replay_reads(shape, src_chunks, dst_chunks, itemsize: int, buffer_bytes: int, cache_bytes: int) -> PassCount | None:
    """The reader's read order and cache policy (:meth:`ccp.repack.chunks._SourceReader.read`) replayed on a fully
    allocated source: exact reads and the most bytes kept; None when the pass touches too many chunks to replay."""
    return _replay(tuple(shape), tuple(src_chunks), tuple(dst_chunks), int(itemsize), int(buffer_bytes),
                   int(cache_bytes))


@functools.lru_cache(maxsize=1024)
def _replay(shape, src_chunks, dst_chunks, itemsize: int, buffer_bytes: int, cache_bytes: int) -> PassCount | None:
    plan = plan_slabs(shape, dst_chunks, itemsize, buffer_bytes)
    if plan.mode != "chunks" or any(d == 0 for d in shape):
        return None
    per_slab = math.prod(-(-min(b, d) // c) + 1 for b, d, c in zip(plan.block, shape, src_chunks))
    if per_slab * len(plan) > _REPLAY_LIMIT:
        return None
    chunk_bytes = math.prod(src_chunks) * itemsize
    cache: dict = {}
    held = peak = reads = 0
    for index, slab in enumerate(plan):
        end = tuple(s + n for s, n in zip(slab.start, slab.count))
        for off in chunks_in(slab, src_chunks):
            if off in cache:
                continue
            reads += 1
            inside = all(o + c <= e or e >= d for o, c, e, d in zip(off, src_chunks, end, shape))
            if not inside:
                last = plan.slab_index(tuple(min(o + c, d) - 1 for o, c, d in zip(off, src_chunks, shape)))
                if last > index and held + chunk_bytes <= cache_bytes:
                    cache[off] = last
                    held += chunk_bytes
        peak = max(peak, held)
        for off in [o for o, last in cache.items() if last <= index]:
            del cache[off]
            held -= chunk_bytes
    nsrc = math.prod(-(-d // c) for d, c in zip(shape, src_chunks))
    ntgt = math.prod(-(-d // c) for d, c in zip(shape, dst_chunks))
    return PassCount(nsrc, reads, peak, len(plan), ntgt)


def library_candidates(shape, src_chunks, dst_chunks, itemsize: int, room: int,
                       buffer_bytes: int | None = None) -> list[PassPlan]:
    """A library pass per hyperslab buffer (``buffer_bytes`` given: that one alone), each with the rest of
    ``room`` as its cache, its reads estimated by :func:`ccp.repack.rechunk.count_pass`."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    target = math.prod(dst_chunks) * itemsize
    buffers = [max(target, int(buffer_bytes))] if buffer_bytes is not None else \
        _buffer_grid(shape, src_chunks, dst_chunks, itemsize)
    out = []
    for buf in buffers:
        slab = plan_slabs(shape, dst_chunks, itemsize, buf)
        inflight = library_inflight_bytes(src_chunks, dst_chunks, itemsize, slab.slab_bytes)
        cache = max(0, room - inflight)
        out.append(PassPlan(buf, cache, slab.block, count_pass(shape, src_chunks, dst_chunks, itemsize, buf, cache),
                            0, inflight, 1))
    return out


def library_pass(shape, src_chunks, dst_chunks, itemsize: int, room: int, buffer_bytes: int | None = None) -> PassPlan:
    """The library pass within ``room``: of :func:`library_candidates` that fit, the fewest source chunk reads
    (HDF5's decode is the cost), then the default buffer, then the least memory; none fits: the least memory
    (the copy is then refused by its floor). Its count replayed exactly when cheap (:func:`replay_reads`)."""
    plans = library_candidates(shape, src_chunks, dst_chunks, itemsize, room, buffer_bytes)
    fitting = [p for p in plans if p.memory_bytes <= room]
    if fitting:
        best = min(fitting, key=lambda p: (p.count.chunk_reads, p.buffer_bytes != DEFAULT_BUFFER_BYTES, p.memory_bytes))
    else:
        best = min(plans, key=lambda p: (p.memory_bytes, p.count.chunk_reads))
    exact = replay_reads(shape, src_chunks, dst_chunks, itemsize, best.buffer_bytes, best.cache_bytes)
    if exact is None:
        return best
    return PassPlan(best.buffer_bytes, best.cache_bytes, best.block, exact, 0, best.inflight_bytes, 1)


def library_floor(shape, src_chunks, dst_chunks, itemsize: int) -> int:
    """The least memory a library pass runs in beyond the process: one target chunk a hyperslab, no cache."""
    target = math.prod(dst_chunks) * itemsize
    slab = plan_slabs(tuple(shape), tuple(dst_chunks), itemsize, target)
    return library_inflight_bytes(src_chunks, dst_chunks, itemsize, slab.slab_bytes)


def library_copy_floor(shape, src_chunks, dst_chunks, itemsize: int, threads: int) -> int:
    """The least memory the planned library copy of one dataset and its read-back run in beyond the process, with
    the chunk indexes and the allocator's slack (as :func:`ccp.repack.rechunk.copy_floor` counts the fast path's)."""
    floor = (library_floor(shape, src_chunks, dst_chunks, itemsize) + readback_bytes(dst_chunks, itemsize, threads)
             + index_bytes(shape, src_chunks, dst_chunks))
    return floor + floor // (SLACK_SHARE - 1)


def once_bytes(shape, src_chunks, dst_chunks, itemsize: int) -> int:
    """The least memory (beyond the process) a library pass needs to read each source chunk once."""
    huge = 1 << 62
    plans = library_candidates(shape, src_chunks, dst_chunks, itemsize, huge)
    return min(p.memory_bytes for p in plans if p.count.chunk_reads == p.count.source_chunks)


def planned(tgt, src_chunks, buffer_bytes: int) -> bool:
    """Whether the library path's copy of ``tgt`` (a planner's decision) is planned here: a chunked source and
    target of the same rank, fixed-size values, the target chunk within the hyperslab buffer."""
    lay = tgt.new_layout
    if tgt.method != "library" or lay is None or lay.kind != "chunked" or src_chunks is None or not tgt.shape:
        return False
    chunks = lay.chunk_shape
    return (len(src_chunks) == len(chunks) and tgt.fast_dtype
            and math.prod(chunks) * tgt.itemsize <= buffer_bytes and 0 not in tgt.shape)


__all__ = ["library_copy_floor", "library_floor", "library_pass", "once_bytes", "planned", "replay_reads"]
