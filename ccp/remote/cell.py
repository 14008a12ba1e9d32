"""One read cell over a file object, with per-request accounting: GETs, bytes fetched and used, time waiting.

The sweep's runner, the benchmark and the tests share this loop. Between requests it reads the
:class:`~ccp.remote.network.RequestLog` (no work inside the timed call beyond the counting wrapper).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ccp.model.union import MultiBox
from ccp.remote.network import RequestLog, TracedFile
from ccp.remote.predict import open_dataset_for_reading


@dataclass(frozen=True)
class RequestCount:
    """One request of a cell: GETs, bytes fetched, bytes HDF5 asked for, seconds waiting, seconds in all."""

    gets: int
    fetched: int
    used: int
    wait_s: float
    seconds: float


@dataclass(frozen=True)
class CellCounts:
    """The open phase (file, dataset, chunk index) and each request, with the network label."""

    open: RequestCount
    requests: tuple
    network: str

    @property
    def http_gets(self) -> int:
        return sum(r.gets for r in self.requests)

    @property
    def http_bytes(self) -> int:
        return sum(r.fetched for r in self.requests)

    @property
    def bytes_used(self) -> int:
        return sum(r.used for r in self.requests)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.requests)

    @property
    def wait_s(self) -> float:
        return sum(r.wait_s for r in self.requests)


def slices(start, count) -> tuple:
    return tuple(slice(int(s), int(s) + int(c)) for s, c in zip(start, count))


def read_cell(open_file, dataset: str, requests, network_label: str = "none",
              log: RequestLog | None = None, fileobj: TracedFile | None = None) -> CellCounts:
    """Open with ``open_file()`` (an ``h5py.File``), bring the dataset's index in, then read each
    ``(start, count)`` request (or :class:`~ccp.model.union.MultiBox`, one call on several boxes).
    ``log``/``fileobj`` (remote cells) give GETs and bytes per request."""
    empty = (0, 0, 0.0)

    def snap():
        g, b, w = log.snapshot() if log is not None else empty
        return g, b, w, fileobj.bytes_used if fileobj is not None else 0, time.perf_counter()

    s0 = snap()
    f = open_file()
    try:
        ds = open_dataset_for_reading(f, dataset)
        s1 = snap()
        opened = _diff(s0, s1)
        out = []
        for req in requests:
            a = snap()
            if isinstance(req, MultiBox):
                _read_call(ds, req)
            else:
                ds[slices(*req)]
            out.append(_diff(a, snap()))
    finally:
        f.close()
    return CellCounts(opened, tuple(out), network_label)


def _read_call(ds, call: MultiBox) -> None:
    """One ``H5Dread`` of a call on several boxes, as a program's ``d[[1, 5, 7]]`` (the union of the boxes) or
    ``d[mask]`` (the points) makes it, into a dense buffer of its elements."""
    import numpy as np
    from h5py import h5s

    fspace = ds.id.get_space()
    if call.points:
        fspace.select_elements(np.asarray(call.starts, np.uint64).reshape(len(call.starts), -1))
    else:
        for k, (s, c) in enumerate(zip(call.starts.tolist(), call.counts.tolist())):
            fspace.select_hyperslab(tuple(s), tuple(c), op=h5s.SELECT_SET if k == 0 else h5s.SELECT_OR)
    n = fspace.get_select_npoints()
    ds.id.read(h5s.create_simple((n,)), fspace, np.empty(n, ds.dtype))


def _diff(a, b) -> RequestCount:
    return RequestCount(b[0] - a[0], b[1] - a[1], b[3] - a[3], b[2] - a[2], b[4] - a[4])


__all__ = ["CellCounts", "RequestCount", "read_cell", "slices"]
