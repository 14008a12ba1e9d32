"""Rechunk plans: the read order, chunk cache and memory of copying a dataset onto a new chunk grid,
with the bytes it moves and the time it takes, known before anything is written (``ccp repack --plan``).

Pure: no I/O. The writer (:mod:`ccp.repack.chunks`) reads the source in hyperslabs of whole target
chunks (:func:`ccp.repack.plan.plan_slabs`, C order of the hyperslab grid) and keeps a decoded source
chunk that a later hyperslab needs too, while the cache has room; :func:`count_pass` replays exactly
that policy, so a plan's chunk reads are the writer's, not an estimate. :func:`plan_pass` picks, among the
pipeline's and the band path's passes over a fixed grid of hyperslab buffers, the fastest within a memory budget by
nominal seconds (:func:`pass_seconds`): a larger budget has every pass a smaller one has, with more cache.

When one pass would read source chunks many times, :mod:`ccp.repack.stages` weighs multi-stage plans (rechunker's
algorithm) against it; each stage is one pass of this module.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ccp.repack.plan import DEFAULT_BUFFER_BYTES, plan_slabs

# chunks encoded ahead per thread while earlier ones are written (the writer's max_pending)
PENDING_PER_THREAD = 2
# the band path (ccp.repack.band) when a target chunk is made of at least this many pieces of source
# chunks on average, of at most BAND_MAX_PIECE_BYTES each: listing and placing pieces one by one in Python
# then costs more than a dense band (measured, benchmarks/rechunk.py's input at load 7: 2 KB pieces, the
# transpose job, 1.8 s CPU in bands against 2.3 s in the pipeline; 8 KB pieces, the 6458 job, 1.9 s
# against 1.7 s; a daily map file to time series, 4-byte pieces: 2.3 s against minutes)
BAND_MIN_PIECES = 8
BAND_MAX_PIECE_BYTES = 4096
# the band path's tasks: target chunks of about this many raw bytes each (at least one chunk)
TASK_BYTES = 1 << 20


@dataclass(frozen=True)
class PassCount:
    """What one pass does, counted: source chunk reads, the largest cache, hyperslabs."""

    source_chunks: int        # source chunks in the grid (allocated or not)
    chunk_reads: int          # source chunks decoded (a chunk read twice counts twice)
    peak_cache_bytes: int     # most decoded source chunk bytes kept between hyperslabs
    slabs: int
    target_chunks: int


def _axis_spans(size: int, chunk: int, block: int) -> dict[tuple[int, int], int]:
    """Along one axis: ``{(first block, last block): number of source chunks}``."""
    import numpy as np

    starts = np.arange(0, size, chunk, dtype=np.int64)
    first = starts // block
    last = (np.minimum(starts + chunk, size) - 1) // block
    keys, counts = np.unique(first * (size + 1) + last, return_counts=True)
    return {(int(k // (size + 1)), int(k % (size + 1))): int(n) for k, n in zip(keys, counts)}


def count_pass(shape: Sequence[int], src_chunks: Sequence[int], dst_chunks: Sequence[int], itemsize: int,
               buffer_bytes: int, cache_bytes: int) -> PassCount:
    """The writer's read order and cache policy (``_SourceReader.read``), counted for a fully allocated source.

    A source chunk spanning several hyperslabs is kept decoded from the first to the last of them. Per axis,
    chunks group by the blocks they span, so the count costs the number of such groups, not of chunks.
    When the cache holds every chunk kept at once (the usual case), the count is exact; otherwise chunks
    that find no room are counted as read once per hyperslab they touch, in the proportion the cache lacks.
    """
    nsrc, ntgt, nslabs, peak_bytes, extra, per = _pass_groups(tuple(shape), tuple(src_chunks), tuple(dst_chunks),
                                                              int(itemsize), int(buffer_bytes))
    if per:     # a target chunk larger than the buffer (the library path): each piece reads the chunks under it
        return PassCount(nsrc, nsrc * per, 0, nslabs, ntgt)
    if peak_bytes <= cache_bytes:
        return PassCount(nsrc, nsrc, peak_bytes, nslabs, ntgt)
    short = 1 - cache_bytes / peak_bytes
    return PassCount(nsrc, nsrc + math.ceil(extra * short), min(cache_bytes, peak_bytes), nslabs, ntgt)


@functools.lru_cache(maxsize=4096)
def _pass_groups(shape, src_chunks, dst_chunks, itemsize: int, buffer_bytes: int) -> tuple[int, int, int, int, int, int]:
    """What :func:`count_pass` counts whatever the cache: ``(source chunks, target chunks, hyperslabs, most bytes
    of source chunks kept at once, reads again without a cache, reads per chunk on the library path or 0)``."""
    if any(d == 0 for d in shape):
        return 0, 0, 0, 0, 0, 0
    plan = plan_slabs(shape, dst_chunks, itemsize, buffer_bytes)
    chunk_bytes = math.prod(src_chunks) * itemsize
    nsrc = math.prod(-(-d // c) for d, c in zip(shape, src_chunks))
    ntgt = math.prod(-(-d // c) for d, c in zip(shape, dst_chunks))
    nslabs = len(plan)
    grid = plan.grid() if plan.mode != "elements-in-chunk" else None
    if grid is None:
        # a target chunk larger than the buffer (the library path): each piece of it reads the source
        # chunks under it, so a source chunk is read once per piece it touches (an estimate)
        per = math.prod(max(1, -(-min(c, d) // b)) for c, d, b in zip(src_chunks, shape, plan.block))
        return nsrc, ntgt, nslabs, 0, 0, per
    axes = [list(_axis_spans(d, c, b).items()) for d, c, b in zip(shape, src_chunks, plan.block)]
    strides = [math.prod(grid[i + 1:]) for i in range(len(grid))]
    alive = [0] * (nslabs + 2)      # difference array: chunks kept while hyperslab i is copied
    extra = 0
    for combo in itertools.product(*axes):
        n = math.prod(m for _, m in combo)
        if all(a == b for (a, b), _ in combo):
            continue
        first = sum(a * st for ((a, _), _), st in zip(combo, strides))
        last = sum(b * st for ((_, b), _), st in zip(combo, strides))
        alive[first] += n
        alive[last + 1] -= n     # evicted after its last hyperslab is copied
        extra += n * (math.prod(b - a + 1 for (a, b), _ in combo) - 1)
    peak = run = 0
    for i in range(nslabs):
        run += alive[i]
        peak = max(peak, run)
    return nsrc, ntgt, nslabs, peak * chunk_bytes, extra, 0


def pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize: int, threads: int, pending: int) -> int:
    """What the pipeline's tasks hold (:mod:`ccp.repack.pipeline`): per thread a target chunk's buffer, its
    encoded bytes decoded again for the check (:mod:`ccp.repack.readback`; two chunks counted) and
    the source chunk it is decoding, and up to ``pending`` encoded target chunks waiting to be written."""
    target = math.prod(dst_chunks) * itemsize
    return pending * target + threads * (3 * target + math.prod(src_chunks) * itemsize)


def shared_alive(shape, src_chunks, dst_chunks, block, pending: int) -> int:
    """See :func:`_shared_alive` (cached: the plan asks for the same band with several budgets)."""
    return _shared_alive(tuple(shape), tuple(src_chunks), tuple(dst_chunks), tuple(block), int(pending))


@functools.lru_cache(maxsize=4096)
def _shared_alive(shape, src_chunks, dst_chunks, block, pending: int) -> int:
    """Most source chunks shared by several target chunks of one band (hyperslab ``block``) that are decoded
    at once: a shared chunk lives from its first user's task (started up to ``pending`` target chunks ahead
    of the oldest unwritten one) to its last user's, target chunks going in C order of the band's grid.
    Counted on the first band, per axis as :func:`count_pass` does."""
    import numpy as np

    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    if any(d == 0 for d in shape):
        return 0
    extent = [min(b, d) for b, d in zip(block, shape)]
    grid = [-(-e // t) for e, t in zip(extent, dst_chunks)]
    strides = [math.prod(grid[i + 1:]) for i in range(len(grid))]
    axes = [list(_axis_spans(e, c, t).items()) for e, c, t in zip(extent, src_chunks, dst_chunks)]
    alive = np.zeros(math.prod(grid) + 1, dtype=np.int64)
    for combo in itertools.product(*axes):
        if all(a == b for (a, b), _ in combo):
            continue       # inside one target chunk: its own task decodes it
        n = math.prod(m for _, m in combo)
        first = sum(a * st for ((a, _), _), st in zip(combo, strides))
        last = sum(b * st for ((_, b), _), st in zip(combo, strides))
        alive[max(0, first - pending)] += n
        alive[last + 1] -= n
    return int(np.cumsum(alive).max(initial=0))


@dataclass(frozen=True)
class PassPlan:
    """One pass: its buffer and cache (bytes), the hyperslab shape, and what it reads; ``shared_bytes``:
    the most decoded source chunks its tasks share at once, ``inflight_bytes``: what the tasks hold."""

    buffer_bytes: int
    cache_bytes: int
    block: tuple[int, ...]
    count: PassCount
    shared_bytes: int = 0
    inflight_bytes: int = 0
    pending: int = 1
    band_bytes: int = 0       # the band path's dense band array (0: the per-target-chunk pipeline)

    @property
    def band(self) -> bool:
        return self.band_bytes > 0

    @property
    def memory_bytes(self) -> int:
        """What the pass adds to the process at most: tasks in flight, shared chunks, the cache in use, the band."""
        return self.inflight_bytes + self.shared_bytes + self.count.peak_cache_bytes + self.band_bytes

    @property
    def rereads(self) -> int:
        return self.count.chunk_reads - self.count.source_chunks


def pending_chunks(threads: int) -> int:
    """Encoded target chunks in flight by default: a few per thread keep every thread busy."""
    return PENDING_PER_THREAD * threads + 2


def band_wanted(shape, src_chunks, dst_chunks, itemsize: int) -> bool:
    """Whether target chunks are made of many small pieces of source chunks (the band path then)."""
    if any(d == 0 for d in shape) or tuple(src_chunks) == tuple(dst_chunks):
        return False
    pieces = io_ops(shape, src_chunks, dst_chunks)
    ntgt = math.prod(-(-d // c) for d, c in zip(shape, dst_chunks))
    return pieces >= BAND_MIN_PIECES * ntgt and math.prod(shape) * itemsize <= BAND_MAX_PIECE_BYTES * pieces


def band_inflight_bytes(src_chunks, dst_chunks, itemsize: int, threads: int, pending: int) -> int:
    """What the band path's tasks hold beside the band: ``pending`` tasks' groups of target chunks (about
    TASK_BYTES each, at least one chunk: encoded, or waiting to be) and per thread the group it works on three
    times (cut out of the band, byte-shuffled, as bytes), a source chunk being decoded and the check's decoded
    copy of the chunk it encodes (:mod:`ccp.repack.readback`; two chunks counted). Measured on the daily-map
    transpose (13,824 chunks of 1.4 KiB, groups of 1 MiB, 2 threads): 34 MB over the process before the copy,
    the band 20 MB of it (/proc VmHWM, load 7-12)."""
    target = math.prod(dst_chunks) * itemsize
    group = max(TASK_BYTES, target)
    return pending * group + threads * (3 * group + math.prod(src_chunks) * itemsize + 2 * target)


# nominal CPU seconds (one thread) of a pass's parts, to choose among plans before anything is timed (``--plan``
# then times the chosen plan's own stages): decoding a gzip:1+shuffle source chunk (isal/libdeflate ~400 MB/s), an
# unfiltered one (a copy), a source chunk's read and index walk, a target chunk's task and write, a piece listed
# and placed by the pipeline in Python (breaker7's col2d at 200 MiB: 14.3 M pieces of 28 bytes, ~185 s at ~0.8
# cores: ~10 us each), a target byte cut out of the band and placed
DECODE_SECONDS_PER_BYTE = 2.5e-9
RAW_SECONDS_PER_BYTE = 1e-9
SECONDS_PER_SOURCE_READ = 30e-6         # the 6458 benchmark under cProfile: 0.35 s for 10,000 source chunks
SECONDS_PER_PIPELINE_TARGET = 150e-6    # the pipeline's main thread: submitting a task, write_direct_chunk of it
SECONDS_PER_BAND_TARGET = 12e-6         # write_direct_chunk and its loop (8 us of CPU each, the daily-map
                                        # transpose's 13,824 chunks of 1.4 KiB, load 4.5)
SECONDS_PER_PIECE = 10e-6
BAND_SECONDS_PER_BYTE = 1e-9
PIPELINE_SECONDS_PER_BYTE = 0.5e-9
# the band path waits for each band's decodes and tasks before the next band (a barrier the threads idle at)
SECONDS_PER_BAND_SLAB = 1e-3


def pass_seconds(plan: PassPlan, shape, src_chunks, dst_chunks, itemsize: int, filtered: bool = True) -> float:
    """Nominal CPU seconds of one pass (constants above): its source chunk reads decoded (``filtered``: the
    source's filters; else a stage's unfiltered copy), and the pipeline's pieces and tasks or the band's cut.
    Encoding is left out: every plan encodes the same target chunks once."""
    src_bytes = math.prod(src_chunks) * itemsize
    per_byte = DECODE_SECONDS_PER_BYTE if filtered else RAW_SECONDS_PER_BYTE
    count = plan.count
    secs = count.chunk_reads * (src_bytes * per_byte + SECONDS_PER_SOURCE_READ)
    raw = math.prod(shape) * itemsize
    if plan.band:
        return secs + count.target_chunks * SECONDS_PER_BAND_TARGET + raw * BAND_SECONDS_PER_BYTE \
            + count.slabs * SECONDS_PER_BAND_SLAB
    pieces = io_ops(shape, src_chunks, dst_chunks)
    return secs + count.target_chunks * SECONDS_PER_PIPELINE_TARGET + pieces * SECONDS_PER_PIECE \
        + raw * PIPELINE_SECONDS_PER_BYTE


def _buffer_grid(shape, src_chunks, dst_chunks, itemsize: int) -> list[int]:
    """The hyperslab buffers a pass may take, the same whatever the budget (a larger budget then has every plan a
    smaller one has, with more cache: never a slower plan): the default, the target chunk doubled, and for each
    power of two the buffers whose hyperslabs end on source chunk boundaries too; one buffer per hyperslab shape."""
    target = math.prod(dst_chunks) * itemsize
    cap = 2 * max(target, math.prod(shape) * itemsize)
    sizes = {DEFAULT_BUFFER_BYTES, *(target << k for k in range(0, 64) if target << k <= cap)}
    for k in range(max(0, target.bit_length() - 1), cap.bit_length() + 1):
        sizes.update(_aligned_buffers(shape, src_chunks, dst_chunks, itemsize, 1 << k))
    blocks: dict = {}
    for size in sorted(sizes):
        if size >= target:
            blocks.setdefault(plan_slabs(shape, dst_chunks, itemsize, size).block, size)
    if DEFAULT_BUFFER_BYTES >= target:   # the default's own hyperslab keeps the default's size (measured so)
        blocks[plan_slabs(shape, dst_chunks, itemsize, DEFAULT_BUFFER_BYTES).block] = DEFAULT_BUFFER_BYTES
    return sorted(blocks.values())


def _band_plan(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int, buf: int) -> PassPlan:
    """The band path's pass (:mod:`ccp.repack.band`) with hyperslab buffer ``buf``: the dense band, its tasks, the
    cache the rest of ``memory_bytes``."""
    pending = pending_chunks(threads)
    inflight = band_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, pending)
    slab = plan_slabs(shape, dst_chunks, itemsize, buf)
    cache = max(0, memory_bytes - inflight - slab.slab_bytes)
    return PassPlan(buf, cache, slab.block, count_pass(shape, src_chunks, dst_chunks, itemsize, buf, cache),
                    0, inflight, pending, slab.slab_bytes)


def _pipeline_plan(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int, buf: int,
                   pending: int) -> PassPlan:
    """The pipeline's pass (:mod:`ccp.repack.pipeline`): no band held, its tasks' chunks in flight and the decoded
    source chunks they share; the cache the rest of ``memory_bytes``."""
    slab = plan_slabs(shape, dst_chunks, itemsize, buf)
    inflight = pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, pending)
    shared = shared_alive(shape, src_chunks, dst_chunks, slab.block, pending) * math.prod(src_chunks) * itemsize
    cache = max(0, memory_bytes - inflight - shared)
    return PassPlan(buf, cache, slab.block, count_pass(shape, src_chunks, dst_chunks, itemsize, buf, cache),
                    shared, inflight, pending)


def pass_candidates(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int = 1,
                    buffer_bytes: int | None = None) -> list[PassPlan]:
    """Every pass :func:`plan_pass` chooses from: the pipeline with the default chunks in flight and with one per
    thread, the band path when target chunks are made of many small pieces (:func:`band_wanted`), each over
    :func:`_buffer_grid` (``buffer_bytes`` given: that buffer alone)."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    target = math.prod(dst_chunks) * itemsize
    buffers = [max(target, int(buffer_bytes))] if buffer_bytes is not None else \
        _buffer_grid(shape, src_chunks, dst_chunks, itemsize)
    band = band_wanted(shape, src_chunks, dst_chunks, itemsize)
    out = []
    for buf in buffers:
        for pending in sorted({pending_chunks(threads), threads}, reverse=True):
            out.append(_pipeline_plan(shape, src_chunks, dst_chunks, itemsize, memory_bytes, threads, buf, pending))
        if band:
            out.append(_band_plan(shape, src_chunks, dst_chunks, itemsize, memory_bytes, threads, buf))
    return out


