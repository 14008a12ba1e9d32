"""`ccp advise`: why an access pattern is slow on a file's layout, the cures ranked, the best one measured.

Explains with the chunk-cache model (chunk loads per request, bytes decoded per byte delivered),
ranks three kinds of cure (a chunk cache that fits the working set, a read block aligned to the
chunks, a repack to smaller chunks), then measures the top cure against the current setting on the
user's file, opened read-only (a repack cure is measured on a copy in a temporary folder).
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ccp.config.filters import pipeline_from_dcpl
from ccp.config.sweep import AccessSpec, CacheSpec
from ccp.errors import CcpError
from ccp.matrix.cells import Cell
from ccp.model import summarise
from ccp.plan import calibrate, predict_requests, stored_chunk_sizes
from ccp.units import format_bytes, format_count, format_seconds, shape_str
from ccp.workload.requests import plan_for
from ccp.workload.source import SourceInfo

MAX_MODEL_REQUESTS = 50_000


@dataclass(frozen=True)
class Option:
    kind: str               # current | cache | block | repack
    what: str               # one line for people
    cell: Cell
    loads: int
    raw_reads: int
    raw_read_bytes: int
    requests: int
    time_s: float           # predicted, whole pattern


def next_prime(n: int) -> int:
    n = max(2, int(n))
    while any(n % p == 0 for p in range(2, int(math.isqrt(n)) + 1)):
        n += 1
    return n


def _source(path: Path, dset: str):
    import h5py

    from ccp.workload.source import open_readonly

    with open_readonly(path) as f:
        d = f.get(dset)
        if d is None or not isinstance(d, h5py.Dataset):
            raise CcpError(f"{path}: no dataset {dset!r}")
        fill = d.fillvalue
        return SourceInfo(tuple(d.shape), d.dtype, tuple(d.maxshape), fill.item() if hasattr(fill, "item") else fill,
                          tuple(d.chunks) if d.chunks else None, pipeline_from_dcpl(d.id.get_create_plist()),
                          f"file:{path}:{dset}")


def _predict(cell: Cell, source, stored, cal, limit: int) -> tuple[int, int, int, int, float]:
    """(chunk loads, raw reads, raw read bytes, requests, predicted seconds) for the whole pattern (a prefix scaled up)."""
    n = len(plan_for(cell.access, source.shape))
    k = min(n, limit)
    preds = predict_requests(cell, source, stored, max_requests=k)
    tot = summarise(preds)
    scale = n / k
    chunk_bytes = int(np.prod(cell.chunks)) * np.dtype(source.dtype).itemsize if cell.chunks else 0
    t = cal.cell_time(cell, tot, k, chunk_bytes) * scale
    return (int(round(tot.chunk_loads * scale)), int(round(tot.raw_reads * scale)), int(round(tot.raw_read_bytes * scale)), n, t)


def shrink_chunks(chunks, block, itemsize: int, target: int) -> tuple[int, ...]:
    """Halve the slowest dimensions first (never below the block) until a chunk is at most ``target`` bytes."""
    c = list(chunks)
    while int(np.prod(c)) * itemsize > target:
        for d in range(len(c)):
            if c[d] > max(1, block[d]):
                c[d] = max(max(1, block[d]), c[d] // 2)
                break
        else:
            break
    return tuple(c)


def options(source, stored, block, cache: CacheSpec, memory: int, cal) -> list[Option]:
    if source.chunks is None:
        raise CcpError("the dataset is contiguous: it has no chunk cache to tune; `ccp repack -l DSET:CHUNK=...` makes it chunked")
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = int(np.prod(source.chunks)) * itemsize
    access = AccessSpec("read", tuple(block))
    base = Cell(source.chunks, source.filters, cache, access)
    out = [Option("current", f"as it is: chunks {shape_str(source.chunks)}, cache {cache.label}", base,
                  *_predict(base, source, stored, cal, MAX_MODEL_REQUESTS))]
    # 1. a cache that holds the chunks the pattern revisits: 1, 2, 4... chunks, nslots a prime 100x the chunks that fit
    k = 1
    while k * chunk_bytes <= memory:
        nbytes = k * chunk_bytes + 1024
        c = CacheSpec(nbytes, next_prime(100 * k), cache.w0)
        cell = replace(base, cache=c)
        opt = Option("cache", f"set the chunk cache to {format_bytes(nbytes)} ({k} chunk{'s' * (k > 1)}), nslots {c.nslots}, "
                              f"w0 {c.w0:g}: H5Pset_chunk_cache(dapl, {c.nslots}, {nbytes}, {c.w0:g})",
                     cell, *_predict(cell, source, stored, cal, MAX_MODEL_REQUESTS))
        out.append(opt)
        if opt.loads <= out[0].loads and opt.loads <= len(stored or {}) or opt.loads <= _min_loads(source):
            break
        k *= 2
    # 2. read whole chunks per request (cache-independent)
    aligned = tuple(max(b, ch) if b < ch else (b // ch) * ch for b, ch in zip(block, source.chunks))
    aligned = tuple(min(a, s) for a, s in zip(aligned, source.shape))
    if aligned != tuple(block):
        cell = replace(base, access=AccessSpec("read", aligned))
        out.append(Option("block", f"read blocks aligned to the chunks: {shape_str(aligned)} per request "
                                   f"({format_bytes(int(np.prod(aligned)) * itemsize)} buffer)",
                          cell, *_predict(cell, source, None, cal, MAX_MODEL_REQUESTS)))
    # 3. repack to chunks that fit the cache (seed 000: under 1 MiB for readers you do not know)
    target = min(cache.nbytes, 1024 * 1024) if cache.nbytes > 0 else 1024 * 1024
    small = shrink_chunks(source.chunks, block, itemsize, target)
    if small != tuple(source.chunks):
        cell = replace(base, chunks=small)
        out.append(Option("repack", f"repack to chunks {shape_str(small)} ({format_bytes(int(np.prod(small)) * itemsize)}): "
                                    f"ccp repack -l DSET:CHUNK={shape_str(small)} IN OUT",
                          cell, *_predict(cell, source, None, cal, MAX_MODEL_REQUESTS)))
    return out


EFFORT = {"cache": 0, "block": 1, "repack": 2}   # a setting < a code change < a new file


def rank(cures: list[Option]) -> list[Option]:
    """Fastest first, except that a less invasive cure within 2x of the fastest goes ahead of it."""
    if not cures:
        return []
    best = min(o.time_s for o in cures)
    return sorted(cures, key=lambda o: (o.time_s > 2 * best, EFFORT[o.kind] if o.time_s <= 2 * best else 0, o.time_s))


def _min_loads(source) -> int:
    return int(np.prod([-(-s // c) for s, c in zip(source.shape, source.chunks)]))


def measure_option(opt: Option, path: Path, dset: str, source, budget: float, tmp: Path) -> dict:
    from ccp.engine import predict as predict_classes
    from ccp.measurement.runner import CellJob, measure
    from ccp.workload.datagen import DatasetReader
    from ccp.workload.files import write_layout_file

    file = path
    if opt.kind == "repack":
        import h5py

        file = tmp / "repacked.h5"
        with h5py.File(path, "r") as f:
            write_layout_file(file, source, DatasetReader(f[dset]), dset, opt.cell.chunks, opt.cell.filters)
    job = CellJob(cell=opt.cell, file=str(file), dataset_path=dset, source=source, generate=None, user_file=None,
                  repeats=1, cold=True, trace=False, time_budget=budget)
    _, classes = predict_classes(job, None) if opt.requests <= 200_000 else ({}, None)
    job = replace(job, request_class=classes)
    row, _, _ = measure(job, tmp / f"scratch-{opt.kind}")
    return row


def advise(path, dset: str, block, cache: CacheSpec, memory: int, budget: float, echo=print, measure_top: bool = True) -> dict:
    path = Path(path)
    source = _source(path, dset)
    if len(block) != len(source.shape):
        raise CcpError(f"--access {shape_str(block)} has rank {len(block)} but {dset} {shape_str(source.shape)} has rank {len(source.shape)}")
    if any(b > s or b < 1 for b, s in zip(block, source.shape)):
        raise CcpError(f"--access {shape_str(block)} does not fit in {dset} {shape_str(source.shape)}")
    stored = stored_chunk_sizes(path, dset)
    cal = calibrate([source.filters], source.dtype, "normal", None)
    opts = options(source, stored, block, cache, memory, cal)
    cur = opts[0]
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = int(np.prod(source.chunks)) * itemsize
    delivered = int(np.prod(source.shape)) * itemsize
    decoded = cur.loads * chunk_bytes if not source.filters.is_none else cur.raw_read_bytes
    echo(f"{path}:{dset}  {shape_str(source.shape)} {source.dtype.str}, chunks {shape_str(source.chunks)} "
         f"({format_bytes(chunk_bytes)} each), filters {source.filters.spec}")
    echo(f"Reading it in {shape_str(block)} blocks ({format_count(cur.requests)} requests) with a {cache.label} chunk cache:")
    echo(f"  {cur.loads / cur.requests:.3g} chunk loads per request ({format_count(cur.loads)} in all, "
         f"{format_count(_min_loads(source))} chunks in the dataset); {decoded / delivered:.3g} bytes "
         f"{'decoded' if not source.filters.is_none else 'read'} per byte delivered; predicted {format_seconds(cur.time_s)}")
    if chunk_bytes > cache.nbytes:
        echo(f"  why: a chunk ({format_bytes(chunk_bytes)}) is larger than the cache ({format_bytes(cache.nbytes)}), so HDF5 cannot "
             "keep it between requests" + (": every request decompresses its chunk again" if not source.filters.is_none else ""))
    cures = rank(opts[1:])
    echo("Cures, best first (the least invasive within 2x of the fastest prediction leads; model counts, calibrated time):")
    for i, o in enumerate(cures, 1):
        echo(f"  {i}. {o.what}\n     {format_count(o.loads)} chunk loads, {format_count(o.raw_reads)} raw reads, "
             f"predicted {format_seconds(o.time_s)} ({cur.time_s / o.time_s:,.0f}x faster)" if o.time_s > 0 else "")
    result = {"current": cur, "cures": cures}
    if measure_top and cures:
        top = cures[0]
        echo(f"Measuring the top cure against the current setting (cold, one pass each; a pass longer than "
             f"{format_seconds(budget)} is measured on a prefix and extrapolated)...")
        with tempfile.TemporaryDirectory(prefix="ccp-advise-") as tmp:
            now = measure_option(cur, path, dset, source, budget, Path(tmp))
            best = measure_option(top, path, dset, source, budget, Path(tmp))
        for label, row in (("current", now), ("top cure", best)):
            note = f" (extrapolated from {row['fraction_measured']:.0%} of the requests)" if row["status"] == "extrapolated" else ""
            echo(f"  {label:9s} {format_seconds(row['time_s'])}{note}")
        echo(f"  measured speed-up: {now['time_s'] / best['time_s']:,.0f}x")
        result.update(measured_current=now, measured_top=best)
    return result
