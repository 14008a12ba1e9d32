"""The native timed loop: HDF5's C functions called from a numba-compiled loop, no Python per request.

h5py's low-level API costs about a microsecond per request in Python around the HDF5 call; for cheap
requests (cached chunks, contiguous rows) that is most of what a Python loop records. Here the hot
loop calls ``H5Sselect_hyperslab``, ``H5Dread``/``H5Dwrite`` and ``clock_gettime(CLOCK_MONOTONIC)``
through their addresses, in the **same libhdf5 h5py has loaded** (so the dataset, dataspace and
datatype ids h5py hands out are valid here), with every selection and memory dataspace prepared in
advance. Nothing is compiled at install time: numba compiles the loop on first use and caches it.

The clock is ``CLOCK_MONOTONIC``, the clock of ``time.perf_counter_ns`` and ``time.monotonic_ns`` on
Linux, so deadlines and windows mix with the Python side's timestamps. Between batches (a few
thousand requests, or a few MiB of data to write) control returns to Python for progress, and for
writes to generate the next batch's data outside the timed calls, as the Python loop does.

What it records is what :mod:`ccp.measurement.runner`'s loop records: nanoseconds per request
(``H5Dread``/``H5Dwrite`` only; a copy request is the source read plus the write), the counted
pass's ``(start, end)`` window per request (after the same busy-wait to the next microsecond), and
the end of the last request for the close that follows. A request past ``deadline_ns`` is the last.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import time
from dataclasses import dataclass
from functools import lru_cache

import numba
import numpy as np

READ, WRITE, COPY = 0, 1, 2
H5P_DEFAULT = 0
BATCH_REQUESTS = 4096                # control returns to Python (progress) at least this often
PROGRESS_S = 0.5                     # with a progress callback, batches shrink to about this long (issue 22: a
#                                      16,200-request pass of slow reads reported once a minute; the ETA froze)
BATCH_BYTES = 32 * 1024 * 1024       # writes: data generated per batch, outside the timed calls


class NativeUnavailable(RuntimeError):
    """No way to call h5py's own libhdf5 here (e.g. h5py built against a library we cannot find)."""


# ============================================================================ the library h5py uses
def _loaded_hdf5_paths() -> list[str]:
    """Paths of libhdf5 mapped into this process (Linux), h5py's first: the one whose ids we share."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        base = os.path.basename(path)
        if base.startswith("libhdf5") and not base.startswith("libhdf5_hl") and ".so" in base and path not in out:
            out.append(path)
    return out


def hdf5_library_path() -> str:
    """The libhdf5 file h5py's extension modules are linked to (``h5py.libs/`` in a wheel)."""
    import h5py
    from h5py import h5  # noqa: F401  (loads the library)

    loaded = _loaded_hdf5_paths()
    here = os.path.dirname(os.path.dirname(h5py.__file__))
    bundled = [p for p in loaded if os.path.dirname(p) in (os.path.join(here, "h5py.libs"),
                                                           os.path.join(os.path.dirname(h5py.__file__), ".dylibs"))]
    if bundled:
        return bundled[0]
    if len(loaded) == 1:
        return loaded[0]
    found = sorted(glob.glob(os.path.join(here, "h5py.libs", "libhdf5-*.so*")) +
                   glob.glob(os.path.join(os.path.dirname(h5py.__file__), ".dylibs", "libhdf5*.dylib")))
    found = [p for p in found if "hdf5_hl" not in os.path.basename(p)]
    if found:
        return found[0]
    raise NativeUnavailable("cannot tell which libhdf5 h5py uses (not a wheel, several or none mapped)")


@dataclass(frozen=True)
class _Api:
    select: object       # ctypes function objects (numba calls them through their addresses)
    read: object
    write: object
    clock: object
    clock_id: int
    path: str
    version: str


