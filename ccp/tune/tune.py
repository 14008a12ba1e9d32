"""``ccp tune`` as a library call: search with the model, prove by measurement, say how to apply.

:func:`tune` returns a plain dict (what ``--json`` prints) and writes ``tune.json`` and
``tune.html`` into the output folder, beside one run folder per measured layout.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import SOURCE
from ccp.errors import ConfigError
from ccp.hdf5.defaults import DEFAULT_W0, MIN_NSLOTS
from ccp.hdf5.filters import FilterPipeline, check_for_type
from ccp.store.schema import FINISHED
from ccp.tune.answer import NO_REPACK_MARGIN, same_round, why_lost
from ccp.tune.apply import commands, netcdf_dims
from ccp.tune.complete import reestimate
from ccp.tune.fit import load_note, passes_share
from ccp.tune.heuristics import ONE_MIB, heuristics
from ccp.tune.lattice import (
    MAX_NSLOTS,
    cache_candidates,
    chunk_lattice,
    nchunks,
    next_prime,
    padding,
    structural_extremes,
    workload_blocks,
)
from ccp.tune.pace import CLOSE_S, Pace, RoundPlan, cell_cap, finalists, rounds_seconds, runoff_reserve
from ccp.tune.prove import Contender, measure_all, per_cell_budget, whole_pass_budgets
from ccp.tune.runoff import RUNOFF_CELL_S, confirmation_seconds, run_off
from ccp.tune.search import PRICE_GROUPS, Candidate, evaluate, search
from ccp.tune.settle import (
    CACHE_RULE,
    TIE_RULE,
    check_cache,
    check_slots,
    fewest_io,
    pooled,
    predicted_io,
    runoff_verdict,
    tie_basis,
    tied,  # noqa: F401  (tests and callers take the tie rule from here)
    weighted_passes,
)
from ccp.tune.workload import check_against, load_workload
from ccp.units import format_seconds, shape_str

SCHEMA_VERSION = 1
TOP = 3
RUNOFF_SHARE = 1 / 3       # of --budget, for the runoff
FIRST_SHARE = 0.5          # of --budget, for the first round (the shortlist, the current layout, the heuristics)
REFIT_SHARE = 1 - FIRST_SHARE - RUNOFF_SHARE   # for the layouts the fitted prices add to the shortlist
SEARCH_LIMIT_S = 30.0      # the model search's time (the refit search: half): tune answers within minutes
SEARCH_SHARE = 0.25        # of --within, at most, for the search (a 30 s search left nothing of --within 30s)


def hdf5_default_cache() -> ChunkCache:
    from ccp.hdf5.defaults import library_cache

    lib = library_cache()
    return ChunkCache(lib.nbytes, lib.nslots, lib.w0)


def shortlisted(res, top: int, label: str) -> list[Contender]:
    """The model's first pick and the next fastest layouts, ``top`` in all, as contenders."""
    shortlist = [res.recommended] + [c for c in res.best if c.layout != res.recommended.layout][:max(0, top - 1)]
    return [Contender(label if i == 0 else f"{label} #{i + 1}", c.chunks, c.filters, c.cache, c.workload_s, "candidate",
                      item_seconds(c))
            for i, c in enumerate(shortlist)]


def item_seconds(cand: Candidate) -> tuple[float, ...]:
    return tuple(ic.seconds for ic in cand.items)


def repriced(c: Contender, source, items, costs) -> Contender:
    """A contender with its predictions at ``costs`` (the fitted prices): the workload's and each pattern's."""
    cand = evaluate(c.chunks, c.filters, c.cache, source, items, costs)
    return replace(c, predicted_s=cand.workload_s, item_s=item_seconds(cand))


def fair_cache(chunks, itemsize: int, budget_bytes: int) -> ChunkCache:
    """The cache a rule of thumb is measured with: the tuner's whole budget, nslots as HDF5 advises
    (a prime about 100 times the chunks that fit)."""
    chunk_bytes = math.prod(chunks) * itemsize if chunks else 0
    fits = budget_bytes // chunk_bytes if chunk_bytes else 0
    nslots = max(MIN_NSLOTS, next_prime(min(100 * fits, MAX_NSLOTS))) if fits else MIN_NSLOTS
    return ChunkCache(budget_bytes, nslots, DEFAULT_W0)


