"""Why is this slow: the one place ccp turns a layout, a cache and an access pattern into plain reasons.

Three levels of knowledge, one vocabulary: :func:`chunk_traps` knows a stored dataset only (`ccp inspect`),
:func:`traps` a cell before it runs (`ccp plan`, `ccp run`'s ``traps`` column), :func:`cause` a measured
row (the report's "Why"); :func:`version_trap` is the report's note over a run's chunk sizes and
:func:`chunk_larger_than_cache` the finding `ccp diagnose` shares with `ccp advise`. Every command renders
these messages; none derives its own.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ccp.chunkcache import HDF5_1X, HDF5_2X
from ccp.units import format_bytes, shape_str
from ccp.workload.requests import plan_for


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def finite(v) -> bool:
    v = _num(v)
    return not math.isnan(v) and not math.isinf(v)


def _per(c, col) -> float:
    return c[col] / c["requests"] if finite(c.get(col)) and finite(c.get("requests")) and c["requests"] else float("nan")


def _dims(text) -> list[int] | None:
    try:
        return [int(d) for d in str(text).split("x")]
    except ValueError:
        return None


def chunk_larger_than_cache(chunk_bytes: int, cache_nbytes: int, filtered: bool) -> str:
    """A chunk the reader's cache cannot hold ('' when it fits): `ccp advise`, `ccp inspect` and `ccp diagnose`."""
    if not chunk_bytes or chunk_bytes <= cache_nbytes:
        return ""
    return (f"a chunk ({format_bytes(chunk_bytes)}) is larger than the cache ({format_bytes(cache_nbytes)}), so HDF5 cannot "
            "keep it between requests" + (": every request decompresses its chunk again" if filtered else ""))


def in_version_trap(chunk_bytes) -> bool:
    """A chunk larger than HDF5 1.x's default chunk cache that fits 2.0's: fast or slow depending on the library."""
    return HDF5_1X.nbytes < chunk_bytes <= HDF5_2X.nbytes


def version_trap(chunk_bytes) -> str:
    """The version trap over a run's cells (their ``chunk_bytes``), for the report; '' when no chunk is in it."""
    if not any(in_version_trap(float(b)) for b in chunk_bytes):
        return ""
    return (f"Version trap: some chunks are larger than HDF5 1.x's default chunk cache ({format_bytes(HDF5_1X.nbytes)}) "
            f"but fit HDF5 2.0's ({format_bytes(HDF5_2X.nbytes)}): a reader that keeps the library default is fast with "
            "one version and slow with the other. ccp sets every cache explicitly, so the cells above do not depend on it.")


def chunk_traps(chunk_bytes: int, filters, cache_nbytes: int | None = None) -> list[str]:
    """What a stored dataset's chunk size is a known way to be slow with (no access pattern known: `ccp inspect`)."""
    out: list[str] = []
    if not chunk_bytes:
        return out
    if cache_nbytes is not None:
        # `ccp advise` (the reader's cache is known): the words its users and tests know
        if larger := chunk_larger_than_cache(chunk_bytes, cache_nbytes, not filters.is_none):
            out.append(larger)
    elif chunk_bytes > HDF5_2X.nbytes:
        out.append(f"a chunk ({format_bytes(chunk_bytes)}) is larger than HDF5's default chunk cache in every version "
                   f"({format_bytes(HDF5_1X.nbytes)} in 1.x, {format_bytes(HDF5_2X.nbytes)} in 2.0): readers that read "
                   "less than a chunk at a time pay for the whole chunk each time")
    elif in_version_trap(chunk_bytes):
        out.append(f"a chunk ({format_bytes(chunk_bytes)}) is larger than HDF5 1.x's default chunk cache "
                   f"({format_bytes(HDF5_1X.nbytes)}) though it fits HDF5 2.0's ({format_bytes(HDF5_2X.nbytes)}): the "
                   "same reader can be fast or very slow depending on the library version")
    return out


