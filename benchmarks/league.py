"""The chunk-shape league: ``ccp tune`` scored against the advisers users have, on twelve workloads
rebuilt from public reports (issue 24), against an oracle: an exhaustive measured grid.

    PYTHONPATH=. .venv/bin/python benchmarks/league.py --quick [--out results/league] [--only NAME ...]
    PYTHONPATH=. .venv/bin/python benchmarks/league.py            # full scale: datasets up to 512 MiB, hours

Per workload (a dataset, a weighted mix of access patterns, its filter and its cache budget):

- contenders, each a chunk shape for the same dataset: h5py's ``guess_chunk`` (``chunks=True``),
  ~1 MiB of whole rows, Unidata's balanced shape (Rew 2013), netCDF-C's default (a variable made
  through netCDF4 with no ``chunksizes``, read back), ``nccopy -k nc4 -d1`` (nccopy's own chunking
  when it must chunk, from a contiguous copy), NCO's ``ncks --cnk_plc=all --cnk_map=rew|lfp|dmn|rd1``
  (the real Debian binaries, read back with ``ncdump -hs``), and ``ccp tune`` (its recommended layout
  and cache, measured as recommended);
- the oracle: a grid of chunk shapes (per dimension 1, b, b**2, ... and the whole dimension; b = 16
  and chunks of 64 KiB up in --quick, b = 4 and 4 KiB up in full; up to the workload's chunk cap,
  16 MiB) plus every contender's shape (whatever its size), measured in
  ONE ``ccp run`` sweep with every pattern, cold, the same passes and the same cache for all: the
  cache budget ``ccp tune`` may use, with 100,003 slots (collisions rare for everyone); the oracle is
  its fastest layout;
- the score, paired where the machine's noise could decide it: ``ccp tune``'s answer as recommended
  (its layout with its own cache), its layout at the grid's cache, and every contender whose grid time
  is within :data:`PAIRED_WITHIN` of the oracle's are measured again in interleaved rounds beside the
  oracle's layout at the grid's cache (``2 x repeats + 1`` rounds, more when the oracle's pass is short:
  :func:`paired_round_count`; a cold pass of every pattern of each
  a round, the order reversed every round: tune's runoff's measurement), and scored by the median of
  their per-round ratios (weighted pass totals, round i against round i); a contender further off keeps
  its grid time / the oracle's. Per contender, the geometric mean over the workloads.

Every number is measured on this machine,
whose load the output states; ``--quick`` keeps each dataset to a few MiB: the whole league then runs in
50-60 minutes on the shared 2-core machine at load average 12-21.

Below the table, the noise the machine put into tune's own measurements: each layout tune measured twice
(its first round, then its runoff, minutes apart), as the ratio of the two.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from ccp.run import prepare, run_sweep
from ccp.store.schema import FINISHED
from ccp.tune import tune as tune_mod
from ccp.tune.heuristics import ONE_MIB, balanced, h5py_guess, series_axis, whole_rows
from ccp.units import parse_size

GRID_NSLOTS = 100_003

# name -> the workload, at two scales. shape: (quick, full); items: (op, block, random, weight).
WORKLOADS = {
    "atl03": {
        "what": "ICESat-2 ATL03 photon heights, read as along-track segments",
        "source": "NSIDC ATL03 product (nsidc.org/data/atl03): /gtx/heights/h_ph, 1-D, gzip, chunks of 10,000 "
                  "photons; segment reads as in the ICESat-2 hackweek's h5cloud study (github.com/ICESAT-2HackWeek/h5cloud)",
        "dtype": "<f4", "data": "smooth", "shape": ([2_000_000], [100_000_000]),
        "items": [("read", [20_000], 150, 1)],
        "filters": "gzip:1", "max_chunk": "16MiB", "cache": "4MiB",
    },
    "era5": {
        "what": "ERA5-style (time, lat, lon): point time series and global maps",
        "source": "ECMWF ERA5 on the Copernicus CDS; the time-series-versus-maps trade-off of Rew, 'Chunking Data: "
                  "Choosing Shapes' (Unidata blog, 2013)",
        "dtype": "<f4", "data": "smooth", "shape": ([730, 48, 96], [8760, 90, 160]),
        "items": [("read", [730, 1, 1], 150, 1), ("read", [1, 48, 96], 150, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "1MiB",
    },
    "cris": {
        "what": "CrIS SDR radiances (scan, for, fov, channel): whole spectra (rows), stored compressed",
        "source": "NOAA/NASA CrIS SDR (JPSS) files; ccp's configs/cris.yaml and issue 22's CrIS report "
                  "(the cache fix 1,127x faster than dropping gzip)",
        "dtype": ">f4", "data": "smooth", "shape": ([16, 30, 9, 717], [512, 30, 9, 717]),
        "items": [("read", [1, 1, 1, 717], 400, 1)],
        "filters": "gzip:1", "max_chunk": "16MiB", "cache": "1MiB",
    },
    "nwb-ephys": {
        "what": "NWB electrophysiology stream (time x channels, int16): windows of all channels, a few single channels",
        "source": "NWB ElectricalSeries (pynwb/hdmf H5DataIO chunking docs); Neuropixels: 384 channels at 30 kHz",
        "dtype": "<i2", "data": "randint:-2000:2000", "shape": ([200_000, 64], [600_000, 384]),
        "items": [("read", [3000, 64], 60, 4), ("read", [200_000, 1], 4, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "4MiB",
    },
    "single-cell": {
        "what": "single-cell expression matrix (cells x genes, dense): cell rows and gene columns",
        "source": "AnnData .h5ad dense X read in backed mode by cell and by gene (scverse/anndata issues on "
                  "chunked X access)",
        "dtype": "<f4", "data": "uniform", "shape": ([4096, 1024], [65536, 2048]),
        "items": [("read", [1, 1024], 300, 1), ("read", [4096, 1], 40, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "1MiB",
    },
    "goes-tiles": {
        "what": "GOES-R ABI full-disk radiances (int16): map tiles and the whole image",
        "source": "NOAA GOES-R ABI L1b Rad product (full disk 5424 x 5424 at 2 km, 2-byte counts); tiled viewers",
        "dtype": "<i2", "data": "smooth", "shape": ([2048, 2048], [10848, 10848]),
        "items": [("read", [256, 256], 60, 4), ("read", [2048, 2048], 1, 1)],
        "filters": "gzip:1", "max_chunk": "16MiB", "cache": "8MiB",
    },
    "mur-sst": {
        "what": "MUR SST daily grid (time, lat, lon, int16): whole maps and regional time series",
        "source": "PO.DAAC MUR L4 global SST v4.1 (daily 17999 x 36000); regional series as in the "
                  "'MUR SST in the cloud' time-series use case",
        "dtype": "<i2", "data": "smooth", "shape": ([64, 256, 512], [365, 1024, 2048]),
        "items": [("read", [1, 256, 512], 12, 1), ("read", [64, 32, 32], 30, 1)],
        "filters": "gzip:1", "max_chunk": "16MiB", "cache": "4MiB",
    },
    "nisar-burst": {
        "what": "NISAR-style SLC burst (lines x samples): whole bursts and small windows",
        "source": "NISAR L1 RSLC product specification (JPL): bursts of lines; issue 22's NISAR open "
                  "(41.5 s -> 1.3 s with a 4 MB block cache)",
        "dtype": "<f4", "data": "normal", "shape": ([2048, 2048], [16384, 8192]),
        "items": [("read", [512, 2048], 8, 1), ("read", [128, 128], 80, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "8MiB",
    },
    "image-stack": {
        "what": "microscopy image stack (z, y, x, uint16): xy tiles and z-profiles",
        "source": "OME-NGFF / OME-Zarr (Moore et al., Nature Methods 2021) and BigDataViewer's tiled pyramids",
        "dtype": "<u2", "data": "smooth", "shape": ([32, 512, 512], [256, 2048, 2048]),
        "items": [("read", [1, 128, 128], 60, 1), ("read", [32, 1, 1], 300, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "2MiB",
    },
    "ml-samples": {
        "what": "ML per-sample loader: random single samples (N, 32, 32) as a shuffled DataLoader reads them",
        "source": "PyTorch forum and h5py threads on slow random-sample HDF5 loading (shuffle=True)",
        "dtype": "<f4", "data": "normal", "shape": ([4096, 32, 32], [131072, 32, 32]),
        "items": [("read", [1, 32, 32], 600, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "1MiB",
    },
    "append": {
        "what": "append-only writer: one (y, x) frame at a time along an unlimited time axis",
        "source": "h5py docs (resizable datasets, maxshape=None) and netCDF's record dimension",
        "dtype": "<f4", "data": "smooth", "shape": ([256, 64, 64], [4096, 180, 360]), "unlimited": True,
        "items": [("write", [1, 64, 64], 0, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "1MiB",
    },
    "mixed-rw": {
        "what": "mixed: frames written along time while point series are read",
        "source": "a model writing daily maps read by analysts as point series (Rew 2013's two patterns, "
                  "one of them a write)",
        "dtype": "<f4", "data": "smooth", "shape": ([128, 64, 64], [2048, 180, 360]),
        "items": [("write", [1, 64, 64], 0, 1), ("read", [128, 1, 1], 150, 1)],
        "filters": "none", "max_chunk": "16MiB", "cache": "1MiB",
    },
}
CONTENDERS = ["h5py guess", "1 MiB rows", "Unidata balanced", "netCDF-C default", "nccopy -d1",
              "ncks rew", "ncks lfp", "ncks dmn", "ncks rd1", "ccp tune"]


def scaled(w: dict, quick: bool) -> tuple[list[int], list[dict]]:
    """The shape at this scale and the access entries, blocks clipped to it (a block's full-scale
    extent along a dimension the quick shape shrinks becomes the whole dimension)."""
    shape = w["shape"][0 if quick else 1]
    quick_shape = w["shape"][0]
    items = []
    for op, block, random, weight in w["items"]:
        b = [n if q == qn else min(q, n) for q, qn, n in zip(block, quick_shape, shape)]
        acc = {"op": op, "block": b}
        if random:
            acc["random"] = random
        items.append({"access": acc, "weight": weight})
    return shape, items


def workload_doc(name: str, w: dict, quick: bool) -> dict:
    shape, items = scaled(w, quick)
    gen = {"shape": shape, "dtype": w["dtype"], "data": w["data"]}
    if w.get("unlimited"):
        gen["maxshape"] = [None, *shape[1:]]
    return {"name": f"league-{name}", "dataset": {"path": "/data", "generate": gen}, "workload": items,
            "constraints": {"filters": [w["filters"]], "max_chunk_bytes": w["max_chunk"], "max_cache_bytes": w["cache"]}}


# ---- the netCDF advisers: the real libraries and binaries, their choice read back -------------------------

def _nc_input(path: Path, shape, dtype, unlimited: bool, chunked: bool, zlib: bool = False):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        dims = []
        for i, n in enumerate(shape):
            ds.createDimension(f"d{i}", None if (unlimited and i == 0) else n)
            dims.append(f"d{i}")
        var = ds.createVariable("data", np.dtype(dtype), dims, contiguous=not (chunked or unlimited or zlib), zlib=zlib)
        if unlimited:
            var[:] = np.zeros(shape, dtype)          # an unlimited dimension's length comes from the data
        return None if var.chunking() == "contiguous" else tuple(int(c) for c in var.chunking())


def _chunks_of(path: Path) -> tuple[int, ...] | None:
    out = subprocess.run(["ncdump", "-hs", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"data:_ChunkSizes = ([0-9, ]+) ;", out)
    return tuple(int(x) for x in m.group(1).split(",")) if m else None


def netcdf_advisers(shape, dtype, unlimited: bool, filtered: bool) -> dict[str, tuple[int, ...] | None]:
    """netCDF-C's default chunking (through netCDF4, no chunksizes; deflated when the workload's data
    is), nccopy's chunking when it must chunk to deflate, and ncks's four chunk maps, on a netCDF-4
    file of this shape. None: contiguous."""
    out: dict[str, tuple[int, ...] | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        out["netCDF-C default"] = _nc_input(t / "default.nc", shape, dtype, unlimited, chunked=False, zlib=filtered)
        src = t / "in.nc"
        _nc_input(src, shape, dtype, unlimited, chunked=False)
        if shutil.which("nccopy"):
            subprocess.run(["nccopy", "-k", "nc4", "-d1", str(src), str(t / "nccopy.nc")], check=True, capture_output=True)
            out["nccopy -d1"] = _chunks_of(t / "nccopy.nc")
        if shutil.which("ncks"):
            for m in ("rew", "lfp", "dmn", "rd1"):
                dst = t / f"ncks-{m}.nc"
                subprocess.run(["ncks", "-O", "-4", "--cnk_plc=all", f"--cnk_map={m}", str(src), str(dst)],
                               check=True, capture_output=True)
                out[f"ncks {m}"] = _chunks_of(dst)
    return out


# ---- the grid and the measurement --------------------------------------------------------------------

def grid_shapes(shape, itemsize: int, max_bytes: int, base: int, min_bytes: int = 4096) -> list[tuple[int, ...]]:
    per_dim = [sorted({base ** k for k in range(0, 12) if base ** k < n} | {n}) for n in shape]
    return [c for c in itertools.product(*per_dim) if min_bytes <= math.prod(c) * itemsize <= max_bytes]


def chunk_text(c) -> str:
    return "contiguous" if c is None else "x".join(map(str, c))


def measure_layouts(doc: dict, layouts: list, filt: str, cache_nbytes: int, out: Path, work: Path,
                    repeats: int, cell_budget: float) -> tuple[dict, int, set]:
    """One sweep: every layout x every pattern, cold, the same cache. {chunks text: weighted seconds}."""
    sweep = {"name": doc["name"] + "-league", "dataset": doc["dataset"],
             "matrix": {"chunks": sorted({chunk_text(c) for c in layouts}), "filters": [filt],
                        "cache": [{"nbytes": cache_nbytes, "nslots": GRID_NSLOTS, "w0": 0.75}],
                        "access": [it["access"] for it in doc["workload"]]},
             "repeats": repeats, "cold": True, "time_budget": cell_budget}
    if filt != "none":     # a filter needs chunks: a contiguous contender (none here) would be refused
        sweep["matrix"]["chunks"] = [c for c in sweep["matrix"]["chunks"] if c != "contiguous"]
    out.mkdir(parents=True, exist_ok=True)
    sfile = out / "sweep.yaml"
    sfile.write_text(yaml.safe_dump(sweep, sort_keys=False))
    run_sweep(sfile, out=out / "run", work_dir=work, report=False, echo=lambda *_: None)
    return grid_totals(doc, out)


def grid_totals(doc: dict, out: Path) -> tuple[dict, int, set]:
    """A grid sweep's weighted time per layout ({chunks text: seconds}), its cells, the layouts extrapolated."""
    _, _, cells = prepare(out / "sweep.yaml")
    with (out / "run" / "cells.csv").open(newline="") as fh:
        rows = {r["cell_id"]: r for r in csv.DictReader(fh)}
    weights = {(it["access"]["op"], tuple(it["access"]["block"])): it["weight"] for it in doc["workload"]}
    totals: dict[str, float] = {}
    extrapolated: set[str] = set()
    for c in cells:
        r = rows.get(c.cell_id)
        ok = r is not None and r["status"] in FINISHED and r.get("time_s") not in (None, "")
        key = chunk_text(c.chunks)
        w = weights[(c.access.op, tuple(c.access.block))]
        totals[key] = totals.get(key, 0.0) + (w * float(r["time_s"]) if ok else math.inf)
        if ok and r["status"] == "extrapolated":
            extrapolated.add(key)
    return totals, len(cells), extrapolated


