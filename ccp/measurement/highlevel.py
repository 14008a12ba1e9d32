"""The `h5py` client: the high-level slicing most Python users write (``dset[sel]``, ``dset[sel] = block``).

Same arguments and result as :func:`ccp.measurement.runner.read_pass` / ``write_pass``, so a cell's
``client`` axis only chooses the loop. The chunk cache is set the way an h5py user sets it, on the file
(``rdcc_nbytes``/``rdcc_nslots``/``rdcc_w0`` are the file access list's cache), and read back from the
open dataset as for every client. The file and dataset are created and opened through the low-level API
(so the log driver can log them) and handed to h5py's high-level objects, which is what ``h5py.File``
itself does.
"""

from __future__ import annotations

import time

import numpy as np


def _slices(starts, counts, hyperslabs=None) -> list[tuple]:
    """Each request as the key an h5py user writes: slices for a box; for a strided request, a step
    (``d[a:b:3]``) where its blocks are single elements and ``h5py.MultiBlockSlice`` where they are longer, so
    either is one ``H5Dread``/``H5Dwrite`` on the regular hyperslab the program selected."""
    if hyperslabs is None:
        return [tuple(slice(s, s + c) for s, c in zip(st, ct)) for st, ct in zip(starts, counts)]
    from h5py import MultiBlockSlice

    keys = []
    for i, (st, ct) in enumerate(zip(starts, counts)):
        key: list = []
        for s, c, t, n, b in zip(st, ct, *(x[i].tolist() for x in (hyperslabs.stride, hyperslabs.nblocks,
                                                                        hyperslabs.block))):
            if n == 1:
                key.append(slice(s, s + c))
            elif b == 1:
                key.append(slice(s, s + c, t))
            else:
                key.append(MultiBlockSlice(start=s, stride=t, count=n, block=b))
        keys.append(tuple(key))
    return keys


def _fapl(cache, log_path):
    from h5py import h5p

    from ccp.measurement import iolog

    fapl = iolog.log_fapl(log_path) if log_path is not None else h5p.create(h5p.FILE_ACCESS)
    fapl.set_cache(0, cache.nslots, cache.nbytes, cache.w0)      # what h5py.File(rdcc_*=...) sets
    return fapl


def read_pass(job, starts, counts, *, counted: bool, log_path=None, progress=None, deadline_ns: int | None = None,
              hyperslabs=None):
    import h5py

    from ccp.measurement.passes import PassTiming, part_end, part_start, spin_to_next_us, target, timed_close
    from ccp.measurement.remote import open_for_read

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    file, dataset_path = target(job)
    n = len(starts)
    req = np.zeros(n, dtype=np.int64)
    windows = []
    sels = _slices(starts, counts, hyperslabs)
    fid = open_for_read(job, file, _fapl(job.cell.cache, log_path if counted else None))   # + the cell's page buffer
    try:
        f = h5py.File(fid)
        part0 = part_start()      # the timed part's CPU time starts here (PassTiming.cpu_ns)
        t0 = clock()
        ds = f[dataset_path]
        t1 = clock()
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.id.get_access_plist().get_chunk_cache()
        for i in range(n):
            sel = sels[i]
            if counted:
                spin_to_next_us(t1)
            t0 = clock()
            ds[sel]
            t1 = clock()
            req[i] = t1 - t0
            if counted:
                windows.append((t0, t1))
            if progress is not None and not i & 1023:
                progress("counted pass" if counted else "timed pass", i, n)
            if deadline_ns is not None and t1 > deadline_ns:
                req = req[:i + 1]
                break
        close_ns = timed_close(ds.id, clock, counted, t1, windows)
        part = part_end(part0)
    finally:
        fid.close()
    return PassTiming(open_ns, req, close_ns, windows, effective, **part)


def write_pass(job, data, starts, counts, out_file, *, counted: bool, log_path=None, progress=None, src_log=None,
               deadline_ns: int | None = None, hyperslabs=None):
    import h5py
    from h5py import h5f

    from ccp.measurement.passes import PassTiming, create_timed, part_end, spin_to_next_us, target, timed_close
    from ccp.measurement.remote import file_fcpl

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    cell = job.cell
    n = len(starts)
    req = np.zeros(n, dtype=np.int64)
    windows = []
    sels = _slices(starts, counts, hyperslabs)
    copying = data is None
    src_fid = None
    if copying:
        file, dataset_path = target(job)
        src_fid = h5f.open(file.encode(), h5f.ACC_RDONLY, _fapl(cell.cache, src_log if counted else None))
        src = h5py.File(src_fid)[dataset_path]
    fid = h5f.create(str(out_file).encode(), h5f.ACC_TRUNC, fapl=_fapl(cell.cache, log_path if counted else None),
                     fcpl=file_fcpl(job))
    try:
        dsid, t0, t1, part0 = create_timed(fid, job, clock, cache_on_dataset=False)
        ds = h5py.Dataset(dsid)
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.id.get_access_plist().get_chunk_cache()
        for i in range(n):
            sel = sels[i]
            if copying:
                if counted:
                    spin_to_next_us(t1)
                t0 = clock()
                ds[sel] = src[sel]
                t1 = clock()
            else:
                block = data.read(starts[i], counts[i])      # generated outside the timed call
                if hyperslabs is not None:                   # strided: the elements it selects
                    block = hyperslabs.pick(i, block)
                if counted:
                    spin_to_next_us(t1)
                t0 = clock()
                ds[sel] = block
                t1 = clock()
            req[i] = t1 - t0
            if counted:
                windows.append((t0, t1))
            if progress is not None and not i & 1023:
                progress("counted pass" if counted else "timed pass", i, n)
            if deadline_ns is not None and t1 > deadline_ns:
                req = req[:i + 1]
                break
        storage = ds.id.get_storage_size()
        close_ns = timed_close(ds.id, clock, counted, t1, windows)
        part = part_end(part0)
    finally:
        fid.close()
        if src_fid is not None:
            src_fid.close()
    return PassTiming(open_ns, req, close_ns, windows, effective, **part), storage
