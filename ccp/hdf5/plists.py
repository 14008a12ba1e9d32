"""Property-list builders: every dataset creation, dataset access and logging file access list ccp makes."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np


class _CacheLike(Protocol):
    nbytes: int
    nslots: int
    w0: float


def dcpl(info, chunks, filters):
    """Dataset creation property list for a layout of a dataset (:class:`~ccp.hdf5.dataset.DatasetInfo`):
    ``chunks`` (None = contiguous) and a :class:`~ccp.hdf5.filters.FilterPipeline`; the fill value comes
    from ``info`` (numeric data only: a non-numeric type keeps HDF5's default fill)."""
    from h5py import h5p

    plist = h5p.create(h5p.DATASET_CREATE)
    if chunks is not None:
        plist.set_chunk(tuple(int(c) for c in chunks))
        filters.apply(plist, np.dtype(info.dtype))
    if info.fillvalue is not None and getattr(info, "numeric", True):
        plist.set_fill_value(np.array(info.fillvalue, dtype=info.dtype))
    return plist


def dapl(nslots: int, nbytes: int, w0: float):
    """Dataset access property list with this raw-data chunk cache (``H5Pset_chunk_cache``)."""
    from h5py import h5p

    plist = h5p.create(h5p.DATASET_ACCESS)
    plist.set_chunk_cache(int(nslots), int(nbytes), float(w0))
    return plist


def cache_dapl(cache: _CacheLike):
    """:func:`dapl` for a cache setting (anything with ``nslots``, ``nbytes``, ``w0``)."""
    return dapl(cache.nslots, cache.nbytes, cache.w0)


def no_cache_dapl():
    """A dataset access list with no chunk cache: every chunk a request touches is read and decoded."""
    return dapl(521, 0, 0.75)


def log_fapl(log_path: Path):
    """A file access property list with the log driver writing to ``log_path``.

    Never the LOG_FILE_* or LOG_FLAVOR flags: with buf_size 0 they crash the process. LOG_NUM_IO only
    adds counters, printed once at close: the log's completeness check.
    """
    from h5py import h5fd, h5p

    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fapl_log(str(log_path).encode(), h5fd.LOG_LOC_IO | h5fd.LOG_TIME_IO | h5fd.LOG_NUM_IO, 0)
    return fapl
