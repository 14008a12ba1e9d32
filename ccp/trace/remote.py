"""``ccp diagnose`` for a file a program read through an fsspec file object: GETs per call, cures in fsspec terms.

The recorder (:mod:`ccp.trace.remote_files`) kept what the file object was (URL, block size, cache type),
each read HDF5 made through it and each GET fsspec's cache made. Here:

* GETs are counted per dataset call (a GET belongs to the call whose time span holds it, same process)
  and apart from any call (the file's open and metadata).
* The reads are replayed through fsspec's cache rules (:func:`ccp.remote.fsspec_model.simulate_fsspec`)
  for the recorded setting (the model's GETs are shown beside the counted ones) and for other cache types
  and block sizes.
* A setting's time is the calls' measured time with their GETs' measured cost replaced by the cost of the
  GETs that setting makes, priced as ``a + b * bytes`` per GET fitted on the trace's own GETs: a trace
  taken on a fast network prices GETs cheaply, so the GET counts are shown as well (on S3 each GET is
  tens of milliseconds).
* A file not written with paged aggregation whose open and metadata took several GETs gets the paged-copy
  command (``ccp s3 cloud-copy``), not priced: where HDF5 puts its metadata decides it.
"""

from __future__ import annotations

import numpy as np

from ccp.remote.fsspec_model import FsspecCacheModel, ReadCost
from ccp.units import format_bytes, format_seconds
from ccp.workload.tracefile import Trace

BLOCK_SIZES = (1 << 20, 4 << 20, 16 << 20)
CACHE_TYPES = ("none", "readahead", "blockcache", "first")
MIN_GAIN = 0.9
UNPHYSICAL = 0.1             # a fitted cost per GET below this share of the median GET's time is not a round trip
PAGED_OPEN_GETS = 3          # open and metadata GETs from which a paged copy is worth naming


def _is(col, value) -> np.ndarray:
    return col.eq(value).fillna(False).to_numpy(bool)


def _in_calls(pids, times, call_pid, call_t0, call_end) -> np.ndarray:
    """Index of the call (same pid, t0 <= time < end) holding each time, -1 for none."""
    out = np.full(len(times), -1, np.int64)
    for p in np.unique(pids):
        mine = np.flatnonzero(call_pid == p)
        if not len(mine):
            continue
        order = mine[np.argsort(call_t0[mine], kind="stable")]
        sel = np.flatnonzero(pids == p)
        k = np.searchsorted(call_t0[order], times[sel], side="right") - 1
        ok = (k >= 0) & (times[sel] < call_end[order[np.maximum(k, 0)]])
        out[sel[ok]] = order[k[ok]]
    return out


def fit_get_cost(nbytes: np.ndarray, wall: np.ndarray) -> tuple[float, float]:
    """(seconds per GET, seconds per byte) fitted on the recorded GETs, both >= 0."""
    if not len(wall):
        return 0.0, 0.0
    if len(np.unique(nbytes)) < 2:
        return float(np.median(wall)), 0.0
    a, b = np.linalg.lstsq(np.stack([np.ones(len(wall)), nbytes.astype(float)], axis=1), wall, rcond=None)[0]
    if a < 0 or b < 0 or a < UNPHYSICAL * float(np.median(wall)):
        # a fit that makes a GET free or bytes free, or puts nearly all of a GET's time on its bytes (a request has a
        # round trip: 1.6 us per GET fitted on loopback GETs of milliseconds): the per-GET median
        return float(np.median(wall)), 0.0
    return float(a), float(b)


def _opens(apis, ctype: str, bsize: int) -> list[tuple[str, int, str]]:
    """(cache type, block size, open) of each read: from the file object its event names (``fsspec:TYPE:BLOCK:N``,
    :mod:`ccp.trace.remote_files`); an older trace's reads all get the recorded setting, one open per process."""
    out = []
    for api in apis:
        parts = str(api).split(":") if isinstance(api, str) else []
        if len(parts) == 4 and parts[0] == "fsspec" and parts[2].isdigit():
            out.append((parts[1], int(parts[2]), parts[3]))
        else:
            out.append((ctype, bsize, ""))
    return out


def _replay(reads: list[tuple[int, int, int]], settings, size: int, opens=None) -> list[ReadCost]:
    """Each read's GETs; one cache per file object (per process and open). ``settings``: one (cache type, block
    size) for all, or one per read (each open's own)."""
    models: dict[tuple, FsspecCacheModel] = {}
    out = []
    for k, (pid, off, n) in enumerate(reads):
        ct, bs = settings[k] if isinstance(settings, list) else settings
        key = (pid, opens[k] if opens else "")
        m = models.get(key)
        if m is None:
            m = models[key] = FsspecCacheModel(ct, bs, size)
        out.append(m.read(off, n))
    return out


