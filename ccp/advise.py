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

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.errors import CcpError
from ccp.matrix.cells import Cell
from ccp.model import summarise
from ccp.predict import calibrate, chunk_traps, predict_requests, stored_chunk_sizes
from ccp.report.cheapest import CHEAPEST_WITHIN, cheapest_first
from ccp.store.row import CellRow
from ccp.units import format_bytes, format_count, format_ratio, format_seconds, format_share, shape_str

MAX_MODEL_REQUESTS = 50_000_000   # the compiled model walks ~10 M requests a second: whole patterns


MIN_SPEEDUP = 1.25   # a cure predicted faster by less than this is within the model's noise: not listed (as the report's ties)


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
    request_s: float = 0.0  # of which the per-request overhead (HDF5 and the caller's loop), independent of the layout

    @property
    def io_s(self) -> float:
        """The predicted I/O and decompression time: the part of a pattern's cost a cure changes."""
        return max(self.time_s - self.request_s, 0.0)


def next_prime(n: int) -> int:
    n = max(2, int(n))
    while any(n % p == 0 for p in range(2, int(math.isqrt(n)) + 1)):
        n += 1
    return n


def _source(path: Path, dset: str):
    """The dataset as every command describes it: HDF5's own type and property lists, links resolved, odd types named."""
    from ccp.hdf5.dataset import source_of

    return source_of(path, dset)


