"""Cost every candidate layout with the chunk-cache model and a calibration; keep the Pareto front.

Nothing here reads or writes HDF5 files (a ``copy`` pattern over a user's file is the exception:
the model needs that file's chunk index, read once through :mod:`ccp.predict`). The costs are the
model's counts (requests, raw reads and their bytes, chunk loads, chunk writes) priced by
:class:`Costs`: the sweep engine's :class:`ccp.predict.Calibration` plus a cost per raw file read and
the stored/uncompressed ratio of each filter on a sample of the data.

A long pattern is modelled on its first ``max_requests`` requests and scaled to the whole: tilings
repeat, so a prefix is representative; a pattern whose cost changes along the dataset is not.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.errors import CcpError
from ccp.hdf5.defaults import DEFAULT_W0, MIN_NSLOTS
from ccp.hdf5.filters import FilterPipeline
from ccp.matrix.cells import Cell
from ccp.predict import Calibration, predict_requests
from ccp.tune.device import PAGE_BYTES, request_stretches
from ccp.tune.lattice import cache_candidates, nchunks, padding
from ccp.units import format_bytes
from ccp.workload.requests import plan_for

INDEX_BYTES_PER_CHUNK = 48        # a chunk-index entry (B-tree v1 key + address), roughly: storage estimate only
NEAR_BEST = 0.02                  # caches predicted within 2% of the fastest count as equally fast: the largest
#                                   wins (a prediction tie saves no memory: only the same predicted I/O and a measured tie do, frugal_cache)
NO_REPACK_MARGIN = 0.05           # the current layout (a new cache only) is recommended if within 5% of the best
MAX_MODEL_REQUESTS = 5_000
MODEL_WORK = 20_000               # chunk visits one pattern may cost the model: the prefix shrinks for small chunks
MIN_MODEL_REQUESTS = 100


@dataclass(frozen=True)
class Costs:
    calibration: Calibration
    raw_read_s: float                         # one file read call (page cache warm), apart from its bytes
    ratio: dict = field(default_factory=dict)  # filter spec -> stored bytes / uncompressed bytes on a sample
    load_s: float = 0.0                       # per cold file operation: a distinct chunk fetched, or a page of a
    #                                           chunk read in parts (the sweep drops the page cache before each pass)
    visit_s: float = 0.0                      # per chunk a request touches (hit or load): HDF5's per-chunk work
    cold_byte_s: float = 0.0                  # per stored byte fetched cold (each byte of the file once a pass)
    open_s: float = 0.0                       # per pattern: the dataset's open and close (0 until fitted)
    fitted: str = ""                          # how the prices were fitted to measurement ("" = the probes' prices)
    write_op_s: float | None = None           # one chunk written to the file (allocation, index, the call);
    #                                           None: priced as a raw read
    write_byte_s: float | None = None         # per byte written; None: as a byte read

    @property
    def write_op(self) -> float:
        return self.raw_read_s if self.write_op_s is None else self.write_op_s

    @property
    def write_byte(self) -> float:
        return self.calibration.read_s_per_byte if self.write_byte_s is None else self.write_byte_s

    def group(self, name: str) -> Costs:
        """These costs with every price outside one group set to 0: the model's time is linear in the
        prices, so a candidate's time is the sum over :data:`PRICE_GROUPS` of its time under each."""
        return self.scaled({g: float(g == name) for g in PRICE_GROUPS if g != "open"},
                           self.open_s if name == "open" else 0.0, self.fitted)

    def scaled(self, factors: dict, open_s: float, how: str) -> Costs:
        """The prices of each group (:data:`PRICE_GROUPS`) multiplied by a factor fitted to measurement
        (a group not in ``factors`` keeps its price; the open is set, not scaled)."""
        f = {g: float(factors.get(g, 1.0)) for g in PRICE_GROUPS}
        cal = self.calibration
        return Costs(Calibration(cal.per_request_s * f["request"], cal.read_s_per_byte * f["byte"],
                                 {k: v * f["byte"] for k, v in cal.decode_s_per_byte.items()},
                                 {k: v * f["write"] for k, v in cal.encode_s_per_byte.items()}),
                     self.raw_read_s * f["chunk"], self.ratio, self.load_s * f["cold"], self.visit_s * f["chunk"],
                     self.cold_byte_s * f["cold_byte"], open_s, how, self.write_op * f["write"], self.write_byte * f["write"])


