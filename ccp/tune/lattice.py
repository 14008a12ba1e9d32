"""Candidate chunk shapes and chunk caches: pure math, no I/O.

A chunk dimension ``c`` over a dimension of ``n`` elements makes ``ceil(n / c)`` chunks, the last
one padded to ``c`` (HDF5 allocates whole chunks). For each count ``k`` of chunks along a dimension,
the smallest chunk that gives ``k`` chunks is ``ceil(n / k)``: the *near-divisors* of ``n``. They
include the divisors (no padding at all) and waste less than ``k`` elements per row of chunks,
which is why the search walks them rather than powers of two. The workload's block sizes and their
multiples are added: a chunk equal to a request's block is often the answer, divisor or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ccp.chunkcache import HDF5_1X
from ccp.hdf5.defaults import DEFAULT_W0, MIN_NSLOTS


def near_divisors(n: int) -> list[int]:
    """Sorted ``{ceil(n / k) : 1 <= k <= n}``: per number of chunks, the smallest chunk giving it."""
    out, k = set(), 1
    while k <= n:
        c = -(-n // k)
        out.add(c)
        # next k whose ceil(n/k) is smaller than c: the first k with n <= k * (c - 1)
        k = max(k + 1, -(-n // (c - 1)) if c > 1 else n + 1)
    return sorted(out)


def thin(values: Sequence[int], ratio: float, keep: Iterable[int] = ()) -> list[int]:
    """A subset of sorted ``values`` with consecutive members at least ``ratio`` apart (first and
    last kept), plus every value in ``keep``: a geometric sieve for long dimensions."""
    values = sorted(set(values))
    if not values:
        return []
    out = [values[0]]
    for v in values[1:-1]:
        if v >= out[-1] * ratio:
            out.append(v)
    if values[-1] != out[-1]:
        out.append(values[-1])
    keep = {v for v in keep if values[0] <= v <= values[-1]}
    return sorted(set(out) | keep)


def dim_candidates(n: int, blocks: Iterable[int] = (), ratio: float = 1.0) -> list[int]:
    """Chunk sizes for a dimension of ``n``: its near-divisors and the multiples of each block size
    that are near-divisors, thinned to ``ratio`` apart when ``ratio > 1``; the block sizes
    themselves and ``n`` are always kept."""
    nd = near_divisors(n)
    blocks = [int(b) for b in blocks if 1 <= int(b) <= n]
    nd_set = set(nd)
    aligned = {m for b in blocks if b > 1 for m in range(b, n + 1, b) if m in nd_set}
    keep = set(blocks) | {n}
    if ratio <= 1.0:
        return sorted(nd_set | aligned | keep)
    # thin the block-aligned sizes and the rest apart, so neither crowds the other out
    return sorted(set(thin(nd, ratio)) | set(thin(sorted(aligned), ratio)) | keep)


def chunk_lattice(shape: Sequence[int], itemsize: int, max_chunk_bytes: int, blocks: Sequence[Sequence[int]] = (),
                  limit: int = 4000, extra: Iterable[Sequence[int]] = ()) -> list[tuple[int, ...]]:
    """Chunk shapes over the per-dimension candidates whose chunk is at most ``max_chunk_bytes``.

    When the full product has more than ``limit`` shapes, each dimension's near-divisors are
    thinned geometrically (ratio 1.25, 1.5, 2, ...) until it fits; block sizes and their multiples
    are always kept, and so are the ``extra`` shapes (the current layout, heuristics)."""
    rank = len(shape)
    max_elems = max(1, max_chunk_bytes // max(1, itemsize))
    ratio = 1.0
    while True:
        per_dim = [dim_candidates(shape[d], [b[d] for b in blocks], ratio) for d in range(rank)]
        total = math.prod(len(p) for p in per_dim)
        if total <= 8 * limit or ratio > 64:
            shapes = _product_within(per_dim, max_elems)
            if len(shapes) <= limit or ratio > 64:
                break
        ratio = 1.25 if ratio == 1.0 else ratio * 1.3
    out = set(shapes)
    for e in extra:
        e = tuple(int(x) for x in e)
        if len(e) == rank and all(1 <= c <= n for c, n in zip(e, shape)) and math.prod(e) <= max_elems:
            out.add(e)
    return sorted(out)


def _product_within(per_dim: list[list[int]], max_elems: int) -> list[tuple[int, ...]]:
    """Cartesian product of the per-dimension lists, pruned as soon as the partial volume exceeds the cap."""
    out: list[tuple[int, ...]] = []

    def rec(d: int, prefix: tuple[int, ...], vol: int) -> None:
        if d == len(per_dim):
            out.append(prefix)
            return
        for c in per_dim[d]:           # sorted ascending: stop at the first that overflows
            if vol * c > max_elems:
                break
            rec(d + 1, prefix + (c,), vol * c)

    rec(0, (), 1)
    return out


def padding(shape: Sequence[int], chunks: Sequence[int]) -> float:
    """Elements allocated by the chunk grid over elements in the dataset, minus one."""
    grid = math.prod(-(-n // c) * c for n, c in zip(shape, chunks))
    return grid / math.prod(shape) - 1.0


def nchunks(shape: Sequence[int], chunks: Sequence[int]) -> int:
    return math.prod(-(-n // c) for n, c in zip(shape, chunks))


# ------------------------------------------------------------------ caches

def is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % p for p in range(2, math.isqrt(n) + 1))


def next_prime(n: int) -> int:
    n = max(2, int(n))
    while not is_prime(n):
        n += 1
    return n


CACHE_OVERHEAD = 1024      # a few bytes over k chunks: HDF5 caches a chunk only if it fits entirely
MAX_NSLOTS = 100_003       # 800 KB of hash table: more slots cost memory and buy nothing measurable
MAX_CACHED_CHUNKS = 4096   # beyond this a cache is a copy of the dataset, not a chunk cache


def cache_candidates(chunk_bytes: int, max_cache_bytes: int, fixed_nbytes: int | None = None,
                     w0s: Sequence[float] = (DEFAULT_W0,), default_nbytes: int = HDF5_1X.nbytes,
                     grid_chunks: int | None = None) -> list[tuple[int, int, float]]:
    """(nbytes, nslots, w0) to try for a chunk of ``chunk_bytes``, smallest cache first.

    Searched: room for 1, 2, 4, 8... chunks up to ``max_cache_bytes``, plus ``default_nbytes``, no
    cache at all, and the budget itself (the largest cache; with ``grid_chunks``, the dataset's
    chunks, no more than room for all of them: a bigger cache holds nothing more); fixed: that
    size only. nslots is a prime about 100 times the chunks that fit (HDF5's advice, which keeps
    hash collisions rare), never below :data:`~ccp.hdf5.defaults.MIN_NSLOTS` (521) nor above
    :data:`MAX_NSLOTS`."""
    sizes: set[int] = set()
    if fixed_nbytes is not None:
        sizes.add(int(fixed_nbytes))
    else:
        sizes.add(0)
        if default_nbytes <= max_cache_bytes:
            sizes.add(default_nbytes)
        most = min(MAX_CACHED_CHUNKS, grid_chunks) if grid_chunks else MAX_CACHED_CHUNKS
        k = 1
        while chunk_bytes > 0 and k < most and k * chunk_bytes + CACHE_OVERHEAD <= max_cache_bytes:
            sizes.add(k * chunk_bytes + CACHE_OVERHEAD)
            k *= 2
        sizes.add(min(max_cache_bytes, most * chunk_bytes + CACHE_OVERHEAD) if chunk_bytes > 0 else max_cache_bytes)
    out = []
    for nbytes in sorted(sizes):
        fits = nbytes // chunk_bytes if chunk_bytes else 0
        nslots = max(MIN_NSLOTS, next_prime(min(100 * fits, MAX_NSLOTS))) if fits else MIN_NSLOTS
        for w0 in w0s:
            out.append((nbytes, nslots, float(w0)))
    return out


def workload_blocks(items) -> list[tuple[int, ...]]:
    return [tuple(int(b) for b in it.access.block) for it in items]


def structural_extremes(shape: Sequence[int], itemsize: int, max_chunk_bytes: int,
                        blocks: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The layouts at the ends of the lattice, measured in tune's first round whatever the model
    predicts for them, so that the prices fitted to that round have seen them: each pattern's own
    block (one chunk per request, the block clipped to the dataset), and the whole dataset as one
    chunk (contiguous-like) when it is within ``max_chunk_bytes``."""
    out: list[tuple[int, ...]] = []
    max_elems = max(1, max_chunk_bytes // max(1, itemsize))
    for b in blocks:
        c = tuple(max(1, min(int(x), int(n))) for x, n in zip(b, shape))
        if len(c) == len(shape) and math.prod(c) <= max_elems and c not in out:
            out.append(c)
    whole = tuple(int(n) for n in shape)
    if math.prod(whole) <= max_elems and whole not in out:
        out.append(whole)
    return out
