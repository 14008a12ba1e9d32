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

import re
import time
from dataclasses import dataclass, field

from ccp.errors import ConfigError
from ccp.units import parse_size

_NUM_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z/]*)\s*$")
_LATENCY_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}


def parse_latency(value, where: str = "latency") -> float:
    """'20ms' -> 0.02; 0 -> 0.0 (no emulated delay). Seconds when no unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    m = _NUM_UNIT.match(str(value))
    if not m or m.group(2).lower() not in _LATENCY_UNITS:
        raise ConfigError(where, f"expected a latency like 0ms, 20ms or 0.05s, got {value!r}")
    return float(m.group(1)) * _LATENCY_UNITS[m.group(2).lower()]


def parse_bandwidth(value, where: str = "bandwidth") -> float | None:
    """'100MB/s' -> 1e8 bytes/s; None, 0, 'none' or 'unlimited' -> None (no emulated transfer time)."""
    if value is None or value == 0 or str(value).strip().lower() in ("none", "unlimited", "inf"):
        return None
    text = str(value).strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    if not text.lower().endswith("/s"):
        raise ConfigError(where, f"expected a bandwidth like 100MB/s or 1GiB/s, got {value!r}")
    n = parse_size(text[:-2], where)
    if n <= 0:
        raise ConfigError(where, f"bandwidth must be > 0, got {value!r}")
    return float(n)


@dataclass(frozen=True)
class EmulatedNetwork:
    """Per-GET delay added on the client: ``latency_s + bytes / bandwidth_bps`` (emulated)."""

    latency_s: float = 0.0
    bandwidth_bps: float | None = None

    def delay(self, nbytes: int) -> float:
        extra = nbytes / self.bandwidth_bps if self.bandwidth_bps else 0.0
        return self.latency_s + extra

    @property
    def label(self) -> str:
        if not self.latency_s and not self.bandwidth_bps:
            return "none"
        bw = f"{self.bandwidth_bps / 1e6:g}MB/s" if self.bandwidth_bps else "unlimited"
        return f"emulated: {self.latency_s * 1e3:g}ms per GET, {bw}"


NO_NETWORK = EmulatedNetwork()


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