def _predict(cell: Cell, source, stored, cal, limit: int) -> tuple[int, int, int, int, float, float]:
    """(chunk loads, raw reads, raw read bytes, requests, predicted seconds, of which per-request overhead) for the
    whole pattern (a prefix scaled up)."""
    # counted, not planned: the pattern over a dataset of 2**40 rows is 2**40 requests (16 TiB as a plan)
    n = int(cell.access.random) if cell.access.random else math.prod(-(-s // b) for s, b in zip(source.shape, cell.access.block))
    k = min(n, limit)
    preds = predict_requests(cell, source, stored, max_requests=k, per_request=False)
    tot = summarise(preds)
    scale = n / k
    chunk_bytes = int(np.prod(cell.chunks)) * np.dtype(source.dtype).itemsize if cell.chunks else 0
    t = cal.cell_time(cell, tot, k, chunk_bytes) * scale
    return (int(round(tot.chunk_loads * scale)), int(round(tot.raw_reads * scale)), int(round(tot.raw_read_bytes * scale)), n, t,
            n * cal.per_request_s)


def shrink_chunks(chunks, block, itemsize: int, target: int, shape=None) -> tuple[int, ...]:
    """Clip to the dataset's shape, then halve the slowest dimensions first (never below the block) until a chunk is at
    most ``target`` bytes."""
    c = [min(k, s) for k, s in zip(chunks, shape)] if shape is not None else list(chunks)
    while int(np.prod(c)) * itemsize > target:
        for d in range(len(c)):
            if c[d] > max(1, block[d]):
                c[d] = max(max(1, block[d]), c[d] // 2)
                break
        else:
            break
    return tuple(c)


def _allocated_chunks(source, stored) -> int:
    """Chunks the dataset holds: the allocated ones when the chunk index was read, else the whole grid."""
    return len(stored) if stored else _min_loads(source)


def options(source, stored, block, cache: ChunkCache, memory: int, cal) -> list[Option]:
    """The current setting first, then one cure of each kind that its own prediction calls faster (MIN_SPEEDUP)."""
    if source.chunks is None:
        kind = {"compact": "compact (stored in its object header)", "virtual": "virtual (a view of other datasets)"}.get(
            source.layout, "contiguous")
        raise CcpError(f"the dataset is {kind}: it has no chunk cache to tune; `ccp repack -l DSET:CHUNK=...` makes it chunked")
    itemsize = np.dtype(source.dtype).itemsize
    chunk_bytes = int(np.prod(source.chunks)) * itemsize
    access = AccessSpec("read", tuple(block))
    base = Cell(source.chunks, source.filters, cache, access)
    cur = Option("current", f"as it is: chunks {shape_str(source.chunks)}, cache {cache.label}", base,
                 *_predict(base, source, stored, cal, MAX_MODEL_REQUESTS))
    out = [cur]
    # 1. a cache that holds the chunks the pattern revisits: 1, 2, 4... chunks, never more than the dataset holds (a
    #    bigger cache cannot help) nor more than --memory; the smallest that reaches the fewest loads is the cure.
    most = _allocated_chunks(source, stored)
    tried, k = [], 1
    while True:
        k = min(k, most)
        nbytes = k * chunk_bytes + 1024
        if nbytes > memory:
            break
        c = ChunkCache(nbytes, next_prime(100 * k), cache.w0)
        if nbytes > cache.nbytes:                      # only caches larger than the current one are cures
            tried.append(Option("cache", f"set the chunk cache to {format_bytes(nbytes)} ({k} chunk{'s' * (k > 1)}), "
                                         f"{c.nslots} hash slots, w0 {c.w0:g}",
                                replace(base, cache=c), *_predict(replace(base, cache=c), source, stored, cal, MAX_MODEL_REQUESTS)))
            if tried[-1].loads <= most:
                break
        if k >= most:
            break
        k *= 2
    if tried:
        fewest = min(o.loads for o in tried)
        out.append(next(o for o in tried if o.loads == fewest))
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
    small = shrink_chunks(source.chunks, block, itemsize, target, source.shape)
    if small != tuple(source.chunks):
        cell = replace(base, chunks=small)
        out.append(Option("repack", f"repack to chunks {shape_str(small)} ({format_bytes(int(np.prod(small)) * itemsize)})",
                          cell, *_predict(cell, source, None, cal, MAX_MODEL_REQUESTS)))
    return [cur] + [o for o in out[1:] if speedup(cur, o) >= MIN_SPEEDUP]


def speedup(cur: Option, o: Option) -> float:
    return cur.time_s / o.time_s if o.time_s > 0 else float("inf")


EFFORT = {"cache": 0, "block": 1, "repack": 2}   # a setting < a code change < a new file


def rank(cures: list[Option]) -> list[Option]:
    """The "cheapest change" rule (ccp.report.cheapest.cheapest_first, the report's and diagnose's too): the least
    invasive cure whose predicted time is within CHEAPEST_WITHIN (2x) of the fastest's leads; the rest follow fastest
    first. A cache cure 11.6x slower than aligned reads (issue 22) does not lead however little it changes. Among
    equally invasive cures within 2x, the least I/O and decompression (``io_s``) first."""
    return cheapest_first(cures, lambda o: o.time_s, lambda o: (EFFORT[o.kind], o.io_s))


def passed_over(cures: list[Option]) -> Option | None:
    """A less invasive cure than the lead, left out of the lead because it is over CHEAPEST_WITHIN slower (to say so)."""
    if not cures:
        return None
    cheaper = [o for o in cures[1:] if EFFORT[o.kind] < EFFORT[cures[0].kind]]
    return min(cheaper, key=lambda o: (EFFORT[o.kind], o.time_s)) if cheaper else None


def _min_loads(source) -> int:
    return int(np.prod([-(-s // c) for s, c in zip(source.shape, source.chunks)]))


def measure_option(opt: Option, path: Path, dset: str, source, budget: float, tmp: Path) -> CellRow:
    from ccp.measurement.passes import CellJob
    from ccp.measurement.runner import measure
    from ccp.predict import predict_job as predict_classes
    from ccp.workload.datagen import DatasetReader
    from ccp.workload.files import write_layout_file

    file = path
    if opt.kind == "repack":
        import h5py

        file = tmp / "repacked.h5"
        with h5py.File(path, "r") as f:
            write_layout_file(file, source, DatasetReader(f[dset]), dset, opt.cell.chunks, opt.cell.filters)
    job = CellJob(cell=opt.cell, file=str(file), dataset_path=dset, source=source, generate=None, user_file=None,
                  repeats=1, cold=True, counted_pass=False, time_budget=budget)
    _, classes, model = predict_classes(job, None)
    job = replace(job, request_class=classes, request_model=model)
    row, _, _ = measure(job, tmp / f"scratch-{opt.kind}")
    return row


def fmt_speedup(x: float) -> str:
    """2.5x, 37x, 1,200x: never "1x" or "0x" (options() drops cures under MIN_SPEEDUP)."""
    return format_ratio(x, 2)


def _py_tuple(t) -> str:
    return "(" + ", ".join(str(int(v)) for v in t) + ("," if len(t) == 1 else "") + ")"


def _h5py_filters(filters) -> str:
    """create_dataset keywords for a pipeline (the registry's spelling); a step h5py cannot say is named."""
    said, unsaid = filters.h5py_code()
    kw = list(said) + ([f"**<no h5py keyword for {'+'.join(st.spec for st in unsaid)}>"] if unsaid else [])
    return (", " + ", ".join(kw)) if kw else ""


def _nc_filters(filters) -> tuple[str, str]:
    """createVariable keywords for a pipeline (the registry's spelling), and a note naming what netCDF4 cannot say."""
    said, unsaid = filters.netcdf_code()
    note = f"; netCDF4 has no keyword for {'+'.join(st.spec for st in unsaid)}" if unsaid else ""
    return (", " + ", ".join(said)) if said else "", note


def _sh(x) -> str:
    import shlex

    return shlex.quote(str(x))


def cure_code(o: Option, path: Path, dset: str, source) -> list[tuple[str, str]]:
    """The cure in the user's own API: (label, code) for h5py, netCDF4, C and a command, with the real names and numbers."""
    f, name = str(path), dset
    var = dset.lstrip("/")
    if o.kind == "cache":
        c = o.cell.cache
        return [
            ("h5py", (f'f = h5py.File("{f}", "r", rdcc_nbytes={c.nbytes}, rdcc_nslots={c.nslots}, rdcc_w0={c.w0:g}); '
                     f'd = f["{name}"]')),
            ("netCDF4", (f'nc = netCDF4.Dataset("{f}"); v = nc["{var}"]; '
                        f"v.set_var_chunk_cache(size={c.nbytes}, nelems={c.nslots}, preemption={c.w0:g})")),
            ("C", (f"hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS); H5Pset_chunk_cache(dapl, {c.nslots}, {c.nbytes}, {c.w0:g}); "
                  f'hid_t d = H5Dopen2(file, "{name}", dapl);')),
            ("command", "none needed: the file stays as it is; the cache is the reader's setting"),
        ]
    if o.kind == "block":
        b = o.cell.access.block
        sl = ", ".join(f"i{k}:i{k}+{v}" if v < s else ":" for k, (v, s) in enumerate(zip(b, source.shape)))
        return [
            ("h5py", f'block = f["{name}"][{sl}]   # one request per {shape_str(b)} block, starts i0, i1, ... multiples of it'),
            ("netCDF4", f'block = nc["{var}"][{sl}]'),
            ("C", (f"hsize_t count[{len(b)}] = {{{', '.join(map(str, b))}}}; "
                  "H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);   /* start: multiples of count */")),
            ("command", "none needed: the file stays as it is; the read loop changes"),
        ]
    ch = o.cell.chunks
    assert ch is not None            # the rechunk cure: its cell has chunks
    out = path.with_name(path.stem + "-rechunked" + path.suffix)
    dt = np.dtype(source.dtype)
    endian = ', endian="big"' if dt.byteorder == ">" else ""
    nc_kw, nc_note = _nc_filters(source.filters)
    return [
        ("h5py", (f'with h5py.File("{f}", "r") as f, h5py.File("{out}", "w") as out: '
                 f'out.create_dataset("{name}", data=f["{name}"], chunks={_py_tuple(ch)}{_h5py_filters(source.filters)})')),
        ("netCDF4", (f'nc.createVariable("{var.rsplit("/", 1)[-1]}", "{dt.kind}{dt.itemsize}", dims, chunksizes={_py_tuple(ch)}'
                    f'{nc_kw}{endian})   # dims: the variable\'s {len(ch)} dimension names{nc_note}')),
        ("C", f"hsize_t chunk[{len(ch)}] = {{{', '.join(map(str, ch))}}}; H5Pset_chunk(dcpl, {len(ch)}, chunk);"),
        ("command", (f"ccp repack -l {_sh(name + ':CHUNK=' + shape_str(ch))} {_sh(f)} {_sh(out)}   "
                    f"# or: h5repack -l {_sh(name + ':CHUNK=' + shape_str(ch))} {_sh(f)} {_sh(out)}")),
    ]


def advise(path, dset: str, block, cache: ChunkCache, memory: int, budget: float, echo=print, measure_top: bool = True) -> dict:
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
    echo(f"  {format_ratio(cur.loads / cur.requests, unit='')} chunk loads per request ({format_count(cur.loads)} in all, "
         f"{format_count(_min_loads(source))} chunks in the dataset); {format_ratio(decoded / delivered, unit='')} bytes "
         f"{'decoded' if not source.filters.is_none else 'read'} per byte delivered; predicted {format_seconds(cur.time_s)}")
    for why in chunk_traps(chunk_bytes, source.filters, cache.nbytes):     # the one "why is this slow" (ccp.predict.explain)
        echo(f"  why: {why}")
    cures = rank(opts[1:])
    if not cures:
        echo(f"No cure is predicted faster than the current setting by {MIN_SPEEDUP:g}x or more: the layout and cache suit "
             "this access pattern.")
    else:
        echo(f"Cures, best first (the least invasive cure predicted within {CHEAPEST_WITHIN:g}x of the fastest leads, the "
             f"rest fastest first; only cures predicted at least {MIN_SPEEDUP:g}x faster are listed; model counts, "
             "calibrated time):")
        skipped = passed_over(cures)
        if skipped is not None:
            echo(f"  (not first: {skipped.what}, less invasive but predicted {fmt_speedup(skipped.time_s / cures[0].time_s)} "
                 f"slower than the first, over {CHEAPEST_WITHIN:g}x)")
    for i, o in enumerate(cures, 1):
        echo(f"  {i}. {o.what}\n     {format_count(o.loads)} chunk loads, {format_count(o.raw_reads)} raw reads, "
             f"predicted {format_seconds(o.time_s)} ({fmt_speedup(speedup(cur, o))} faster than now)")
        for label, code in cure_code(o, path, dset, source):
            echo(f"     {label + ':':9s}{code}")
    result = {"current": cur, "cures": cures}
    if measure_top and cures:
        top = cures[0]
        echo(f"Measuring the top cure against the current setting (cold, one pass each; a pass longer than "
             f"{format_seconds(budget)} is measured on a prefix and extrapolated)...")
        with tempfile.TemporaryDirectory(prefix="ccp-advise-") as tmp:
            now = measure_option(cur, path, dset, source, budget, Path(tmp))
            best = measure_option(top, path, dset, source, budget, Path(tmp))
        for label, row in (("current", now), ("top cure", best)):
            note = f" (extrapolated from {format_share(row['fraction_measured'])} of the requests)" if row["status"] == "extrapolated" else ""
            echo(f"  {label:9s} {format_seconds(row['time_s'])}{note}")
        gain = now["time_s"] / best["time_s"] if best["time_s"] > 0 else float("inf")
        echo(f"  measured speed-up: {fmt_speedup(gain)}" if gain >= 1 else
             f"  measured: the top cure was {fmt_speedup(1 / gain)} SLOWER than the current setting here, against the "
             "model's prediction; keep the current setting and report this file (ccp's model does not capture it)")
        result.update(measured_current=now, measured_top=best)
    return result
