"""``ccp diagnose --verify``: measure the top cure by replaying the traced reads with and without it.

Both sides are the same replay (the traced calls read in order, each as the one call the program made: a
strided or block selection is one key, ``a[::3]`` or ``h5py.MultiBlockSlice``, a list index's boxes one read of
their union; reopening the file where the program's cache was lost), so the ratio is the cure's effect, not the
difference between the program and a replay. An h5py replay is also run once per side under HDF5's log driver,
untimed: the raw-data reads and bytes each side made (``before_io``/``after_io``), which for the traced side are
the program's own. The replay goes through the library the program read with, so what is measured is what the
user would run: h5py high-level reads with ``rdcc_nbytes=`` for an h5py program; for a netCDF4-python
program, ``netCDF4.Dataset`` and ``Variable`` reads through netCDF-C (its own chunk cache, set with
``set_var_chunk_cache`` only where the traced cache or the cure differs from what netCDF-C gave), and
a repack cure measured on a copy of the variable created with the cure's ``chunksizes=``. The user's file is opened
read-only; a repack cure of an h5py program is measured on a temporary copy of the dataset with the new
chunks and the file's own filters. The page cache is warm on both sides (the file was just read);
repeats give the median.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import DEFAULT_W0
from ccp.trace.cures import block_sequence, next_prime
from ccp.trace.libraries import NON_COORD, is_local_path
from ccp.units import format_bytes
from ccp.workload.replay import ReplaySequence
from ccp.workload.replay_batches import replay_sequence
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace


def _sessions(seq: ReplaySequence, merge: bool) -> list[tuple]:
    """(cache, first request, end, pid) of each session; ``merge``: one per process (the file kept open)."""
    bounds = list(seq.session_starts) + [len(seq.plan)]
    sessions = list(zip(seq.session_caches, bounds[:-1], bounds[1:], seq.session_pids))
    if not merge:
        return sessions
    merged: list[tuple] = []
    for c, a, b, pid in sessions:
        if merged and merged[-1][3] == pid:
            merged[-1] = (merged[-1][0], merged[-1][1], b, pid)
        else:
            merged.append((c, a, b, pid))
    return merged


def _box(seq: ReplaySequence, i: int, multiblock: bool = True) -> tuple | list[tuple[slice, ...]]:
    """Request i as the key the program wrote: one call, a box, a strided selection of 1-element blocks
    (``a[::3]``) or, with ``multiblock`` (h5py), ``h5py.MultiBlockSlice`` where blocks hold several elements; else
    (netCDF4-python, which has no key for them and whose own calls never select them) one key per block, the
    same elements in several calls."""
    st, ct = seq.plan.starts[i], seq.plan.counts[i]
    sd, bk = seq.plan.hyperslab(i, i + 1)
    if sd is None or bk is None or not (bk[0] < ct).any():
        return tuple(slice(int(s), int(s + n)) for s, n in zip(st, ct))
    if (bk[0][bk[0] < ct] == 1).all():
        return tuple(slice(int(s), int(s + n), int(t) if b < n else None) for s, n, t, b in zip(st, ct, sd[0], bk[0]))
    if multiblock:
        from h5py import MultiBlockSlice

        return tuple(MultiBlockSlice(start=int(s), stride=int(t), count=(int(n) - int(b)) // int(t) + 1, block=int(b))
                     if b < n else slice(int(s), int(s + n)) for s, n, t, b in zip(st, ct, sd[0], bk[0]))
    one = replace(seq.plan, starts=seq.plan.starts[i:i + 1], counts=seq.plan.counts[i:i + 1], reopen_before=None,
                  strides=sd, blocks=bk).as_boxes()
    return [tuple(slice(int(s), int(s + n)) for s, n in zip(a, c)) for a, c in zip(one.starts, one.counts)]


def replay_reads(path: str, dataset: str, seq: ReplaySequence, merge: bool = False, cache=None,
                 log_dir: str | None = None) -> float:
    """Seconds to replay ``seq``'s reads through h5py on ``path`` (one open per session, or per process if ``merge``),
    each call one key as the program wrote it. ``log_dir``: a counted replay, each session's file opened with
    HDF5's log driver, its log ``session-K.log`` there (see :func:`replay_counts`)."""
    import h5py

    t0 = time.perf_counter()
    for k, (c, a, b, _) in enumerate(_sessions(seq, merge)):
        c = cache or c
        if log_dir is None:
            f = h5py.File(path, "r", rdcc_nbytes=int(c.nbytes), rdcc_nslots=int(c.nslots), rdcc_w0=float(c.w0))
        else:
            f = h5py.File(_logged(path, Path(log_dir) / f"session-{k}.log", c))
        with f:
            d = f[dataset]
            for i, j in _calls(seq, int(a), int(b)):
                if j - i > 1:        # one call of several boxes (fancy indexing): one read of their union
                    _read_union(d, seq, i, j)
                    continue
                key = _box(seq, i)
                for one in key if isinstance(key, list) else (key,):
                    d[one]
    return time.perf_counter() - t0


