"""Cures that do no harm: a repack cure priced against the dataset's other natural patterns.

A chunk shape cut for the traced reads (a 3650x1x1 series) can make the dataset's other reads (a daily
map, 1x96x144) hundreds of times slower. Each repack cure is priced, with the compiled model and the
trace's own costs, on: a series along each axis, a plane at one index of each axis, and any block the
user names (``ccp diagnose --pattern 1x96x144``). A pattern slowed by more than :data:`HARM` says so,
and ``diagnose`` writes a ``ccp tune`` workload file (:func:`tune_workload_yaml`) holding the traced
reads and those patterns, so the search can weigh them all.
"""

from __future__ import annotations

import math
from pathlib import Path

from ccp.chunkcache import ChunkCache
from ccp.model.fast import simulate_tiling
from ccp.trace.chunk_price import load_ratio
from ccp.units import shape_str

HARM = 2.0                  # a cure slowing a natural pattern by more than this says so


def natural_patterns(shape, named=()) -> list[tuple[str, tuple[int, ...]]]:
    """(name, block) of a series along each axis, a plane at one index of each axis, then the named blocks."""
    shape = tuple(int(s) for s in shape)
    rank = len(shape)
    out: list[tuple[str, tuple[int, ...]]] = []
    seen = {shape}          # the whole dataset is no pattern of its own
    if rank >= 2:
        for k in range(rank):
            block = tuple(shape[d] if d == k else 1 for d in range(rank))
            if block not in seen and shape[k] > 1:
                seen.add(block)
                out.append((f"a series along axis {k} ({shape_str(block)})", block))
        for k in range(rank):
            block = tuple(1 if d == k else shape[d] for d in range(rank))
            if block not in seen and shape[k] > 1:
                seen.add(block)
                out.append((f"a plane at one index of axis {k} ({shape_str(block)})", block))
    for block in named:
        block = tuple(min(int(b), s) for b, s in zip(block, shape))
        if block not in seen:
            seen.add(block)
            out.append((f"your pattern {shape_str(block)}", block))
    return out


def _pattern_time(shape, chunks, itemsize, filtered, cache: ChunkCache, block, costs, io_ratio) -> float:
    """Seconds for one read of ``block`` (the first of its tiling) from a fresh open: a cold cache, as a
    program reading one map or one series pays it."""
    p = simulate_tiling(shape, chunks, itemsize, filtered=filtered, cache=cache, op="read", block=block,
                        max_requests=1).total()
    io = p.chunk_loads + p.raw_reads      # each chunk moved, through the cache or around it
    return costs["python_per_call_s"] + costs["hdf5_per_call_s"] + io * costs["hdf5_per_load_s"] * io_ratio


def price_cure(seq, new_chunks, costs, cache, named=()) -> list[dict]:
    """Each natural pattern's time per read before and after a repack to ``new_chunks``, slowest-down first."""
    params = ChunkCache(int(cache.nbytes), int(cache.nslots), float(cache.w0))
    old_bytes = math.prod(seq.chunks) * seq.itemsize
    new_ratio = load_ratio(old_bytes, math.prod(new_chunks) * seq.itemsize, seq.filtered)
    out: list[dict] = []
    for name, block in natural_patterns(seq.shape, named):
        before = _pattern_time(seq.shape, seq.chunks, seq.itemsize, seq.filtered, params, block, costs, 1.0)
        after = _pattern_time(seq.shape, tuple(new_chunks), seq.itemsize, seq.filtered, params, block, costs, new_ratio)
        out.append({"pattern": name, "block": list(block), "before_s": before, "after_s": after,
                    "slowdown": after / before if before else None})
    out.sort(key=lambda r: (-float(r["slowdown"] or 0), str(r["pattern"])))
    return out


def dataset_slug(dataset: str, keep: str = "-_", fill: str = "-") -> str:
    """A dataset's path as a file-name part. Replacing characters maps several names to one (/a/b and /a-b),
    so a slug with a replacement ends in a short hash of the whole path: two datasets' files never share a name."""
    name = dataset.strip("/")
    slug = "".join(ch if ch.isalnum() or ch in keep else fill for ch in name)
    if slug == name and slug:
        return slug
    import hashlib

    return f"{slug or 'root'}-{hashlib.sha256(dataset.encode('utf-8', 'surrogatepass')).hexdigest()[:6]}"


def tune_workload_yaml(trace_dir: str, file: str, dataset: str, patterns: list[dict], cache_bytes: int,
                       current=None) -> str:
    """A ``ccp tune`` workload: the traced reads and the natural patterns, equal weights; ``current``, the chunk cache
    the program read with (netCDF-C's for a netCDF4-python reader), is tune's current reader."""
    slug = dataset_slug(dataset)
    lines = [f"# written by `ccp diagnose {trace_dir}`: the traced reads of {dataset} and the dataset's other",
             "# natural patterns, so `ccp tune` weighs them all before a repack", f"name: diagnose-{slug}",
             f"dataset: {{file: {_yaml_str(file)}, path: {_yaml_str(dataset)}}}", "workload:",
             f"  - {{access: {{trace: {_yaml_str(str(Path(trace_dir).resolve()))}, dataset: {_yaml_str(dataset)}}}, weight: 1}}"
             "   # what the program did"]
    for p in patterns:
        lines.append(f"  - {{access: {{op: read, block: [{', '.join(str(b) for b in p['block'])}]}}, weight: 1}}"
                     f"   # {p['pattern']}")
    now = (f", current_cache: {{nbytes: {int(current.nbytes)}, nslots: {int(current.nslots)}, w0: {float(current.w0):g}}}"
           if current is not None else "")
    lines.append(f"constraints: {{max_cache_bytes: {max(int(cache_bytes), 1)}{now}}}")
    return "\n".join(lines) + "\n"


def _yaml_str(text: str) -> str:
    """A double-quoted YAML scalar (any path, spaces and colons included)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
