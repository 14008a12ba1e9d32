"""Predict a cell before running it: the chunk-cache model's I/O counts and a calibrated time.

The model (``ccp.model``) is pure; this module feeds it a cell's requests and, where a work file
exists, the stored size of each chunk, and turns counts into seconds with a short calibration of
this machine (per-request cost, decode cost per chunk byte for each filter, read bandwidth).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ccp.hdf5 import plists
from ccp.model import CacheParams, chunk_size_table, simulate_arrays, simulate_tiling, summarise
from ccp.workload.requests import plan_for

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
        sizes = {}
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


def predict_requests(cell, source, stored=None, max_requests=None, per_request=True):
    """Per-request predictions (the last one is the dataset close) for a read, write or copy cell.

    The compiled model (``ccp.model.fast``) walks the requests; a tiled pattern is generated inside it,
    so even a 10 M-request cell needs no plan in memory. ``per_request=False`` keeps totals only.
    """
    itemsize = np.dtype(source.dtype).itemsize
    c = cell.cache
    cache = CacheParams(c.nbytes, c.nslots, c.w0)
    access = cell.access

    def run(chunks, filtered, op, index, allocated):
        kw = {"filtered": filtered, "cache": cache, "allocated": allocated, "per_request": per_request,
              "stored_chunk_bytes": _size_table(source.shape, chunks, index)}
        if access.random or getattr(access, "trace", None):
            plan = plan_for(access, source.shape)
            k = len(plan) if max_requests is None else min(len(plan), max_requests)
            cuts = [int(r) for r in (plan.reopen_before if plan.reopen_before is not None else ()) if 0 < r < k]
            if not cuts or op != "read":
                return simulate_arrays(source.shape, chunks, itemsize, ops=op, starts=plan.starts[:k],
                                       counts=plan.counts[:k], **kw)
            # a replay whose program lost its cache: each session starts with an empty cache
            bounds = [0, *cuts, k]
            return _sessions([simulate_arrays(source.shape, chunks, itemsize, ops=op, starts=plan.starts[a:b],
                                              counts=plan.counts[a:b], **kw) for a, b in zip(bounds, bounds[1:])])
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
    rows.append(carry[None, :])
    ops.append(parts[-1].ops[-1:])
    return Predictions(np.concatenate(rows), np.concatenate(ops), n)


def _size_table(shape, chunks, sizes):
    """Stored bytes per chunk over the grid (C order) from a chunk index; None when nothing is known."""
    if not sizes or chunks is None:
        return None
    return chunk_size_table(shape, chunks, dict(sizes))


# ------------------------------------------------------------------ calibration

@dataclass(frozen=True)
class Calibration:
    per_request_s: float                 # HDF5 + ccp per request, data already cached
    read_s_per_byte: float               # raw file reads (page cache warm: a lower bound for cold)
    decode_s_per_byte: dict              # filter spec -> seconds per uncompressed chunk byte decoded
    encode_s_per_byte: dict              # filter spec -> seconds per uncompressed chunk byte encoded

    def cell_time(self, cell, total, requests: int, chunk_bytes: int) -> float:
        spec = cell.filters.spec
        dec = self.decode_s_per_byte.get(spec, 0.0)
        enc = self.encode_s_per_byte.get(spec, 0.0)
        loads_bytes = total.chunk_loads * chunk_bytes
        written_chunks = total.raw_writes if not cell.filters.is_none else 0
        return (requests * self.per_request_s + total.raw_read_bytes * self.read_s_per_byte
                + loads_bytes * dec + written_chunks * chunk_bytes * enc + total.raw_write_bytes * self.read_s_per_byte)


def calibrate(filter_pipelines, dtype, data_kind: str = "normal", work_dir: Path | None = None) -> Calibration:
    """A few seconds of measurement on this machine; cached in ``work_dir/calibration.json``."""
    import h5py
    from h5py import h5d, h5f, h5p, h5s, h5t

    from ccp.config.sweep import GenerateSpec
    from ccp.workload.datagen import Generator

    if np.dtype(dtype).kind not in "iuf":   # raw records (compound, string, ...): costs per byte of bytes
        dtype = np.dtype("u1")
    specs = sorted({f.spec for f in filter_pipelines})
    key = f"{h5py.version.hdf5_version}|{np.dtype(dtype).str}|{data_kind}"
    cache_file = Path(work_dir) / "calibration.json" if work_dir else None
    known = json.loads(cache_file.read_text()) if cache_file and cache_file.exists() else {}
    entry = known.get(key, {"decode": {}, "encode": {}})
    missing = [s for s in specs if s not in entry["decode"]]
    if missing or "per_request_s" not in entry:
        import tempfile

        from ccp.hdf5.filters import parse_filters

        shape, chunks = (16, 128, 128), (16, 128, 128)       # one 1 MiB chunk (4-byte items)
        data = Generator(GenerateSpec(shape, np.dtype(dtype), data_kind, 0)).read((0, 0, 0), shape)
        with tempfile.TemporaryDirectory() as tmp:
            for spec in missing or ["none"]:
                path = f"{tmp}/c.h5"
                dcpl = h5p.create(h5p.DATASET_CREATE)
                dcpl.set_chunk(chunks)
                parse_filters(spec).apply(dcpl, data.dtype)
                fid = h5f.create(path.encode(), h5f.ACC_TRUNC)
                ds = h5d.create(fid, b"d", h5t.py_create(data.dtype, logical=True), h5s.create_simple(shape), dcpl=dcpl)
                t0 = time.perf_counter()
                for _ in range(3):
                    ds.write(h5s.ALL, h5s.ALL, data)
                    ds.close()
                    ds = h5d.open(fid, b"d")
                enc = (time.perf_counter() - t0) / 3
                ds.close()
                fid.close()
                fid = h5f.open(path.encode(), h5f.ACC_RDONLY)
                dapl = plists.no_cache_dapl()              # no cache: every read decodes the chunk
                ds = h5d.open(fid, b"d", dapl)
                out = np.empty(shape, data.dtype)
                t0 = time.perf_counter()
                for _ in range(5):
                    ds.read(h5s.ALL, h5s.ALL, out)
                dec = (time.perf_counter() - t0) / 5
                ds.close()
                fid.close()
                nbytes = data.nbytes
                if spec == "none":
                    entry["read_s_per_byte"] = dec / nbytes
                entry["decode"][spec] = dec / nbytes
                entry["encode"][spec] = enc / nbytes
            if "per_request_s" not in entry:
                entry["per_request_s"] = _per_request_cost(f"{tmp}/r.h5", data)
        entry.setdefault("read_s_per_byte", 1e-10)
        for spec in ("none",):
            entry["decode"].setdefault(spec, 0.0)
            entry["encode"].setdefault(spec, 0.0)
        if "none" in entry["decode"]:
            base = entry["decode"]["none"]
            for s in entry["decode"]:
                if s != "none":
                    entry["decode"][s] = max(entry["decode"][s] - base, 0.0)   # the read itself is counted apart
            entry["decode"]["none"] = 0.0
        known[key] = entry
        if cache_file:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            cache_file.write_text(json.dumps(known, indent=2))
    return Calibration(entry["per_request_s"], entry["read_s_per_byte"], dict(entry["decode"]), dict(entry["encode"]))


def _per_request_cost(path: str, data) -> float:
    """Seconds per one-element read from a cached chunk: HDF5's and ccp's fixed cost per request.

    Its own file and dataset: HDF5 shares one chunk cache between handles of the same dataset,
    set by the first open, so a second handle's cache settings would be ignored.
    """
    from h5py import h5d, h5f, h5p, h5s, h5t

    shape = data.shape
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk(shape)
    fid = h5f.create(path.encode(), h5f.ACC_TRUNC)
    dapl = plists.dapl(521, 2 * data.nbytes, 0.75)
    ds = h5d.create(fid, b"r", h5t.py_create(data.dtype, logical=True), h5s.create_simple(shape), dcpl=dcpl, dapl=dapl)
    ds.write(h5s.ALL, h5s.ALL, data)
    one, fs = h5s.create_simple((1,) * len(shape)), ds.get_space()
    small = np.empty((1,) * len(shape), data.dtype)
    mtype = h5t.py_create(data.dtype)
    n = 20000
    t0 = time.perf_counter()
    for i in range(n):
        fs.select_hyperslab(tuple(i % d for d in shape), (1,) * len(shape))
        ds.read(one, fs, small, mtype)
    cost = (time.perf_counter() - t0) / n
    ds.close()
    fid.close()
    return cost


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


def calibration_dict(cal: Calibration) -> dict:
    return asdict(cal)


# ------------------------------------------------------------------ traps

def traps(cell, source, max_requests: int = 256) -> list[str]:
    """What in this cell's layout, cache and access pattern is a known way to be slow."""
    from ccp.model import ChunkGrid
    from ccp.units import format_bytes, shape_str

    out = []
    if cell.chunks is None:
        return out
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = int(np.prod(cell.chunks)) * itemsize
    nbytes = cell.cache.nbytes
    grid = ChunkGrid(tuple(source.shape), tuple(cell.chunks))
    plan = plan_for(cell.access, source.shape)
    partial = any(any(c % k for c, k in zip(cnt, cell.chunks)) or any(s % k for s, k in zip(st, cell.chunks))
                  for st, cnt in zip(plan.starts[:max_requests], plan.counts[:max_requests]))
    if chunk_bytes > nbytes and partial and not cell.filters.is_none:
        out.append(f"chunk larger than the cache: a {shape_str(cell.chunks)} chunk is {format_bytes(chunk_bytes)}, the cache "
                   f"{format_bytes(nbytes)}; every request that covers part of a chunk decompresses the whole chunk again")
    # chunks one request needs together, that could all be cached, but share a hash slot
    fits = max(1, nbytes // max(chunk_bytes, 1))
    for st, cnt in zip(plan.starts[:max_requests], plan.counts[:max_requests]):
        touched = grid.chunks_touched(tuple(map(int, st)), tuple(map(int, cnt)))
        if 1 < len(touched) <= fits:
            slots = [grid.slot(c, cell.cache.nslots) for c in touched]
            if len(set(slots)) < len(slots):
                out.append(f"hash-slot collision: one request needs {len(touched)} chunks that fit the cache together, but some "
                           f"share a slot of the {cell.cache.nslots}-slot hash table, so they evict each other "
                           f"(use a prime nslots, 10-100x the chunks that fit)")
                break
    return out


def plan_sweep(sweep_path, work_dir: Path | None = None) -> list[dict]:
    """Every cell that `ccp run` would run, with the model's predictions and a calibrated time. No measurement."""
    from ccp.engine import prepare
    from ccp.units import shape_str
    from ccp.workload.files import layout_path

    sweep, source, cells = prepare(sweep_path)
    cal = calibrate([c.filters for c in cells], source.dtype, sweep.dataset.generate.data if sweep.dataset.generate else "normal",
                    work_dir)
    rows = []
    for cell in cells:
        stored = None
        if cell.access.op == "read":
            if cell.from_source:
                stored = stored_chunk_sizes(sweep.dataset.file, sweep.dataset.path)
            elif work_dir is not None:
                f = layout_path(work_dir, sweep, source, cell.chunks, cell.filters)
                stored = stored_chunk_sizes(f, sweep.dataset.path) if f.exists() else None
        p = predict_cell(cell, source, cal, stored)
        rows.append({
            "cell_id": cell.cell_id, "chunks": shape_str(cell.chunks), "filters": cell.filters.spec,
            "cache_nbytes": cell.cache.nbytes, "cache_nslots": cell.cache.nslots, "cache_w0": cell.cache.w0,
            "op": cell.access.op, "block": shape_str(cell.access.block), "order": cell.access.order_str,
            "random": cell.access.random, "client": cell.client, "requests": p["predicted_requests"], "raw_reads": p["predicted_raw_reads"],
            "raw_read_bytes": p["predicted_raw_read_bytes"], "raw_writes": p["predicted_raw_writes"],
            "raw_write_bytes": p["predicted_raw_write_bytes"], "chunk_loads": p["predicted_chunk_loads"],
            "time_s": p["predicted_time_s"] * sweep.repeats, "traps": traps(cell, source),
            "bytes_exact": stored is not None or cell.filters.is_none,
        })
    return rows