PAIRED_WITHIN = 2.0       # contenders measured within this of the oracle in the grid are measured again beside it
PAIRED_ORACLE_S = 2.0     # paired rounds: enough that the oracle's passes add up to this (cells of a few ms vary 5x
PAIRED_MAX_ROUNDS = 41    # round to round on a busy machine; seven rounds of them decided nothing), up to this many


def paired_round_count(oracle_s: float, repeats: int) -> int:
    """Rounds for the paired score: ``2 x repeats + 1`` (tune's runoff), more for a fast oracle so that its
    passes add up to :data:`PAIRED_ORACLE_S`, at most :data:`PAIRED_MAX_ROUNDS`; odd (a median round)."""
    n = max(2 * repeats + 1, min(PAIRED_MAX_ROUNDS, math.ceil(PAIRED_ORACLE_S / max(oracle_s, 1e-6))))
    return n if n % 2 else n + 1


def paired_rounds(wfile: Path, layouts: dict[str, tuple], oracle: tuple, filt: str, out: Path, work: Path, rounds: int,
                  pass_budget: float) -> dict:
    """Each layout (``{name: (chunks text, cache dict)}``) and the oracle's (chunks text, the grid's cache)
    measured in ``rounds`` interleaved rounds (:func:`ccp.tune.prove.measure_interleaved`: a cold pass of
    every pattern of each a round, the order reversed every round, as tune's runoff measures): per name,
    the median of its per-round ratios to the oracle's pass of the same round (weighted totals; a pass cut to
    a prefix by ``pass_budget`` is the engine's scaled time, as in the grid). Equal layouts and caches are
    measured once: a contender whose answer is the oracle's layout at the grid's cache scores exactly 1."""
    from ccp.chunkcache import ChunkCache
    from ccp.hdf5.dataset import describe_source
    from ccp.hdf5.filters import parse_filters
    from ccp.tune.prove import Contender, measure_interleaved
    from ccp.tune.workload import load_workload

    wl = load_workload(wfile)
    source = describe_source(wl.dataset)
    pipeline = parse_filters(filt)

    def contender(name: str, chunks: str, cache: dict) -> Contender:
        shape = None if chunks == "contiguous" else tuple(int(x) for x in chunks.split("x"))
        return Contender(name, shape, pipeline, ChunkCache(cache["nbytes"], cache["nslots"], cache["w0"]), 0.0, "league")

    ref = contender("oracle", *oracle)
    others = {name: contender(name, *lay) for name, lay in layouts.items()}
    got = measure_interleaved(wl, source, [ref, *others.values()], out, work, rounds, pass_budget * (rounds + 1),
                              echo=lambda *_: None)
    weights = [it.weight for it in wl.items]

    def totals(m) -> np.ndarray:
        per = np.asarray(m.round_s, float)                    # items x rounds
        return (np.asarray(weights, float)[:, None] * per).sum(axis=0)

    base = totals(got[0])
    res: dict = {"oracle": {"chunks": oracle[0], "cache": oracle[1], "rounds_s": base.tolist(),
                            "median_s": float(np.median(base))}}
    for (name, (chunks, cache)), m in zip(layouts.items(), got[1:]):
        mine = totals(m)
        ratios = mine / base
        res[name] = {"chunks": chunks, "cache": cache, "rounds_s": mine.tolist(), "median_s": float(np.median(mine)),
                     "round_ratios": ratios.tolist(), "ratio": float(np.median(ratios)),
                     "extrapolated": any(st == "extrapolated" for _, st in m.per_item)}
    return res


