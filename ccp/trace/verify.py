"""``ccp diagnose --verify``: measure the top cure by replaying the traced reads with and without it.

Both sides are the same replay (the traced boxes read in order, reopening the file where the program's
cache was lost), so the ratio is the cure's effect, not the difference between the program and a
replay. The replay goes through the library the program read with, so what is measured is what the
user would run: h5py high-level reads with ``rdcc_nbytes=`` for an h5py program; for a netCDF4-python
program, ``netCDF4.Dataset`` and ``Variable`` reads through netCDF-C (its own chunk cache, set with
``set_var_chunk_cache`` only where the traced cache or the cure differs from what netCDF-C gave), and
a repack cure measured on the copy its ``nccopy -k nc4 -c`` command makes. The user's file is opened
read-only; a repack cure of an h5py program is measured on a temporary copy of the dataset with the new
chunks and the file's own filters. The page cache is warm on both sides (the file was just read);
repeats give the median.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import replace

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import DEFAULT_W0
from ccp.trace.cures import block_sequence
from ccp.trace.libraries import NON_COORD, is_local_path
from ccp.workload.replay import ReplaySequence, replay_sequence
from ccp.workload.requestplan import RequestPlan
from ccp.workload.tracefile import Trace

NCCOPY_TIMEOUT_S = 3600


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


def _box(seq: ReplaySequence, i: int) -> tuple[slice, ...]:
    st, ct = seq.plan.starts[i], seq.plan.counts[i]
    return tuple(slice(int(s), int(s + n)) for s, n in zip(st, ct))


def replay_reads(path: str, dataset: str, seq: ReplaySequence, merge: bool = False, cache=None) -> float:
    """Seconds to replay ``seq``'s reads through h5py on ``path`` (one open per session, or per process if ``merge``)."""
    import h5py

    t0 = time.perf_counter()
    for c, a, b, _ in _sessions(seq, merge):
        c = cache or c
        with h5py.File(path, "r", rdcc_nbytes=int(c.nbytes), rdcc_nslots=int(c.nslots), rdcc_w0=float(c.w0)) as f:
            d = f[dataset]
            for i in range(int(a), int(b)):
                d[_box(seq, i)]
    return time.perf_counter() - t0


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
                v[_box(seq, i)]
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


def nccopy_copy(src_path: str, dataset: str, chunks, tmp: str) -> str | None:
    """The repack cure as a netCDF4 user follows it: ``nccopy -k nc4 -c var:chunks`` into ``tmp`` (the copy's
    path), or None with no ``nccopy`` on PATH. A failed copy is a CcpError naming the command and its message."""
    from ccp.errors import CcpError

    exe = shutil.which("nccopy")
    if exe is None:
        return None
    out = os.path.join(tmp, "rechunked.nc")
    spec = f"{netcdf_variable(dataset)}:{','.join(str(int(c)) for c in chunks)}"
    cmd = [exe, "-k", "nc4", "-c", spec, src_path, out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=NCCOPY_TIMEOUT_S, check=False)
    if r.returncode != 0:
        said = " ".join((r.stderr or r.stdout).split())[:200]
        raise CcpError(f"--verify: {' '.join(cmd)} failed (exit {r.returncode}: {said})")
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
            made = nccopy_copy(file, dataset, how["chunks"], tmp)
            if made is None:
                return _unmeasured(name, "no nccopy on PATH: the repack cure's copy is made with it")
            after_path, copied = made, "; repack measured on a temporary nccopy -c copy, read through netCDF4"
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
        elif kind == "keep_open":
            merge = True
        elif kind == "cache":
            merge = bool(how.get("merge"))
            cache = ChunkCache(int(how["nbytes"]), int(how["nslots"]), DEFAULT_W0)
        else:
            return _unmeasured(name, "this cure has no replay")
        before, after = [], []
        for _ in range(repeats):
            before.append(replay(file, dataset, seq))
            after.append(replay(after_path, dataset, after_seq, merge=merge, cache=cache))
    b, a = statistics.median(before), statistics.median(after)
    through = "netCDF4-python" if netcdf else "h5py"
    return {"cure": name, "before_s": b, "after_s": a, "repeats": repeats, "library": through,
            "note": f"replay of the traced reads through {through}, median of {repeats}, warm page cache" + copied}
