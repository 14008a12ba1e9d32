"""A measured layout's time with the prefixes its time budget cut completed by the fitted model.

A cell over its time budget measured its first requests only; the sweep engine scales that prefix up to
every request (its cells.csv ``time_s``), which a cold pass's first requests, paying the disk, push 10-40x
high. Tune counts the prefix as measured and prices the rest with the fitted model instead.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np


def reestimate(measured, items, source, costs) -> list:
    """Each measured layout's weighted time with its prefixes completed by the fitted model: a pattern
    measured whole keeps its passes; one measured on a prefix (its time budget) is the prefix as
    measured (its cold first requests counted once) plus the model's time of the requests after it,
    at the prices fitted to every cell. Said in ``how``; the engine's own figure (the prefix scaled up) kept
    in ``engine_s``."""
    from ccp.matrix.cells import Cell

    out = []
    for m in measured:
        if m is None or not m.passes or not any(d is not None and not d.whole for d in m.passes):
            out.append(m)
            continue
        c = m.contender
        total = lo = hi = 0.0
        per, notes, ok = [], [], True
        for it, (t, status), d in zip(items, m.per_item, m.passes):
            if d is None or not d.passes:
                ok = False
                per.append((t, status))
                continue
            done = list(d.passes)
            if not d.whole:
                done, note = completed(d, Cell(c.chunks, c.filters, c.cache, it.access), source, costs)
                notes.append(note)
            med = float(np.median(done))
            per.append((med, status))
            total += it.weight * med
            lo += it.weight * min(done)
            hi += it.weight * max(done)
        if not ok:
            out.append(m)
            continue
        how = "; ".join(notes) + ", the rest priced by the fitted model"
        engine = m.engine_s if m.engine_s is not None else m.measured_s
        out.append(replace(m, measured_s=total, per_item=tuple(per), min_s=lo, max_s=hi, how=how, engine_s=engine))
    return out


def completed(d, cell, source, costs) -> tuple[list[float], str]:
    """``d``'s passes (:class:`ccp.tune.prove.ItemPasses`) each completed by the model's time of the requests
    after its prefix, and the words. Interleaved rounds (``d.each``): each pass from its own prefix, a round cut
    to 1 request does not make the 40 whole ones prefixes too; else every pass from ``d.measured``."""
    from ccp.tune.search import item_cost

    whole_s = item_cost(cell, source, costs).seconds
    rests: dict[int, float] = {}

    def rest(k: int) -> float:
        if k >= d.requests:
            return 0.0
        if k not in rests:
            rests[k] = max(whole_s - item_cost(cell, source, costs, first=k).seconds, 0.0)
        return rests[k]

    if d.each and len(d.each) == len(d.passes):
        cut = sum(k < d.requests for k in d.each)
        return ([t + rest(k) for t, k in zip(d.passes, d.each)],
                f"{cut} of {len(d.each)} passes cut to a prefix (the shortest {d.measured}/{d.requests} requests)")
    return [t + rest(d.measured) for t in d.passes], f"{d.measured}/{d.requests} requests measured"