def plan_pass(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int = 1,
              buffer_bytes: int | None = None, filtered: bool = True) -> PassPlan:
    """The pass of a copy within ``memory_bytes`` (beyond what the process holds): of :func:`pass_candidates`
    that fit, the fastest by :func:`pass_seconds` (near ties: the default buffer and chunks in flight, then the
    least memory); none fits:
    the least memory (the copy is then refused by its floor, or runs over it by that little)."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    plans = pass_candidates(shape, src_chunks, dst_chunks, itemsize, memory_bytes, threads, buffer_bytes)
    fitting = [p for p in plans if p.memory_bytes <= memory_bytes]
    if not fitting:
        return min(plans, key=lambda p: (p.memory_bytes, p.count.chunk_reads))
    secs = {id(p): pass_seconds(p, shape, src_chunks, dst_chunks, itemsize, filtered) for p in fitting}
    best = min(fitting, key=lambda p: secs[id(p)])
    # on the fastest's path, within 2% (and 10 ms) of it: the default buffer, else the least memory (a band of the
    # whole dataset saves a few barriers, not worth its memory)
    near = [p for p in fitting if p.band == best.band and secs[id(p)] <= secs[id(best)] * 1.02 + 0.01]
    return min(near, key=lambda p: (p.buffer_bytes != DEFAULT_BUFFER_BYTES, p.pending != pending_chunks(threads),
                                    p.memory_bytes))


def no_reread_bytes(shape, src_chunks, dst_chunks, itemsize: int, threads: int = 1) -> int:
    """The least memory (beyond the process) a single pass needs to read each source chunk once."""
    huge = 1 << 62
    plans = pass_candidates(shape, src_chunks, dst_chunks, itemsize, huge, threads)
    return min(p.memory_bytes for p in plans if not p.rereads)


def pass_floor(shape, src_chunks, dst_chunks, itemsize: int, threads: int) -> int:
    """The least memory one pass can run in beyond the process (one target chunk per thread in flight,
    the shared source chunks of the smallest band): below it, the copy is refused."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    target_chunk = math.prod(dst_chunks) * itemsize
    slab = plan_slabs(shape, dst_chunks, itemsize, target_chunk)
    return (pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, threads)
            + shared_alive(shape, src_chunks, dst_chunks, slab.block, threads) * math.prod(src_chunks) * itemsize)