@lru_cache(maxsize=1)
def api() -> _Api:
    """ctypes bindings to h5py's libhdf5 and the C clock; raises NativeUnavailable."""
    import h5py

    if not hasattr(time, "CLOCK_MONOTONIC"):
        raise NativeUnavailable("no clock_gettime(CLOCK_MONOTONIC) on this platform")
    path = hdf5_library_path()
    lib = ctypes.CDLL(path)                 # already loaded: the same handle and global state as h5py's
    i64, u64, i32 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int
    major, minor, rel = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    lib.H5get_libversion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(rel))
    version = f"{major.value}.{minor.value}.{rel.value}"
    if version != h5py.version.hdf5_version:
        raise NativeUnavailable(f"{path} is HDF5 {version}, h5py uses {h5py.version.hdf5_version}")
    if (major.value, minor.value) < (1, 10):
        raise NativeUnavailable(f"HDF5 {version}: hid_t is 64-bit only from 1.10")
    # Pointers are passed as 64-bit integers (same registers as a pointer on 64-bit ABIs).
    select = lib.H5Sselect_hyperslab
    select.argtypes, select.restype = [i64, i32, u64, u64, u64, u64], i32
    read = lib.H5Dread
    read.argtypes, read.restype = [i64, i64, i64, i64, i64, u64], i32
    write = lib.H5Dwrite
    write.argtypes, write.restype = [i64, i64, i64, i64, i64, u64], i32
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    clock = libc.clock_gettime
    clock.argtypes, clock.restype = [i32, u64], i32
    # ids shared with h5py: a property list h5py made must be a valid id in this library
    from h5py import h5p
    probe = h5p.create(h5p.DATASET_ACCESS)
    lib.H5Iis_valid.argtypes, lib.H5Iis_valid.restype = [i64], i32
    if lib.H5Iis_valid(probe.id) <= 0:
        raise NativeUnavailable(f"{path} does not share h5py's ids")
    return _Api(select, read, write, clock, int(time.CLOCK_MONOTONIC), path, version)


def available() -> str | None:
    """None when the native loop can run here, else why not (one line)."""
    try:
        api()
    except (NativeUnavailable, OSError, AttributeError) as exc:
        return str(exc)
    return None


# ================================================================================= the hot loop
@numba.njit(cache=True)
def _now(clock, clock_id, ts, ts_addr):
    clock(clock_id, ts_addr)
    return ts[0] * 1_000_000_000 + ts[1]


