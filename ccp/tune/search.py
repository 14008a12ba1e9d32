"""Cost every candidate layout with the chunk-cache model and a calibration; keep the Pareto front.

Nothing here reads or writes HDF5 files (a ``copy`` pattern over a user's file is the exception:
the model needs that file's chunk index, read once through :mod:`ccp.plan`). The costs are the
model's counts (requests, raw reads and their bytes, chunk loads, chunk writes) priced by
:class:`Costs`: the sweep engine's :class:`ccp.plan.Calibration` plus a cost per raw file read and
the stored/uncompressed ratio of each filter on a sample of the data.

A long pattern is modelled on its first ``max_requests`` requests and scaled to the whole: tilings
repeat, so a prefix is representative; a pattern whose cost changes along the dataset is not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ccp.config.filters import FilterPipeline
from ccp.config.sweep import AccessSpec, CacheSpec
from ccp.errors import CcpError
from ccp.matrix.cells import Cell
from ccp.plan import Calibration, predict_requests
from ccp.tune.lattice import cache_candidates, nchunks, padding
from ccp.workload.requests import plan_for

INDEX_BYTES_PER_CHUNK = 48        # a chunk-index entry (B-tree v1 key + address), roughly: storage estimate only
NEAR_BEST = 0.02                  # caches within 2% of the fastest count as equally fast: the smallest wins
NO_REPACK_MARGIN = 0.05           # the current layout (a new cache only) is recommended if within 5% of the best
MAX_MODEL_REQUESTS = 5_000
MODEL_WORK = 20_000               # chunk visits one pattern may cost the model: the prefix shrinks for small chunks
MIN_MODEL_REQUESTS = 100


@dataclass(frozen=True)
class Costs:
    calibration: Calibration
    raw_read_s: float                         # one file read call (page cache warm), apart from its bytes
    ratio: dict = field(default_factory=dict)  # filter spec -> stored bytes / uncompressed bytes on a sample
    load_s: float = 0.0                       # per distinct chunk fetched, cold: index lookup and the device
    visit_s: float = 0.0                      # per chunk a request touches (hit or load): HDF5's per-chunk work
    cold_byte_s: float = 0.0                  # per stored byte of a distinct chunk fetched, cold, beyond a warm read


@dataclass(frozen=True)
class ItemCost:
    """One workload pattern on one candidate, the whole pattern (a prefix scaled up)."""

    requests: int
    chunk_loads: float
    raw_reads: float
    raw_read_bytes: float
    bytes_decoded: float
    raw_writes: float
    seconds: float


@dataclass(frozen=True)
class Candidate:
    chunks: tuple[int, ...] | None
    filters: FilterPipeline
    cache: CacheSpec
    read_s: float                 # weighted time of the workload's reads
    write_s: float                # weighted time of its writes; none in the workload: writing the dataset once by chunks
    workload_s: float             # weighted time of every pattern in the workload (the objective)
    storage_bytes: int
    overhead: float               # padding of edge chunks + chunk index, over the data's stored size
    items: tuple[ItemCost, ...] = ()
    label: str = ""

    @property
    def layout(self) -> tuple:
        return (self.chunks, self.filters.spec)


@dataclass(frozen=True)
class SearchResult:
    evaluated: int                # (chunks, filters, cache) combinations the model costed
    layouts: int                  # (chunks, filters) pairs within the constraints
    pruned: int                   # layouts dropped by the dominance bound after one cache
    rejected: int                 # chunk shapes over max_storage_overhead
    front: tuple[Candidate, ...]  # Pareto front of (read_s, write_s, storage_bytes), fastest first
    best: tuple[Candidate, ...]   # every costed layout with its chosen cache, fastest first
    recommended: Candidate


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` is no worse than ``b`` everywhere and better somewhere (all minimised)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def pareto_front(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the points no other point dominates (ties kept once: the first of equal points)."""
    order = sorted(range(len(points)), key=lambda i: tuple(points[i]))
    front: list[int] = []
    for i in order:
        p = tuple(points[i])
        if any(tuple(points[j]) == p or dominates(points[j], p) for j in front):
            continue
        front.append(i)
    return sorted(front)