def _calls(seq: ReplaySequence, a: int, b: int) -> list[tuple[int, int]]:
    """``(first, end)`` of the requests of each call in requests ``[a, b)`` (a call split into boxes is several)."""
    cuts = (np.flatnonzero(np.diff(seq.call_of[a:b]) != 0) + 1).tolist()
    bounds = [0, *cuts, b - a]
    return [(a + x, a + y) for x, y in zip(bounds, bounds[1:])]


def _read_union(d, seq: ReplaySequence, i: int, j: int) -> None:
    """Requests ``[i, j)``, the boxes of one call, read as that call did: one ``H5Dread`` of their union (what
    h5py selects for a list index, ``d[[1, 5, 7]]``), not a read per box."""
    from h5py import h5s

    fspace = d.id.get_space()
    for k in range(i, j):
        fspace.select_hyperslab(tuple(int(x) for x in seq.plan.starts[k]), tuple(int(x) for x in seq.plan.counts[k]),
                                op=h5s.SELECT_SET if k == i else h5s.SELECT_OR)
    n = fspace.get_select_npoints()
    out = np.empty(n, d.dtype)
    d.id.read(h5s.create_simple((n,)), fspace, out)


def _logged(path: str, log: Path, cache: ChunkCache):
    """``path`` opened read-only with HDF5's log driver writing to ``log``, the chunk cache on the file access list
    as ``h5py.File(rdcc_nbytes=...)`` sets it."""
    from h5py import h5f

    from ccp.measurement import iolog

    fapl = iolog.log_fapl(log)
    fapl.set_cache(0, int(cache.nslots), int(cache.nbytes), float(cache.w0))
    return h5f.open(path.encode(), h5f.ACC_RDONLY, fapl)


def replay_counts(path: str, dataset: str, seq: ReplaySequence, merge: bool = False, cache=None) -> dict[str, int]:
    """The raw-data reads and bytes HDF5 made in one replay of ``seq`` through h5py (:func:`replay_reads` under the
    log driver, an untimed pass): what the program's own calls make on that file and cache."""
    from ccp.measurement import iolog

    with tempfile.TemporaryDirectory(prefix="ccp-verify-log-") as tmp:
        replay_reads(path, dataset, seq, merge, cache, log_dir=tmp)
        totals = [iolog.totals(iolog.parse_log(log)) for log in sorted(Path(tmp).iterdir())]
    return {k: sum(t[k] for t in totals) for k in ("raw_reads", "raw_read_bytes")}


def netcdf_variable(dataset: str) -> str:
    """The netCDF4 path (``group/name``) of the variable netCDF-C stores at HDF5 path ``dataset``."""
    parts = dataset.strip("/").split("/")
    parts[-1] = parts[-1].removeprefix(NON_COORD)
    return "/".join(parts)


def replay_netcdf4(path: str, dataset: str, seq: ReplaySequence, merge: bool = False, cache=None) -> float:
    """Seconds to replay ``seq``'s reads through netCDF4-python on ``path``, as :func:`replay_reads` through h5py:
    one ``netCDF4.Dataset`` per session (per process if ``merge``), the variable's chunk cache the traced one
    (or ``cache``), set with ``set_var_chunk_cache`` only where netCDF-C's own differs (the call reopens the
    dataset in netCDF-C, as it did in the program)."""
    import netCDF4

    name = netcdf_variable(dataset)
    t0 = time.perf_counter()
    for c, a, b, _ in _sessions(seq, merge):
        c = cache or c
        with netCDF4.Dataset(path, "r") as nc:
            v = nc[name]
            want = (int(c.nbytes), int(c.nslots), float(c.w0))
            got = v.get_var_chunk_cache()
            if (int(got[0]), int(got[1]), float(got[2])) != want:
                v.set_var_chunk_cache(size=want[0], nelems=want[1], preemption=want[2])
            for i in range(int(a), int(b)):
                key = _box(seq, i, multiblock=False)
                for k in key if isinstance(key, list) else (key,):
                    v[k]
    return time.perf_counter() - t0


