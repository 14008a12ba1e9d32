"""What ``--scale`` does to an experiment's meaning: cells that merge, chunks that stop fitting their cache.

Scaling itself is config's (:func:`ccp.config.scale.scale_sweep` shrinks the raw sweep before it is
parsed); judging its effect needs the cells and the dataset, so it is here, above the matrix.
"""

from __future__ import annotations

import math

from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.units import format_bytes, shape_str
from ccp.workload.sweep import load_sweep_with_replays


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
    sweep = load_sweep_with_replays(sweep_path, factor)
    return sweep, expand(sweep, describe_source(sweep.dataset))


def _effects(full, scaled, factor) -> list[str]:
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
