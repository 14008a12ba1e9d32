"""Rechunk plans: the read order, chunk cache and memory of copying a dataset onto a new chunk grid,
with the bytes it moves and the time it takes, known before anything is written (``ccp repack --plan``).

Pure: no I/O. The writer (:mod:`ccp.repack.chunks`) reads the source in hyperslabs of whole target
chunks (:func:`ccp.repack.plan.plan_slabs`, C order of the hyperslab grid) and keeps a decoded source
chunk that a later hyperslab needs too, while the cache has room; :func:`count_pass` replays exactly
that policy, so a plan's chunk reads are the writer's, not an estimate. :func:`plan_pass` picks the
hyperslab buffer and cache for a memory budget: the default buffer when every source chunk is then
read once, else the buffer (up to half the budget) that reads fewest.

When no single pass fits the budget without reading source chunks again, :func:`multistage_chunks`
gives intermediate chunk shapes (rechunker's algorithm: consolidate reads and writes up to the
memory limit, then geometrically spaced stages until the intermediates are large enough, stopping
when more stages cost more I/O); each stage is one pass of this module.
"""

from __future__ import annotations

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
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    if any(d == 0 for d in shape):
        return PassCount(0, 0, 0, 0, 0)
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
        return PassCount(nsrc, nsrc * per, 0, nslabs, ntgt)
    axes = [list(_axis_spans(d, c, b).items()) for d, c, b in zip(shape, src_chunks, plan.block)]
    strides = [math.prod(grid[i + 1:]) for i in range(len(grid))]
    alive = [0] * (nslabs + 2)      # difference array: chunks kept while hyperslab i is copied
    spanning = extra = 0
    for combo in itertools.product(*axes):
        n = math.prod(m for _, m in combo)
        if all(a == b for (a, b), _ in combo):
            continue
        first = sum(a * st for ((a, _), _), st in zip(combo, strides))
        last = sum(b * st for ((_, b), _), st in zip(combo, strides))
        alive[first] += n
        alive[last + 1] -= n     # evicted after its last hyperslab is copied
        spanning += n
        extra += n * (math.prod(b - a + 1 for (a, b), _ in combo) - 1)
    peak = run = 0
    for i in range(nslabs):
        run += alive[i]
        peak = max(peak, run)
    peak_bytes = peak * chunk_bytes
    if peak_bytes <= cache_bytes:
        return PassCount(nsrc, nsrc, peak_bytes, nslabs, ntgt)
    short = 1 - cache_bytes / peak_bytes
    return PassCount(nsrc, nsrc + math.ceil(extra * short), min(cache_bytes, peak_bytes), nslabs, ntgt)


def pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize: int, threads: int, pending: int) -> int:
    """What the pipeline's tasks hold (:mod:`ccp.repack.pipeline`): per thread a target chunk's buffer, its
    encoded bytes decoded again for the check (:mod:`ccp.repack.readback`; two chunks counted) and
    the source chunk it is decoding, and up to ``pending`` encoded target chunks waiting to be written."""
    target = math.prod(dst_chunks) * itemsize
    return pending * target + threads * (3 * target + math.prod(src_chunks) * itemsize)


def shared_alive(shape, src_chunks, dst_chunks, block, pending: int) -> int:
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


def plan_band(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int,
              buffer_bytes: int | None = None) -> PassPlan | None:
    """The band path's pass (:mod:`ccp.repack.band`): the band (a dense array of whole target chunks) reading
    fewest source chunks, the largest of those, within ``memory_bytes`` with its cache and tasks; None when
    no band fits."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    target_chunk = math.prod(dst_chunks) * itemsize
    pending = pending_chunks(threads)
    inflight = band_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, pending)

    def make(buf: int) -> PassPlan:
        buf = max(target_chunk, buf)
        slab = plan_slabs(shape, dst_chunks, itemsize, buf)
        cache = max(0, memory_bytes - inflight - slab.slab_bytes)
        return PassPlan(buf, cache, slab.block, count_pass(shape, src_chunks, dst_chunks, itemsize, buf, cache),
                        0, inflight, pending, slab.slab_bytes)

    if buffer_bytes is not None:
        plans = [make(int(buffer_bytes))]
    else:
        room = max(1, memory_bytes - inflight)
        sizes = {DEFAULT_BUFFER_BYTES, *_aligned_buffers(shape, src_chunks, dst_chunks, itemsize, room // 2)}
        sizes |= {target_chunk * 2**k for k in range(0, 40) if target_chunk * 2**k < DEFAULT_BUFFER_BYTES}
        plans = [make(b) for b in sorted(sizes) if b <= room]
    fitting = [p for p in plans if p.memory_bytes <= memory_bytes]
    if not fitting:
        return None
    return min(fitting, key=lambda p: (p.count.chunk_reads, -p.band_bytes))


def plan_pass(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int = 1,
              buffer_bytes: int | None = None) -> PassPlan:
    """The pass of a copy: the band path's (:func:`plan_band`) when target chunks are made of many pieces and
    a band fits reading no more source chunks than the pipeline, else the pipeline's (:func:`plan_pipeline`)."""
    piped = plan_pipeline(shape, src_chunks, dst_chunks, itemsize, memory_bytes, threads, buffer_bytes)
    if band_wanted(shape, src_chunks, dst_chunks, itemsize):
        band = plan_band(shape, src_chunks, dst_chunks, itemsize, memory_bytes, threads, buffer_bytes)
        if band is not None and band.count.chunk_reads <= piped.count.chunk_reads:
            return band
    return piped