def run_workload(name: str, w: dict, args, out: Path, work: Path) -> dict:
    doc = workload_doc(name, w, args.quick)
    out.mkdir(parents=True, exist_ok=True)
    wfile = out / f"{name}.yaml"
    wfile.write_text(yaml.safe_dump(doc, sort_keys=False))
    shape = doc["dataset"]["generate"]["shape"]
    itemsize = np.dtype(w["dtype"]).itemsize
    max_chunk = parse_size(w["max_chunk"])
    cache = parse_size(w["cache"])
    blocks = [tuple(it["access"]["block"]) for it in sorted(doc["workload"], key=lambda it: -it["weight"])]
    maxshape = [None, *shape[1:]] if w.get("unlimited") else None
    target = min(ONE_MIB, max_chunk)
    picks: dict[str, tuple[int, ...] | None] = {
        "h5py guess": h5py_guess(shape, itemsize, maxshape),
        "1 MiB rows": whole_rows(shape, itemsize, target),
        "Unidata balanced": balanced(shape, itemsize, series_axis(blocks, shape), target) if len(shape) > 1
        else whole_rows(shape, itemsize, target),
    }
    picks.update(netcdf_advisers(shape, w["dtype"], bool(w.get("unlimited")), w["filters"] != "none"))
    picks = {k: (tuple(min(c, n) for c, n in zip(v, shape)) if v is not None else None) for k, v in picks.items()}
    t0 = time.perf_counter()
    r = tune_mod.tune(wfile, budget=args.tune_budget, out=out / "tune", work_dir=work, repeats=args.tune_repeats,
                      echo=lambda *_: None, within=args.tune_within)
    t_tune = time.perf_counter() - t0
    rec = r["recommended"]
    picks["ccp tune"] = tuple(rec["chunks"]) if rec["chunks"] else None
    grid = grid_shapes(shape, itemsize, max_chunk, 16 if args.quick else 4, 65536 if args.quick else 4096)
    t0 = time.perf_counter()
    if args.grid_from:
        # a development shortcut: tune's pick measured in one sweep with the three fastest layouts of an earlier
        # run's grid (same workload, same cache); other contenders are not scored. Not for the published table
        older = next((d / name / "grid" for d in args.grid_from if (d / name / "grid" / "run" / "cells.csv").exists()), None)
        if older is None:
            raise SystemExit(f"league: no earlier grid of {name} under {', '.join(map(str, args.grid_from))}")
        old, _, _ = grid_totals(doc, older)
        best = [tuple(int(x) for x in k.split("x")) for k in sorted(old, key=lambda k: old[k])[:3] if k != "contiguous"]
        totals, ncells, extrapolated = measure_layouts(doc, [*best, picks["ccp tune"]], w["filters"], cache,
                                                       out / "mini-grid", work, args.repeats, args.cell_budget)
    else:
        totals, ncells, extrapolated = measure_layouts(doc, [*grid, *picks.values()], w["filters"], cache, out / "grid",
                                                       work, args.repeats, args.cell_budget)
    t_grid = time.perf_counter() - t0
    times = {k: totals.get(chunk_text(v), math.inf) for k, v in picks.items()}
    oracle_key = min(totals, key=lambda k: totals[k])
    oracle = totals[oracle_key]
    # the paired score: tune's answer as recommended (layout and its own cache), tune's layout at the grid's cache
    # and every contender measured within PAIRED_WITHIN of the oracle in the grid, each in interleaved rounds
    # beside the oracle's layout at the grid's cache; the others keep the grid's ratio (noise cannot bring them near)
    grid_cache = {"nbytes": cache, "nslots": GRID_NSLOTS, "w0": 0.75}
    tune_cache = {"nbytes": rec["cache_nbytes"], "nslots": rec["cache_nslots"], "w0": rec["cache_w0"]}
    grid_ratio = {k: t / oracle for k, t in times.items()}
    again = {"ccp tune": (chunk_text(picks["ccp tune"]), tune_cache),
             "ccp tune layout": (chunk_text(picks["ccp tune"]), grid_cache)}
    again.update({k: (chunk_text(picks[k]), grid_cache) for k in picks
                  if k != "ccp tune" and grid_ratio[k] <= PAIRED_WITHIN})
    t0 = time.perf_counter()
    paired = paired_rounds(wfile, again, (oracle_key, grid_cache), w["filters"], out / "paired", work,
                           paired_round_count(oracle, args.repeats), args.cell_budget)
    t_paired = time.perf_counter() - t0
    ratio = dict(grid_ratio)
    ratio["ccp tune layout"] = grid_ratio["ccp tune"]
    ratio.update({k: v["ratio"] for k, v in paired.items() if k != "oracle"})
    applied = {"chunks": paired["ccp tune"]["chunks"], "cache": tune_cache, "time_s": paired["ccp tune"]["median_s"],
               "oracle_again_s": paired["oracle"]["median_s"], "ratio": paired["ccp tune"]["ratio"]}
    return {"workload": name, "what": w["what"], "source": w["source"], "shape": shape, "dtype": w["dtype"],
            "filters": w["filters"], "cache_budget": cache, "picks": {k: chunk_text(v) for k, v in picks.items()},
            "times_s": times, "grid_ratio": grid_ratio, "ratio": ratio, "as_recommended": applied, "paired": paired,
            "paired_wall_s": t_paired,
            "extrapolated": sorted(k for k, v in picks.items() if chunk_text(v) in extrapolated),
            "oracle_extrapolated": oracle_key in extrapolated, "cells_extrapolated": len(extrapolated),
            "oracle": {"chunks": oracle_key, "time_s": oracle,
                       "from": [k for k, v in picks.items() if chunk_text(v) == oracle_key] or ["grid"]},
            "tune": {"cache_nbytes": rec["cache_nbytes"], "cache_nslots": rec["cache_nslots"], "why": rec["why"],
                     "predicted_s": rec["predicted_s"], "measured_in_tune_s": rec["measured_s"],
                     "measured_passes": rec.get("measured_passes"), "measured_in_choice_s": rec.get("measured_in_choice_s"),
                     "predicted_in_choice_s": rec.get("predicted_in_choice_s"),
                     "predicted_before_runoff_s": rec.get("predicted_before_runoff_s"),
                     "measured_in_grid_s": applied["time_s"],
                     "prices": r.get("prices"), "wall_s": t_tune, "trimmed": r.get("trimmed"),
                     "within_s": r.get("within_s")},
            "grid_layouts": len(grid), "cells": ncells, "grid_wall_s": t_grid, "load_avg": os.getloadavg()}