@functools.lru_cache(maxsize=64)
def _request_chunks(shape: tuple, chunks: tuple, access, max_requests: int):
    """For the first ``max_requests`` requests of an access pattern: whether any covers part of a chunk,
    how many chunks each touches and their hash keys (padded with -1), computed once per layout and
    pattern: a sweep's cells share them and differ in the cache only."""
    from ccp.model import ChunkGrid

    grid = ChunkGrid(shape, chunks)
    plan = plan_for(access, shape, strided=False)     # a strided call's runs: the chunks it touches
    if plan.calls is not None and len(plan.calls) and (np.diff(plan.calls) == 0).any():
        return _call_chunks(grid, plan, max_requests)
    starts = np.asarray(plan.starts[:max_requests], dtype=np.int64).reshape(-1, len(shape))
    counts = np.asarray(plan.counts[:max_requests], dtype=np.int64).reshape(-1, len(shape))
    ch = np.asarray(chunks, dtype=np.int64)
    partial = bool(np.any(starts % ch) or np.any(counts % ch))
    first = starts // ch
    last = (starts + np.maximum(counts, 1) - 1) // ch
    ntouched = np.prod(last - first + 1, axis=1) if len(starts) else np.zeros(0, np.int64)
    widest = int(ntouched.max()) if len(ntouched) else 0
    keys = np.full((len(starts), max(widest, 1)), -1, dtype=np.int64)
    for i, (lo, hi) in enumerate(zip(first.tolist(), last.tolist())):
        n = int(ntouched[i])
        if n > 1 and n <= _MAX_KEYED_CHUNKS:
            coords = itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi)))
            keys[i, :n] = [grid.hash_key(c) for c in coords]
    return partial, ntouched, keys


# a request touching more chunks than this cannot have them all in one cache's slots worth checking
_MAX_KEYED_CHUNKS = 4096


def _call_chunks(grid, plan, max_calls: int):
    """:func:`_request_chunks` of a plan whose calls hold several boxes (a traced list index, points): one row a
    call, its chunks the union of its boxes' (HDF5 needs them together, each once per call)."""
    ch = np.asarray(grid.chunks, dtype=np.int64)
    calls = np.asarray(plan.calls, np.int64)
    begins = np.flatnonzero(np.diff(calls, prepend=calls[0] - 1) != 0)[:max_calls + 1]
    bounds = list(zip(begins[:max_calls].tolist(), [*begins[1:].tolist(), len(calls)][:max_calls]))
    end = bounds[-1][1] if bounds else 0
    starts = np.asarray(plan.starts[:end], np.int64).reshape(-1, grid.rank)
    counts = np.asarray(plan.counts[:end], np.int64).reshape(-1, grid.rank)
    partial = bool(np.any(starts % ch) or np.any(counts % ch))
    first = starts // ch
    last = (starts + np.maximum(counts, 1) - 1) // ch
    per_box = np.prod(last - first + 1, axis=1) if len(starts) else np.zeros(0, np.int64)
    ntouched = np.zeros(len(bounds), np.int64)
    found: list[list[int]] = []
    for i, (a, b) in enumerate(bounds):
        if int(per_box[a:b].sum()) > _MAX_KEYED_CHUNKS:      # too many to list: the boxes' count bounds it
            ntouched[i] = int(per_box[a:b].sum())
            found.append([])
            continue
        coords = {c for k in range(a, b)
                  for c in itertools.product(*(range(x, y + 1) for x, y in zip(first[k].tolist(), last[k].tolist())))}
        ntouched[i] = len(coords)
        found.append([grid.hash_key(c) for c in sorted(coords)] if len(coords) > 1 else [])
    keys = np.full((len(bounds), max(int(ntouched.max()) if len(ntouched) else 0, 1)), -1, dtype=np.int64)
    for i, row in enumerate(found):
        keys[i, :len(row)] = row
    return partial, ntouched, keys


@functools.lru_cache(maxsize=256)
def _colliding(shape: tuple, chunks: tuple, access, max_requests: int, nslots: int):
    """Per request: whether two of the chunks it touches share a slot of an ``nslots``-slot hash table."""
    _, ntouched, keys = _request_chunks(shape, chunks, access, max_requests)
    out = np.zeros(len(ntouched), dtype=bool)
    for i in np.nonzero((ntouched > 1) & (ntouched <= _MAX_KEYED_CHUNKS))[0]:
        row = keys[i, :ntouched[i]] % nslots
        out[i] = len(np.unique(row)) < len(row)
    return out


