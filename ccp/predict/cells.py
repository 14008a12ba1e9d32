"""Predict a cell before running it: the chunk-cache model's I/O counts and a calibrated time.

The model (``ccp.model``) is pure; this module feeds it a cell's requests and, where a work file
exists, the stored size of each chunk, and turns counts into seconds with a short calibration of
this machine (per-request cost, decode cost per chunk byte for each filter, read bandwidth).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.errors import CcpError
from ccp.model import chunk_size_table, simulate_arrays, simulate_tiling, summarise
from ccp.workload.requests import plan_for

if TYPE_CHECKING:
    from ccp.measurement.passes import CellJob
    from ccp.predict.calibration import Calibration

PREDICTED = ("predicted_raw_reads", "predicted_raw_read_bytes", "predicted_raw_writes", "predicted_raw_write_bytes",
             "predicted_chunk_loads", "predicted_chunk_hits", "predicted_evictions", "predicted_time_s")


class ChunkIndex(dict):
    """{chunk offset: stored bytes} of the chunks the file's chunk index holds (the allocated ones).

    Chunks absent from it were never written: HDF5 reads them as the fill value, with no I/O.
    ``chunked`` is False for a contiguous dataset, whose storage is allocated or not as a whole.
    """

    def __init__(self, sizes=(), *, chunked: bool = True, storage_allocated: bool = True, nchunks_grid: int = 0):
        super().__init__(sizes)
        self.chunked = chunked
        self.storage_allocated = storage_allocated
        self.nchunks_grid = nchunks_grid

    def allocated(self, chunks):
        """What :func:`ccp.model.simulate` takes as ``allocated`` for a layout of ``chunks``."""
        if not self.chunked:
            return self.storage_allocated
        if self.nchunks_grid and len(self) >= self.nchunks_grid:
            return True                       # every chunk written: no set needed
        chunks = tuple(int(c) for c in chunks)
        return {tuple(int(o) // c for o, c in zip(off, chunks)) for off in self}


def stored_chunk_sizes(path, dataset_path: str) -> ChunkIndex:
    """The dataset's chunk index (read-only): allocated chunks and their stored sizes.

    For a contiguous dataset, an empty index that says whether its storage was ever allocated.
    """
    import h5py

    with h5py.File(path, "r") as f:
        dsid = f[dataset_path].id
        dcpl = dsid.get_create_plist()
        if dcpl.get_layout() != h5py.h5d.CHUNKED:
            return ChunkIndex(chunked=False, storage_allocated=dsid.get_storage_size() > 0)
        chunks = dcpl.get_chunk()
        grid = int(np.prod([-(-s // c) for s, c in zip(dsid.shape, chunks)], dtype=np.int64))
        sizes: dict[tuple[int, ...], int] = {}
        if dsid.get_num_chunks():
            dsid.chunk_iter(lambda info: sizes.__setitem__(tuple(info.chunk_offset), info.size))
        return ChunkIndex(sizes, nchunks_grid=grid)


def _allocated(stored, chunks):
    """``allocated`` for the model from a chunk index: its chunks; True when nothing is known."""
    if isinstance(stored, ChunkIndex):
        return stored.allocated(chunks)
    if stored and chunks is not None:     # a plain {offset: size} dict read from a chunk index
        return ChunkIndex(stored).allocated(chunks)
    return True


_SOURCE_INDEX: dict = {}


def source_index(source) -> ChunkIndex | None:
    """The chunk index of the user's dataset a copy cell reads (None for generated data: fully written)."""
    file, path = getattr(source, "file", None), getattr(source, "path", None)
    if file is None or not path:
        return None
    key = (str(file), path, source.identity)
    if key not in _SOURCE_INDEX:
        _SOURCE_INDEX.clear()             # one source per sweep: keep only the latest
        _SOURCE_INDEX[key] = stored_chunk_sizes(file, path)
    return _SOURCE_INDEX[key]


#: The largest chunk grid the compiled model takes: it keeps a byte or more per chunk of the grid (allocated, cached),
#: 2**30 chunks being 1 GiB a table; an extendible dataset of 2**40 rows in 1024-row chunks is refused, not allocated.
MODEL_MAX_CHUNKS = 1 << 30