def geomean(xs) -> float:
    xs = [x for x in xs if x and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def table(results: list[dict]) -> list[str]:
    head = "| workload | " + " | ".join(CONTENDERS) + " | oracle |"
    lines = [head, "|" + "---|" * (len(CONTENDERS) + 2)]
    for r in results:
        cells = [("~" if c in r["extrapolated"] else "") + f"{r['ratio'][c]:.2f}" for c in CONTENDERS]
        cells[-1] = f"**{cells[-1]}**"
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + f" | {r['oracle']['chunks']}: {r['oracle']['time_s'] * 1e3:.0f} ms |")
    gm = {c: geomean(r["ratio"][c] for r in results) for c in CONTENDERS}
    lines.append("| geometric mean | " + " | ".join(f"{gm[c]:.2f}" for c in CONTENDERS) + " | 1 |")
    return lines


def remeasured(results: list[dict], root: Path | None) -> list[str]:
    """Each layout tune measured in its first round and again in its runoff (same layout, same cache,
    minutes apart): runoff / first round, from each workload's tune.json under ``root``."""
    if root is None:
        return []
    ratios, per = [], []
    for r in results:
        path = root / r["workload"] / "tune" / "tune.json"
        if not path.exists():
            continue
        rows = [c for c in json.loads(path.read_text())["contenders"]
                if c.get("runoff") and c.get("first_measured_s") and c.get("measured_s")]
        xs = [c["measured_s"] / c["first_measured_s"] for c in rows]
        ratios += xs
        if xs:
            per.append(f"{r['workload']} {min(xs):.2f}-{max(xs):.2f}")
    if not ratios:
        return []
    off = sum(not 1 / 1.25 <= x <= 1.25 for x in ratios)
    return [f"the same layout measured twice in tune (runoff / first round, minutes apart): {len(ratios)} layouts, "
            f"median {float(np.median(ratios)):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}, {off} outside 1.25x "
            f"({'; '.join(per)})"]