def _rechunked_copy(src_path: str, dataset: str, chunks, tmp: str) -> str:
    import h5py
    from h5py import h5d, h5s

    from ccp.hdf5 import plists

    out = os.path.join(tmp, "rechunked.h5")
    with h5py.File(src_path, "r") as f, h5py.File(out, "w") as g:
        src = f[dataset]
        dcpl = plists.relaid_dcpl(src.id, "chunked", tuple(int(c) for c in chunks), None)   # its own filters and fill
        parent = os.path.dirname(dataset.rstrip("/")) or "/"
        grp = g.require_group(parent)
        h5d.create(grp.id, os.path.basename(dataset).encode(), src.id.get_type(), h5s.create_simple(src.shape), dcpl=dcpl)
        dst = g[dataset]
        step = max(1, (64 << 20) // max(1, int(np.prod(src.shape[1:])) * src.dtype.itemsize)) if src.ndim else 1
        for i in range(0, src.shape[0], step):
            dst[i:i + step] = src[i:i + step]
    return out


def netcdf4_copy(src_path: str, dataset: str, chunks, tmp: str) -> str:
    """The repack cure as a netCDF4 user writes it: the variable created with ``chunksizes=`` the cure's (its own
    dtype, dimensions, unlimited ones kept, compression, shuffle, fletcher32, fill value and attributes), in a
    new file in ``tmp`` (the copy's path), its values copied raw (no mask or scale) in slabs of whole new chunks,
    with a chunk cache holding a slab's chunks so each is compressed once. Only that variable and its dimensions
    are copied: the replay reads nothing else. (``nccopy -c``, the cure's other command, took minutes here for
    a 365x96x144 deflate variable to 365x1x1 chunks; this copy takes seconds.)"""
    import netCDF4

    out = os.path.join(tmp, "rechunked.nc")
    name = netcdf_variable(dataset)
    chunks = tuple(int(c) for c in chunks)
    with netCDF4.Dataset(src_path, "r") as src, netCDF4.Dataset(out, "w") as dst:
        v = src[name]
        v.set_auto_maskandscale(False)
        group: Any = dst          # netCDF4's stubs type complevel as a literal 0-9: the file's own level is passed
        for part in name.split("/")[:-1]:
            group = group.createGroup(part)
        for dim in v.get_dims():
            if dim.name not in dst.dimensions:
                dst.createDimension(dim.name, None if dim.isunlimited() else len(dim))
        f = v.filters() or {}
        attrs = {a: v.getncattr(a) for a in v.ncattrs() if a != "_FillValue"}
        fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
        w = group.createVariable(v.name, v.datatype, v.dimensions, zlib=bool(f.get("zlib")),
                                 complevel=int(f.get("complevel") or 4), shuffle=bool(f.get("shuffle")),
                                 fletcher32=bool(f.get("fletcher32")), chunksizes=chunks, fill_value=fill)
        w.set_auto_maskandscale(False)
        w.setncatts(attrs)
        shape = tuple(int(n) for n in v.shape)
        if not shape or not all(shape):
            return out
        row = int(np.prod(shape[1:])) * v.dtype.itemsize
        step = chunks[0] * max(1, (64 << 20) // max(1, chunks[0] * row))
        slab_chunks = int(np.prod([-(-n // c) for n, c in zip(shape[1:], chunks[1:])])) * -(-min(step, shape[0]) // chunks[0])
        w.set_var_chunk_cache(size=max(step * row * 2, 1 << 20), nelems=next_prime(2 * slab_chunks + 1009),
                              preemption=DEFAULT_W0)
        for i in range(0, shape[0], step):
            w[i:min(i + step, shape[0])] = v[i:min(i + step, shape[0])]
    return out


def _unmeasured(name: str, note: str) -> dict:
    # None: said in words by format_diagnosis, never printed as a time or a speed-up
    return {"cure": name, "before_s": None, "after_s": None, "note": note}


def verify_top(trace: Trace, diag: dict, repeats: int = 3, seq: ReplaySequence | None = None) -> dict:
    """Measure the top cure of one dataset's diagnosis; returns before/after seconds (None: not measured) and how.
    ``seq``: the dataset's read sequence the diagnosis used (else it is built from ``trace.table``)."""
    cure = diag["cures"][0]
    file, dataset = diag["file"], diag["dataset"]
    how = cure.get("apply") or {}
    name = cure["cure"]
    if not is_local_path(file):
        return _unmeasured(name, "the program read a file object with no local path (fsspec, BytesIO): --verify "
                                 "replays local files only")
    if not os.path.isfile(file):
        return _unmeasured(name, f"{file} is not there any more: nothing to replay")
    netcdf = diag.get("library") == "netCDF4"
    if netcdf:
        try:
            import netCDF4  # noqa: F401
        except ImportError:
            return _unmeasured(name, "the program read through netCDF4-python, which is not installed here: "
                                     "--verify replays through it")
    if seq is None:
        seq = replay_sequence(trace, dataset, file=file, op="read")
    replay = replay_netcdf4 if netcdf else replay_reads
    with tempfile.TemporaryDirectory(prefix="ccp-verify-") as tmp:
        after_path, after_seq, merge, cache = file, seq, False, None
        kind = how.get("kind")
        copied = ""
        if kind == "repack" and netcdf:
            after_path = netcdf4_copy(file, dataset, how["chunks"], tmp)
            copied = "; repack measured on a temporary copy made by netCDF4 with chunksizes=, read through netCDF4"
        elif kind == "repack":
            after_path, copied = _rechunked_copy(file, dataset, how["chunks"], tmp), "; repack measured on a temporary copy"
        elif kind == "blocks":
            after_seq = block_sequence(seq)
        elif kind == "batched":
            npid = len(set(seq.session_pids))
            pids = tuple(sorted(set(seq.session_pids)))
            after_seq = replace(seq, ops=np.full(npid, "read", dtype=object),
                                plan=RequestPlan(np.tile(how["start"], (npid, 1)), np.tile(how["count"], (npid, 1))),
                                call_of=np.arange(npid, dtype=np.int64), ncalls=npid,
                                session_starts=np.arange(npid, dtype=np.int64),
                                session_caches=tuple(seq.session_caches[seq.session_pids.index(p)] for p in pids),
                                session_pids=pids)
        elif kind in ("keep_open", "xarray_file_cache"):     # a file xarray no longer closes: one session
            merge = True
        elif kind == "cache":
            merge = bool(how.get("merge"))
            cache = ChunkCache(int(how["nbytes"]), int(how["nslots"]), DEFAULT_W0)
        else:
            return _unmeasured(name, "this cure has no replay")
        io = {}
        if not netcdf:      # counted first, untimed (it warms the page cache for both): what each replay reads
            io = {"before_io": replay_counts(file, dataset, seq),
                  "after_io": replay_counts(after_path, dataset, after_seq, merge=merge, cache=cache)}
        before, after = [], []
        for _ in range(repeats):
            before.append(replay(file, dataset, seq))
            after.append(replay(after_path, dataset, after_seq, merge=merge, cache=cache))
    b, a = statistics.median(before), statistics.median(after)
    through = "netCDF4-python" if netcdf else "h5py"
    # the medians of a few replays: a cure confirmed only if faster in every pair, refuted if slower in every one
    verdict = ("confirmed" if all(y < x for x, y in zip(before, after)) else
               "refuted" if all(y > x for x, y in zip(before, after)) else "unclear")
    counted = ""
    if io:
        x, y = io["before_io"], io["after_io"]
        counted = (f"; HDF5 read {x['raw_reads']} -> {y['raw_reads']} raw-data piece(s) "
                   f"({format_bytes(x['raw_read_bytes'])} -> {format_bytes(y['raw_read_bytes'])}) in one more replay "
                   "each under the log driver")
        if seq.approximate:     # the traced side is not the program's own reads then
            counted += (f" (the traced side reads {seq.approximate} call(s) by their bounding box, as the model does: "
                        f"the program itself read at most {x['raw_reads']} pieces)")
    return {"cure": name, "before_s": b, "after_s": a, "repeats": repeats, "library": through, "verdict": verdict,
            **io, "note": f"replay of the traced reads through {through}, median of {repeats}, warm page cache"
                          + copied + counted}
