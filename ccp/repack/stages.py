"""Multi-stage rechunks: when one pass would read source chunks many times within the memory budget, the copy
goes through unfiltered temporary copies on intermediate chunk grids (rechunker's algorithm: consolidate reads and
writes up to a memory limit, then geometrically spaced stages until the intermediates are large enough, stopping
when more stages cost more I/O operations), each stage one pass of :mod:`ccp.repack.rechunk`.

:func:`plan_copy` chooses, by the nominal seconds of :func:`ccp.repack.rechunk.pass_seconds`, among the single pass
(pipeline or band path) and the multi-stage plans of a fixed grid of stage memory limits, all within the room: a
larger room has every plan a smaller one has, each with more cache, so it is never predicted slower. Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ccp.repack.rechunk import (
    RAW_SECONDS_PER_BYTE,
    PassPlan,
    io_ops,
    no_reread_bytes,
    pass_seconds,
    plan_pass,
)

# an intermediate copy's raw bytes written and read back through the page cache (per byte, both ways)
STAGE_SECONDS_PER_BYTE = 2e-9
# stage memory limits tried: powers of two from this up to the room
_SMALLEST_STAGE_LIMIT = 1 << 18
# a pass that reads its source chunks this many times on average or more is said so, with the budget avoiding it
REREAD_WARN_FACTOR = 2.0


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


@dataclass(frozen=True)
class CopyPlan:
    """A copy's passes: ``chain`` the chunk shapes from the source's through the stages' to the target's,
    ``passes[k]`` the pass from ``chain[k]`` to ``chain[k + 1]``; ``seconds`` nominal CPU seconds."""

    chain: tuple[tuple[int, ...], ...]
    passes: tuple[PassPlan, ...]
    seconds: float

    @property
    def stages(self) -> tuple[tuple[int, ...], ...]:
        return self.chain[1:-1]

    @property
    def source_reads(self) -> int:
        return self.passes[0].count.chunk_reads

    def fits(self, room: int) -> bool:
        return all(p.memory_bytes <= room for p in self.passes)


def _chain_plan(shape, chain, itemsize: int, room: int, threads: int, buffer_bytes, filtered: bool) -> CopyPlan:
    passes, secs = [], 0.0
    for k, (a, b) in enumerate(zip(chain, chain[1:])):
        first = filtered and k == 0
        p = plan_pass(shape, a, b, itemsize, room, threads, buffer_bytes, first)
        passes.append(p)
        secs += pass_seconds(p, shape, a, b, itemsize, first)
    raw = math.prod(shape) * itemsize
    secs += (len(chain) - 2) * raw * (STAGE_SECONDS_PER_BYTE + RAW_SECONDS_PER_BYTE)  # written unfiltered, read back
    return CopyPlan(tuple(chain), tuple(passes), secs)


@functools.lru_cache(maxsize=256)
def _plan_copy(shape, src_chunks, dst_chunks, itemsize: int, room: int, threads: int, buffer_bytes,
               filtered: bool) -> CopyPlan:
    best = _chain_plan(shape, (src_chunks, dst_chunks), itemsize, room, threads, buffer_bytes, filtered)
    if src_chunks == dst_chunks or len(shape) != len(src_chunks):
        return best
    seen = set()
    limit = _SMALLEST_STAGE_LIMIT
    while limit <= max(room, _SMALLEST_STAGE_LIMIT):
        try:
            stages = multistage_chunks(shape, src_chunks, dst_chunks, itemsize, min(limit // 8, 8 << 20), limit)
        except ValueError:
            stages = []
        limit *= 2
        mids = tuple(post for _, _, post in stages[:-1])
        if not mids or mids in seen or any(m in (src_chunks, dst_chunks) for m in mids):
            continue
        seen.add(mids)
        staged = _chain_plan(shape, (src_chunks, *mids, dst_chunks), itemsize, room, threads, buffer_bytes, filtered)
        if staged.fits(room) and (not best.fits(room) or staged.seconds < best.seconds):
            best = staged
    return best


def plan_copy(shape, src_chunks, dst_chunks, itemsize: int, room: int, threads: int = 1,
              buffer_bytes: int | None = None, filtered: bool = True) -> CopyPlan:
    """The fastest plan (nominal seconds) within ``room``: one pass, or stages through unfiltered intermediate
    copies (their temporary files take the dataset's raw size on disk each, beside OUT). ``filtered``: the
    source's chunks have filters to decode."""
    return _plan_copy(tuple(shape), tuple(src_chunks), tuple(dst_chunks), int(itemsize), int(room), int(threads),
                      None if buffer_bytes is None else int(buffer_bytes), bool(filtered))


def choose_stages(shape, src_chunks, dst_chunks, itemsize: int, room: int, threads: int = 1,
                  buffer_bytes: int | None = None, filtered: bool = True) -> tuple[tuple[int, ...], ...]:
    """The intermediate chunk shapes of :func:`plan_copy` (``()``: one pass)."""
    return plan_copy(shape, src_chunks, dst_chunks, itemsize, room, threads, buffer_bytes, filtered).stages


def once_room(shape, src_chunks, dst_chunks, itemsize: int, threads: int = 1) -> int:
    """The least room (to a MiB) whose single pass (:func:`ccp.repack.rechunk.plan_pass`) reads each source chunk
    once: from the least any such pass holds, doubled until one does, then halved back."""
    def once(room: int) -> bool:
        return plan_pass(shape, src_chunks, dst_chunks, itemsize, room, threads).rereads == 0

    lo = hi = max(2**20, no_reread_bytes(shape, src_chunks, dst_chunks, itemsize, threads))
    while not once(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 2**20:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if once(mid) else (mid, hi)
    return hi


def reread_note(plan: CopyPlan, shape, itemsize: int, threads: int, over_room: int) -> str:
    """One line when the copy reads its source chunks :data:`REREAD_WARN_FACTOR` times or more on average: how
    many times, and the ``--memory`` (``over_room``: what the budget holds beside the room) whose single pass reads
    each once; else ""."""
    first = plan.passes[0]
    nsrc = first.count.source_chunks
    if not nsrc or first.count.chunk_reads < REREAD_WARN_FACTOR * nsrc:
        return ""
    need = once_room(shape, plan.chain[0], plan.chain[-1], itemsize, threads) + over_room
    return (f"reads each source chunk {first.count.chunk_reads / nsrc:.1f} times on average "
            f"({first.count.chunk_reads} reads of {nsrc} chunks) within --memory; --memory {-(-need // 2**20)}MiB "
            f"reads each once")


__all__ = ["CopyPlan", "choose_stages", "consolidate", "io_ops", "multistage_chunks", "plan_copy", "reread_note",
           "stage_chunks"]