def verdict(results: list[dict], root: Path | None = None) -> list[str]:
    tune_r = [r["ratio"]["ccp tune"] for r in results]
    within = sum(x <= 1.10 for x in tune_r)
    gm = {c: geomean(r["ratio"][c] for r in results) for c in CONTENDERS}
    best_h = min((c for c in CONTENDERS if c != "ccp tune"), key=lambda c: gm[c])
    pm = [_pick_ratio(r["tune"]) for r in results]
    pm = [x for x in pm if x is not None]
    lay = [r["ratio"].get("ccp tune layout", math.nan) for r in results]
    return ["", "~ : a pattern of that layout ran past its cell's time budget; its time is a measured prefix scaled up",
            f"paired (interleaved rounds beside the oracle's layout at the grid's cache, median of per-round ratios): ccp tune "
            f"as recommended, its layout at the grid's cache, and every contender within {PAIRED_WITHIN:g}x of the oracle in "
            "the grid; the rest: the grid's ratio",
            "ccp tune's layout alone at the grid's cache (paired): within 1.10x on "
            f"{sum(x <= 1.10 for x in lay)}/{len(lay)}, geometric mean {geomean(lay):.2f} ({', '.join(f'{x:.2f}' for x in lay)})",
            "", f"ccp tune within 1.10x of the oracle on {within}/{len(results)}; geometric mean {gm['ccp tune']:.2f} "
                f"against the best heuristic's ({best_h}) {gm[best_h]:.2f}: {gm[best_h] / gm['ccp tune']:.2f}x better",
            f"tune's pick, predicted / measured in the rounds its final prices were fitted to (the runoff's): within 1.25x on "
            f"{sum(1 / 1.25 <= x <= 1.25 for x in pm)}/{len(pm)} ({', '.join(f'{x:.2f}' for x in pm)})",
            f"tune's pick, predicted before its runoff / measured in its runoff: {_within(results, 'predicted_before_runoff_s', 'measured_in_choice_s')}",
            f"tune's recommendation, predicted / measured as recommended in tune (every whole pass of it): {_within(results, 'predicted_s', 'measured_in_tune_s')}",
            f"tune's pick, predicted / measured in the league's sweep: {_within(results, 'predicted_s', 'measured_in_grid_s')}",
            "tune's wall time per workload: " + ", ".join(f"{r['tune']['wall_s']:.0f}" for r in results) + " s",
            *(f"tune on {r['workload']}: {note}" for r in results for note in r["tune"].get("trimmed") or []),
            *remeasured(results, root)]