def traps(cell, source, max_requests: int = 256) -> list[str]:
    """What in this cell's layout, cache and access pattern is a known way to be slow."""
    out: list[str] = []
    if cell.chunks is None:
        return out
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = int(np.prod(cell.chunks)) * itemsize
    nbytes = cell.cache.nbytes
    shape, chunks = tuple(int(d) for d in source.shape), tuple(int(c) for c in cell.chunks)
    partial, ntouched, _ = _request_chunks(shape, chunks, cell.access, max_requests)
    if chunk_bytes > nbytes and partial and not cell.filters.is_none:
        out.append(f"chunk larger than the cache: a {shape_str(cell.chunks)} chunk is {format_bytes(chunk_bytes)}, the cache "
                   f"{format_bytes(nbytes)}; every request that covers part of a chunk decompresses the whole chunk again")
    # chunks one request needs together, that could all be cached, but share a hash slot
    fits = max(1, nbytes // max(chunk_bytes, 1))
    candidates = (ntouched > 1) & (ntouched <= fits)
    if candidates.any():
        first = np.nonzero(candidates & _colliding(shape, chunks, cell.access, max_requests, cell.cache.nslots))[0]
        if len(first):
            n = int(ntouched[first[0]])
            out.append(f"hash-slot collision: one request needs {n} chunks that fit the cache together, but some "
                       f"share a slot of the {cell.cache.nslots}-slot hash table, so they evict each other "
                       f"(use a prime nslots, 10-100x the chunks that fit)")
    return out


def cause(c, requested: float) -> str:
    """A plain reason for a measured cell's cost, from its layout, cache and pattern (and the trap check when it found one).

    ``c`` is a cells.csv row (a mapping); ``requested`` the bytes its application asked for in one pass.
    """
    if isinstance(c.get("traps"), str) and c["traps"]:
        return "ccp's trap check says: " + c["traps"]
    chunks, filt, op = c.get("chunks", ""), c.get("filters", ""), c.get("op", "read")
    if chunks == "contiguous":
        return "a contiguous layout: each request moves its bytes straight from the file, no chunk cache involved"
    block, chunk = _dims(c.get("block")), _dims(chunks)
    if not finite(c.get("chunk_bytes")) or not block or not chunk or len(block) != len(chunk) or not finite(c.get("cache_nbytes")):
        return ""
    cb, cache = float(c["chunk_bytes"]), float(c["cache_nbytes"])
    compressed = filt not in ("none", "")
    touched = int(np.prod([-(-b // k) for b, k in zip(block, chunk)]))
    most = int(np.prod([b // k if b % k == 0 else -(-b // k) + 1 for b, k in zip(block, chunk)]))   # unaligned starts
    per = _per(c, "raw_writes" if op == "write" else "raw_reads")
    moved = c["raw_write_bytes"] if op == "write" else c["raw_read_bytes"]
    want = requested
    amp = moved / want if finite(moved) and finite(want) and want else float("nan")
    if all(b % k == 0 for b, k in zip(block, chunk)) and (not finite(amp) or amp <= 1.2):
        return (f"each request covers whole chunks ({touched:,} of {format_bytes(cb)}), which HDF5 moves in one operation each, "
                "past the chunk cache")
    if cb <= cache and (most * cb <= cache or (finite(amp) and amp <= 1.2)):
        what = f"each request touches {touched:,} chunks ({format_bytes(touched * cb)}), which fit" if touched > 1 else \
            "each request touches one chunk, which fits"
        return (f"{what} the {format_bytes(cache)} chunk cache, so each chunk is "
                f"{'read and decompressed' if compressed else 'read'} once and the requests that follow find it in memory")
    if compressed and cb > cache:
        return (f"its {format_bytes(cb)} compressed chunks do not fit the {format_bytes(cache)} chunk cache, so every request "
                "that covers part of a chunk reads and decompresses the whole chunk again")
    if cb <= cache:   # one chunk fits, the chunks of a request (or of two neighbouring requests) do not
        again = {"write": "partly written chunks are evicted, written and read back"}.get(
            op, f"chunks are evicted before the next request needs them and {'read and decompressed' if compressed else 'read'} again")
        if touched > 1 and touched * cb > cache:
            span = f"each request touches {touched:,} chunks ({format_bytes(touched * cb)}), more than the {format_bytes(cache)} cache holds"
        else:
            span = (f"the requests are not aligned with the {chunks} chunks: a {c['block']} request can touch up to {most:,} chunks "
                    f"({format_bytes(most * cb)}), more than the {format_bytes(cache)} cache holds")
        return f"{span}, so {again}"
    return (f"its {format_bytes(cb)} chunks do not fit the {format_bytes(cache)} cache; unfiltered, HDF5 then moves just the "
            "requested bytes straight from the file, one operation per contiguous run of them"
            + (f" ({per:,.3g} per request here)" if finite(per) else ""))
