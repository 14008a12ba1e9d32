"""The model's time calibration: a few seconds of measurement on this machine, cached in the work folder.

Counts become seconds with a per-request cost, a read cost per byte, and a decode and encode cost per
chunk byte for each filter.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ccp.errors import CcpError
from ccp.hdf5 import plists
from ccp.hdf5.defaults import DEFAULT_W0, MIN_NSLOTS
from ccp.hdf5.filters import FilterPipeline, check_available
from ccp.store.workdir import WorkDir


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
    """A few seconds of measurement on this machine; cached in ``work_dir/calibration.json``.

    Each cost is the fastest of several repeats in CPU time (user + system): a probe taken while other
    work shares the machine measures the operation, not the wait for a core, so a cached calibration made
    on a busy machine does not inflate every later prediction (``ccp tune`` found a per-request cost
    cached at 4x its quiet value).
    """
    import h5py
    from h5py import h5d, h5f, h5s, h5t

    from ccp.config.sweep import GenerateSpec
    from ccp.workload.datagen import Generator

    if np.dtype(dtype).kind not in "iuf":   # raw records (compound, string, ...): costs per byte of bytes
        dtype = np.dtype("u1")
    by_spec = {f.spec: f for f in filter_pipelines}
    specs = sorted(by_spec)
    key = f"{h5py.version.hdf5_version}|{np.dtype(dtype).str}|{data_kind}"
    cache_file = Path(work_dir) / "calibration.json" if work_dir else None
    known = json.loads(cache_file.read_text()) if cache_file and cache_file.exists() else {}
    entry = known.get(key, {"decode": {}, "encode": {}})
    missing = [s for s in specs if s not in entry["decode"]]
    if missing or "per_request_s" not in entry:
        import tempfile

        shape, chunks = (16, 128, 128), (16, 128, 128)       # one 1 MiB chunk (4-byte items)
        data = Generator(GenerateSpec(shape, np.dtype(dtype), data_kind, 0)).read((0, 0, 0), shape)
        with tempfile.TemporaryDirectory() as tmp:
            for spec in missing or ["none"]:
                path = f"{tmp}/c.h5"
                dcpl = plists.chunked_dcpl(chunks, by_spec.get(spec, FilterPipeline()), data.dtype)
                fid = h5f.create(path.encode(), h5f.ACC_TRUNC)
                ds = h5d.create(fid, b"d", h5t.py_create(data.dtype, logical=True), h5s.create_simple(shape), dcpl=dcpl)
                encodes = []
                for _ in range(3):
                    t0 = time.process_time()
                    ds.write(h5s.ALL, h5s.ALL, data)
                    ds.close()                        # the chunk is encoded when the cache flushes it
                    encodes.append(time.process_time() - t0)
                    ds = h5d.open(fid, b"d")
                enc = min(encodes)
                ds.close()
                fid.close()
                fid = h5f.open(path.encode(), h5f.ACC_RDONLY)
                dapl = plists.no_cache_dapl()              # no cache: every read decodes the chunk
                ds = h5d.open(fid, b"d", dapl)
                out = np.empty(shape, data.dtype)
                decodes = []
                for _ in range(5):
                    t0 = time.process_time()
                    ds.read(h5s.ALL, h5s.ALL, out)
                    decodes.append(time.process_time() - t0)
                dec = min(decodes)
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
    from h5py import h5d, h5f, h5s, h5t

    shape = data.shape
    dcpl = plists.chunked_dcpl(shape)
    fid = h5f.create(path.encode(), h5f.ACC_TRUNC)
    dapl = plists.dapl(MIN_NSLOTS, 2 * data.nbytes, DEFAULT_W0)
    ds = h5d.create(fid, b"r", h5t.py_create(data.dtype, logical=True), h5s.create_simple(shape), dcpl=dcpl, dapl=dapl)
    ds.write(h5s.ALL, h5s.ALL, data)
    one, fs = h5s.create_simple((1,) * len(shape)), ds.get_space()
    small = np.empty((1,) * len(shape), data.dtype)
    mtype = h5t.py_create(data.dtype)
    n, batches = 4000, []
    for b in range(5):
        t0 = time.process_time()
        for i in range(b * n, (b + 1) * n):
            fs.select_hyperslab(tuple(i % d for d in shape), (1,) * len(shape))
            ds.read(one, fs, small, mtype)
        batches.append((time.process_time() - t0) / n)
    cost = min(batches)
    ds.close()
    fid.close()
    return cost


def calibration_dict(cal: Calibration) -> dict:
    return asdict(cal)


def calibration_for(pipelines, source, sweep, wd: WorkDir) -> Calibration | None:
    """The model's time calibration for a sweep, or None: predictions are an aside and never stop a sweep.

    A filter read from the user's file that ccp cannot spell back (an unknown plugin's parameters,
    shown as ``id32001``) is left out: its predicted decode time is then 0.
    """
    usable = []
    for p in pipelines:
        try:
            check_available(p)
        except CcpError:
            continue
        usable.append(p)
    data = sweep.dataset.generate.data if sweep.dataset.generate else "normal"
    try:
        return calibrate(usable, source.dtype, data, calibration_dir(wd))
    except CcpError:
        raise
    except (OSError, ValueError, RuntimeError) as exc:   # an HDF5 or filter error while calibrating
        text = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        print(f"ccp: warning: no time predictions (calibration failed: {why})", file=sys.stderr)
        return None


def calibration_dir(wd: WorkDir) -> Path:
    """The work folder, with its calibration cache usable: one ccp left cut short (a full disk) is dropped.

    :func:`calibrate` writes calibration.json in place; a truncated one would fail every later run.
    A broken file that is not ccp's is the user's: refused with one line, never removed.
    """
    path = Path(wd.path) / "calibration.json"
    wd.register(path)
    if path.exists():
        try:
            json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            if "calibration.json" not in wd.entries():
                raise CcpError(f"{path}: not a calibration file ccp can read (and not one ccp wrote); move it or use another --work") from None
            path.unlink()
    return Path(wd.path)
