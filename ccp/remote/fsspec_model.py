"""fsspec's read caches as a pure function: the reads a file object receives -> GETs and bytes per read.

Each class mirrors one cache of fsspec (checked against fsspec 2026.9 ``fsspec/caching.py``; the tests
compare it with GETs counted through a real S3 server) as a state machine over ``(offset, size)``
reads, the way ``AbstractBufferedFile.read`` calls ``cache._fetch(loc, loc + size)``:

- ``none``: every read is one GET of exactly its range.
- ``readahead``: one buffer; a read inside it is free, a read starting inside it fetches from the
  buffer's end, any other read fetches ``[start, end + block_size)``; the fetched range replaces it.
- ``blockcache``: fixed blocks of ``block_size``, one GET per missing block, LRU of ``maxblocks`` (32).
- ``first``: the first block is kept after the first read that touches it; everything else is a GET.

No I/O here; a range past the end of the file fetches what exists (S3 answers a short range).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

MAXBLOCKS = 32        # fsspec BlockCache's default; s3fs passes no cache_options


@dataclass(frozen=True)
class ReadCost:
    """The GETs one read caused and the bytes they fetched."""

    gets: int
    fetched: int


class _Counter:
    def __init__(self, size: int):
        self.size = size
        self.gets = 0
        self.fetched = 0

    def get(self, start: int, end: int) -> int:
        """A GET of [start, end): returns the bytes that exist (none and no request when empty)."""
        if start >= end:
            return 0
        n = max(0, min(end, self.size) - start)
        self.gets += 1
        self.fetched += n
        return n


class _Cache(Protocol):
    """One of fsspec's caches: built from (block_size, file size), fed reads of [start, end)."""

    def __init__(self, block_size: int, size: int) -> None: ...

    def read(self, c: _Counter, start: int, end: int) -> None: ...


class _NoCache:
    def __init__(self, block_size: int, size: int):
        self.size = size

    def read(self, c: _Counter, start: int, end: int) -> None:
        if start >= self.size or start >= end:
            return
        c.get(start, end)


class _ReadAhead:
    def __init__(self, block_size: int, size: int):
        self.bs, self.size = block_size, size
        self.start = self.end = 0

    def read(self, c: _Counter, start: int, end: int) -> None:
        end = min(end, self.size)
        if start >= self.size or start >= end:
            return
        if self.start <= start and end <= self.end:
            return
        if self.start <= start < self.end:
            start = self.end
        stop = min(self.size, end + self.bs)
        n = c.get(start, stop)
        self.start, self.end = start, start + n


class _BlockCache:
    def __init__(self, block_size: int, size: int, maxblocks: int = MAXBLOCKS):
        self.bs, self.size, self.maxblocks = block_size, size, maxblocks
        self.lru: OrderedDict[int, None] = OrderedDict()

    def _block(self, c: _Counter, b: int) -> None:
        if b in self.lru:
            self.lru.move_to_end(b)
            return
        start = b * self.bs
        if start < self.size:
            c.get(start, start + self.bs)
        self.lru[b] = None
        if len(self.lru) > self.maxblocks:
            self.lru.popitem(last=False)

    def read(self, c: _Counter, start: int, end: int) -> None:
        end = min(end, self.size)
        if start >= self.size or start >= end:
            return
        first, last = start // self.bs, (end - 1) // self.bs
        self._block(c, first)
        for b in range(first + 1, last + 1):
            self._block(c, b)


class _First:
    def __init__(self, block_size: int, size: int):
        self.bs = min(block_size, size)
        self.size = size
        self.cached = False

    def read(self, c: _Counter, start: int, end: int) -> None:
        if start > self.size:
            return
        end = min(end, self.size)
        if start < self.bs:
            if not self.cached:
                self.cached = True
                if end > self.bs:
                    c.get(0, end)
                    return
                c.get(0, self.bs)
            if end > self.bs:
                c.get(self.bs, end)
            return
        c.get(start, end)


_CACHES: dict[str, type[_Cache]] = {"none": _NoCache, "readahead": _ReadAhead, "blockcache": _BlockCache, "first": _First}


class FsspecCacheModel:
    """Feed reads one by one (``read(offset, size) -> ReadCost``); state carries across reads."""

    def __init__(self, cache_type: str, block_size: int, file_size: int):
        if cache_type not in _CACHES:
            raise ValueError(f"cache_type {cache_type!r} is not modelled (one of {', '.join(_CACHES)})")
        self.cache = _CACHES[cache_type](int(block_size), int(file_size))
        self.counter = _Counter(int(file_size))

    def read(self, offset: int, size: int) -> ReadCost:
        g, b = self.counter.gets, self.counter.fetched
        if size > 0:
            self.cache.read(self.counter, int(offset), int(offset) + int(size))
        return ReadCost(self.counter.gets - g, self.counter.fetched - b)


def simulate_fsspec(reads: Iterable[tuple[int, int]], cache_type: str, block_size: int,
                    file_size: int) -> list[ReadCost]:
    """GETs and bytes fetched for each ``(offset, size)`` read, in order, from an empty cache."""
    model = FsspecCacheModel(cache_type, block_size, file_size)
    return [model.read(o, s) for o, s in reads]


def totals(costs: Iterable[ReadCost]) -> ReadCost:
    costs = list(costs)
    return ReadCost(sum(c.gets for c in costs), sum(c.fetched for c in costs))


__all__ = ["FsspecCacheModel", "ReadCost", "simulate_fsspec", "totals", "MAXBLOCKS"]