def item_cost(cell: Cell, source, costs: Costs, max_requests: int = MAX_MODEL_REQUESTS, stored=None) -> ItemCost:
    """The model's counts for one pattern on one layout and cache, priced by ``costs``."""
    n = len(plan_for(cell.access, source.shape)) if (cell.access.random or getattr(cell.access, "trace", None)) else \
        math.prod(-(-s // b) for s, b in zip(source.shape, cell.access.block))
    k = min(n, max_requests, max(MIN_MODEL_REQUESTS, MODEL_WORK // chunks_per_request(cell.access.block, cell.chunks)))
    total = predict_requests(cell, source, stored, max_requests=k, per_request=False).total()
    scale = n / k if k else 1.0
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = math.prod(cell.chunks) * itemsize if cell.chunks else 0
    filtered = not cell.filters.is_none
    ratio = costs.ratio.get(cell.filters.spec, 1.0) if filtered else 1.0
    # without stored sizes the model reads a filtered chunk as its uncompressed size: price the stored bytes
    total = replace(total, raw_read_bytes=int(total.raw_read_bytes * ratio), raw_write_bytes=int(total.raw_write_bytes * ratio))
    # the first fetch of a chunk is cold (the sweep drops the page cache before each pass); at most
    # every chunk of the grid once, at most every fetch (a prefix: scaled back below)
    grid = nchunks(source.shape, cell.chunks) if cell.chunks else 1
    fetched = max(total.chunk_loads, total.raw_reads if not filtered else 0)
    distinct = min(fetched, grid * k / n if n else grid)
    seconds = (costs.calibration.cell_time(cell, total, k, chunk_bytes) + (total.raw_reads + total.raw_writes) * costs.raw_read_s
               + (total.chunk_loads + total.chunk_hits) * costs.visit_s
               + distinct * (costs.load_s + chunk_bytes * ratio * costs.cold_byte_s))
    return ItemCost(n, total.chunk_loads * scale, total.raw_reads * scale, total.raw_read_bytes * scale,
                    total.chunk_loads * chunk_bytes * scale if filtered else 0.0, total.raw_writes * scale, seconds * scale)


def chunks_per_request(block, chunks) -> int:
    """Chunks one block-aligned request of ``block`` touches, at most (the model's work per request)."""
    if chunks is None:
        return 1
    return math.prod(-(-b // c) + (1 if b % c and c > 1 else 0) for b, c in zip(block, chunks))


def storage(shape, itemsize: int, chunks, ratio: float) -> tuple[int, float]:
    """(estimated stored bytes, overhead over the data's own stored size) of a chunked layout."""
    data = math.prod(shape) * itemsize * ratio
    pad = padding(shape, chunks)
    index = nchunks(shape, chunks) * INDEX_BYTES_PER_CHUNK
    stored = data * (1 + pad) + index
    return int(stored), stored / data - 1.0 if data else 0.0


def production_cost(chunks, filters, source, costs: Costs) -> float:
    """Writing the whole dataset once, a chunk per request: the write axis when the workload has no writes."""
    itemsize = np.dtype(source.dtype).itemsize
    block = tuple(chunks) if chunks is not None else tuple(source.shape)
    nb = math.prod(block) * itemsize + 1024
    cell = Cell(tuple(chunks) if chunks is not None else None, filters, CacheSpec(nb, 521, 0.75), AccessSpec("write", block))
    return item_cost(cell, source, costs).seconds


def evaluate(chunks, filters: FilterPipeline, cache: CacheSpec, source, items, costs: Costs,
             write_s: float | None = None, max_requests: int = MAX_MODEL_REQUESTS, label: str = "",
             stored: Callable | None = None) -> Candidate:
    """One candidate: every pattern of the workload on it, weighted."""
    itemsize = np.dtype(source.dtype).itemsize
    per = []
    for it in items:
        st = stored(it.access) if stored else None
        per.append(item_cost(Cell(tuple(chunks) if chunks is not None else None, filters, cache, it.access),
                             source, costs, max_requests, st))
    read_s = sum(it.weight * c.seconds for it, c in zip(items, per) if it.access.op == "read")
    writes = [(it, c) for it, c in zip(items, per) if it.access.op != "read"]
    if write_s is None:
        write_s = sum(it.weight * c.seconds for it, c in writes) if writes else production_cost(chunks, filters, source, costs)
    ratio = costs.ratio.get(filters.spec, 1.0) if not filters.is_none else 1.0
    if chunks is None:
        sb, over = math.prod(source.shape) * itemsize, 0.0
    else:
        sb, over = storage(source.shape, itemsize, chunks, ratio)
    workload_s = sum(it.weight * c.seconds for it, c in zip(items, per))
    return Candidate(tuple(chunks) if chunks is not None else None, filters, cache, read_s, write_s, workload_s, sb, over, tuple(per), label)


def search(source, items, lattice: Sequence[tuple[int, ...]], filters: Sequence[FilterPipeline], costs: Costs, *,
           fixed_cache: int | None, max_cache_bytes: int, max_storage_overhead: float, current=None,
           max_requests: int = MAX_MODEL_REQUESTS, progress: Callable[[int, int], None] | None = None) -> SearchResult:
    """Every (chunks, filters) of the lattice within the storage constraint, each with the cache
    that makes it fastest (the smallest one within :data:`NEAR_BEST` of that), then the front.

    Each layout is first costed with its largest cache, a lower bound on its read time (a larger
    cache never needs more loads, bar hash collisions); a layout whose bound is dominated by a
    layout already found is dropped without trying its other caches. ``current`` is the stored
    (chunks, filters): within :data:`NO_REPACK_MARGIN` of the best it is recommended, a new cache
    being cheaper to apply than a repack.
    """
    itemsize = np.dtype(source.dtype).itemsize
    w0s = (0.75, 1.0) if any(it.access.op != "read" for it in items) else (0.75,)
    evaluated = pruned = rejected = 0
    best: list[Candidate] = []
    points: list[tuple[float, float, int]] = []
    layouts = [(c, f) for c in lattice for f in filters]
    for i, (chunks, filt) in enumerate(layouts):
        if progress:
            progress(i, len(layouts))
        ratio = costs.ratio.get(filt.spec, 1.0) if not filt.is_none else 1.0
        _, over = storage(source.shape, itemsize, chunks, ratio)
        is_current = current is not None and (tuple(chunks), filt.spec) == (tuple(current[0]), current[1].spec)
        if over > max_storage_overhead and not is_current:
            rejected += 1
            continue
        chunk_bytes = math.prod(chunks) * itemsize
        caches = cache_candidates(chunk_bytes, max_cache_bytes, fixed_cache, w0s)
        wr = None
        top = evaluate(chunks, filt, CacheSpec(*caches[-1]), source, items, costs, None, max_requests)
        evaluated += 1
        wr = top.write_s
        bound = (top.read_s, top.write_s, top.storage_bytes)
        if not is_current and len(caches) > 1 and any(dominates(p, bound) for p in points):
            pruned += 1
            continue
        tried = [top]
        for c in caches[:-1]:
            tried.append(evaluate(chunks, filt, CacheSpec(*c), source, items, costs, wr, max_requests))
            evaluated += 1
        fastest = min(t.workload_s for t in tried)
        chosen = min((t for t in tried if t.workload_s <= fastest * (1 + NEAR_BEST)),
                     key=lambda t: (t.cache.nbytes, t.cache.nslots, t.workload_s))
        best.append(chosen)
        points.append((chosen.read_s, chosen.write_s, chosen.storage_bytes))
    if not best:
        raise CcpError(f"constraints: no chunk shape of at most max_chunk_bytes is within max_storage_overhead "
                       f"{max_storage_overhead:g} ({rejected} shapes over it): raise max_storage_overhead or max_chunk_bytes")
    front_idx = pareto_front(points)
    best_sorted = sorted(best, key=lambda c: (c.workload_s, c.storage_bytes))
    rec = recommend(best_sorted, current)
    front = tuple(sorted((best[i] for i in front_idx), key=lambda c: c.workload_s))
    return SearchResult(evaluated, len(best) + pruned, pruned, rejected, front, tuple(best_sorted), rec)


def recommend(best_sorted: Sequence[Candidate], current=None) -> Candidate:
    """The fastest candidate, unless the current layout with a new cache is within the margin."""
    top = best_sorted[0]
    if current is not None:
        for c in best_sorted:
            if (c.chunks, c.filters.spec) == (tuple(current[0]), current[1].spec) and c.workload_s <= top.workload_s * (1 + NO_REPACK_MARGIN):
                return c
    return top
