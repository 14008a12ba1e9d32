"""The byte ranges HDF5 reads for a read cell, from the file's own chunk index; then GETs and bytes.

Raw data (modelled exactly, the tests compare it with GETs counted through the loopback server):
which chunks each request loads, in order, comes from ccp's model of HDF5's chunk cache
(:class:`ccp.model.cache.DatasetModel`, fed by ``stored_chunk_bytes`` so each chunk load is seen as it
happens); where each chunk lies (``byte_offset``, ``size``) comes from the chunk index
(``dsid.chunk_iter``); a contiguous dataset is read one contiguous run at a time from its address
(h5py's file-object driver does no data sieving: measured, one read per run). With a page buffer on a paged file, a raw read smaller than a page becomes a read of its whole
page(s) unless they are buffered (LRU over ``page_buf_size // page_size`` pages).

Metadata (not modelled from first principles): the reads HDF5 makes to open the file, the dataset and
its chunk index are taken from a local trace of the same open through the same file-object driver
(:func:`trace_open`): exact for this file and HDF5 version, but a trace, not a prediction.
Not modelled: unfiltered chunks too big for the chunk cache (HDF5 reads only the selected runs),
metadata reads that happen during requests (metadata cache evictions), page buffer for metadata.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.model.cache import DatasetModel
from ccp.model.union import MultiBox, selected_elements
from ccp.remote.fsspec_model import FsspecCacheModel, ReadCost


class NotModelled(Exception):
    """This access cannot be predicted exactly (the reason is the message)."""


@dataclass(frozen=True)
class DatasetLayout:
    """What the model needs from a file: shape, chunking, filters, and where the bytes are."""

    shape: tuple
    itemsize: int
    chunks: tuple | None
    filtered: bool
    chunk_locations: dict          # chunk grid coords -> (byte_offset, stored size)
    contiguous_offset: int | None  # contiguous data's address (None when chunked or unallocated)
    file_size: int
    page_size: int | None          # file-space page size when the file is paged, else None


def dataset_layout(h5file, dataset: str) -> DatasetLayout:
    """Read the layout of ``dataset`` from an open ``h5py.File`` (its chunk index: no data read)."""
    import h5py

    ds = h5file[dataset]
    dsid = ds.id
    dcpl = dsid.get_create_plist()
    fcpl = h5file.id.get_create_plist()
    strategy = fcpl.get_file_space_strategy()[0]
    page = int(fcpl.get_file_space_page_size()) if strategy == h5py.h5f.FSPACE_STRATEGY_PAGE else None
    size = int(h5file.id.get_filesize())
    if dcpl.get_layout() == h5py.h5d.CHUNKED:
        chunks = tuple(int(c) for c in dcpl.get_chunk())
        locs = {}

        def visit(info):
            coords = tuple(int(o) // c for o, c in zip(info.chunk_offset, chunks))
            locs[coords] = (int(info.byte_offset), int(info.size))

        if dsid.get_num_chunks():
            dsid.chunk_iter(visit)
        return DatasetLayout(tuple(ds.shape), ds.dtype.itemsize, chunks, dcpl.get_nfilters() > 0, locs, None,
                             size, page)
    if dcpl.get_layout() == h5py.h5d.CONTIGUOUS:
        off = dsid.get_offset()
        return DatasetLayout(tuple(ds.shape), ds.dtype.itemsize, None, False, {}, off, size, page)
    raise NotModelled(f"{dataset}: compact or virtual layout")


def raw_reads(layout: DatasetLayout, requests, cache: ChunkCache) -> list[list[tuple[int, int]]]:
    """For each ``(start, count)`` request, the ``(offset, size)`` reads HDF5 makes for raw data, in order. A
    request may be a :class:`~ccp.model.union.MultiBox`, one call on several boxes (a list index, points): each
    chunk it needs loaded once (:meth:`DatasetModel.call`), a contiguous dataset read one run of the call's elements
    at a time."""
    if layout.chunks is None:
        return _contiguous_reads(layout, requests)
    model_loads: list = []

    def stored_chunk_bytes(c):
        """The model asks for a chunk's stored size when it loads the chunk: note the load, answer from the index."""
        model_loads.append(c)
        return layout.chunk_locations[c][1]

    model = DatasetModel(layout.shape, layout.chunks, layout.itemsize, filtered=layout.filtered, cache=cache,
                         stored_chunk_bytes=stored_chunk_bytes,
                         allocated=set(layout.chunk_locations))
    if not layout.filtered and not cache.holds(model.chunk_bytes):
        raise NotModelled("unfiltered chunks larger than the chunk cache are read piecewise")
    out = []
    for req in requests:
        model_loads.clear()
        if isinstance(req, MultiBox):
            model.call(req)
        else:
            model.request("read", tuple(req[0]), tuple(req[1]))
        out.append([layout.chunk_locations[c] for c in model_loads])
    return out


def _call_runs(layout: DatasetLayout, call: MultiBox) -> list[tuple[int, int]]:
    """A call's ``(offset in the dataset, bytes)`` runs on a contiguous dataset: its elements in HDF5's order
    (:func:`ccp.model.union.selected_elements`), one run while the next element is the next in the file."""
    coords = selected_elements(call.starts, call.counts, layout.shape, call.points)
    if not len(coords):
        return []
    lin = np.ravel_multi_index(tuple(coords.T), tuple(int(v) for v in layout.shape)) if len(layout.shape) \
        else np.zeros(1, np.int64)
    cut = np.flatnonzero(np.diff(lin) != 1) + 1
    firsts = np.concatenate([[0], cut])
    ends = np.append(cut, len(lin))
    return [(int(lin[a]) * layout.itemsize, int(b - a) * layout.itemsize) for a, b in zip(firsts, ends)]