# per request; per chunk touched or raw read (warm); per byte read or decoded; per device trip of a cold pass (its
# wait) and per byte it fetches (its bandwidth: apart, so that one big sequential read and many small scattered ones
# are priced each by its own factor); per chunk and byte written (and encoded); per pattern (the open)
PRICE_GROUPS = ("request", "chunk", "byte", "cold", "cold_byte", "write", "open")


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
    device_trips: float | None = None   # a cold read pass's device trips as priced (:func:`cold_seconds`); None: not a read


@dataclass(frozen=True)
class Candidate:
    chunks: tuple[int, ...] | None
    filters: FilterPipeline
    cache: ChunkCache
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
    unvisited: int = 0            # layouts left unwalked at the search's time limit (the least promising)


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


def pattern_requests(access, shape) -> int:
    """How many requests a pattern makes on a dataset of ``shape``."""
    if access.random or getattr(access, "trace", None):
        return len(plan_for(access, shape))
    return math.prod(-(-s // b) for s, b in zip(shape, access.block))


def item_cost(cell: Cell, source, costs: Costs, max_requests: int = MAX_MODEL_REQUESTS, stored=None,
              first: int | None = None) -> ItemCost:
    """The model's counts for one pattern on one layout and cache, priced by ``costs``; with ``first``,
    of the pattern's first ``first`` requests only (a measured prefix, priced as such)."""
    n = pattern_requests(cell.access, source.shape)
    if first is not None:
        n = max(1, min(n, first))
    k = model_prefix(n, cell.access.block, cell.chunks, max_requests)
    total = model_counts(cell, source, stored, k)
    scale = n / k if k else 1.0
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = math.prod(cell.chunks) * itemsize if cell.chunks else 0
    filtered = not cell.filters.is_none
    ratio = costs.ratio.get(cell.filters.spec, 1.0) if filtered else 1.0
    # without stored sizes the model reads a filtered chunk as its uncompressed size: price the stored bytes
    read_bytes, write_bytes = total.raw_read_bytes * ratio, total.raw_write_bytes * ratio
    cal = costs.calibration
    dec = cal.decode_s_per_byte.get(cell.filters.spec, 0.0) if filtered else 0.0
    enc = cal.encode_s_per_byte.get(cell.filters.spec, 0.0) if filtered else 0.0
    seconds = (k * cal.per_request_s + read_bytes * cal.read_s_per_byte + total.chunk_loads * chunk_bytes * dec
               + total.raw_reads * costs.raw_read_s + (total.chunk_loads + total.chunk_hits) * costs.visit_s
               + total.raw_writes * costs.write_op + write_bytes * costs.write_byte
               + (total.raw_writes * chunk_bytes * enc if filtered else 0.0))
    trips = None
    if cell.access.op == "read":
        cold_s, trips = cold_seconds(cell, source, costs, total, k / n, chunk_bytes, ratio, read_bytes)
        seconds += cold_s
    return ItemCost(n, total.chunk_loads * scale, total.raw_reads * scale, read_bytes * scale,
                    total.chunk_loads * chunk_bytes * scale if filtered else 0.0, total.raw_writes * scale,
                    seconds * scale + costs.open_s, trips * scale if trips is not None else None)


def cold_seconds(cell: Cell, source, costs: Costs, total, fraction: float, chunk_bytes: int, ratio: float,
                 read_bytes: float) -> tuple[float, float]:
    """The device's part of a cold read pass (the sweep drops the file's pages before each pass): each
    device trip the pass makes waits (:data:`Costs.load_s`), each byte it fetches is paid
    (:data:`Costs.cold_byte_s`), each stored byte at most once a pass. The trips are the request's
    stretches (:mod:`ccp.tune.device`: the file runs it reaches, runs within the kernel's readahead of
    each other one forward sweep over their span), at most one per file operation the model counts
    (a chunk fetched, or a raw read of a chunk read in parts) and, over the pass, one per chunk of the
    grid (loaded whole) or per page of the file (read in parts). ``fraction``: the share of the pattern
    the model walked (caps scale with it; the caller scales the prefix back up). Returns (seconds, the
    device trips priced: the tie rule's first count)."""
    filtered = not cell.filters.is_none
    grid = nchunks(source.shape, cell.chunks) if cell.chunks else 1
    stored_bytes = grid * chunk_bytes * ratio if cell.chunks else math.prod(source.shape) * np.dtype(source.dtype).itemsize
    fetched = total.chunk_loads if filtered else max(total.chunk_loads, total.raw_reads)
    in_parts = not filtered and total.raw_reads > total.chunk_loads
    cap = max(grid, -(-int(stored_bytes) // PAGE_BYTES)) if in_parts else grid
    ops, nbytes = fetched, read_bytes
    access = cell.access
    if getattr(access, "trace", None) is None and fetched > 0:
        trips, span, touched = request_stretches(source.shape, cell.chunks, access.block, np.dtype(source.dtype).itemsize,
                                                 chunk_bytes * ratio, in_parts)
        k = fraction * pattern_requests(access, source.shape)
        # a chunk the cache already held is not fetched again: the span shrinks with the share fetched
        share = 1.0 if cell.chunks is None or in_parts else min(1.0, total.chunk_loads / max(k * touched, 1e-9))
        nbytes = max(read_bytes, span * k * share)
        # bytes an earlier request of the pass fetched are in the page cache: so are the trips to them
        reach = min(1.0, stored_bytes * fraction / nbytes) if nbytes > 0 else 1.0
        ops = min(fetched, max(trips * k * reach, fraction))     # one trip a pass at least
        if not access.random and access.order in (None, tuple(range(len(access.block)))) and trips <= 1:
            # a tiling in C order meets the file's bytes first in file order: each request one forward sweep,
            # each after the last, so the pass is one stream the kernel reads ahead (a trip to start it)
            ops = min(ops, fraction)
    ops = min(ops, cap * fraction)
    return ops * costs.load_s + min(nbytes, stored_bytes * fraction) * costs.cold_byte_s, ops


_COUNTS: dict = {}
_COUNTS_MAX = 200_000


def model_counts(cell: Cell, source, stored, k: int):
    """The model's totals of one pattern's first ``k`` requests. Every compressing pipeline gives
    the same counts (the model knows only filtered or not): each (chunks, filtered, cache,
    access) is walked once per process, however many filters are candidates."""
    if stored is not None:
        return predict_requests(cell, source, stored, max_requests=k, per_request=False).total()
    key = (tuple(source.shape), np.dtype(source.dtype).itemsize, cell.chunks, cell.filters.is_none, cell.cache,
           cell.access, k)
    total = _COUNTS.get(key)
    if total is None:
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        total = _COUNTS[key] = predict_requests(cell, source, None, max_requests=k, per_request=False).total()
    return total


def model_prefix(n: int, block, chunks, max_requests: int = MAX_MODEL_REQUESTS) -> int:
    """How many of a pattern's ``n`` requests the model walks (the rest is scaled from them)."""
    return min(n, max_requests, max(MIN_MODEL_REQUESTS, MODEL_WORK // chunks_per_request(block, chunks)))


@lru_cache(maxsize=256)
def _random_tiles(shape: tuple, block: tuple, n: int, seed: int) -> np.ndarray:
    """The block-grid coordinates of a random pattern's requests, in order (as the plan draws them)."""
    plan = plan_for(AccessSpec("read", block, random=n, seed=seed), shape)
    return np.asarray(plan.starts, np.int64) // np.asarray(block, np.int64)


def _per_tile(n: int, b: int, c: int) -> np.ndarray:
    """Along one dimension of ``n`` tiled by ``b`` with chunks of ``c``: chunks each tile touches."""
    s = np.arange(0, n, b)
    return (np.minimum(s + b, n) - 1) // c - s // c + 1


def chunks_per_request(block, chunks) -> int:
    """Chunks one block-aligned request of ``block`` touches, at most (the model's work per request)."""
    if chunks is None:
        return 1
    return math.prod(-(-b // c) + (1 if b % c and c > 1 else 0) for b, c in zip(block, chunks))


@lru_cache(maxsize=65536)
def _dim_touch(n: int, b: int, c: int) -> tuple[int, int, int]:
    """Along one dimension of ``n`` tiled by ``b`` with chunks of ``c``: (tiles, chunks touched
    summed over the tiles, fewest chunks one tile touches)."""
    per = _per_tile(n, b, c)
    return len(per), int(per.sum()), int(per.min())


def read_bound(chunks, filters: FilterPipeline, source, items, costs: Costs) -> float:
    """A lower bound on the weighted time of the workload's reads on ``chunks`` with any cache,
    from arithmetic alone (no model walk): each request's fixed cost, each chunk a request touches
    visited or read once, each chunk of the grid fetched cold and (filtered) decoded at least once.
    Patterns it cannot bound (traces, writes) count 0. Lets the search skip most layouts unwalked."""
    if chunks is None:
        return 0.0
    cal = costs.calibration
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = math.prod(chunks) * itemsize
    filtered = not filters.is_none
    ratio = costs.ratio.get(filters.spec, 1.0) if filtered else 1.0
    dec = cal.decode_s_per_byte.get(filters.spec, 0.0) if filtered else 0.0
    per_touch = min(costs.visit_s, costs.raw_read_s) if not filtered else costs.visit_s
    total = 0.0
    for it in items:
        a = it.access
        if a.op != "read" or getattr(a, "trace", None):
            continue
        dims = [_dim_touch(n, b, c) for n, b, c in zip(source.shape, a.block, chunks)]
        tiles = math.prod(d[0] for d in dims)
        touched = math.prod(d[1] for d in dims)
        if a.random:
            # the chunks the drawn requests touch, not the grid's mean per tile: a draw heavy in the
            # short edge tiles touches fewer. Counted on the prefix the model walks, scaled as it scales
            k = model_prefix(a.random, a.block, chunks)
            coords = _random_tiles(tuple(source.shape), tuple(a.block), a.random, a.seed)[:k]
            per_req = np.ones(len(coords), np.int64)
            for d, (n, b, c) in enumerate(zip(source.shape, a.block, chunks)):
                per_req *= _per_tile(n, b, c)[coords[:, d]]
            requests, visits = a.random, float(per_req.sum()) * a.random / k
            fetched = int(per_req.max())                   # one request's chunks, at least
            # cold bytes: that request's chunks (filtered: loaded whole) or its own bytes (read in parts)
            cold_bytes = fetched * chunk_bytes if filtered else min(fetched * chunk_bytes, math.prod(a.block) * itemsize)
        else:
            requests, visits, fetched = tiles, touched, nchunks(source.shape, chunks)
            cold_bytes = fetched * chunk_bytes if filtered else math.prod(source.shape) * itemsize
        first = chunk_bytes * (dec + ratio * cal.read_s_per_byte) + costs.raw_read_s if filtered else 0.0
        # one device trip at least: chunks that follow one another in the file stream in one (readahead)
        total += it.weight * (requests * cal.per_request_s + visits * per_touch + fetched * first + costs.load_s
                              + cold_bytes * ratio * costs.cold_byte_s + costs.open_s)
    return total


def write_bound(chunks, filters: FilterPipeline, source, costs: Costs) -> float:
    """A lower bound on :func:`production_cost`: every chunk of the grid written (and encoded) once, a request each."""
    if chunks is None:
        return 0.0
    cal = costs.calibration
    filtered = not filters.is_none
    chunk_bytes = math.prod(chunks) * np.dtype(source.dtype).itemsize
    ratio = costs.ratio.get(filters.spec, 1.0) if filtered else 1.0
    enc = cal.encode_s_per_byte.get(filters.spec, 0.0) if filtered else 0.0
    n = nchunks(source.shape, chunks)
    return n * (cal.per_request_s + costs.write_op + chunk_bytes * (enc + ratio * costs.write_byte)) + costs.open_s


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
    cell = Cell(tuple(chunks) if chunks is not None else None, filters, ChunkCache(nb, MIN_NSLOTS, DEFAULT_W0), AccessSpec("write", block))
    return item_cost(cell, source, costs).seconds


def evaluate(chunks, filters: FilterPipeline, cache: ChunkCache, source, items, costs: Costs,
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
           max_requests: int = MAX_MODEL_REQUESTS, progress: Callable[[int, int], None] | None = None,
           keep_best: int = 5, time_limit: float | None = None) -> SearchResult:
    """Every (chunks, filters) of the lattice within the storage constraint, each with the cache
    that makes it fastest (the largest one within :data:`NEAR_BEST` of that), then the front.

    Branch and bound: layouts are visited in order of an arithmetic lower bound on their read time
    (:func:`read_bound`; :func:`write_bound`; storage is exact), and a layout whose bound a layout
    already found dominates is dropped unwalked. Survivors are walked with their largest cache
    (a larger cache never needs more loads, bar hash collisions) and, unfiltered, with no cache
    (HDF5 then reads the chunk raw, in parts: faster than loading it whole, at times), and dropped
    if the faster of the two is dominated; the rest keep the largest cache within
    :data:`NEAR_BEST` of the faster: a smaller one the model predicts as fast is no reason to
    shrink the cache (cold passes measured such picks slower); only a measured tie is
    (:func:`frugal_cache`, tried on the final pick). With writes every cache and w0 is tried,
    and the largest within :data:`NEAR_BEST` of the fastest kept. ``current`` is
    the stored (chunks, filters): within :data:`NO_REPACK_MARGIN` of the best it is recommended,
    a new cache being cheaper to apply than a repack. The ``keep_best`` fastest layouts are never
    dropped, dominated or not: they are the shortlist measurement chooses from.
    """
    itemsize = np.dtype(source.dtype).itemsize
    w0s = (DEFAULT_W0, 1.0) if any(it.access.op != "read" for it in items) else (DEFAULT_W0,)
    has_writes = any(it.access.op != "read" for it in items)
    evaluated = pruned = rejected = 0
    best: list[Candidate] = []
    points: list[tuple[float, float, int]] = []
    queue = []
    for chunks in lattice:
        for filt in filters:
            ratio = costs.ratio.get(filt.spec, 1.0) if not filt.is_none else 1.0
            sb, over = storage(source.shape, itemsize, chunks, ratio)
            is_current = current is not None and (tuple(chunks), filt.spec) == (tuple(current[0]), current[1].spec)
            if over > max_storage_overhead and not is_current:
                rejected += 1
                continue
            rb = read_bound(chunks, filt, source, items, costs)
            # the workload's own writes are not bounded (0): the production write is, when it is the write axis
            wb = 0.0 if has_writes else write_bound(chunks, filt, source, costs)
            queue.append((not is_current, rb, wb, sb, tuple(chunks), filt, is_current))
    queue.sort(key=lambda q: (q[0], q[1] + q[2], q[3]))       # the current layout first, then by bound
    fastest_k: list[float] = []                                # the keep_best fastest workload times so far

    def droppable(point, workload_lb) -> bool:
        beaten = keep_best <= 0 or (len(fastest_k) >= keep_best and workload_lb >= fastest_k[keep_best - 1])
        return beaten and _dominated(points, point)

    started = time.perf_counter()
    unvisited = 0
    for i, (_, rb, wb, sb, chunks, filt, is_current) in enumerate(queue):
        if progress:
            progress(i, len(queue))
        if time_limit is not None and best and time.perf_counter() - started > time_limit:
            unvisited = len(queue) - i
            break
        if not is_current and droppable((rb, wb, sb), rb):
            pruned += 1
            continue
        chunk_bytes = math.prod(chunks) * itemsize
        caches = cache_candidates(chunk_bytes, max_cache_bytes, fixed_cache, w0s, grid_chunks=nchunks(source.shape, chunks))
        top = evaluate(chunks, filt, ChunkCache(*caches[-1]), source, items, costs, None, max_requests)
        tried = {caches[-1]: top}
        if len(w0s) == 1 and filt.is_none and len(caches) > 1:
            # no cache reads an unfiltered chunk raw, in parts: cheaper than loading it at times (fewer chunk
            # visits, a forward sweep for the device), so the largest cache alone is no lower bound
            tried[caches[0]] = evaluate(chunks, filt, ChunkCache(*caches[0]), source, items, costs, top.write_s, max_requests)
        low = min(tried.values(), key=lambda t: t.workload_s)
        evaluated += 1
        if not is_current and len(caches) > 1 and droppable((low.read_s, low.write_s, low.storage_bytes), low.workload_s):
            evaluated += len(tried) - 1
            pruned += 1
            continue

        def cost(c, chunks=chunks, filt=filt, wr=top.write_s, tried=tried):
            if c not in tried:
                tried[c] = evaluate(chunks, filt, ChunkCache(*c), source, items, costs, wr, max_requests)
            return tried[c]

        if len(w0s) > 1:                 # writes: w0 matters too, every cache is tried
            for c in caches[:-1]:
                cost(c)
        else:                            # no cache: unfiltered chunks are then read raw, in parts, often faster
            cost(caches[0])
        evaluated += len(tried) - 1
        fastest = min(t.workload_s for t in tried.values())
        chosen = min((t for t in tried.values() if t.workload_s <= fastest * (1 + NEAR_BEST)),
                     key=lambda t: (-t.cache.nbytes, t.workload_s, -t.cache.nslots))
        best.append(chosen)
        points.append((chosen.read_s, chosen.write_s, chosen.storage_bytes))
        fastest_k = sorted([*fastest_k, chosen.workload_s])[:keep_best]
    if not best:
        whole_over = storage(source.shape, itemsize, source.shape, 1.0)[1]
        if whole_over > max_storage_overhead:     # no chunked layout can be within: the index alone is over
            raise CcpError(f"the dataset is {format_bytes(math.prod(source.shape) * itemsize)}: even as one chunk, its "
                           f"chunk index stores {whole_over:.0%} more than its data, over max_storage_overhead "
                           f"{max_storage_overhead:g}; a dataset this small is best contiguous (nothing to tune)")
        raise CcpError(f"constraints: no chunk shape of at most max_chunk_bytes is within max_storage_overhead "
                       f"{max_storage_overhead:g} ({rejected} shapes over it): raise max_storage_overhead or max_chunk_bytes")
    front_idx = pareto_front(points)
    best_sorted = sorted(best, key=lambda c: (c.workload_s, c.storage_bytes))
    rec = recommend(best_sorted, current)
    front = tuple(sorted((best[i] for i in front_idx), key=lambda c: c.workload_s))
    return SearchResult(evaluated, len(best) + pruned + unvisited, pruned, rejected, front, tuple(best_sorted), rec, unvisited)


def same_io(a: Candidate, b: Candidate) -> bool:
    """The model predicts the same I/O for two candidates, pattern by pattern: chunk loads, file operations
    (raw reads and writes) and bytes read. Counts, not times: deterministic, whatever the machine's load."""
    keys = ("chunk_loads", "raw_reads", "raw_writes", "raw_read_bytes")
    return len(a.items) == len(b.items) and all(
        math.isclose(getattr(x, k), getattr(y, k), rel_tol=1e-9, abs_tol=1e-9) for x, y in zip(a.items, b.items) for k in keys)


def frugal_cache(chunks, filters: FilterPipeline, cache: ChunkCache, source, items, costs: Costs, *,
                 max_cache_bytes: int, fixed_cache: int | None) -> Candidate | None:
    """The smallest cache for which the model predicts the same I/O as ``cache`` on this layout (:func:`same_io`:
    every pattern's chunk loads, file operations and bytes read equal; same w0), found by bisection over the
    cache sizes (loads fall as the cache grows); None when none is smaller. Only a candidate to measure:
    tune takes it when it also measured no slower beside it (interleaved rounds). A smaller cache that
    changes the I/O (more chunk loads, or a chunk read raw in parts for want of room) is never offered,
    however close its predicted time: a busy machine's near-tie is no evidence it costs nothing."""
    if chunks is None or fixed_cache is not None:
        return None
    chunk_bytes = math.prod(chunks) * np.dtype(source.dtype).itemsize
    caches = [c for c in cache_candidates(chunk_bytes, max_cache_bytes, None, (cache.w0,),
                                          grid_chunks=nchunks(source.shape, chunks)) if c[0] < cache.nbytes]
    if not caches:
        return None
    budget = evaluate(chunks, filters, cache, source, items, costs)
    found = None
    lo, hi = 0, len(caches) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = evaluate(chunks, filters, ChunkCache(*caches[mid]), source, items, costs)
        if same_io(cand, budget):
            found, hi = cand, mid - 1
        else:
            lo = mid + 1
    return found


def _dominated(points, bound) -> bool:
    return any(dominates(p, bound) for p in points)


def recommend(best_sorted: Sequence[Candidate], current=None) -> Candidate:
    """The fastest candidate, unless the current layout with a new cache is within the margin."""
    top = best_sorted[0]
    if current is not None:
        for c in best_sorted:
            if (c.chunks, c.filters.spec) == (tuple(current[0]), current[1].spec) and c.workload_s <= top.workload_s * (1 + NO_REPACK_MARGIN):
                return c
    return top