def lattice_extremes(source, itemsize: int, k, items, filters) -> list:
    """The structural extremes (:func:`structural_extremes`) within the storage constraint, and
    contiguous storage (None) when the data may be stored unfiltered and no dimension can grow: the
    league's oracle on a NISAR burst and an ML loader, which no chunk shape matched."""
    blocks = [tuple(it.access.block) for it in sorted(items, key=lambda it: -it.weight)]
    out: list = [c for c in structural_extremes(source.shape, itemsize, k.max_chunk_bytes, blocks)
                 if padding(source.shape, c) <= k.max_storage_overhead]
    fixed = source.maxshape is None or tuple(source.maxshape) == tuple(source.shape)
    if fixed and any(f.is_none for f in filters):
        out.append(None)
    return out


def extremes(source, items, shapes, res, contenders, costs, k) -> list[Contender]:
    """The structural extremes as first-round contenders (kind ``extreme``), in the model pick's filter,
    each with the largest cache of the budget; a layout some contender has already is not added. The
    model's shortlist is its fastest few, often alike (chunks of 15-75 samples for random samples);
    measured, the extremes put the ends of the lattice into the prices fitted to this round."""
    filt = res.recommended.filters
    have = {(c.chunks, c.filters.spec) for c in contenders}
    out = []
    for ch in shapes:
        if ch is None:              # contiguous: unfiltered, and no chunk cache to give it
            none = FilterPipeline()
            if (None, none.spec) not in have:
                cand = evaluate(None, none, ChunkCache(0, MIN_NSLOTS, DEFAULT_W0), source, items, costs)
                out.append(Contender("contiguous", None, none, cand.cache, cand.workload_s, "extreme", item_seconds(cand)))
                have.add((None, none.spec))
            continue
        if (ch, filt.spec) in have:
            continue
        chunk_bytes = math.prod(ch) * np.dtype(source.dtype).itemsize
        top = cache_candidates(chunk_bytes, k.max_cache_bytes, k.cache_nbytes, grid_chunks=nchunks(source.shape, ch))[-1]
        cand = evaluate(ch, filt, ChunkCache(*top), source, items, costs)
        label = "whole dataset" if tuple(ch) == tuple(source.shape) else f"block {shape_str(ch)}"
        out.append(Contender(label, ch, filt, cand.cache, cand.workload_s, "extreme", item_seconds(cand)))
        have.add((ch, filt.spec))
    return out


def fit_from_round(contenders, measured, items, source, costs, cells: list | None = None, prior: dict | None = None,
                   round_name: str = "first"):
    """The probe prices fitted to the measured cells (None: too few cells). A cell measured whole is
    one equation of its whole pattern; a cell over its time budget is one equation of the prefix it
    measured (its first requests, as the model prices them), never the prefix scaled up: a cold pass's
    first requests pay the disk, and scaled to the whole they lean 10-40x high. ``cells``, when given,
    receives each equation (its layout, pattern, prefix, measured seconds and the model's seconds
    under each price group's probe prices): tune.json keeps them, so a fit can be checked afterwards.
    With ``prior`` (an earlier fit's scales) the cells update it (:func:`ccp.tune.fit.fit_prices`); each
    cell kept says its round (``round_name``)."""
    from ccp.tune.fit import fit_prices, observe

    obs = []
    for c, m in zip(contenders, measured):
        if m is None:
            continue
        details = m.passes or (None,) * len(items)
        for i, (it, (t, status), d) in enumerate(zip(items, m.per_item, details)):
            if status not in FINISHED:
                continue
            first = None
            if d is not None and d.passes:
                ps, first, shares = list(d.passes), (None if d.whole else d.measured), list(d.cpu_share)
                if first is not None and d.each and len(d.each) == len(d.passes):
                    # interleaved rounds, some passes cut: the whole ones are the equation (the median of
                    # every pass is not the time of the shortest prefix); their CPU shares kept beside them
                    keep = [k >= d.requests for k in d.each]
                    if any(keep):
                        ps, first = [t for t, ok in zip(d.passes, keep) if ok], None
                        shares = [x for x, ok in zip(shares, keep) if ok] if len(shares) == len(keep) else []
                obs.append(observe(c, it, source, costs, float(np.median(ps)), first, len(ps)))
            elif status == "ok" and is_finite(t) and t > 0:
                obs.append(observe(c, it, source, costs, t))
            else:
                continue
            if cells is not None:
                cells.append({"label": c.label, "kind": c.kind, "pattern": i, "first": first, "round": round_name,
                              "passes": ps if d is not None and d.passes else None,
                              "cpu_share": shares if d is not None and d.passes and shares else None,
                              "measured_s": obs[-1].measured_s, "parts": list(obs[-1].parts)})
    return fit_prices(costs, obs, prior)


