"""Prices fitted to the first measured round (pure: no I/O).

The probes price a request, a chunk, a byte, a cold file operation and a chunk written in isolation (a
loop of one operation, the fastest of a few passes); the sweep engine's cells pay them inside its own
loop, cold, on a machine that is rarely quiet, plus a dataset open and close per pattern. The model's
time is linear in its prices, so each measured cell is one equation::

    measured ~= s_request * T_request + s_chunk * T_chunk + s_byte * T_byte + s_cold * T_cold
                + s_write * T_write + open_s

where ``T_g`` is the model's time of that cell with only group ``g``'s probe prices (its counts
priced, the other groups at 0). A cell its time budget cut short is the equation of the prefix it
measured (``observe(..., first=k)``), never of the prefix scaled up. The factors are fitted by
non-negative least squares on relative errors (a 10 ms cell weighs as much as a 10 s one), each
equation weighted by the square root of its passes (the runoff's 7 interleaved passes, whose median
is the steadier, count more than a first round's 3: least squares on weighted rows is inverse-variance
weighting; relative to the median equation, so the prior's strength stays as it was), made robust
by reweighting towards the least absolute relative error (a few wild cells do not move the prices),
with a weak pull of each factor towards 1 (few cells, and a group no measured cell exercises keeps its
probe price), each factor kept within :data:`SCALE_LIMITS`.

Rounds measured minutes apart ran on another machine: tune's first round and its runoff, on the shared
machine, measured the same 22 layouts 0.31-2.71x apart (median 0.99), a whole runoff 1.65-2.71x slower
than the first round before it; fitted as one, the prices sat between the two loads and predicted
neither. So the final prices are fitted in two steps (``prior``): the first round's fit (every layout,
the lattice's extremes: the prices' proportions) is the prior the runoff's interleaved passes (the
finalists, side by side, 7 passes each: the machine as the choice was made) then update: the pull is
towards the first round's factors instead of 1, and a group the runoff's cells do not exercise keeps
the first round's factor.

The load also moves between the first round and the runoff, and no price fitted to one round's walls
predicts the other's then: on the README's series-maps workload at load 4-5 the pick's first-round passes
got a median 0.46 of a core (their CPU share: process CPU time / wall), its runoff's 0.85, and the first
round's prices put it at 2.11x its runoff time. Its CPU time moved far less: brought to the runoff's share
(:func:`load_note`: x first / runoff) the same prediction is 1.14x. Fitting each pass at its round's median
share instead was tried and dropped: the shares differ by layout as well as by load (a layout that waits
for the disk), and on five of six runs it predicted the pick no better. Nor is the share a correction: CPU
time moves with the load too (the README's command at load 6-7: 1.22x as measured, 1.41x brought to the
runoff's share). tune says both figures, and calls a miss the load's only when the same CPU time comes
within 1.25x (:func:`ccp.tune.answer.load_lines`); ``benchmarks/tune_before_runoff.py`` prints them for
finished runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ccp.tune.search import PRICE_GROUPS, Costs

PRIOR = 0.05                # weight of the pull of each scale towards 1, against one cell's relative error
DEFAULT_LIMITS = (0.05, 20.0)   # each factor on a probe's price, at most this far from it
# the device and the writes are probed once, apart from the sweep's cells (a cold page of another file, chunks
# written to a small one): their prices in a cell may differ more (readahead, the index growing, the load)
SCALE_LIMITS = {"cold": (0.02, 100.0), "cold_byte": (0.02, 100.0), "write": (0.05, 200.0)}
IRLS_ROUNDS = 8             # reweighting rounds of the robust fit
IRLS_FLOOR = 0.02           # relative errors below this weigh as this (no division by ~0)
MIN_CELLS = 3               # fewer measured cells: the probes' prices stand
MIN_UPDATE_CELLS = 2        # fewer cells to update a prior fit with: the prior stands


@dataclass(frozen=True)
class Observation:
    parts: tuple[float, ...]    # the model's seconds of one measured cell under each of PRICE_GROUPS' prices
    measured_s: float
    passes: int = 1             # timed passes the measured median is of: the equation weighs sqrt(passes)


@dataclass(frozen=True)
class Fit:
    costs: Costs
    scales: dict                # group -> factor on its probe prices; "open" -> seconds per pattern
    cells: int
    error_before: float         # median |log(predicted / measured)| over the cells, probe prices
    error_after: float          # the same, fitted prices

    def as_dict(self) -> dict:
        return {"scales": self.scales, "cells": self.cells,
                "median_ratio_before": math.exp(self.error_before), "median_ratio_after": math.exp(self.error_after)}


def round_share(shares: Sequence[float]) -> float | None:
    """The median CPU share (process CPU time / wall time) of a round's passes; None without any."""
    got = [s for s in shares if s > 0 and math.isfinite(s)]
    return float(np.median(got)) if got else None


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||a x - b|| with x >= 0, exactly, for a few columns: every set of free columns is solved
    by least squares and the best feasible solution kept (2**columns small solves)."""
    n = a.shape[1]
    best, best_r = np.zeros(n), float(np.sum(b * b))
    for k in range(1, n + 1):
        for free in itertools.combinations(range(n), k):
            sol, *_ = np.linalg.lstsq(a[:, free], b, rcond=None)
            if np.any(sol < 0):
                continue
            x = np.zeros(n)
            x[list(free)] = sol
            r = float(np.sum((a @ x - b) ** 2))
            if r < best_r:
                best, best_r = x, r
    return best


def _median_log_error(obs: Sequence[Observation], scales: Sequence[float]) -> float:
    errs = [abs(math.log(max(sum(s * p for s, p in zip(scales, o.parts)), 1e-12) / o.measured_s)) for o in obs]
    return float(np.median(errs)) if errs else 0.0


def fit_prices(costs: Costs, observations: Sequence[Observation], prior: dict | None = None) -> Fit | None:
    """The probe prices scaled to the measured cells; None when too few cells were measured. With
    ``prior`` (an earlier fit's scales, "open" in seconds), the cells update it: each factor is pulled
    towards the prior's instead of towards 1, and so is the open's seconds."""
    obs = [o for o in observations if o.measured_s > 0 and math.isfinite(o.measured_s) and sum(o.parts) > 0]
    if len(obs) < (MIN_UPDATE_CELLS if prior else MIN_CELLS):
        return None
    groups = list(PRICE_GROUPS)
    weight = np.sqrt(np.array([max(1, o.passes) for o in obs], float))
    weight /= float(np.median(weight))
    rows = [w * np.array(o.parts) / o.measured_s for o, w in zip(obs, weight)]
    target = [float(w) for w in weight]
    for j, g in enumerate(groups):
        toward = (prior or {}).get(g, 1.0 if g != "open" else 0.0)
        if g == "open" and not toward > 0:     # seconds, not a factor: no pull (0 unless the cells ask for it)
            continue
        pull = np.zeros(len(groups))
        pull[j] = PRIOR / toward if g == "open" else PRIOR      # the open's pull: relative to its seconds
        rows.append(pull)
        target.append(PRIOR if g == "open" else PRIOR * toward)
    # the open's column is the model's open under the probe prices (0): give it a unit of one second
    a = np.array(rows)
    open_j = groups.index("open")
    a[:len(obs), open_j] = [w / o.measured_s for o, w in zip(obs, weight)]
    b = np.array(target)
    x = nnls(a, b)
    # robust: reweighted towards least absolute relative error, so one wild cell (a budget's prefix
    # extrapolated from a slow first request, a pass the machine stalled) does not drag every price
    n_obs = len(obs)
    for _ in range(IRLS_ROUNDS):
        r = np.abs(a[:n_obs] @ x / weight - 1.0)
        w = np.ones(len(b))
        w[:n_obs] = 1.0 / np.sqrt(np.maximum(r, IRLS_FLOOR))
        x = nnls(a * w[:, None], b * w)
    scales = {g: (float(min(max(x[j], SCALE_LIMITS.get(g, DEFAULT_LIMITS)[0]), SCALE_LIMITS.get(g, DEFAULT_LIMITS)[1]))
                  if g != "open" else float(x[j])) for j, g in enumerate(groups)}
    # the open's seconds are capped by the fastest cell: never more than a whole measured pattern
    scales["open"] = min(scales["open"], min(o.measured_s for o in obs))
    fitted = costs.scaled({g: v for g, v in scales.items() if g != "open"}, scales["open"],
                          how=f"fitted to {len(obs)} measured cells" + (", updating the first round's fit" if prior else ""))
    after = [Observation((*o.parts[:open_j], 1.0, *o.parts[open_j + 1:]), o.measured_s) for o in obs]
    return Fit(fitted, scales, len(obs), _median_log_error(obs, [1.0] * len(groups)),
               _median_log_error(after, [scales[g] for g in groups]))


def observe(contender, item, source, costs: Costs, measured_s: float, first: int | None = None,
            passes: int = 1) -> Observation:
    """One measured cell (a contender's layout and cache, one pattern) as an equation of the fit; with
    ``first``, a cell that measured only its first ``first`` requests (a time budget's prefix): the
    equation is of that prefix, priced as a prefix, never scaled up."""
    from ccp.matrix.cells import Cell
    from ccp.tune.search import item_cost

    cell = Cell(contender.chunks, contender.filters, contender.cache, item.access)
    parts = tuple(item_cost(cell, source, costs.group(g), first=first).seconds for g in PRICE_GROUPS)
    return Observation(parts, measured_s, passes)


def passes_share(measured) -> float | None:
    """The median CPU share of every recorded pass of ``measured`` (a round's :class:`ccp.tune.prove.Measured`,
    None for a layout not measured); None when no pass kept its share."""
    return round_share([x for m in measured if m is not None for d in (m.passes or ()) if d is not None
                        for x in d.cpu_share])


def load_note(before_s: float | None, measured_s: float | None, first_share: float | None,
              runoff_share: float | None, completed: bool = False) -> dict:
    """The pick's prediction before the runoff beside its passes' CPU shares in the two rounds: the first
    round's prices predict the pick at the first round's load, and brought to the runoff's share (x first /
    runoff: the same CPU time, the runoff's wait for a core) at the runoff's. Empty when a figure is missing, or
    when the runoff's time was ``completed`` by the fitted model (its passes cut to prefixes: part prediction; at
    load 10 a pick's 1-request prefixes at a share of 0.23 made 1.36x read as 2.54x)."""
    if completed or not (before_s and measured_s and first_share and runoff_share):
        return {}
    return {"first_round_cpu_share": first_share, "runoff_cpu_share": runoff_share,
            "predicted_before_runoff_at_runoff_share_s": before_s * first_share / runoff_share}