def _contiguous_reads(layout: DatasetLayout, requests, sieve_buf_size: int = 0) -> list[list[tuple[int, int]]]:
    """``sieve_buf_size`` 0: h5py's file-object driver (no sieving, one read per run); a drive with data
    sieving (sec2) would use HDF5's DEFAULT_SIEVE_BUF_SIZE."""
    if layout.contiguous_offset is None:
        return [[] for _ in requests]                     # never written: fill value, no I/O
    helper = DatasetModel(layout.shape, None, layout.itemsize)
    storage = int(np.prod(layout.shape)) * layout.itemsize
    cap = min(sieve_buf_size, storage)
    sieve: tuple[int, int] | None = None                  # (start, size) within the dataset
    out = []
    for req in requests:
        reads = []
        if isinstance(req, MultiBox):
            pieces = _call_runs(layout, req)
        else:
            offsets, length = helper._contig_pieces(tuple(req[0]), tuple(req[1]))
            pieces = [(int(o), length) for o in offsets]
        for off, length in pieces:
            if sieve is not None and sieve[0] <= off and off + length <= sieve[0] + sieve[1]:
                continue
            if length > cap or cap == 0:
                reads.append((layout.contiguous_offset + off, length))
            else:
                sieve = (off, min(cap, storage - off))
                reads.append((layout.contiguous_offset + off, sieve[1]))
        out.append(reads)
    return out


def through_page_buffer(per_request, page_size: int, buffer_bytes: int, preloaded=()):
    """Raw reads as a page buffer turns them into file reads: a read of at least a page goes straight
    to the file; a smaller one reads each page it touches that is not buffered (LRU of whole pages)."""
    capacity = max(0, buffer_bytes // page_size)
    lru: OrderedDict[int, None] = OrderedDict((p, None) for p in preloaded)
    out = []
    for reads in per_request:
        now = []
        for off, size in reads:
            if size >= page_size or capacity == 0:
                now.append((off, size))
                continue
            for page in range(off // page_size, (off + size - 1) // page_size + 1):
                if page in lru:
                    lru.move_to_end(page)
                    continue
                now.append((page * page_size, page_size))
                lru[page] = None
                if len(lru) > capacity:
                    lru.popitem(last=False)
        out.append(now)
    return out


@dataclass(frozen=True)
class Prediction:
    """Predicted GETs and bytes: for the open (from a local trace) and for each request (modelled)."""

    open_cost: ReadCost
    per_request: tuple            # ReadCost per request
    reads: tuple                  # the (offset, size) raw reads per request, in order

    @property
    def http_gets(self) -> int:
        return sum(c.gets for c in self.per_request)

    @property
    def http_bytes(self) -> int:
        return sum(c.fetched for c in self.per_request)

    @property
    def bytes_used(self) -> int:
        return sum(s for reads in self.reads for _, s in reads)


def predict_gets(layout: DatasetLayout, requests, cache: ChunkCache, cache_type: str, block_size: int,
                 open_reads=(), page_buffer: int = 0) -> Prediction:
    """GETs and bytes per request of a read cell over S3 through fsspec's ``cache_type``.

    ``open_reads``: the ``(offset, size)`` reads HDF5 made before the first request (see
    :func:`trace_open`); they set the fsspec cache's state the requests start from.
    """
    per = raw_reads(layout, requests, cache)
    if page_buffer and layout.page_size:
        pre = [o // layout.page_size for o, s in open_reads if s == layout.page_size and o % layout.page_size == 0]
        per = through_page_buffer(per, layout.page_size, page_buffer, pre)
    model = FsspecCacheModel(cache_type, block_size, layout.file_size)
    opened = [model.read(o, s) for o, s in open_reads]
    costs = []
    for reads in per:
        g = b = 0
        for off, size in reads:
            c = model.read(off, size)
            g, b = g + c.gets, b + c.fetched
        costs.append(ReadCost(g, b))
    return Prediction(ReadCost(sum(c.gets for c in opened), sum(c.fetched for c in opened)), tuple(costs),
                      tuple(tuple(r) for r in per))


def open_dataset_for_reading(h5file, dataset: str):
    """Open ``dataset`` and bring its chunk index into HDF5's metadata cache (the open phase of a read
    cell): afterwards a request reads raw data only, which is what the model predicts."""
    ds = h5file[dataset]
    if ds.chunks is not None:
        ds.id.get_num_chunks()
    return ds


def trace_open(path, dataset: str, **h5kw) -> list[tuple[int, int]]:
    """The reads HDF5 makes to open ``path`` and ``dataset`` (and its chunk index), traced locally
    through h5py's file-object driver: the metadata part of a remote read cell."""
    import h5py

    from ccp.remote.network import TracedFile

    with open(path, "rb") as raw:
        tf = TracedFile(raw)
        with h5py.File(tf, "r", **h5kw) as f:
            open_dataset_for_reading(f, dataset)
            reads = [(r.offset, r.size) for r in tf.reads]
    return reads


__all__ = ["DatasetLayout", "NotModelled", "Prediction", "dataset_layout", "open_dataset_for_reading",
           "predict_gets", "raw_reads", "through_page_buffer", "trace_open"]