def _cand_dict(c: Candidate) -> dict:
    return {"chunks": list(c.chunks) if c.chunks else None, "filters": c.filters.spec, "cache_nbytes": c.cache.nbytes,
            "cache_nslots": c.cache.nslots, "cache_w0": c.cache.w0, "predicted_read_s": c.read_s,
            "predicted_write_s": c.write_s, "predicted_workload_s": c.workload_s, "storage_bytes": c.storage_bytes,
            "storage_overhead": round(c.overhead, 4)}


def check_out(out: Path | None) -> None:
    """``--out`` is a new or empty folder: tune never writes into a run folder or an earlier tune's
    (its files would mix with theirs and look like their results)."""
    if out is None:
        return
    if str(out).strip() == "" or str(out) == ".":
        raise ConfigError("--out", f"expected a new folder for tune's results, got {str(out)!r}")
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        kind = ("a run folder" if (out / "sweep.yaml").exists() or (out / "cells.csv").exists()
                else "an earlier tune's folder" if (out / "tune.json").exists() else "a folder that is not empty")
        raise ConfigError("--out", f"{out} is {kind}: give a new or empty folder (tune writes nothing into it)")


def tune(workload_path, *, budget: float = 60.0, out: Path | None = None, work_dir: Path = Path("results/work"),
         top: int = TOP, measure: bool = True, repeats: int = 3, echo=print, within: float | None = 120.0) -> dict:
    from ccp.hdf5.dataset import describe_source
    from ccp.tune.costs import measure_costs

    pace = Pace(within, echo=echo)       # the answer's deadline: the phases after the first round are fitted to it
    check_out(Path(out) if out is not None else None)
    wl = load_workload(workload_path)
    source = describe_source(wl.dataset)
    check_against(wl, source)
    k = wl.constraints
    filters = []
    for i, f in enumerate(k.filters):
        f = source.filters if f == SOURCE else f
        check_for_type(f, source.dtype, source.numeric, f"constraints.filters[{i}]")
        if f not in filters:
            filters.append(f)
    itemsize = np.dtype(source.dtype).itemsize
    out = Path(out) if out else Path("results") / wl.name / f"tune-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    echo(f"ccp tune {wl.name}: dataset {list(source.shape)} {source.dtype.str}, {len(wl.items)} pattern(s), "
         f"filters {', '.join(f.spec for f in filters)}")
    t0 = time.perf_counter()
    costs = measure_costs(source, wl.dataset, filters, work_dir)
    probe_costs = costs
    t_cal = time.perf_counter() - t0
    blocks_by_weight = [tuple(it.access.block) for it in sorted(wl.items, key=lambda it: -it.weight)]
    target = min(ONE_MIB, k.max_chunk_bytes)
    heur = {name: tuple(min(c, n) for c, n in zip(ch, source.shape))
            for name, ch in heuristics(source.shape, itemsize, source.maxshape, blocks_by_weight, target).items()}
    current = (source.chunks, source.filters) if source.chunks is not None else None
    lattice = chunk_lattice(source.shape, itemsize, k.max_chunk_bytes, workload_blocks(wl.items),
                            extra=[*heur.values(), *([current[0]] if current else [])])
    t1 = time.perf_counter()
    res = search(source, wl.items, lattice, filters, costs, fixed_cache=k.cache_nbytes, max_cache_bytes=k.max_cache_bytes,
                 max_storage_overhead=k.max_storage_overhead, current=current,
                 keep_best=top + 2, time_limit=search_limit(within))
    t_search = time.perf_counter() - t1
    out.mkdir(parents=True, exist_ok=True)     # after the search, which refuses workloads no layout fits: no empty folder
    echo(f"  searched {res.evaluated} candidates ({res.layouts} layouts, {res.pruned} pruned as dominated, "
         f"{res.rejected} shapes over max_storage_overhead"
         + (f", {res.unvisited} least promising left at the time limit" if res.unvisited else "")
         + f") in {format_seconds(t_search)} "
         f"(+{format_seconds(t_cal)} calibration); front: {len(res.front)} layouts")

    base_cache = k.current_cache or (ChunkCache(k.cache_nbytes, MIN_NSLOTS, DEFAULT_W0) if k.cache_nbytes is not None else hdf5_default_cache())
    budget_bytes = k.cache_nbytes if k.cache_nbytes is not None else k.max_cache_bytes
    contenders = shortlisted(res, top, "tuned")
    if current is not None or wl.dataset.file is not None:
        cc = evaluate(source.chunks, source.filters, base_cache, source, wl.items, costs)
        contenders.append(Contender("current", source.chunks, source.filters, base_cache, cc.workload_s, "current",
                                    item_seconds(cc)))
    for name, ch in heur.items():
        # the rules of thumb get the cache budget the tuned layouts may use (slots as HDF5 advises):
        # a fair race is of layouts, not of a tuned cache against HDF5's default one
        f0 = filters[0]
        hcache = fair_cache(ch, itemsize, budget_bytes)
        hc = evaluate(ch, f0, hcache, source, wl.items, costs)
        contenders.append(Contender(name, ch, f0, hcache, hc.workload_s, "heuristic", item_seconds(hc)))
    # the extremes of fewest chunks first: their work files are made soonest, and a short --within cuts the last
    contenders += sorted(extremes(source, wl.items, lattice_extremes(source, itemsize, k, wl.items, filters), res, contenders,
                                  costs, k), key=lambda c: nchunks(source.shape, c.chunks) if c.chunks else 1)

    measured: list | None = None
    runoff = fit = cell_budget = None
    before_runoff: dict = {}
    selected_on: dict = {}
    fit_cells: list = []           # the final fit's equations, for tune.json
    if measure:
        echo(f"  measuring {len({c.key for c in contenders})} layouts with the sweep engine (budget {format_seconds(budget)})")
        # one cell budget for both rounds: their cells are compared with each other (and fitted together)
        n_cells = len({c.key for c in contenders}) * len(wl.items)
        cell_budget = per_cell_budget(budget * FIRST_SHARE, n_cells, repeats)
        t_round = time.perf_counter()
        measured = measure_all(wl, source, contenders, out, work_dir, budget * FIRST_SHARE, repeats, echo,
                               cell_budget=cell_budget, budgets=whole_pass_budgets(
                                   contenders, wl.items, source, costs, repeats, cell_budget, RUNOFF_CELL_S),
                               plan=RoundPlan.first_round(pace))
        # a first-round layout's wall time (its work file, its run, its passes): the refit's estimate per layout
        per_layout_s = (time.perf_counter() - t_round) / max(1, len({c.key for c, m in zip(contenders, measured) if m}))
        fit = fit_from_round(contenders, measured, wl.items, source, probe_costs)
        if fit is not None:
            echo(f"  prices fitted to {fit.cells} measured cells: predicted/measured {math.exp(fit.error_before):.2f}x "
                 f"-> {math.exp(fit.error_after):.2f}x (median)")
            costs = fit.costs
            measured = reestimate(measured, wl.items, source, costs)
            contenders = [repriced(c, source, wl.items, costs) for c in contenders]
            new = []
            if pace.fits("the refit (a search at the fitted prices, its new layouts measured)",
                         SEARCH_LIMIT_S / 2 + top * per_layout_s, runoff_reserve(contenders, measured, 2 * repeats + 1)):
                echo("  searching again with the fitted prices")
                t2 = time.perf_counter()
                res = search(source, wl.items, lattice, filters, costs, fixed_cache=k.cache_nbytes,
                             max_cache_bytes=k.max_cache_bytes, max_storage_overhead=k.max_storage_overhead,
                             current=current, keep_best=top + 2, time_limit=SEARCH_LIMIT_S / 2)
                t_search += time.perf_counter() - t2
                seen = {c.key for c in contenders}
                new = [c for c in shortlisted(res, top, "refit") if c.key not in seen]
            if new:
                echo(f"  the fitted prices shortlist {len(new)} more layout(s)")
                more = reestimate(measure_all(wl, source, new, out / "refit", work_dir, budget * REFIT_SHARE, repeats,
                                              echo, cell_budget=cell_budget, budgets=whole_pass_budgets(
                                                  new, wl.items, source, costs, repeats, cell_budget, RUNOFF_CELL_S),
                                              plan=RoundPlan.until(pace, "the refit", runoff_reserve(
                                                  contenders, measured, 2 * repeats + 1))),
                                  wl.items, source, costs)
                contenders, measured = [*contenders, *new], [*measured, *more]
        # a pick alone within RUNOFF_WITHIN is confirmed beside the next fastest when that fits before the deadline
        confirm = len(finalists(contenders, measured)) >= 2 or pace.fits(
            "the confirmation round (the fastest and the next fastest, interleaved)",
            confirmation_seconds(contenders, measured, repeats))
        selected_on = {c.key: m.measured_s for c, m in zip(contenders, measured) if m is not None}
        runoff = run_off(wl, source, contenders, measured, out, work_dir, budget * RUNOFF_SHARE, repeats, echo, confirm,
                         pace)
        # each layout's prediction before the runoff's passes are fitted: the runoff then tests it
        before_runoff = {c.key: c.predicted_s for c in contenders}
        # the final prices in two steps: every layout as its first round (or the refit) measured it, then that fit
        # updated by the runoff's interleaved passes (the machine as the choice was made, minutes later: a whole
        # runoff measured 1.65-2.71x slower than the round before it; fitted as one, the prices sat between)
        final = fit_from_round(contenders, measured, wl.items, source, probe_costs, fit_cells)
        if runoff and final is not None:
            finals = list({c.key: c for c in contenders if c.key in runoff}.values())
            runoff_cells: list = []
            update = fit_from_round(finals, [runoff[c.key] for c in finals], wl.items, source, probe_costs, runoff_cells,
                                    prior=final.scales, round_name="runoff")
            if update is not None:
                final = update
                fit_cells += runoff_cells
        if final is not None:
            echo(f"  final prices {final.costs.fitted}: predicted/measured {math.exp(final.error_after):.2f}x (median)")
            fit, costs = final, final.costs
            contenders = [repriced(c, source, wl.items, costs) for c in contenders]
        measured = reestimate(measured, wl.items, source, costs)
        runoff = {k: m for k, m in zip(runoff, reestimate(list(runoff.values()), wl.items, source, costs))} if runoff else runoff
    rows = []
    for i, c in enumerate(contenders):
        m = measured[i] if measured else None
        again = runoff.get(c.key) if runoff else None
        final = again or m
        io = predicted_io(c, wl.items, source, costs)
        rows.append({"label": c.label, "kind": c.kind, "chunks": list(c.chunks) if c.chunks else None, "filters": c.filters.spec,
                     "cache_nbytes": c.cache.nbytes, "cache_nslots": c.cache.nslots, "cache_w0": c.cache.w0,
                     "predicted_s": c.predicted_s, "measured_s": final.measured_s if final else None,
                     "predicted_before_runoff_s": before_runoff.get(c.key) if before_runoff else None,
                     "measured_min_s": final.min_s if final else None, "measured_max_s": final.max_s if final else None,
                     "extrapolated": bool(final and final.extrapolated),
                     "first_measured_s": m.measured_s if m else None, "runoff": again is not None,
                     "first_extrapolated": bool(m and m.extrapolated),
                     # the first-round time the runoff's layouts were chosen on (before the final prices)
                     "first_at_selection_s": selected_on.get(c.key) if selected_on else None,
                     "statuses": [s for _, s in final.per_item] if final else None,
                     "extrapolated_how": (final.how or "scaled by the sweep engine") if final and final.extrapolated else None,
                     # the run folder's figure for it (the engine's: each prefix scaled up), where tune completed one
                     "engine_measured_s": final.engine_s if final and final.extrapolated else None,
                     "first_engine_measured_s": m.engine_s if m and m.extrapolated else None,
                     "first_extrapolated_how": (m.how or "scaled by the sweep engine") if m and m.extrapolated else None,
                     "first_run_dir": str(m.run_dir) if m else None,
                     "passes": weighted_passes(final, wl.items) if final else None,
                     "paired": again is not None,          # the runoff's passes: round i of each measured side by side
                     "keeps_layout": current is not None and (c.chunks, c.filters.spec) == (current[0], current[1].spec),
                     "predicted_io_trips": io[0], "predicted_io_ops": io[1], "predicted_io_bytes": io[2],
                     "run_dir": str(final.run_dir) if final else None})
    pick, why = choose(rows)
    pick_c = contenders[rows.index(pick)]
    # the pick's passes' CPU share in each round: a prediction from the first round's prices, against the runoff
    shares = (passes_share([measured[rows.index(pick)]]) if measured else None,
              passes_share([runoff.get(pick_c.key)]) if runoff else None)
    slots_note = cache_note = None
    checks: list = []
    if measure and pick["measured_s"] is not None:
        # the checks compare whole passes in interleaved rounds, as the runoff does (a cell's share alone cut them to prefixes)
        check_s = whole_pass_budgets([pick_c], wl.items, source, costs, 2 * repeats + 1, cell_budget,
                                     RUNOFF_CELL_S).get(pick_c.key, cell_budget)
        # each check: 2 x repeats + 1 rounds of two passes of the pick, when that fits before the deadline
        pick_m = (runoff or {}).get(pick_c.key) or (measured[rows.index(pick)] if measured else None)
        check_need = rounds_seconds([pick_m, pick_m], 2 * repeats + 1)
        # and each cell capped so that its rounds end in time even when every pass runs to its budget
        check_passes = 2 * len(wl.items)
        if pace.fits("the cache check", check_need):
            cap = min(check_s if check_s is not None else math.inf, cell_cap(pace.left() - CLOSE_S, check_passes, 2 * repeats + 1))
            pick_c, cache_note, again = check_cache(wl, source, pick_c, costs, k, out, work_dir, repeats, cap, echo)
            checks += again
        if pace.fits("the slot check", check_need):
            cap = min(check_s if check_s is not None else math.inf, cell_cap(pace.left() - CLOSE_S, check_passes, 2 * repeats + 1))
            pick_c, slots_note, again = check_slots(wl, source, pick_c, out, work_dir, repeats, cap, echo,
                                                        costs=costs)
            checks += again
    # the recommendation as recommended (its cache may have changed): every whole pass of it, the runoff's
    # and the checks' (measured after the choice, so not selected for being fast), pooled
    pool = pooled(pick_c.key, [*(measured or []), *(runoff.values() if runoff else []), *checks], wl.items)
    for r in rows:     # within one round: the runoff's, else the first round's
        ratio, r["speedup_round"] = same_round(r, pick)
        r["speedup_of_pick"] = ratio
        r["lost_why"] = None
        if r is not pick and ratio is not None and ratio < 1:
            r["lost_why"] = why_lost(r, pick, rows)
    verified = {"recommended": pick["measured_s"],
                "model_pick": min((r for r in rows if r["kind"] == "candidate"), key=_predicted)["measured_s"],
                "current": next((r["measured_s"] for r in rows if r["kind"] == "current"), None),
                "heuristics": {r["label"]: r["measured_s"] for r in rows if r["kind"] == "heuristic"}}
    result = {
        "schema_version": SCHEMA_VERSION,
        "workload": str(workload_path), "dataset": {"shape": list(source.shape), "dtype": source.dtype.str,
                                                    "path": wl.dataset.path, "current_chunks": list(source.chunks) if source.chunks else None,
                                                    "current_filters": source.filters.spec},
        "recommended": {"chunks": list(pick_c.chunks) if pick_c.chunks else None, "filters": pick_c.filters.spec,
                        "cache_nbytes": pick_c.cache.nbytes, "cache_nslots": pick_c.cache.nslots, "cache_w0": pick_c.cache.w0,
                        "predicted_s": pick_c.predicted_s, "label": pick["label"],
                        "measured_s": pool[0] if pool else pick["measured_s"], "measured_passes": pool[1] if pool else None,
                        # the pick as the final prices were fitted to it: its prediction and the median of its passes
                        # in the rounds that fit used (the runoff's, else the first round's), the same load for both
                        "measured_in_choice_s": pick["measured_s"], "predicted_in_choice_s": pick["predicted_s"],
                        "measured_in_choice_round": "runoff" if pick.get("runoff") else "first round",
                        "measured_in_choice_passes": len(pick["passes"]) if pick.get("passes") else None,
                        "measured_in_choice_extrapolated": bool(pick.get("extrapolated")),
                        "checked_cache": pick_c.key != contenders[rows.index(pick)].key,
                        "predicted_before_runoff_s": pick.get("predicted_before_runoff_s"),
                        **load_note(pick.get("predicted_before_runoff_s") if pick.get("runoff") else None,
                                    pick["measured_s"], *shares, completed=bool(pick.get("extrapolated"))),
                        "repack_needed": not (current is not None and (pick_c.chunks, pick_c.filters.spec) == (current[0], current[1].spec)),
                        "kind": pick["kind"], "why": why},
        "no_repack_alternative": no_repack_alternative(rows, pick, current),
        "slots": slots_note,
        "tie_rule": TIE_RULE,
        "cache_rule": CACHE_RULE,
        "trimmed": pace.trimmed,
        "within_s": within,
        "wall_s": time.perf_counter() - pace.start,
        "cache": cache_note,
        "model_pick": _cand_dict(res.recommended),
        "prices": {"fitted": fit.as_dict() if fit else None, "how": costs.fitted or "the probes' prices",
                   "groups": list(PRICE_GROUPS), "cells": fit_cells},
        "candidates": res.evaluated,
        "search": {"layouts": res.layouts, "pruned": res.pruned, "unvisited": res.unvisited, "rejected": res.rejected, "lattice": len(lattice),
                   "search_s": t_search, "calibration_s": t_cal, "filter_ratios": costs.ratio},
        "front": [_cand_dict(c) for c in res.front],
        "verified": verified,
        "contenders": rows,
        "commands": commands(wl.dataset.path, pick_c.chunks, pick_c.filters, pick_c.cache,
                             str(wl.dataset.file) if wl.dataset.file else "IN.h5", maxshape=source.maxshape,
                             nc_dims=netcdf_dims(str(wl.dataset.file) if wl.dataset.file else None, wl.dataset.path))
        if pick_c.chunks or pick_c.filters.is_none else {},
        "out": str(out),
    }
    from ccp.tune.page import write_page

    text = json.dumps(result, indent=2, default=str)
    try:       # the page first, tune.json (the result) last and whole: a full disk leaves neither
        result["page"] = str(write_page(out, result))
        tmp = out / ".tune.json.tmp"
        tmp.write_text(text)
        tmp.replace(out / "tune.json")
    except OSError as exc:
        for name in ("tune.html", ".tune.json.tmp"):
            (out / name).unlink(missing_ok=True)
        raise ConfigError("--out", f"cannot write tune's results into {out} ({exc.strerror or exc}): nothing was "
                                   "recommended there; the measured runs, if any, are under its runs/") from None
    return result


