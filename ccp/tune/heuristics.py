"""The rules of thumb ``ccp tune`` is measured against: pure math, no I/O.

- h5py's automatic chunk guess (``h5py._hl.filters.guess_chunk``, what ``chunks=True`` gives);
- a chunk of about 1 MiB made of whole rows (trailing dimensions kept whole, the leading one cut);
- Unidata's balanced chunk shape (Russ Rew, "Chunking Data: Choosing Shapes", 2013) for the
  workload's two main patterns, generalised from his 3-D time-series-versus-map case to any rank.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

ONE_MIB = 1024 * 1024


def h5py_guess(shape: Sequence[int], itemsize: int, maxshape: Sequence[int | None] | None = None) -> tuple[int, ...]:
    from h5py._hl.filters import guess_chunk

    return tuple(int(c) for c in guess_chunk(tuple(shape), tuple(maxshape) if maxshape else None, itemsize))


def whole_rows(shape: Sequence[int], itemsize: int, target: int = ONE_MIB) -> tuple[int, ...]:
    """About ``target`` bytes: the fastest dimensions whole while they fit, then as many rows of
    the next one as fit, 1 for the slower ones (a "1 MiB chunk" as it is usually made)."""
    out = [1] * len(shape)
    budget = max(1, target // itemsize)
    for d in reversed(range(len(shape))):
        if shape[d] <= budget:
            out[d] = shape[d]
            budget //= shape[d]
        else:
            out[d] = max(1, budget)
            break
    return tuple(out)


def series_axis(blocks: Sequence[Sequence[int]], shape: Sequence[int]) -> int:
    """The axis the balanced shape treats as time: where the narrower of the two main patterns
    (fewest long dimensions, then smallest volume) reaches furthest beyond the other one."""
    if len(blocks) == 1:
        b = blocks[0]
        return max(range(len(shape)), key=lambda d: (b[d] / shape[d], -d))
    a, b = sorted(blocks[:2], key=lambda blk: (sum(x > 1 for x in blk), math.prod(blk)))
    return max(range(len(shape)), key=lambda d: ((a[d] / shape[d]) / (b[d] / shape[d]), -d))


def balanced(shape: Sequence[int], itemsize: int, series: int = 0, target: int = ONE_MIB) -> tuple[int, ...]:
    """Rew's balanced chunk shape: reading a whole series along axis ``series`` and reading a whole
    map of the other axes touch about the same number of chunks, with chunks of at most ``target``.

    With ``N`` chunks in all, ``a`` chunks along each map axis and ``T`` along the series axis,
    the balance is ``T = a**m`` (``m`` map axes) and ``T * a**m = N``, so ``T = sqrt(N)``. Axes
    too short for their share get chunk 1 and pass the shortfall on; the floor shape is then grown
    by one along the subset of axes that comes closest to ``target`` without exceeding it."""
    rank = len(shape)
    n_vals = math.prod(shape)
    chunk_vals = max(1.0, target / itemsize)
    if n_vals <= chunk_vals:
        return tuple(shape)
    if rank == 1:
        return (max(1, int(chunk_vals)),)
    m = rank - 1
    num_chunks = n_vals / chunk_vals
    a = num_chunks ** (1.0 / (2 * m))
    floor = [1.0] * rank
    q = shape[series] / a ** m
    if q < 1.0:
        floor[series] = 1.0
        a = a / q ** (1.0 / m)
    else:
        floor[series] = float(shape[series] // a ** m)
    maps = [d for d in range(rank) if d != series]
    prod = 1.0
    for d in maps:
        if shape[d] / a < 1.0:
            prod *= a / shape[d]
    for d in maps:
        floor[d] = 1.0 if shape[d] / a < 1.0 else float((prod * shape[d]) // a)
    floor = [max(1, min(int(f), n)) for f, n in zip(floor, shape)]
    # Rew's floor can overshoot when several axes are too short for their share (the shortfall is
    # passed on to every long axis): cut the longest axis until it fits (not in his algorithm)
    while math.prod(floor) * itemsize > target and max(floor) > 1:
        d = floor.index(max(floor))
        floor[d] = max(1, int(target // itemsize // (math.prod(floor) // floor[d])))
    best: tuple[int, ...] = tuple(int(f) for f in floor)
    best_bytes = 0
    for bits in itertools.product((0, 1), repeat=rank):
        cand = tuple(int(min(f + b, n)) for f, b, n in zip(floor, bits, shape))
        nbytes = math.prod(cand) * itemsize
        if best_bytes < nbytes <= target:
            best, best_bytes = cand, nbytes
    return best


def heuristics(shape, itemsize: int, maxshape, blocks, target: int = ONE_MIB) -> dict[str, tuple[int, ...]]:
    """{label: chunk shape} of every rule of thumb for this dataset and workload."""
    out = {"h5py guess": h5py_guess(shape, itemsize, maxshape), "1 MiB rows": whole_rows(shape, itemsize, target)}
    if len(shape) > 1 and blocks:
        out["Unidata balanced"] = balanced(shape, itemsize, series_axis(blocks, shape), target)
    return out