@numba.njit(cache=True)
def _loop(select, h5read, h5write, clock, clock_id, mode, dset, src, mtype, fspace, src_space, mspaces,
          starts, counts, strided, strides, blocks, buf_addr, data_off, i0, i1, counted, last_ns, deadline_ns, req,
          t0s, t1s, ts):
    """Requests [i0, i1). Returns (next request, end of the last one, failed step or 0):
    step 1 select, 2 read, 3 write; the next request is i+1 after a failed or past-deadline request i.
    A request with ``strided[i]`` selects ``counts[i]`` blocks of ``blocks[i]`` elements ``strides[i]`` apart
    (``strided``, ``strides`` and ``blocks`` are empty for a plan of boxes)."""
    rank = starts.shape[1]
    row = rank * 8
    s_addr = starts.ctypes.data
    c_addr = counts.ctypes.data
    t_addr = strides.ctypes.data
    b_addr = blocks.ctypes.data
    any_strided = strided.shape[0] > 0
    ts_addr = ts.ctypes.data
    for i in range(i0, i1):
        sa = s_addr + i * row
        ca = c_addr + i * row
        ta = 0
        ba = 0
        if any_strided and strided[i]:
            ta = t_addr + i * row
            ba = b_addr + i * row
        if select(fspace, 0, sa, ta, ca, ba) < 0:         # op 0: H5S_SELECT_SET
            return i + 1, last_ns, 1
        if mode == 2 and select(src_space, 0, sa, ta, ca, ba) < 0:
            return i + 1, last_ns, 1
        if counted:                          # keep request windows apart at the log's microsecond
            target = (last_ns // 1000 + 2) * 1000
            while _now(clock, clock_id, ts, ts_addr) < target:
                pass
        err = 0
        t0 = _now(clock, clock_id, ts, ts_addr)
        if mode == 0:
            if h5read(dset, mtype, mspaces[i], fspace, 0, buf_addr) < 0:
                err = 2
        elif mode == 1:
            if h5write(dset, mtype, mspaces[i], fspace, 0, buf_addr + data_off[i]) < 0:
                err = 3
        else:
            if h5read(src, mtype, mspaces[i], src_space, 0, buf_addr) < 0:
                err = 2
            elif h5write(dset, mtype, mspaces[i], fspace, 0, buf_addr) < 0:
                err = 3
        t1 = _now(clock, clock_id, ts, ts_addr)
        req[i] = t1 - t0
        if counted:
            t0s[i] = t0
            t1s[i] = t1
        last_ns = t1
        if err:
            return i + 1, last_ns, err
        if deadline_ns > 0 and t1 > deadline_ns:
            return i + 1, last_ns, 0
    return i1, last_ns, 0


@lru_cache(maxsize=1)
def warm_loop():
    """The hot loop typed and compiled (or loaded from numba's cache) now, before a pass's timed part, and its
    compiled entry point, which :func:`run_requests` calls. The first call in a process costs over a second of CPU
    (numba types the loop, then compiles or loads it), and numba's dispatcher types all 28 arguments in Python on
    every later call (the ctypes functions miss its fast path), which the entry point skips: inside the timed part
    either would be much of a short pass's timed CPU time (requests.parquet's timed_cpu_s). Typed by a call over no
    request, with arguments of the types run_requests passes (one signature for every op, rank and plan: the
    C-contiguous arrays it makes, Python ints and a bool)."""
    a = api()
    boxes, flags = np.zeros((0, 1), np.uint64), np.zeros(0, np.uint8)
    ids, ts = np.zeros(0, np.int64), np.zeros(2, np.int64)
    args = (a.select, a.read, a.write, a.clock, a.clock_id, READ, -1, -1, -1, -1, -1, ids, boxes, boxes, flags, boxes,
            boxes, 0, ids, 0, 0, False, 0, 0, ids, ids, ids, ts)
    _loop(*args)
    compiled = _loop.overloads[tuple(_loop.typeof_pyval(x) for x in args)]
    return compiled.entry_point     # type: ignore[attr-defined]  # numba's CompileResult has it; its stub does not


# ================================================================================== Python side
@dataclass
class LoopResult:
    request_ns: np.ndarray          # per request measured (a prefix if the deadline stopped it)
    windows: list                   # counted: (start_ns, end_ns) per request; else []
    last_ns: int                    # end of the last request (the close's spin starts from it)


def _ids(*objs) -> list[int]:
    return [int(o.id) if o is not None else -1 for o in objs]


def run_requests(ds, fspace, starts, counts, dtype, *, op: str = "read", data=None, src=None, src_space=None,
                 counted: bool = False, last_ns: int = 0, deadline_ns: int | None = None, progress=None,
                 stage: str | None = None, hyperslabs=None) -> LoopResult:
    """Time every request ``(starts[i], counts[i])`` on the open dataset ``ds`` (an h5py DatasetID); with
    ``hyperslabs`` (:class:`ccp.workload.requestplan.Hyperslabs`), a strided request is one
    ``H5Sselect_hyperslab`` with its strides and blocks and one read or write of the elements it selects.

    ``fspace`` is ``ds.get_space()`` (its selection is changed). ``op`` is ``"read"``, ``"write"``
    (block ``i`` is ``data.read(starts[i], counts[i])``, generated between batches) or ``"copy"``
    (read from ``src``/``src_space`` then write, one timed request). ``progress(stage, done, total)``
    is called between batches, as the Python loop calls it every 1024 requests.
    """
    from h5py import h5s, h5t

    a = api()
    loop = warm_loop()
    mode = {"read": READ, "write": WRITE, "copy": COPY}[op]
    starts = np.ascontiguousarray(np.asarray(starts, dtype=np.int64).reshape(len(starts), -1), dtype=np.uint64)
    counts = np.ascontiguousarray(np.asarray(counts, dtype=np.int64).reshape(len(counts), -1), dtype=np.uint64)
    n = len(starts)
    dtype = np.dtype(dtype)
    mtype = h5t.py_create(dtype)
    box_counts = counts                      # what data.read generates: each request's box
    strided = np.zeros(0, np.uint8)
    strides = blocks = np.zeros((0, starts.shape[1]), np.uint64)
    if hyperslabs is not None and n:         # H5Sselect_hyperslab's count is the blocks; the buffer the selection
        strided = (hyperslabs.nblocks[:n] > 1).any(axis=1).astype(np.uint8)
        counts = np.ascontiguousarray(np.where(strided[:, None] > 0, hyperslabs.nblocks[:n].astype(np.uint64), counts),
                                      np.uint64)
        strides = np.ascontiguousarray(hyperslabs.stride[:n], np.uint64)
        blocks = np.ascontiguousarray(hyperslabs.block[:n], np.uint64)
    elems = (counts if hyperslabs is None or not n else
             np.where(strided[:, None] > 0, hyperslabs.shapes[:n].astype(np.uint64), box_counts))
    shapes, which = np.unique(elems, axis=0, return_inverse=True) if n else (np.zeros((0, 0), np.uint64), [])
    spaces = [h5s.create_simple(tuple(int(x) for x in s)) for s in shapes]   # alive until the loop ends
    mspaces = np.array([s.id for s in spaces], np.int64)[np.asarray(which, np.int64).ravel()] if n else np.zeros(0, np.int64)
    sizes = elems.prod(axis=1, dtype=np.uint64).astype(np.int64) * dtype.itemsize if n else np.zeros(0, np.int64)
    req = np.zeros(n, np.int64)
    t0s = np.zeros(n if counted else 0, np.int64)
    t1s = np.zeros(n if counted else 0, np.int64)
    ts = np.zeros(2, np.int64)
    data_off = np.zeros(n, np.int64)
    dset, src_id, mtype_id, fspace_id, src_space_id = _ids(ds, src, mtype, fspace, src_space)
    stage = stage or ("counted pass" if counted else "timed pass")
    buf = np.empty(max(int(sizes.max()) if n else 1, 1), np.uint8)
    i = 0
    batch = BATCH_REQUESTS if progress is None else 16   # grown or shrunk to PROGRESS_S a batch after each one
    while i < n:
        if mode == WRITE:                    # this batch's data, packed back to back
            j, total = i, 0
            while j < n and (j == i or (j - i < batch and total + sizes[j] <= BATCH_BYTES)):
                total += int(sizes[j])
                j += 1
            if len(buf) < total:
                buf = np.empty(total, np.uint8)
            off = 0
            for k in range(i, j):
                block = data.read(tuple(int(x) for x in starts[k]), tuple(int(x) for x in box_counts[k]))
                if hyperslabs is not None:   # strided: the elements it selects
                    block = hyperslabs.pick(k, block)
                block = np.ascontiguousarray(block, dtype=dtype)
                buf[off:off + block.nbytes] = block.reshape(-1).view(np.uint8)
                data_off[k] = off
                off += block.nbytes
        else:
            j = min(n, i + batch)
        if progress is not None:
            progress(stage, i, n)
        began = time.perf_counter()
        nxt, last_ns, err = loop(a.select, a.read, a.write, a.clock, a.clock_id, mode, dset, src_id, mtype_id,
                                  fspace_id, src_space_id, mspaces, starts, counts, strided, strides, blocks,
                                  buf.ctypes.data, data_off, i, j,
                                  bool(counted), int(last_ns), int(deadline_ns or 0), req, t0s, t1s, ts)
        if err:
            what = {1: "H5Sselect_hyperslab", 2: "H5Dread", 3: "H5Dwrite"}[err]
            raise OSError(f"{what} failed on request {nxt - 1} "
                          f"(start {tuple(int(x) for x in starts[nxt - 1])}, count {tuple(int(x) for x in box_counts[nxt - 1])})")
        if nxt < j:                          # past the deadline: a measured prefix
            i = nxt
            break
        if progress is not None:             # the requests' own times are the C clock's: a batch's end costs them nothing
            took = time.perf_counter() - began
            batch = max(16, min(BATCH_REQUESTS, int((j - i) * PROGRESS_S / took) if took > 0 else BATCH_REQUESTS))
        i = j
    del spaces
    done = i if n else 0
    windows = list(zip(t0s[:done].tolist(), t1s[:done].tolist())) if counted else []
    return LoopResult(req[:done], windows, int(last_ns))


# ===================================================== drop-ins for runner.read_pass / write_pass
def read_pass(job, starts, counts, *, counted: bool, log_path=None, progress=None, deadline_ns: int | None = None,
              hyperslabs=None):
    """:func:`ccp.measurement.runner.read_pass` with the native loop: same arguments, same PassTiming
    (open and close timed by the Python clock as there; the requests by the loop's C clock)."""

    from ccp.measurement import iolog
    from ccp.measurement.passes import PassTiming, open_timed, part_end, target, timed_close
    from ccp.measurement.remote import open_for_read

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    cache = job.cell.cache
    fapl = iolog.log_fapl(log_path) if counted else None
    windows = []
    warm_loop()                             # its compile is no part of the timed part
    file, dataset_path = target(job)       # the user's own file: the object itself, links resolved
    fid = open_for_read(job, file, fapl)    # with the cell's page buffer, if any
    try:
        ds, _, t0, t1, part0 = open_timed(fid, dataset_path, cache, clock)
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.get_access_plist().get_chunk_cache()
        loop = run_requests(ds, ds.get_space(), starts, counts, job.source.dtype, counted=counted, last_ns=t1,
                            deadline_ns=deadline_ns, progress=progress, hyperslabs=hyperslabs)
        windows.extend(loop.windows)
        close_ns = timed_close(ds, clock, counted, loop.last_ns, windows)
        part = part_end(part0)
    finally:
        fid.close()
    return PassTiming(open_ns, loop.request_ns, close_ns, windows, effective, **part)


def write_pass(job, data, starts, counts, out_file, *, counted: bool, log_path=None, progress=None, src_log=None,
               deadline_ns: int | None = None, hyperslabs=None):
    """:func:`ccp.measurement.runner.write_pass` with the native loop (write and copy cells)."""
    from h5py import h5d, h5f, h5p

    from ccp.hdf5 import plists
    from ccp.measurement import iolog
    from ccp.measurement.passes import PassTiming, create_timed, part_end, target, timed_close
    from ccp.measurement.remote import file_fcpl

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    cell, source = job.cell, job.source
    fapl = iolog.log_fapl(log_path) if counted else h5p.create(h5p.FILE_ACCESS)
    dtype = np.dtype(source.dtype)
    windows = []
    warm_loop()                             # its compile is no part of the timed part
    copying = data is None
    src = src_space = src_fid = None
    if copying:
        src_file, src_path = target(job)
        src_fid = h5f.open(src_file.encode(), h5f.ACC_RDONLY, iolog.log_fapl(src_log) if counted else None)
        src_dapl = plists.cache_dapl(cell.cache)
        src = h5d.open(src_fid, src_path.encode(), src_dapl)
        src_space = src.get_space()
    fid = h5f.create(str(out_file).encode(), h5f.ACC_TRUNC, fapl=fapl, fcpl=file_fcpl(job))
    try:
        ds, t0, t1, part0 = create_timed(fid, job, clock)
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.get_access_plist().get_chunk_cache()
        loop = run_requests(ds, ds.get_space(), starts, counts, dtype, op="copy" if copying else "write", data=data,
                            src=src, src_space=src_space, counted=counted, last_ns=t1, deadline_ns=deadline_ns,
                            progress=progress, hyperslabs=hyperslabs)
        windows.extend(loop.windows)
        storage = ds.get_storage_size()
        close_ns = timed_close(ds, clock, counted, loop.last_ns, windows)   # flushes the chunk cache
        part = part_end(part0)
    finally:
        fid.close()
        if src is not None:           # a copy cell's source, open since before the try
            src.close()
        if src_fid is not None:
            src_fid.close()
    return PassTiming(open_ns, loop.request_ns, close_ns, windows, effective, **part), storage