def search_limit(within: float | None) -> float:
    """The search's time: :data:`SEARCH_LIMIT_S`, at most :data:`SEARCH_SHARE` of --within (the default 2 min:
    the same 30 s)."""
    return SEARCH_LIMIT_S if within is None else min(SEARCH_LIMIT_S, SEARCH_SHARE * within)


def _predicted(row: dict) -> float:
    return float(row["predicted_s"])


def choose(rows: list[dict]) -> tuple[dict, str]:
    """The recommendation: the fastest measured layout among every contender (the model's
    shortlist, the current layout with its cache, the heuristics), so no measured heuristic is
    faster beyond the noise; after a runoff, the fastest of its finalists (each layout left out of
    it measured more than :data:`RUNOFF_WITHIN` slower than the fastest in the same round); the
    model's first choice when nothing was measured. Layouts of the
    runoff tied with the fastest (:func:`runoff_verdict`: not apart by a test that could have found them apart)
    go to one that keeps the stored layout
    (only a new cache: the cheapest change, as the report ranks), else are decided by the model's
    predicted I/O counts (:func:`fewest_io`): deterministic, rather than which pass a busy machine
    slowed. Layouts the runoff could not judge against the fastest (undecided: too few rounds, or no whole
    pass) are never called tied: the faster measured is chosen unless the model's counts show it more I/O.
    Also why, in words."""
    cands = [r for r in rows if r["kind"] == "candidate"]
    model_first = min(cands, key=lambda r: r["predicted_s"]) if cands else rows[0]
    timed = [r for r in rows if r["measured_s"] is not None]
    if not timed:
        return model_first, "the model's pick (not measured)"
    # after a runoff the pick is one of its finalists: the rest lost the first round to them by more than
    # RUNOFF_WITHIN, and their first-round times, minutes apart under another load, do not compare with the
    # runoff's (a busy machine measured a whole runoff 1.7x slower than the round before it)
    finalists = [r for r in timed if r.get("runoff")]
    # the first of equal times: the model's order, then the current layout, then the heuristics
    fastest = min(finalists or timed, key=lambda r: r["measured_s"])
    verdicts = {id(r): runoff_verdict(fastest, r) for r in timed
                if r is not fastest and r.get("runoff") and fastest.get("runoff")}
    ties = [r for r in timed if verdicts.get(id(r)) == "tied"]
    undecided = [r for r in timed if verdicts.get(id(r)) == "undecided"]
    if undecided:
        # the runoff could not tell them apart: what was measured decides, unless the model's counts show the
        # faster measured more I/O; never called a tie, never settled by the fitted model's time
        group = [fastest, *ties, *undecided]
        pick, decided = fewest_io(group, last="measured")
        said = "; ".join(f"{r['label']}: {tie_basis(fastest, r)}" for r in undecided)
        tied_too = ("; tied with " + "; ".join(f"{r['label']} ({tie_basis(fastest, r)})" for r in ties)) if ties else ""
        return pick, (f"undecided in the runoff between {fastest['label']} (measured fastest) and "
                      f"{', '.join(r['label'] for r in undecided)}: the runoff could not tell them apart ({said}){tied_too}; "
                      f"{decided}")
    if ties:
        group = [fastest, *ties]
        keep = [r for r in group if r.get("keeps_layout")]
        if keep and len(keep) < len(group):
            # the cheapest change first (ccp.report.cheapest.cheapest, as report, advise and diagnose rank): a reader
            # setting on the stored file before a new file, when the runoff cannot tell them apart
            pick, decided = fewest_io(keep) if len(keep) > 1 else (keep[0], "")
            decided = ("it keeps the stored layout (only a chunk cache: no repack), the cheapest change "
                       "(a reader setting before a new file)" + (f"; among those, {decided}" if decided else ""))
        else:
            pick, decided = fewest_io(group)
        basis = "; ".join(f"{r['label']}: {tie_basis(fastest, r)}" for r in ties)
        others = ", ".join(r["label"] for r in group if r is not pick)
        return pick, f"tied in the runoff with {others} ({basis}); {decided}"
    if model_first["measured_s"] is None:
        why = "failed to measure" if model_first.get("statuses", ()) is not None else "was not measured (the deadline: trimmed)"
        if len(timed) == 1:
            return fastest, (f"{fastest['label']}, the only layout measured (nothing to compare it with); "
                             f"the model's pick {why}")
        return fastest, f"measured fastest ({fastest['label']}); the model's pick {why}"
    if len(timed) == 1:
        return fastest, "the model's pick (the only layout measured: nothing to compare it with)"
    if fastest is model_first:
        return fastest, "the model's pick, measured fastest"
    if finalists and not model_first.get("runoff"):
        # its first-round time does not compare with the runoff's (another load, minutes apart): say where it lost
        return fastest, (f"measured fastest ({fastest['label']}) in the runoff; the model's pick ({model_first['label']}) "
                         "was left out of it (over 30% slower than the fastest in the first round)")
    lost = model_first["measured_s"] / fastest["measured_s"] - 1
    # under half a percent prints as "0% slower": the times themselves say what was measured
    by = (f"{lost:.0%} slower" if lost >= 0.005 else
          f"as fast ({format_seconds(model_first['measured_s'])} against {format_seconds(fastest['measured_s'])}: "
          "first-round medians within 0.5%; the faster median decided)")
    return fastest, f"measured fastest ({fastest['label']}); the model's pick ({model_first['label']}) measured {by}"


def no_repack_alternative(rows: list[dict], pick: dict, current_layout) -> dict | None:
    """A contender that keeps the stored layout (only a new cache) measured within
    :data:`NO_REPACK_MARGIN` of a pick that needs a repack: worth saying, a cache costs nothing to apply."""
    if current_layout is None or pick["measured_s"] is None:
        return None
    chunks, spec = list(current_layout[0]), current_layout[1].spec
    if (pick["chunks"], pick["filters"]) == (chunks, spec):
        return None
    same = [r for r in rows if (r["chunks"], r["filters"]) == (chunks, spec) and r["measured_s"] is not None
            and r["measured_s"] <= pick["measured_s"] * (1 + NO_REPACK_MARGIN)]
    return min(same, key=lambda r: r["measured_s"]) if same else None


def is_finite(x) -> bool:
    return x is not None and not math.isnan(x)