def _pick_ratio(t: dict) -> float | None:
    """Tune's pick, predicted / measured in the rounds its final prices were fitted to; a league.json from
    before those fields: the recommendation's prediction over its measured time as recommended."""
    pred, meas = t.get("predicted_in_choice_s"), t.get("measured_in_choice_s")
    if not pred or not meas:
        pred, meas = t.get("predicted_s"), t.get("measured_in_tune_s")
    return pred / meas if pred and meas and math.isfinite(meas) else None


def _within(results: list[dict], pred: str, meas: str) -> str:
    xs = [r["tune"][pred] / r["tune"][meas] for r in results
          if r["tune"].get(pred) and r["tune"].get(meas) and math.isfinite(r["tune"][meas])]
    return f"within 1.25x on {sum(1 / 1.25 <= x <= 1.25 for x in xs)}/{len(xs)} ({', '.join(f'{x:.2f}' for x in xs)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="datasets of a few MiB, a coarser grid: about 20 minutes")
    ap.add_argument("--out", type=Path, default=Path("results/league"))
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per cell (the median stands)")
    ap.add_argument("--cell-budget", type=float, default=None,
                    help="seconds per cell (default 20 quick, 60 full): over it a cell is a measured prefix scaled up")
    ap.add_argument("--tune-budget", type=float, default=None, help="ccp tune's --budget (default 20 s quick, 60 s full)")
    ap.add_argument("--tune-repeats", type=int, default=3)
    ap.add_argument("--tune-within", type=float, default=120.0, help="ccp tune's --within: the wall time it aims to answer in (s)")
    ap.add_argument("--grid-from", type=Path, action="append", help="score tune's pick against an earlier run's grid (its folder holding "
                    "NAME/grid/) instead of measuring the grid again: for development only")
    ap.add_argument("--table", type=Path, help="print the table of a league.json (a finished or a partial run) and exit")
    args = ap.parse_args()
    if args.table:
        results = json.loads(args.table.read_text())["results"]
        print("\n".join(table(results) + verdict(results, args.table.parent)))
        return
    args.cell_budget = args.cell_budget or (20.0 if args.quick else 60.0)
    args.tune_budget = args.tune_budget or (20.0 if args.quick else 60.0)
    if args.quick:
        tune_mod.SEARCH_LIMIT_S = 10.0
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out / stamp
    work = args.out / "work"
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    results = []
    print(f"league {'quick' if args.quick else 'full'}: load average {os.getloadavg()}, out {out}", flush=True)
    for name in args.only or WORKLOADS:
        t0 = time.perf_counter()
        res = run_workload(name, WORKLOADS[name], args, out / name, work)
        results.append(res)
        print(json.dumps({k: res[k] for k in ("workload", "picks", "ratio", "oracle", "load_avg")}), flush=True)
        print(f"  {name}: {time.perf_counter() - t0:.0f} s (tune {res['tune']['wall_s']:.0f} s, sweep "
              f"{res['grid_wall_s']:.0f} s, {res['cells']} cells)", flush=True)
        (out / "league.json").write_text(json.dumps({"results": results, "quick": args.quick}, indent=2, default=str))
    wall = time.perf_counter() - t_all
    gm = {c: geomean(r["ratio"][c] for r in results) for c in CONTENDERS}
    lines = table(results) + verdict(results, out) + [f"wall {wall / 60:.1f} min, load average at the end {os.getloadavg()}"]
    (out / "league.md").write_text("\n".join(lines) + "\n")
    (out / "league.json").write_text(json.dumps({"results": results, "quick": args.quick, "wall_s": wall,
                                                 "geomeans": gm}, indent=2, default=str))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