def remote_diagnosis(trace: Trace, d: dict) -> None:
    """Add GET counts, findings and fsspec cures to one dataset's diagnosis ``d`` (nothing for a local file)."""
    layout = trace.layout(d["file"], d["dataset"]) or {}
    info = layout.get("remote")
    if not isinstance(info, dict) or not d.get("reads"):
        return
    url, t = d["file"], trace.table
    of_file = _is(t["file"], url)
    ev = of_file & _is(t["kind"], "event")
    gets = t[ev & _is(t["op"], "get")]
    reads = t[ev & _is(t["op"], "fsspec_read")].sort_values(["pid", "seq"])
    calls_all = t[of_file & _is(t["kind"], "call") & t["depth"].eq(0).fillna(False).to_numpy(bool)]
    c_pid = calls_all["pid"].to_numpy(np.int64)
    c_t0 = calls_all["t0_ns"].to_numpy(np.int64)
    c_end = c_t0 + (calls_all["wall_s"].to_numpy(float) * 1e9).astype(np.int64) + 1
    mine = (calls_all["dataset"].eq(d["dataset"]).fillna(False) & calls_all["op"].eq("read").fillna(False)).to_numpy(bool)
    g_call = _in_calls(gets["pid"].to_numpy(np.int64), gets["t0_ns"].to_numpy(np.int64), c_pid, c_t0, c_end)
    g_bytes = gets["bytes"].fillna(0).to_numpy(np.int64)
    g_wall = gets["wall_s"].to_numpy(float)
    in_mine = (g_call >= 0) & mine[np.maximum(g_call, 0)]
    per_call = np.bincount(g_call[in_mine], minlength=len(calls_all))[mine] if len(calls_all) else np.zeros(0, int)
    outside = int((g_call < 0).sum())
    a, b = fit_get_cost(g_bytes, g_wall)
    r = {"url": url, **{k: info.get(k) for k in ("filesystem", "block_size", "cache_type", "size", "file_space",
                                               "page_size")},
         "gets": int(len(gets)), "get_bytes": int(g_bytes.sum()), "gets_in_calls": int(in_mine.sum()),
         "gets_per_call": float(per_call.mean()) if len(per_call) else 0.0,
         "max_gets_per_call": int(per_call.max()) if len(per_call) else 0, "gets_outside_calls": outside,
         "get_cost": {"per_get_s": a, "per_byte_s": b}, "settings": []}
    d["remote"] = r
    f = d["findings"]
    rd = list(zip(reads["pid"].to_numpy(np.int64).tolist(),
                  [int(s[0]) for s in reads["start"]], [int(c[0]) for c in reads["count"]]))
    ctype, bsize = str(info.get("cache_type")), int(info.get("block_size") or 0)
    per_read = _opens(reads["api"].tolist() if "api" in reads.columns else [None] * len(rd), ctype, bsize)
    used = list(dict.fromkeys((ct, bs) for ct, bs, _ in per_read)) or [(ctype, bsize)]
    opens = [f"{pid}:{o}" for (pid, _, _), (_, _, o) in zip(rd, per_read)]
    setting = (f"cache_type={used[0][0]!r}, block_size={format_bytes(used[0][1])}" if len(used) == 1 else
               f"{len(used)} settings, one per open: see below")
    f.append(f"read through fsspec ({info.get('filesystem')}, {setting}): {r['gets_in_calls']} GET(s) "
             f"({format_bytes(int(g_bytes[in_mine].sum()))}) in this dataset's {int(mine.sum())} call(s), "
             f"{r['gets_per_call']:.1f} per call (at most {r['max_gets_per_call']}); {outside} GET(s) of the file "
             f"outside any call (its open and metadata; counted from h5py's open of the file object: a read before it, "
             f"such as xarray's format check, is not in the count); "
             + (f"~{format_seconds(a)} per GET here" if len(gets) else "no GET timed, so none priced"))
    size = int(info.get("size") or 0)
    if not rd or size <= 0:
        return
    r_call = _in_calls(reads["pid"].to_numpy(np.int64), reads["t0_ns"].to_numpy(np.int64), c_pid, c_t0, c_end)
    r_mine = (r_call >= 0) & mine[np.maximum(r_call, 0)]
    measured_get_s = float(g_wall[in_mine].sum())
    base_s = float(d["wall_s"]) - measured_get_s
    if len(used) > 1:           # one URL opened with other settings: the first open's finding above is not all of it
        nopen = len(set(opens))
        f.append(f"the program opened {url} {nopen} times with {len(used)} fsspec settings: " + "; ".join(
            f"{ct} {format_bytes(bs)} ({sum(1 for s in per_read if s[:2] == (ct, bs))} of the {len(rd)} reads)"
            for ct, bs in used) + "; each open is replayed with its own")
    if all(ct in CACHE_TYPES and bs > 0 for ct, bs in used):
        now = _replay(rd, [s[:2] for s in per_read], size, opens)
        what = f"fsspec's {used[0][0]} cache" if len(used) == 1 else "each open's own fsspec cache"
        f.append(f"{what} replayed over the {len(rd)} reads HDF5 made gives {sum(c.gets for c in now)} "
                 f"GET(s) (counted: {len(gets)})")
    chunk = int(np.prod(d["chunks"] or [1])) * int(layout.get("itemsize") or 1)
    sizes = sorted({s for s in (bsize, *BLOCK_SIZES, 1 << max(chunk - 1, 1).bit_length()) if s >= 4096})
    for ct in CACHE_TYPES:
        for bs in sizes if ct != "none" else [bsize or sizes[0]]:
            costs = _replay(rd, (ct, bs), size, opens)
            n = sum(c.gets for c, m in zip(costs, r_mine) if m)
            nb = sum(c.fetched for c, m in zip(costs, r_mine) if m)
            out_gets = sum(c.gets for c, m in zip(costs, r_call < 0) if m)
            r["settings"].append({"cache_type": ct, "block_size": bs, "gets_in_calls": n, "bytes_in_calls": nb,
                                  "gets_outside_calls": out_gets, "predicted_s": base_s + n * a + nb * b})
    best = min(r["settings"], key=lambda s: (s["predicted_s"], s["gets_in_calls"], s["block_size"]))
    few = min(r["settings"], key=lambda s: (s["gets_in_calls"], s["bytes_in_calls"]))
    shown = [s for s in r["settings"] if s["block_size"] in (bsize, 4 << 20) or s is few or s is best]
    f.append("other fsspec settings, GETs in these calls (and outside them): " + "; ".join(
        f"{s['cache_type']} {format_bytes(s['block_size'])}: {s['gets_in_calls']} ({s['gets_outside_calls']}), "
        f"{format_bytes(s['bytes_in_calls'])}" for s in shown))
    now_s = float(d["wall_s"])
    for s in dict.fromkeys([id(best), id(few)]):
        pick = best if s == id(best) else few
        if ([(pick["cache_type"], pick["block_size"])] == used or pick["predicted_s"] > now_s * MIN_GAIN):
            continue
        every = " for every open" if len(used) > 1 else ""
        d["cures"].append({
            "cure": f"fsspec cache_type={pick['cache_type']!r}, block_size={format_bytes(pick['block_size'])}{every}",
            "why": f"{pick['gets_in_calls']} GET(s) in these calls instead of {r['gets_in_calls']} and "
                   f"{pick['gets_outside_calls']} outside them instead of {outside}, {format_bytes(pick['bytes_in_calls'])} "
                   f"fetched in the calls, by fsspec's cache rules over the recorded reads; GETs priced at "
                   f"{format_seconds(a)} + {b * 1e9:.2g} ns/byte, fitted on this trace's GETs",
            "predicted_s": pick["predicted_s"], "speedup": now_s / pick["predicted_s"] if pick["predicted_s"] else None,
            "chunk_loads": d.get("chunk_loads"),
            "code": f'f = fs.open("{url}", "rb", cache_type="{pick["cache_type"]}", block_size={pick["block_size"]})'
                    f'   # fs: your {info.get("filesystem")}\nh5py.File(f, "r")'})
    d["cures"].sort(key=lambda c: c["predicted_s"])
    if outside >= PAGED_OPEN_GETS and info.get("file_space") != "PAGE":
        d["notes"].append(f"{outside} GET(s) outside the calls (the open, the object headers, the chunk index): a paged "
                          "copy keeps HDF5's metadata in few pages (not priced here): copy the object locally, then "
                          "`ccp s3 cloud-copy local.h5 paged.h5 --page-size 4MiB`, upload paged.h5 and open it with "
                          "h5py.File(f, page_buf_size=...)")
