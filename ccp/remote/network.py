"""Counting and emulated network conditions, applied per HTTP GET by wrapping one function.

fsspec's caches call ``cache.fetcher(start, end)`` for every byte range they need; for s3fs that is
``S3File._fetch_range``: one ranged GET. :func:`instrument` replaces that one attribute with a
:class:`CountingFetcher`, so every GET is counted (and, when asked, delayed) with no change to
s3fs or to the code that reads. The delay is **emulated**: ``latency`` seconds plus
``bytes / bandwidth`` per GET, slept on the client after the real (loopback) request returns.

:class:`TracedFile` sits between h5py and the fsspec file and records every read HDF5 makes
(offset, size) with the GETs it caused: bytes used (what HDF5 asked for) versus fetched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ccp.config.storage import NO_NETWORK, EmulatedNetwork, parse_bandwidth, parse_latency


@dataclass(frozen=True)
class Get:
    """One HTTP GET: the byte range asked, bytes received, seconds on the wire and emulated."""

    start: int
    end: int
    nbytes: int
    wire_s: float
    emulated_s: float


@dataclass
class RequestLog:
    """Everything counted so far; a timed loop reads :meth:`snapshot` between requests."""

    gets: list = field(default_factory=list)

    @property
    def http_gets(self) -> int:
        return len(self.gets)

    @property
    def http_bytes(self) -> int:
        return sum(g.nbytes for g in self.gets)

    @property
    def wait_s(self) -> float:
        """Time spent waiting for GETs: real loopback time plus the emulated delay."""
        return sum(g.wire_s + g.emulated_s for g in self.gets)

    @property
    def emulated_s(self) -> float:
        return sum(g.emulated_s for g in self.gets)

    def snapshot(self) -> tuple[int, int, float]:
        """(GETs, bytes, wait seconds) so far: subtract two snapshots for one request's share."""
        return self.http_gets, self.http_bytes, self.wait_s


class CountingFetcher:
    """Wraps ``fetcher(start, end) -> bytes``: counts each call that makes a GET, then sleeps the emulated delay."""

    def __init__(self, fetcher, log: RequestLog, network: EmulatedNetwork = NO_NETWORK):
        self.fetcher = fetcher
        self.log = log
        self.network = network

    def __call__(self, start: int, end: int) -> bytes:
        if start >= end:               # s3fs sends no request for an empty range
            return self.fetcher(start, end)
        t0 = time.perf_counter()
        data = self.fetcher(start, end)
        wire = time.perf_counter() - t0
        delay = self.network.delay(len(data))
        if delay > 0:
            time.sleep(delay)
        self.log.gets.append(Get(int(start), int(end), len(data), wire, delay))
        return data


def instrument(fsfile, network: EmulatedNetwork = NO_NETWORK, log: RequestLog | None = None) -> RequestLog:
    """Count (and delay) every GET an open fsspec file makes from now on; returns the log."""
    log = RequestLog() if log is None else log
    cache = fsfile.cache
    fetcher = cache.fetcher
    if isinstance(fetcher, CountingFetcher):
        fetcher = fetcher.fetcher
    cache.fetcher = CountingFetcher(fetcher, log, network)
    return log


@dataclass(frozen=True)
class Read:
    """One read HDF5 made through the file object: offset, size, and the GETs it caused."""

    offset: int
    size: int
    gets: int
    fetched: int


class TracedFile:
    """A read-only file object for h5py that records each (offset, size) HDF5 reads.

    ``log`` (when given) is the :class:`RequestLog` of the fsspec file below, so each read is
    paired with the GETs it triggered. Works over any binary file object (a local ``open(path, 'rb')``
    gives the exact read sequence HDF5 makes, which the model then replays).
    """

    def __init__(self, raw, log: RequestLog | None = None):
        self.raw = raw
        self.log = log
        self.reads: list[Read] = []

    def seek(self, pos, whence=0):
        return self.raw.seek(pos, whence)

    def tell(self):
        return self.raw.tell()

    def readinto(self, buf):
        off = self.raw.tell()
        before = self.log.snapshot() if self.log is not None else (0, 0, 0.0)
        view = memoryview(buf).cast("B")
        data = self.raw.read(view.nbytes)
        n = len(data)
        view[:n] = data
        after = self.log.snapshot() if self.log is not None else (0, 0, 0.0)
        self.reads.append(Read(int(off), int(view.nbytes), after[0] - before[0], after[1] - before[1]))
        return n

    def read(self, size=-1):
        if size is None or size < 0:
            return self.raw.read()
        buf = bytearray(size)
        n = self.readinto(buf)
        return bytes(buf[:n])

    def readable(self):
        return True

    def seekable(self):
        return True

    def writable(self):
        return False

    def close(self):
        self.raw.close()

    @property
    def closed(self):
        return self.raw.closed

    def mark(self) -> int:
        """The number of reads so far (slice ``reads[mark:]`` for what came after)."""
        return len(self.reads)

    @property
    def bytes_used(self) -> int:
        return sum(r.size for r in self.reads)


__all__ = ["NO_NETWORK", "CountingFetcher", "EmulatedNetwork", "Get", "Read", "RequestLog", "TracedFile", "instrument",
           "parse_bandwidth", "parse_latency"]