def _aligned_buffers(shape, src_chunks, dst_chunks, itemsize: int, limit: int) -> list[int]:
    """Buffers whose hyperslabs end on source chunk boundaries too: along the axis the hyperslab cuts (the
    axes after it whole, one target chunk before it), the largest multiple of both chunk extents that fits."""
    out = []
    for k in range(len(shape)):
        lcm = src_chunks[k] * dst_chunks[k] // math.gcd(src_chunks[k], dst_chunks[k])
        inner = math.prod(shape[k + 1:]) * math.prod(dst_chunks[:k]) * itemsize
        m = limit // max(1, inner * lcm)
        if m >= 1 and m * lcm < shape[k]:
            out.append(inner * m * lcm)
    return out


# ------------------------------------------------------------------ pieces (rechunker's count)

def _intermediate_count(src: int, dst: int, size: int) -> int:
    """Pieces one axis splits into when chunks ``src`` are copied into chunks ``dst`` (a read/write each)."""
    multiple = src * dst // math.gcd(src, dst)
    per = multiple // src + multiple // dst - 1
    whole, rest = divmod(size, multiple)
    return whole * per + ((-(-rest // src) + -(-rest // dst) - 1) if rest else 0)


def io_ops(shape, src_chunks, dst_chunks) -> int:
    """Read/write operations of copying chunks ``src_chunks`` into ``dst_chunks`` (rechunker's count)."""
    return math.prod(_intermediate_count(s, d, n) for s, d, n in zip(src_chunks, dst_chunks, shape))


# ------------------------------------------------------------------ the memory budget of a copy

DEFAULT_MEMORY_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class MemoryBudget:
    """``ccp repack --memory`` (peak resident memory of the copy) and ``--buffer`` when given."""

    memory_bytes: int = DEFAULT_MEMORY_BYTES
    buffer_bytes: int | None = None
    # True when the user set the budget (``--memory``): a process already holding it is refused
    # (:func:`check_memory`). The default budget is a sizing, not a promise: a long-lived process that holds
    # more than 512 MiB (a test worker, a notebook) still copies, within a quarter of the budget.
    strict: bool = True

    def room(self) -> int:
        """What one dataset's copy may add to the memory the process holds now (0 when it holds a budget the
        user set already: the copy is then refused, :func:`check_memory`; a quarter of the default budget at
        least)."""
        room = self.memory_bytes - process_rss()
        return max(0, room) if self.strict else max(room, self.memory_bytes // 4)


# a share of the room left out of the plan: what the process adds beside the plan's count while it copies (glibc's
# arenas keep freed chunk-sized holes, codec modules load at the first chunk): breaker7's col2d at --memory 160MiB,
# 109 MiB of room, peaked at 160.6 MiB with a twelfth kept (allocator thresholds of 1 MiB, :func:`fix_allocator`)
SLACK_SHARE = 8


# HDF5's metadata cache grows with the chunk indexes the copy reads and writes (up to its default 32 MiB), and so does
# the copy's table of stored source chunks: breaker7's col2d staged at --memory 64MiB grew 14.5 MiB while writing
# its stage and 14,287 target chunks after reading 6,006 source chunks' index (VmRSS sampled every 0.2 s)
INDEX_BYTES_PER_CHUNK = 1024
INDEX_BYTES_MAX = 40 * 2**20


def index_bytes(shape, src_chunks, dst_chunks) -> int:
    """What the chunk indexes of a copy from ``src_chunks`` onto ``dst_chunks`` add while it runs."""
    if not shape or any(d == 0 for d in shape):
        return 0
    n = sum(math.prod(-(-d // c) for d, c in zip(shape, ch)) for ch in (src_chunks, dst_chunks))
    return min(INDEX_BYTES_MAX, n * INDEX_BYTES_PER_CHUNK)


def pass_room(budget: MemoryBudget, dst_chunks, itemsize: int, threads: int, shape=(), src_chunks=()) -> int:
    """What one pass of a copy onto ``dst_chunks`` may hold: the budget's room less what its read-back needs, the
    chunk indexes (``shape`` and ``src_chunks`` given: :func:`index_bytes`) and an eighth kept for what the
    allocator holds beside the plan."""
    room = budget.room() - readback_bytes(dst_chunks, itemsize, threads)
    if shape and src_chunks:
        room -= index_bytes(shape, src_chunks, dst_chunks)
    room = max(0, room)
    return room - room // SLACK_SHARE


def fix_allocator() -> None:
    """glibc's malloc raises its mmap threshold to the largest block freed (up to 32 MiB) and keeps twice that free
    at the top of its heap: after the first band is freed every decoded chunk and task buffer comes from the heap,
    and what is freed stays resident (the copy of breaker7's col2d at --memory 160MiB peaked at 171 MiB). Fixed
    thresholds of 1 MiB give bands and groups their own mappings, returned when freed, and give the heap's free top
    back (160.6 MiB there; 64 KiB thresholds held 154 MiB but faulted every chunk's pages in: 4x the system time,
    10 M page faults in a staged copy). No-op elsewhere than glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:  # pragma: no cover - no C library to load
        return
    if mallopt is not None:
        mallopt(-3, 1 << 20)      # M_MMAP_THRESHOLD
        mallopt(-1, 1 << 20)      # M_TRIM_THRESHOLD


def process_rss() -> int:
    """This process's resident memory now (bytes; its peak so far where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            import os

            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return _max_rss()


def peak_rss() -> int:
    """This process's peak resident memory so far (bytes): the kernel's VmHWM of this program (getrusage's
    ru_maxrss also counts the pages of the process it was forked from, before exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        pass
    return _max_rss()


def _max_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def readback_bytes(dst_chunks, itemsize: int, threads: int) -> int:
    """What the read-back (:mod:`ccp.repack.readback`) adds after the copy: a run of stored chunks read back
    (about 1 MiB, at least one chunk; two target chunks per thread counted), the sampled target chunks read
    through HDF5 from both files, and HDF5's two chunk caches (the process does not give the copy's memory
    back first: measured +12.4 MiB for 800 KB chunks, 2 threads, when the read-back decoded every chunk)."""
    from ccp.repack.readback import SAMPLED_CHUNKS

    return (2 * threads + 2 * SAMPLED_CHUNKS) * math.prod(dst_chunks) * itemsize + 2 * 2**20


def copy_floor(shape, src_chunks, dst_chunks, itemsize: int, threads: int) -> int:
    """The least memory the fast path's copy of one dataset and its read-back run in beyond the process: a
    rechunk's :func:`pass_floor`, or (same chunk grid, new filters) a chunk, its encoding and its check's
    decoded copy per thread (two chunks counted)."""
    if tuple(src_chunks) == tuple(dst_chunks):
        floor = 4 * threads * math.prod(dst_chunks) * itemsize
    else:
        floor = pass_floor(shape, src_chunks, dst_chunks, itemsize, threads)
    floor += readback_bytes(dst_chunks, itemsize, threads) + index_bytes(shape, src_chunks, dst_chunks)
    return floor + floor // (SLACK_SHARE - 1)   # pass_room's slack on top


def check_memory(memory_bytes: int, base: int, needs) -> None:
    """Refuse, in one line naming ``--memory`` and the floor, a budget the copy cannot meet: the process holds
    ``base`` bytes before copying and each ``(dataset path, floor bytes, what it is)`` of ``needs`` adds its floor."""
    from ccp.errors import ConfigError
    from ccp.units import format_bytes

    for path, floor, what in needs:
        if base + floor > memory_bytes:
            mib = -(-(base + floor) // 2**20)
            raise ConfigError("--memory", f"{format_bytes(memory_bytes)} cannot hold the copy of {path}: the process "
                              f"holds {format_bytes(base)} before copying and the copy needs at least "
                              f"{format_bytes(floor)} more ({what}); give --memory {mib}MiB or more")


# the copy of a rechunked dataset besides its chunks: its plan, creating it, the read-back's opening of both
# files and their attributes (main-thread CPU of repack() less the dataset's copy and check_written: 0.027 s on
# the 6458 and the unaligned jobs alike, in-process phase timers, load 8; it was 0.06 s before the read-back
# was cut down)
SECONDS_PER_RECHUNK = 0.03
