"""Scale a sweep down for a quick look: every dimension, chunk, block and cache size shrinks together.

``factor`` multiplies each dimension (shapes, chunks, blocks, written_by; at least 1) and the chunk
cache sizes by ``factor ** rank`` (volumes), so a chunk that did not fit a cache still does not,
roughly. A sweep on the user's own file cannot be scaled (its data is what it is). What each axis scales
is the axis's own (``ccp.config.axes``: ``scale_matrix``, ``scale_rule``, ``scale_selector``).
"""

from __future__ import annotations

import copy

from ccp.config import axes as matrix_axes
from ccp.config.axes.base import scale_dims as _dims
from ccp.errors import ConfigError


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
    volume = factor ** max(rank, 1)
    axes = matrix_axes.axes()
    matrix = raw.get("matrix") or {}
    if isinstance(matrix, dict):
        for a in axes:
            a.scale_matrix(matrix, factor, volume)
    for rule in raw.get("exclude") or []:
        if isinstance(rule, dict):
            for a in axes:
                a.scale_rule(rule, factor, volume)
    for t in raw.get("tables") or []:
        for sel in t.get("columns") or []:
            for a in axes:
                a.scale_selector(sel, factor, volume)
    raw["name"] = f"{raw.get('name', 'sweep')}-x{factor:g}"
    return raw