def check_grid(shape, chunks, what: str = "") -> None:
    """One line when ``chunks`` over ``shape`` is a grid too large for the model's per-chunk tables."""
    if not chunks:
        return
    n = 1
    for s, c in zip(shape, chunks):
        n *= -(-int(s) // max(int(c), 1))
    if n > MODEL_MAX_CHUNKS:
        from ccp.units import format_count, shape_str

        raise CcpError(f"{what + ': ' if what else ''}{shape_str(shape)} in chunks {shape_str(chunks)} is "
                       f"{format_count(n)} chunks, more than ccp's model holds ({format_count(MODEL_MAX_CHUNKS)}: it keeps "
                       "a byte or more per chunk); predict on a copy of a region of it, or with larger chunks")


def predict_requests(cell, source, stored=None, max_requests=None, per_request=True):
    """Per-request predictions (the last one is the dataset close) for a read, write or copy cell.

    The compiled model (``ccp.model.fast``) walks the requests; a tiled pattern is generated inside it,
    so even a 10 M-request cell needs no plan in memory. ``per_request=False`` keeps totals only.
    """
    check_grid(source.shape, cell.chunks, getattr(source, "path", None) or "")
    itemsize = np.dtype(source.dtype).itemsize
    c = cell.cache
    cache = ChunkCache(c.nbytes, c.nslots, c.w0)
    access = cell.access

    def run(chunks, filtered, op, index, allocated):
        kw = {"filtered": filtered, "cache": cache, "allocated": allocated, "per_request": per_request,
              "stored_chunk_bytes": _size_table(source.shape, chunks, index)}
        if access.random or getattr(access, "trace", None):
            plan = plan_for(access, source.shape, strided=True)   # a replay's calls as made (and as the runner
            k = len(plan) if max_requests is None else min(len(plan), max_requests)   # reads them): exact on any layout
            cuts = [int(r) for r in (plan.reopen_before if plan.reopen_before is not None else ()) if 0 < r < k]
            if not cuts or op != "read":
                strides, blocks = plan.hyperslab(0, k)
                return simulate_arrays(source.shape, chunks, itemsize, ops=op, starts=plan.starts[:k],
                                       counts=plan.counts[:k], strides=strides, blocks=blocks, **kw)
            # a replay whose program lost its cache: each session starts with an empty cache
            bounds = [0, *cuts, k]
            return _sessions([simulate_arrays(source.shape, chunks, itemsize, ops=op, starts=plan.starts[a:b],
                                              counts=plan.counts[a:b], strides=plan.hyperslab(a, b)[0],
                                              blocks=plan.hyperslab(a, b)[1], **kw)
                              for a, b in zip(bounds, bounds[1:])])
        return simulate_tiling(source.shape, chunks, itemsize, op=op, block=access.block, order=access.order,
                               max_requests=max_requests, **kw)

    op = "read" if access.op == "read" else "write"
    # a read touches only the chunks the file's index holds (the rest read as fill value, no I/O);
    # a write or copy creates its dataset empty
    preds = run(cell.chunks, not cell.filters.is_none, op, stored if op == "read" else None,
                _allocated(stored, cell.chunks) if op == "read" else False)
    if access.op == "copy":   # the source handle's reads happen in the same requests
        index = source_index(source)
        index = stored if index is None else index
        preds = preds + run(source.chunks, not source.filters.is_none, "read", index, _allocated(index, source.chunks))
    return preds


def _sessions(parts):
    """One prediction of consecutive sessions: a session's close happens in the next session's first
    request (the replay reopens the dataset inside that request's timed call); the last close stays last."""
    from ccp.model.fast import Predictions

    n = sum(p.n_requests for p in parts)
    if not parts[0].per_request:
        counts = sum(p.counts for p in parts)
        return Predictions(counts, parts[0].ops, n)
    rows, ops = [], []
    carry = None
    for p in parts:
        req = p.counts[:-1].copy()
        if carry is not None and len(req):
            req[0] += carry
        rows.append(req)
        ops.append(p.ops[:-1])
        carry = p.counts[-1]
    assert carry is not None     # parts is never empty
    rows.append(carry[None, :])
    ops.append(parts[-1].ops[-1:])
    return Predictions(np.concatenate(rows), np.concatenate(ops), n)


def _size_table(shape, chunks, sizes):
    """Stored bytes per chunk over the grid (C order) from a chunk index; None when nothing is known."""
    if not sizes or chunks is None:
        return None
    return chunk_size_table(shape, chunks, dict(sizes))


def predict_cell(cell, source, calibration: Calibration | None = None, stored=None, max_requests=None) -> dict:
    """The ``predicted_*`` columns of a cell (counts for the whole dataset handle, close included)."""
    preds = predict_requests(cell, source, stored, max_requests, per_request=False)
    return summarise_predictions(cell, source, preds, calibration)


def summarise_predictions(cell, source, preds, calibration: Calibration | None = None) -> dict:
    total = summarise(preds)
    n = preds.n_requests
    chunk_bytes = int(np.prod(cell.chunks)) * np.dtype(source.dtype).itemsize if cell.chunks else 0
    out = {"predicted_requests": n, "predicted_raw_reads": total.raw_reads, "predicted_raw_read_bytes": total.raw_read_bytes,
           "predicted_raw_writes": total.raw_writes, "predicted_raw_write_bytes": total.raw_write_bytes,
           "predicted_chunk_loads": total.chunk_loads, "predicted_chunk_hits": total.chunk_hits,
           "predicted_evictions": total.evictions}
    out["predicted_time_s"] = calibration.cell_time(cell, total, n, chunk_bytes) if calibration else float("nan")
    return out


def predict_job(job: CellJob, calibration: Calibration | None, *,
                classes: bool = True) -> tuple[dict, np.ndarray | None, np.ndarray | None]:
    """The model's ``predicted_*`` columns for a cell's job and, with ``classes``, its per-request cost classes and
    per-request model (:data:`ccp.measurement.passes.REQUEST_MODEL_COLUMNS`).

    A read cell's prediction uses its file's chunk index (the stored size of each chunk). The compiled
    model predicts every cell whole (10 M requests in about a second); per-request rows, 56 bytes a
    request, are kept only when a time budget needs them to extrapolate with: a prefix's unmeasured requests
    make the I/O the model predicts for them (it is exact), not the I/O of the measured ones scaled.
    """
    cell = job.cell
    stored = None
    if job.file and cell.access.op == "read":
        stored = stored_chunk_sizes(job.file, job.dataset_path)
    preds = predict_requests(cell, job.source, stored, per_request=classes)
    summary = summarise_predictions(cell, job.source, preds, calibration)
    if getattr(job, "remote", None) is not None:
        summary.update(predict_http_columns(job))
    if not classes:
        return summary, None, None
    return summary, preds.classes(), request_model(cell, job.source, preds, calibration)


def request_model(cell, source, preds, calibration: Calibration | None) -> np.ndarray:
    """Per request (the close left out), the model's REQUEST_MODEL_COLUMNS: counts, chunk loads and the calibrated
    time of :meth:`Calibration.cell_time` request by request (NaN without a calibration)."""
    from ccp.measurement.passes import REQUEST_MODEL_COLUMNS

    n = preds.n_requests
    cols = {name: preds.column(name)[:n].astype(np.float64) for name in REQUEST_MODEL_COLUMNS if name != "time_s"}
    if calibration is None:
        cols["time_s"] = np.full(n, np.nan)
    else:
        chunk_bytes = int(np.prod(cell.chunks)) * np.dtype(source.dtype).itemsize if cell.chunks else 0
        spec = cell.filters.spec
        dec, enc = calibration.decode_s_per_byte.get(spec, 0.0), calibration.encode_s_per_byte.get(spec, 0.0)
        written = cols["raw_writes"] if not cell.filters.is_none else 0.0
        cols["time_s"] = (calibration.per_request_s + cols["raw_read_bytes"] * calibration.read_s_per_byte
                          + cols["chunk_loads"] * chunk_bytes * dec + written * chunk_bytes * enc
                          + cols["raw_write_bytes"] * calibration.read_s_per_byte)
    return np.stack([cols[name] for name in REQUEST_MODEL_COLUMNS], axis=1)


def predict_http_columns(job: CellJob) -> dict:
    """``predicted_http_*`` of an S3 cell: GETs and bytes from the file's chunk index, the chunk-cache model,
    the page buffer and fsspec's cache rules (:func:`ccp.remote.sweep_cell.predict_http`); None where not modelled."""
    from ccp.remote.predict import NotModelled
    from ccp.remote.sweep_cell import predict_http, prediction_columns

    cell = job.cell
    plan = plan_for(cell.access, job.source.shape, strided=False)    # the GET model takes boxes
    try:
        pred = predict_http(job.file, job.dataset_path, plan.starts.tolist(), plan.counts.tolist(), cell.cache,
                            cell.storage)
    except NotModelled:
        pred = None
    return prediction_columns(pred)