def plan_pipeline(shape, src_chunks, dst_chunks, itemsize: int, memory_bytes: int, threads: int = 1,
                  buffer_bytes: int | None = None) -> PassPlan:
    """The band (hyperslab buffer), cache and chunks in flight for one pass within ``memory_bytes`` (beyond
    what the process already holds). ``buffer_bytes`` given: that band size, the cache gets the rest.

    The pipeline holds no band in memory, only its tasks' chunks and the decoded source chunks they share;
    when the default number of chunks in flight does not fit, one per thread (the least it can run with)."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    target_chunk = math.prod(dst_chunks) * itemsize
    src_bytes = math.prod(src_chunks) * itemsize

    def make(buf: int, pending: int) -> PassPlan:
        buf = max(target_chunk, buf)    # a band holds whole target chunks: at least one
        slab = plan_slabs(shape, dst_chunks, itemsize, buf)
        inflight = pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, pending)
        shared = shared_alive(shape, src_chunks, dst_chunks, slab.block, pending) * src_bytes
        cache = max(0, memory_bytes - inflight - shared)
        return PassPlan(buf, cache, slab.block, count_pass(shape, src_chunks, dst_chunks, itemsize, buf, cache),
                        shared, inflight, pending)

    pending = pending_chunks(threads)
    if pipeline_inflight_bytes(src_chunks, dst_chunks, itemsize, threads, pending) > memory_bytes // 2:
        pending = threads
    if buffer_bytes is not None:
        return make(int(buffer_bytes), pending)
    best = make(DEFAULT_BUFFER_BYTES, pending)
    if not best.rereads and best.memory_bytes <= memory_bytes:
        return best
    # larger bands read fewer chunks again; smaller ones share fewer decoded chunks at once
    room = max(1, memory_bytes)
    candidates = [DEFAULT_BUFFER_BYTES * 2**k for k in range(1, 12) if DEFAULT_BUFFER_BYTES * 2**k <= room // 2]
    candidates += _aligned_buffers(shape, src_chunks, dst_chunks, itemsize, room * 3 // 4)
    candidates += [target_chunk * 2**k for k in range(0, 40) if target_chunk * 2**k < DEFAULT_BUFFER_BYTES]
    plans = [best] + [make(buf, pending) for buf in sorted(set(candidates))]
    fitting = [p for p in plans if p.memory_bytes <= memory_bytes]
    if not fitting:   # none fits: the smallest band (the copy then goes in stages, or reads chunks again)
        return min(plans, key=lambda p: (p.memory_bytes, p.count.chunk_reads))
    return min(fitting, key=lambda p: (p.count.chunk_reads, p is not best))


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


# ------------------------------------------------------------------ multi-stage (rechunker's algorithm)

def consolidate(shape, chunks, itemsize: int, max_mem: int, limits=None) -> tuple[int, ...]:
    """Grow ``chunks`` up to ``max_mem`` bytes, last axis first, each axis up to its limit (None: keep it)."""
    ndim = len(shape)
    limits = list(shape) if limits is None else list(limits)
    new = list(chunks)
    mem = itemsize * math.prod(new)
    if mem > max_mem:
        raise ValueError(f"a chunk of {mem} bytes exceeds the memory limit {max_mem}")
    headroom = max_mem / mem
    for axis in range(ndim - 1, -1, -1):
        if limits[axis] is None:
            continue
        upper = min(shape[axis], limits[axis] if limits[axis] != -1 else shape[axis])
        new[axis] = max(chunks[axis], upper)
        mem = itemsize * math.prod(new)
        if max_mem / mem > 1:
            headroom = max_mem / mem
        else:
            new[axis] = min(int(chunks[axis] * int(headroom)), max(chunks[axis], upper))
            new[axis] = max(new[axis], chunks[axis])
            headroom = max_mem / (itemsize * math.prod(new))
    return tuple(new)


def stage_chunks(read_chunks, write_chunks, stages: int) -> list[tuple[int, ...]]:
    """Chunk shapes between the stages, geometrically spaced per axis (``stages - 1`` shapes), floored.

    numpy's ``geomspace`` rounds as rechunker's plan does (an intermediate of 51.99999 is 51 in both)."""
    import numpy as np

    spaced = np.geomspace(read_chunks, write_chunks, num=stages + 1)
    return [tuple(max(1, math.floor(c)) for c in row) for row in spaced[1:-1]]


def _intermediate_count(src: int, dst: int, size: int) -> int:
    """Pieces one axis splits into when chunks ``src`` are copied into chunks ``dst`` (a read/write each)."""
    multiple = src * dst // math.gcd(src, dst)
    per = multiple // src + multiple // dst - 1
    whole, rest = divmod(size, multiple)
    return whole * per + ((-(-rest // src) + -(-rest // dst) - 1) if rest else 0)


def io_ops(shape, src_chunks, dst_chunks) -> int:
    """Read/write operations of copying chunks ``src_chunks`` into ``dst_chunks`` (rechunker's count)."""
    return math.prod(_intermediate_count(s, d, n) for s, d, n in zip(src_chunks, dst_chunks, shape))


def multistage_chunks(shape, src_chunks, dst_chunks, itemsize: int, min_mem: int, max_mem: int,
                      max_stages: int = 100) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Rechunker's multi-stage plan: ``[(read_chunks, intermediate_chunks, write_chunks), ...]``, one per stage.

    Stages are added until the smallest intermediate chunk holds ``min_mem`` bytes, or until one more
    stage would cost more I/O operations (then the previous plan)."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    for name, ch in (("source", src_chunks), ("target", dst_chunks)):
        if itemsize * math.prod(ch) > max_mem:
            raise ValueError(f"a {name} chunk ({itemsize * math.prod(ch)} bytes) exceeds the memory limit {max_mem}")
    write = consolidate(shape, dst_chunks, itemsize, max_mem)
    limits = [w if w > s else None for s, w in zip(src_chunks, write)]
    read = consolidate(shape, src_chunks, itemsize, max_mem, limits)
    prev_ops = None
    prev_plan: list = []
    for stages in range(1, max_stages):
        mids = stage_chunks(read, write, stages)
        pre = [read, *mids]
        post = [*mids, write]
        inter = [tuple(min(a, b) for a, b in zip(p, q)) for p, q in zip(pre, post)]
        plan = list(zip(pre, inter, post))
        if min(itemsize * math.prod(c) for c in inter) >= min_mem:
            return plan
        ops = sum(io_ops(shape, p, q) for p, q in zip(pre, post))
        if prev_ops is not None and ops > prev_ops:
            return prev_plan
        prev_ops, prev_plan = ops, plan
    return prev_plan


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


def pass_room(budget: MemoryBudget, dst_chunks, itemsize: int, threads: int) -> int:
    """What one pass of a copy onto ``dst_chunks`` may hold: the budget's room less what its read-back needs."""
    return max(0, budget.room() - readback_bytes(dst_chunks, itemsize, threads))


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


def choose_stages(shape, src_chunks, dst_chunks, itemsize: int, room: int, threads: int = 1) -> tuple[tuple[int, ...], ...]:
    """Intermediate chunk shapes for a copy that one pass cannot do without reading source chunks again
    (``()``: one pass). Rechunker's multi-stage plan within a quarter of ``room`` per stage; used only
    when every stage, and the last pass onto ``dst_chunks``, then reads each of its chunks once."""
    shape, src_chunks, dst_chunks = tuple(shape), tuple(src_chunks), tuple(dst_chunks)
    if plan_pass(shape, src_chunks, dst_chunks, itemsize, room, threads).rereads == 0:
        return ()
    limit = room // 16   # a stage's hyperslab, cache and a dozen chunks in flight share the room
    try:
        plan = multistage_chunks(shape, src_chunks, dst_chunks, itemsize, min(limit // 8, 8 << 20), limit)
    except ValueError:
        return ()
    mids = tuple(post for _, _, post in plan[:-1])
    chain = [src_chunks, *mids, dst_chunks]
    if not mids or any(plan_pass(shape, a, b, itemsize, room, threads).rereads for a, b in zip(chain, chain[1:])):
        return ()
    return mids


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
    return floor + readback_bytes(dst_chunks, itemsize, threads)


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
