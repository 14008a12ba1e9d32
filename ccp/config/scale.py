"""Scale a sweep down for a quick look: every dimension, chunk, block and cache size shrinks together.

``factor`` multiplies each dimension (shapes, chunks, blocks, written_by; at least 1) and the chunk
cache sizes by ``factor ** rank`` (volumes), so a chunk that did not fit a cache still does not,
roughly. A sweep on the user's own file cannot be scaled (its data is what it is).
"""

from __future__ import annotations

import copy
import math

from ccp.errors import ConfigError
from ccp.units import parse_size


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dims(value, factor):
    """Scale whole dimensions only: anything else (8.5, "8.5x6", true) is left for the parser to refuse."""
    if isinstance(value, str):
        parts = value.lower().split("x")
        if "x" not in value.lower() or not all(p.strip().isdigit() for p in parts):
            return value            # contiguous, source, or not a shape
        return "x".join(str(max(1, round(int(v) * factor))) for v in parts)
    if isinstance(value, list) and all(v is None or _is_int(v) for v in value):
        return [None if v is None else max(1, round(v * factor)) for v in value]
    return value


def scale_sweep(raw: dict, factor: float) -> dict:
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise ConfigError("--scale", f"must be in (0, 1], got {factor}")
    if not isinstance(raw, dict):
        return raw                  # the parser names what is wrong
    raw = copy.deepcopy(raw)
    ds = raw.get("dataset") or {}
    gen = ds.get("generate")
    if not isinstance(gen, dict):
        raise ConfigError("--scale", "only sweeps that generate their data can be scaled (dataset.file is used as it is)")
    rank = len(gen.get("shape") or [])
    for key in ("shape", "written_by", "chunks"):
        if gen.get(key) is not None:
            gen[key] = _dims(gen[key], factor)
    if gen.get("maxshape") is not None:
        gen["maxshape"] = _dims(gen["maxshape"], factor)
    m = raw.get("matrix") or {}
    if "chunks" in m:
        m["chunks"] = [_dims(c, factor) for c in m["chunks"]] if isinstance(m["chunks"], list) else _dims(m["chunks"], factor)
        if isinstance(m["chunks"], list) and m["chunks"] and not isinstance(m["chunks"][0], (list, str)):
            m["chunks"] = _dims(m["chunks"], factor)
    vol = factor ** max(rank, 1)

    def cache(c):
        if isinstance(c, dict):
            c = dict(c)
            if "nbytes" in c:
                c["nbytes"] = max(1024, int(parse_size(c["nbytes"], "matrix.cache") * vol))
            return c
        return max(1024, int(parse_size(c, "matrix.cache") * vol))

    if not isinstance(raw, dict):
        return raw

    if "cache" in m:
        m["cache"] = [cache(c) for c in m["cache"]] if isinstance(m["cache"], list) else cache(m["cache"])
    for a in m.get("access") or []:
        if isinstance(a, dict) and "block" in a:
            a["block"] = _dims(a["block"], factor)
        if isinstance(a, dict) and _is_int(a.get("random")) and a["random"] > 0:
            a["random"] = max(1, math.ceil(a["random"] * factor))
    for rule in raw.get("exclude") or []:
        if isinstance(rule, dict):
            if "chunks" in rule:
                rule["chunks"] = _dims(rule["chunks"], factor)
            if "cache" in rule:
                rule["cache"] = cache(rule["cache"])
            if isinstance(rule.get("access"), dict) and "block" in rule["access"]:
                rule["access"]["block"] = _dims(rule["access"]["block"], factor)
    for t in raw.get("tables") or []:
        for sel in t.get("columns") or []:
            for k in ("chunks", "block"):
                if k in sel:
                    sel[k] = _dims(sel[k], factor)
            if "cache" in sel:
                sel["cache"] = cache(sel["cache"])
    raw["name"] = f"{raw.get('name', 'sweep')}-x{factor:g}"
    return raw


def scale_effects(sweep_path, factor: float) -> list[str]:
    """Warnings for what scaling by ``factor`` does to the experiment, and the scale that avoids it.

    Two ways a scaled sweep stops meaning what the full one meant: distinct chunk shapes or blocks
    round to the same one (cells merge), and a chunk that fit its chunk cache no longer fits the
    scaled cache (the cure under test stops being one).
    """
    full = _axes(sweep_path, None)
    warnings = _effects(full, _axes(sweep_path, factor), factor)
    if warnings:
        keeps = next((f for f in (k / 100 for k in range(int(factor * 100) + 1, 101))
                      if not _effects(full, _axes(sweep_path, f), f)), 1.0)
        warnings.append(f"--scale {keeps:g} keeps the experiment's meaning (every cell distinct, every chunk that fit "
                        "its cache still fits)" if keeps < 1 else "only the full sweep (no --scale) keeps its meaning")
    return warnings


def _axes(sweep_path, factor):
    from ccp.config.sweep import load_sweep
    from ccp.hdf5.dataset import describe_source
    from ccp.matrix.cells import expand

    sweep = load_sweep(sweep_path, factor)
    return sweep, expand(sweep, describe_source(sweep.dataset))


def _effects(full, scaled, factor) -> list[str]:
    from ccp.units import format_bytes, shape_str

    (sw0, cells0), (sw1, cells1) = full, scaled
    out = []
    if len(cells1) < len(cells0):
        merged = [f"{shape_str(a)} and {shape_str(b)}" for (i, a), (j, b) in _pairs(sw0.chunks) if sw1.chunks[i] == sw1.chunks[j]]
        blocks = [f"{shape_str(a.block)} and {shape_str(b.block)}" for (i, a), (j, b) in _pairs(sw0.access)
                  if sw1.access[i] == sw1.access[j]]
        what = "; ".join(x for x in (f"chunks {', '.join(merged)}" if merged else "",
                                     f"blocks {', '.join(blocks)}" if blocks else "") if x)
        out.append(f"--scale {factor:g} merges cells: {len(cells0)} become {len(cells1)}" + (f" ({what} scale to the same)" if what else ""))
    itemsize = sw0.dataset.generate.dtype.itemsize if sw0.dataset.generate else 1
    for c0, c1 in zip(sw0.chunks, sw1.chunks):
        if not isinstance(c0, tuple) or not isinstance(c1, tuple):
            continue
        b0, b1 = math.prod(c0) * itemsize, math.prod(c1) * itemsize
        for k0, k1 in zip(sw0.cache, sw1.cache):
            if b0 <= k0.nbytes and b1 > k1.nbytes:
                out.append(f"--scale {factor:g}: chunk {shape_str(c0)} ({format_bytes(b0)}) fits cache {format_bytes(k0.nbytes)} "
                           f"but its scaled chunk {shape_str(c1)} ({format_bytes(b1)}) does not fit the scaled cache {format_bytes(k1.nbytes)}")
    return out


def _pairs(items):
    items = list(enumerate(items))
    return [(a, b) for n, a in enumerate(items) for b in items[n + 1:] if a[1] != b[1]]
