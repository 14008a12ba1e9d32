"""Property-list builders: every dataset creation, dataset access and logging file access list ccp makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ccp.chunkcache import HDF5_1X, ChunkCache


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


def relaid_dcpl(dsid, kind: str, chunks: tuple[int, ...] | None, pipeline):
    """A dataset's own creation properties with a new layout (``kind`` 'chunked', 'contiguous' or
    'compact') and a new :class:`~ccp.hdf5.filters.FilterPipeline` (None: keep the dataset's filters).

    Everything else stays as the dataset has it: fill value and fill time, attribute creation order,
    time tracking (from the object header: a re-opened dataset's plist always says "track times") and
    the chunk options H5Pset_chunk forgets. A virtual or external dataset starts from a fresh list.
    """
    from h5py import h5d

    from ccp.hdf5 import lowlevel as low

    src = dsid.get_create_plist()
    fresh = src.get_layout() == h5d.VIRTUAL or src.get_external_count() > 0
    tid = dsid.get_type()
    plist = src if not fresh else _fresh_dcpl(src, tid)
    plist.set_obj_track_times(low.tracks_times(dsid))
    opts = low.chunk_opts(src)
    if kind == "chunked" and pipeline is None and not fresh:
        old_chunks = src.get_chunk() if src.get_layout() == h5d.CHUNKED else None
        if chunks is not None and tuple(chunks) != tuple(old_chunks or ()):
            _plugin_parameters_for_new_chunks(plist)
        plist.set_chunk(chunks)
        low.set_chunk_opts(plist, opts)
        return plist
    if plist.get_nfilters():
        plist.remove_filter(0)  # H5Z_FILTER_ALL
    if kind == "chunked":
        plist.set_chunk(chunks)
        low.set_chunk_opts(plist, opts)
        dtype = _numpy_dtype(tid)
        pipeline.apply(plist, dtype if dtype is not None else np.dtype("V1"))
        _plugins_optional(plist)
    else:
        plist.set_layout(h5d.CONTIGUOUS if kind == "contiguous" else h5d.COMPACT)
    return plist


def _plugin_parameters_for_new_chunks(plist) -> None:
    """Give each hdf5plugin filter its user parameters again, so that its set_local derives the stored
    ones for the new chunk. Several write the chunk's shape into what they store (ZFP's header, SZ, SZ3,
    Sperr, Blosc2): handed the source's stored values, ZFP encodes for the old chunk and the copy reads
    back wrong. hdf5plugin reads a filter's settings back from its stored values."""
    from ccp.hdf5.filters.base import HDF5PLUGIN_IDS

    steps = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    if not any(fid in HDF5PLUGIN_IDS for fid, *_ in steps):
        return
    try:
        import hdf5plugin
    except ImportError:     # no hdf5plugin: the filters stay as stored (HDF5 judges them)
        return
    rebuilt = []
    for fid, flags, values, _name in steps:
        if fid in HDF5PLUGIN_IDS:
            try:
                values = tuple(hdf5plugin.from_filter_options(fid, tuple(values)).filter_options)
            except (ValueError, TypeError, KeyError):   # settings it cannot read: kept as stored
                pass
        rebuilt.append((fid, flags, values))
    plist.remove_filter(0)  # H5Z_FILTER_ALL
    for fid, flags, values in rebuilt:
        plist.set_filter(fid, flags, tuple(int(v) for v in values))


def _numpy_dtype(tid) -> np.dtype | None:
    try:
        return tid.dtype
    except Exception:  # h5py raises several kinds for types it cannot map
        return None


def _fresh_dcpl(src, tid):
    from h5py import h5d, h5p

    from ccp.hdf5 import lowlevel as low

    plist = h5p.create(h5p.DATASET_CREATE)
    try:
        defined = src.fill_value_defined()
        if defined == h5d.FILL_VALUE_USER_DEFINED:
            fill = low.fill_bytes(src, tid)
            low.library().H5Pset_fill_value(plist.id, tid.id, fill.ctypes.data)
        elif defined == h5d.FILL_VALUE_UNDEFINED:
            low.set_fill_undefined(plist, tid)
        plist.set_fill_time(src.get_fill_time())
        plist.set_attr_creation_order(src.get_attr_creation_order())
    except Exception:  # pragma: no cover - best effort for exotic plists
        pass
    return plist


def _plugins_optional(plist) -> None:
    """Plugin filters as h5py and hdf5plugin add them: optional, so a chunk that a compressor
    cannot shrink (blosc, lz4 ... return failure) is stored unfiltered instead of failing the write."""
    from h5py import h5z

    filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    if not any(code >= 256 and not flags & h5z.FLAG_OPTIONAL for code, flags, _v, _n in filters):
        return
    plist.remove_filter(0)
    for code, flags, values, _name in filters:
        if code >= 256:
            flags |= h5z.FLAG_OPTIONAL
        plist.set_filter(code, flags, tuple(values))


def dapl(nslots: int, nbytes: int, w0: float):
    """Dataset access property list with this raw-data chunk cache (``H5Pset_chunk_cache``)."""
    from h5py import h5p

    plist = h5p.create(h5p.DATASET_ACCESS)
    plist.set_chunk_cache(int(nslots), int(nbytes), float(w0))
    return plist


def cache_dapl(cache: ChunkCache):
    """:func:`dapl` for a cache setting."""
    return dapl(cache.nslots, cache.nbytes, cache.w0)


def no_cache_dapl():
    """A dataset access list with no chunk cache: every chunk a request touches is read and decoded."""
    return dapl(HDF5_1X.nslots, 0, HDF5_1X.w0)


def log_fapl(log_path: Path):
    """A file access property list with the log driver writing to ``log_path``.

    Never the LOG_FILE_* or LOG_FLAVOR flags: with buf_size 0 they crash the process. LOG_NUM_IO only
    adds counters, printed once at close: the log's completeness check.
    """
    from h5py import h5fd, h5p

    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fapl_log(str(log_path).encode(), h5fd.LOG_LOC_IO | h5fd.LOG_TIME_IO | h5fd.LOG_NUM_IO, 0)
    return fapl


def chunked_dcpl(chunks, filters=None, dtype=None):
    """A fresh dataset creation list: chunked ``chunks`` with a :class:`~ccp.hdf5.filters.FilterPipeline`
    (None: no filter) for items of ``dtype``, HDF5's default fill: for probes and scratch datasets that
    stand for no user's dataset (calibration, tune's costs)."""
    from h5py import h5p

    plist = h5p.create(h5p.DATASET_CREATE)
    plist.set_chunk(tuple(int(c) for c in chunks))
    if filters is not None:
        filters.apply(plist, np.dtype(dtype))
    return plist


# file_space.strategy (ccp.config.storage.FileSpace) -> h5py's constant name
_H5F_STRATEGY = {"page": "FSPACE_STRATEGY_PAGE", "fsm_aggr": "FSPACE_STRATEGY_FSM_AGGR",
                 "aggregate": "FSPACE_STRATEGY_AGGR", "none": "FSPACE_STRATEGY_NONE"}


def apply_file_space(fcpl, file_space):
    """Set ``file_space`` (a ``ccp.config.storage.FileSpace``: strategy, page_size, persist, threshold) on a
    file-creation list (``h5f.create(..., fcpl=)``; None leaves it as it is, and a None list stays None).
    Returns the list: the write pass's and repack's one line."""
    from h5py import h5f, h5p

    if file_space is None:
        return fcpl
    if fcpl is None:
        fcpl = h5p.create(h5p.FILE_CREATE)
    strategy = getattr(h5f, _H5F_STRATEGY[file_space.strategy])
    fcpl.set_file_space_strategy(strategy, file_space.persist, file_space.threshold)
    if file_space.strategy == "page":
        fcpl.set_file_space_page_size(file_space.page_size)
    return fcpl


def file_page_size(path) -> int | None:
    """The page size of a file whose file-space strategy is PAGE (paged aggregation), else None."""
    import h5py

    with h5py.File(path, "r") as f:
        fcpl = f.id.get_create_plist()
        if fcpl.get_file_space_strategy()[0] != h5py.h5f.FSPACE_STRATEGY_PAGE:
            return None
        return int(fcpl.get_file_space_page_size())


def page_buffer_fapl(page_buffer: int, fapl=None):
    """``fapl`` (a new file-access list when None) with HDF5's page buffer of ``page_buffer`` bytes
    (``H5Pset_page_buffer_size(size, 0, 0)``: metadata and raw data share it); 0 leaves ``fapl`` as it is."""
    from h5py import h5p

    if not page_buffer:
        return fapl
    fapl = fapl if fapl is not None else h5p.create(h5p.FILE_ACCESS)
    fapl.set_page_buffer_size(int(page_buffer), 0, 0)
    return fapl
