"""Test-only harness: make a small HDF5 file, replay requests under the log VFD, count raw I/O.

Each request runs in its own CLOCK_MONOTONIC window (busy-wait gaps keep windows apart at the log's
microsecond resolution); log lines are attributed to windows by their ``@`` timestamp. The last
window is the dataset close. The log is parsed after the file is closed (only then complete).
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import h5py
import hdf5plugin  # noqa: F401  (filters registered as the product does)
import numpy as np
import pytest
from h5py import h5d, h5f, h5fd, h5p, h5s

from ccp.chunkcache import ChunkCache
from ccp.model.union import MultiBox

_LINE = re.compile(rb"^\s*(\d+)-\s*(\d+)\s+\(\s*(\d+) bytes\)\s+\(H5FD_MEM_(\w+)\)\s+(Read|Written)\s+"
                   rb"\([\d.]+s @ ([\d.]+)\)", re.MULTILINE)
_GAP_NS = 3_000


@dataclass(frozen=True)
class Observed:
    raw_reads: int = 0
    raw_read_bytes: int = 0
    raw_writes: int = 0
    raw_write_bytes: int = 0


def _spin(ns: int = _GAP_NS) -> None:
    t = time.monotonic_ns()
    while time.monotonic_ns() - t < ns:
        pass


def make_file(path: Path, shape: Sequence[int], chunks: Optional[Sequence[int]], dtype: str, *,
              filtered: bool, prewrite: Iterable[tuple[Sequence[int], Sequence[int]]] = (),
              seed: int = 0) -> None:
    """Create dataset ``d``; write the hyperslabs in ``prewrite`` (with h5py, default cache)."""
    rng = np.random.default_rng(seed)
    kw = {"compression": "gzip", "compression_opts": 1} if filtered else {}
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("d", shape=tuple(shape), dtype=dtype, chunks=tuple(chunks) if chunks else None, **kw)
        for start, count in prewrite:
            sl = tuple(slice(s, s + n) for s, n in zip(start, count))
            ds[sl] = rng.integers(0, 50, size=tuple(count)).astype(dtype)


def stored_chunk_sizes(path: Path) -> dict[tuple[int, ...], int]:
    """Chunk coords -> bytes on disk, from the file's chunk index."""
    out = {}
    with h5py.File(path, "r") as f:
        dsid = f["d"].id
        chunks = f["d"].chunks
        for i in range(dsid.get_num_chunks()):
            info = dsid.get_chunk_info(i)
            out[tuple(o // c for o, c in zip(info.chunk_offset, chunks))] = info.size
    return out


def _spaces(ds, request) -> tuple:
    """The file and memory dataspaces of ``(op, start, count)`` or ``(op, start, count, stride, block)`` (one
    ``H5Sselect_hyperslab`` of ``(count - block) // stride + 1`` blocks; memory: the selected elements, dense), or
    of a :class:`~ccp.model.union.MultiBox` (memory: its elements, one dimension)."""
    fspace = ds.get_space()
    if isinstance(request, MultiBox):       # one call: the union of the boxes (OR), or the points as listed
        if request.points:
            fspace.select_elements(np.asarray(request.starts, np.uint64).reshape(len(request.starts), -1))
        else:
            for k, (s, c) in enumerate(zip(request.starts.tolist(), request.counts.tolist())):
                fspace.select_hyperslab(tuple(s), tuple(c), op=h5s.SELECT_SET if k == 0 else h5s.SELECT_OR)
        return fspace, (int(fspace.get_select_npoints()),)
    start, count = tuple(request[1]), tuple(request[2])
    if len(request) == 3:
        fspace.select_hyperslab(start, count)
        return fspace, count
    stride, block = tuple(request[3]), tuple(request[4])
    stride = tuple(s if b < c else max(c, 1) for s, b, c in zip(stride, block, count))
    block = tuple(min(b, c) for b, c in zip(block, count))
    nblocks = tuple((c - b) // s + 1 for c, s, b in zip(count, stride, block))
    fspace.select_hyperslab(start, nblocks, stride, block)
    return fspace, tuple(n * b for n, b in zip(nblocks, block))


def trace(path: Path, requests: Sequence[tuple], cache: ChunkCache,
          dtype: str, sieve_buf_size: Optional[int] = None) -> list[Observed]:
    """Replay ``requests`` on ``path:/d`` under the log VFD; one Observed per request, then the close. A request
    is ``(op, start, count)`` or ``(op, start, count, stride, block)`` (:meth:`ccp.model.DatasetModel.request`)."""
    log = Path(str(path) + ".log")
    log.unlink(missing_ok=True)
    writing = any((r.op if isinstance(r, MultiBox) else r[0]) == "write" for r in requests)
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fapl_log(str(log).encode(), h5fd.LOG_LOC_IO | h5fd.LOG_TIME_IO, 0)
    if sieve_buf_size is not None:
        fapl.set_sieve_buf_size(sieve_buf_size)
    fid = h5f.open(str(path).encode(), h5f.ACC_RDWR if writing else h5f.ACC_RDONLY, fapl=fapl)
    dapl = h5p.create(h5p.DATASET_ACCESS)
    dapl.set_chunk_cache(cache.nslots, cache.nbytes, cache.w0)
    ds = h5d.open(fid, b"d", dapl=dapl)
    windows: list[tuple[int, int]] = []
    try:
        for request in requests:
            op = request.op if isinstance(request, MultiBox) else request[0]
            fspace, mshape = _spaces(ds, request)
            mspace = h5s.create_simple(mshape)
            if op == "read":
                buf = np.empty(mshape, dtype=dtype)
            else:
                buf = np.full(mshape, len(windows) % 50, dtype=dtype)
            _spin()
            t0 = time.monotonic_ns()
            if op == "read":
                ds.read(mspace, fspace, buf)
            else:
                ds.write(mspace, fspace, buf)
            windows.append((t0, time.monotonic_ns()))
        _spin()
        t0 = time.monotonic_ns()
        ds.close()
        windows.append((t0, time.monotonic_ns()))
    finally:
        del ds
        gc.collect()
        _spin()
        fid.close()
        del fid
        gc.collect()
    counts = [[0, 0, 0, 0] for _ in windows]
    stray = []
    for _a, _b, size, mem, kind, stamp in _LINE.findall(log.read_bytes()):
        if mem != b"DRAW":
            continue
        t_us = round(float(stamp) * 1e6)
        for w, (s, e) in enumerate(windows):
            if s // 1000 <= t_us <= -(-e // 1000):
                c = counts[w]
                if kind == b"Read":
                    c[0] += 1
                    c[1] += int(size)
                else:
                    c[2] += 1
                    c[3] += int(size)
                break
        else:
            stray.append((kind, int(size), t_us))
    log.unlink(missing_ok=True)
    assert not stray, f"raw-data I/O outside every request window: {stray}"
    return [Observed(*c) for c in counts]


@pytest.fixture(scope="session")
def h5trace():
    """The harness functions (session-scoped: stateless, so usable under hypothesis)."""
    return SimpleNamespace(make_file=make_file, stored_chunk_sizes=stored_chunk_sizes, trace=trace)
