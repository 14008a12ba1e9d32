"""The read pass of a cell whose file is in object storage, and the file-level settings of local passes.

An S3 cell (``cell.storage.remote``) is read with the h5py low-level loop: between requests it snapshots
the GETs its fsspec file made (:meth:`ccp.remote.sweep_cell.RemoteCell.mark`), outside the timed calls, so
each request's GETs, bytes and wait are its own; the native loop cannot stop between requests. Each pass
opens a new fsspec file, so fsspec's cache is cold every pass (an S3 pass needs no page-cache drop). The
open phase is timed from before the fsspec open (its HEAD, then HDF5's superblock and root group reads: with
fsspec's default readahead, the whole of a small file) and ends with the chunk index in HDF5's metadata cache
(what the GET model predicts); the close phase is the dataset's and the file's close. So a pass's time is the
whole of what a user pays: every GET of the pass is inside a timed phase (issue 22: with 20 ms of emulated
latency per GET, cells whose file open was untimed read no slower than at 0 ms).

Local cells with a ``page_buffer`` open their file with it (:func:`open_for_read`), and every client's
write pass creates its file with the cell's ``file_space`` (:func:`file_fcpl`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from ccp.config.storage import check_effective_page_buffer
from ccp.hdf5 import plists
from ccp.measurement.passes import PassTiming, part_end, part_start


def storage_of(job):
    """The cell's storage setting (None for a cell built without one)."""
    return getattr(job.cell, "storage", None)


def open_for_read(job, file: str, fapl):
    """``h5f.open`` read-only with the cell's page buffer added to ``fapl`` (which keeps the log driver of a
    counted pass); HDF5 2.0 silently drops a page buffer on a file that is not paged: that fails the cell."""
    from h5py import h5f

    st = storage_of(job)
    pb = st.page_buffer if st is not None else 0
    if pb:
        fapl = plists.page_buffer_fapl(pb, fapl)
    fid = h5f.open(file.encode(), h5f.ACC_RDONLY, fapl)
    if pb:
        try:
            check_effective_page_buffer(st, fid.get_access_plist().get_page_buffer_size()[0], file)
        except BaseException:
            fid.close()
            raise
    return fid


def file_fcpl(job):
    """The file-creation list of a write pass's file: the cell's ``file_space`` (None: HDF5's default, as before)."""
    st = storage_of(job)
    return plists.apply_file_space(None, st.file_space if st is not None else None)


@dataclass
class RemotePassTiming(PassTiming):
    """An S3 pass's timing: a PassTiming and the file open's share of ``open_ns``."""

    file_open_ns: int = 0        # fsspec open + h5f.open (superblock, root group): part of open_ns


def remote_read_pass(job, starts, counts, *, counted: bool, log_path=None, progress=None, deadline_ns: int | None = None,
                     reopen_before=(), remote=None, hyperslabs=None):
    """:func:`ccp.measurement.runner.read_pass` for an S3 cell over ``remote`` (a
    :class:`ccp.remote.sweep_cell.RemoteCell`): same PassTiming, with ``http`` the pass's
    :class:`ccp.remote.cell.CellCounts` (the open, each request, the close) and ``file_open_ns``; a strided
    request (``hyperslabs``) is one read, as there.
    ``open_ns`` starts before the fsspec file is opened and ``close_ns`` ends after the file is closed."""
    from h5py import h5d

    from ccp.measurement.passes import buffers, open_timed, selections, types_of

    if counted:
        raise ValueError("an S3 cell has no counted pass: its I/O counts are its GETs")
    clock = time.perf_counter_ns
    cache = job.cell.cache
    mtype, dtype, reclaim = types_of(job.source)
    args, shapes = selections(starts, counts, hyperslabs)
    bufs = buffers(shapes, dtype, None if dtype is not None else mtype)
    n = len(starts)
    req = np.zeros(n, dtype=np.int64)
    dataset_path = job.dataset_path
    reopen = frozenset(int(r) for r in reopen_before)
    part0 = part_start()        # the timed part's CPU time starts with the file open too
    t_file = clock()
    fid = remote.open_file()            # a new fsspec file: its cache cold; counts the file open's GETs
    file_open_ns = clock() - t_file     # the file open is the user's too: inside the timed open phase
    http = None
    closed = False
    try:
        ds, dapl, _, _, _ = open_timed(fid, dataset_path, cache, clock)
        remote.load_index(ds)
        t1 = clock()                     # the open phase ends with the chunk index cached
        open_ns = t1 - t_file
        remote.mark()                    # outside the timed calls
        effective = ds.get_access_plist().get_chunk_cache()
        fspace = ds.get_space()
        for i in range(n):
            mspace, arr = bufs[shapes[i]]
            fspace.select_hyperslab(*((starts[i], counts[i]) if args is None else args[i]))
            again = i in reopen
            t0 = clock()
            if again:
                ds.close()
                ds = h5d.open(fid, dataset_path.encode(), dapl)
            ds.read(mspace, fspace, arr, mtype)
            t1 = clock()
            req[i] = t1 - t0
            remote.mark()
            if reclaim is not None:
                reclaim(mspace, arr)
            if progress is not None and not i & 1023:
                progress("timed pass (s3)", i, n)
            if deadline_ns is not None and t1 > deadline_ns:
                req = req[:i + 1]
                break
        t0 = clock()
        ds.close()
        fid.close()                      # the file's close is the user's too (a read-only close makes no GET)
        closed = True
        close_ns = clock() - t0
        part = part_end(part0)
    finally:
        if not closed:
            fid.close()
        http = remote.end_pass()
    return RemotePassTiming(open_ns, req, close_ns, [], effective, http, **part, file_open_ns=file_open_ns)


def http_row_columns(timings, page_buffer_effective) -> tuple[dict, list[str]]:
    """An S3 cell's measured columns and flags from its timed passes: the HTTP counts
    (:func:`ccp.remote.sweep_cell.measured_columns`), and the median over passes of the file open's seconds
    (``file_open_s``, inside ``open_s``) and of the requests' summed seconds (``requests_s``), so the row
    holds open, requests and close beside the whole pass (``time_s``)."""
    from ccp.remote.sweep_cell import measured_columns

    cols, flags = measured_columns([t.http for t in timings], page_buffer_effective)
    cols["file_open_s"] = statistics.median(getattr(t, "file_open_ns", 0) for t in timings) / 1e9
    cols["requests_s"] = statistics.median(int(t.request_ns.sum()) for t in timings) / 1e9
    return cols, flags
