"""Measure the tuner's candidates, the current layout and the heuristics with the sweep engine.

Each contender becomes a one-layout sweep file (its chunks, filters and cache; every access of the
workload) run by :func:`ccp.run.run_sweep` into its own run folder under the tune folder, so
the proof is the same measurement ``ccp run`` makes (cold passes, repeats, time budgets, work
files reused), and each run folder can be opened with ``ccp report``.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from ccp.chunkcache import ChunkCache
from ccp.hdf5.filters import FilterPipeline
from ccp.store.schema import FINISHED
from ccp.units import shape_str

MIN_CELL_BUDGET = 2.0


@dataclass(frozen=True)
class Contender:
    label: str
    chunks: tuple[int, ...] | None      # None: contiguous
    filters: FilterPipeline
    cache: ChunkCache
    predicted_s: float                  # weighted, the whole workload
    kind: str                           # candidate | current | heuristic
    item_s: tuple[float, ...] = ()      # the model's seconds of each pattern, at the prices of predicted_s

    @property
    def key(self) -> tuple:
        return (self.chunks, self.filters.spec, self.cache)


@dataclass(frozen=True)
class ItemPasses:
    """One measured cell's passes, as requests.parquet holds them."""

    requests: int                       # the pattern's requests
    measured: int                       # requests each timed pass measured (fewer: the cell's time budget)
    passes: tuple[float, ...]           # each timed pass: open + its measured requests + close, seconds
    cpu_share: tuple[float, ...] = ()   # each pass's process CPU time / its wall time (the engine's pass_cpu_s and
    #                                     pass_wall_s: the whole pass); () where the run did not record them. Not
    #                                     timed_cpu_s (schema 5): a share is two clocks over one window, and no wall
    #                                     time of its window (open start to close end, the gaps between requests
    #                                     included) is recorded; the timed phases' sum leaves those gaps out
    each: tuple[int, ...] = ()          # interleaved rounds: the requests each pass measured (``measured`` is the
    #                                     fewest), so that one round's cut pass is completed alone, not every round's

    @property
    def whole(self) -> bool:
        return self.measured >= self.requests


@dataclass(frozen=True)
class Measured:
    contender: Contender
    measured_s: float | None            # weighted over the workload; None when a cell failed
    per_item: tuple                     # (time_s, status) per workload item
    run_dir: Path
    min_s: float | None = None          # weighted over the workload, each pattern's fastest pass
    max_s: float | None = None          # weighted, each pattern's slowest pass
    passes: tuple = ()                  # ItemPasses per workload item (None where unknown)
    how: str = ""                       # how an extrapolated time was made (the engine's scaling, or tune's)
    round_s: tuple = ()                 # interleaved rounds: per workload item, each round's cell time (a prefix scaled)
    engine_s: float | None = None       # extrapolated: the sweep engine's weighted time before tune completed its
    #                                     prefixes (each a prefix scaled up: cells.csv's, or rounds.csv's time_s)

    @property
    def extrapolated(self) -> bool:
        """Some pattern measured a prefix only (its cell's time budget) and was scaled to the whole."""
        return any(st == "extrapolated" for _, st in self.per_item)


def access_dict(a) -> dict:
    if a.trace is not None:       # a replay: the traced selections, not tiles of its largest request
        d = {"op": a.op, "trace": a.trace, "dataset": a.trace_dataset}
        return d if a.pid is None else {**d, "pid": a.pid}
    d = {"op": a.op, "block": list(a.block)}
    if a.order is not None:
        d["order"] = list(a.order)
    if a.random:
        d["random"], d["seed"] = a.random, a.seed
    return d


def sweep_doc(workload, c: Contender, source, repeats: int, cell_budget: float | None, cold: bool = True) -> dict:
    dataset = dict(workload.raw_dataset)
    if workload.dataset.file is not None:
        dataset["file"] = str(workload.dataset.file)
    from_file_current = c.kind == "current"
    chunks = "source" if from_file_current and source.chunks is not None else (shape_str(c.chunks) if c.chunks else "contiguous")
    filters = "source" if from_file_current and source.chunks is not None else c.filters.spec
    return {"name": f"{workload.name}-tune", "dataset": dataset,
            "matrix": {"chunks": [chunks], "filters": [filters],
                       "cache": [{"nbytes": c.cache.nbytes, "nslots": c.cache.nslots, "w0": c.cache.w0}],
                       "access": [access_dict(it.access) for it in workload.items]},
            "repeats": repeats, "cold": cold, "time_budget": cell_budget}


def per_cell_budget(budget: float, cells: int, repeats: int) -> float | None:
    """A cell's share of ``budget`` (its passes and its counted pass), at least :data:`MIN_CELL_BUDGET`."""
    return max(MIN_CELL_BUDGET, budget / max(1, cells) / (repeats + 1)) if budget else None


PASS_SLACK = 4.0           # a pass gets this many times the model's time of its pattern (the probes' prices ran 2-4x low)
CONTENDS_WITHIN = 3.0      # layouts predicted within this of the best get whole passes; a prefix shows the rest lose


def whole_pass_budgets(contenders, items, source, costs, repeats: int, floor: float | None, cap: float) -> dict:
    """{contender key: cell budget} for the layouts predicted within :data:`CONTENDS_WITHIN` of the best:
    room for ``repeats`` whole passes and the counted one of the contender's slowest pattern as the model
    prices it, :data:`PASS_SLACK` times over, between ``floor`` and ``cap``. The sweep engine gives each
    pass an equal share of the cell's budget and cuts a pass over it to a prefix: with the share alone
    (2 s a cell, 0.5 s a pass) a cold 0.3 s pattern on a busy machine measured one request of 150,
    and the rest of its time was the model's, not a measurement."""
    from ccp.tune.search import evaluate

    if not contenders:
        return {}
    best = min(c.predicted_s for c in contenders)
    out = {}
    for c in contenders:
        if c.key in out or c.predicted_s > best * CONTENDS_WITHIN:
            continue
        # each pattern's time as the contender was priced; a contender made without it is priced here
        item_s = c.item_s or tuple(ic.seconds for ic in evaluate(c.chunks, c.filters, c.cache, source, items, costs).items)
        slowest = max(item_s, default=0.0)
        out[c.key] = min(cap, max(floor or 0.0, (repeats + 1) * PASS_SLACK * slowest))
    return out


def _number(row, key: str, default: float) -> float:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return default


def slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-") or "x"


def measure_all(workload, source, contenders, out_dir: Path, work_dir: Path, budget: float, repeats: int = 3,
                echo=print, cold: bool = True, cell_budget: float | None = None,
                budgets: dict | None = None, plan=None) -> list[Measured | None]:
    """Every distinct contender measured once (equal layouts and caches share a run). Each cell gets
    its contender's ``budgets`` entry, else ``cell_budget`` seconds, or its share of ``budget`` (at
    least :data:`MIN_CELL_BUDGET`). With a ``plan`` (:class:`ccp.tune.pace.RoundPlan`) the round is held
    to its end time: before each layout its cells' budget is capped to what is left, its work file made
    (timed) before its run, and a layout that does not fit is not measured (None in its place)."""
    from ccp.run import prepare, run_sweep

    distinct: dict[tuple, Contender] = {}
    for c in contenders:
        distinct.setdefault(c.key, c)
    n_cells = max(1, len(distinct) * len(workload.items))
    if cell_budget is None:
        cell_budget = per_cell_budget(budget, n_cells, repeats)
    planned = {key: (budgets or {}).get(key, cell_budget) for key in distinct}
    runs: dict[tuple, tuple | None] = {}
    for i, (key, c) in enumerate(distinct.items()):
        own = planned[key]
        file_work = 0.0
        if plan is not None and own is not None:
            needs = [layout_need(plan, workload, source, d, planned[k] or own) for k, d in list(distinct.items())[i:]]
            file_work = needs[0].file_work
            own = plan.budget(needs)
            if own is None:
                runs[key] = None
                continue
        t_layout = time.perf_counter()
        run_dir = out_dir / "runs" / f"{i:02d}-{slug(c.label)}"
        run_dir.mkdir(parents=True, exist_ok=True)
        sweep_file = run_dir.parent / f"{i:02d}-{slug(c.label)}.yaml"
        sweep_file.write_text(yaml.safe_dump(sweep_doc(workload, c, source, repeats, own, cold), sort_keys=False))
        echo(f"  measuring {c.label}: chunks {shape_str(c.chunks)}, {c.filters.spec}, cache {c.cache.label} ({i + 1}/{len(distinct)})")
        sweep, src, cells = prepare(sweep_file)
        file_s = make_work_file(work_dir, sweep, src, cells) if plan is not None else 0.0
        if file_s >= 1.0:
            echo(f"    its work file made in {file_s:.1f} s")
        run_sweep(sweep_file, out=run_dir, work_dir=work_dir, report=None, echo=lambda *_: None)
        with (run_dir / "cells.csv").open(newline="") as fh:
            rows = {r["cell_id"]: r for r in csv.DictReader(fh)}
        by_access = {cell.access: rows.get(cell.cell_id) for cell in cells}
        per, total, lo, hi, ok = [], 0.0, 0.0, 0.0, True
        for it in workload.items:
            row = by_access.get(it.access)
            status = row["status"] if row else "missing"
            done = row is not None and status in FINISHED and row.get("time_s") not in (None, "")
            ok &= done
            t = float(row["time_s"]) if row is not None and done else math.nan
            per.append((t, status))
            total += it.weight * t
            lo += it.weight * _number(row, "time_s_min", t)
            hi += it.weight * _number(row, "time_s_max", t)
        if plan is not None and own is not None:
            got = [r for r in by_access.values() if r is not None]
            plan.learn(file_s, file_work, time.perf_counter() - t_layout, [(own, _number(r, "elapsed_s", 0.0)) for r in got])
            if own < planned[key]:
                plan.cut_cells += sum(r["status"] == "extrapolated" for r in got)
        passes = item_passes(run_dir, [by_access.get(it.access) for it in workload.items])
        runs[key] = (total if ok else None, tuple(per), run_dir, lo if ok else None, hi if ok else None, passes)
    if plan is not None:
        plan.close()
    return [Measured(c, *run) if (run := runs[c.key]) is not None else None for c in contenders]


def layout_need(plan, workload, source, c: Contender, budget_s: float):
    """What measuring ``c`` takes, as :class:`ccp.tune.pace.LayoutNeed`: its work file (none for the
    user's file as stored, nor for a workload of writes only) estimated by ``plan``, its cells, their budget."""
    import numpy as np

    from ccp.tune.lattice import nchunks
    from ccp.tune.pace import LayoutNeed

    reads = any(it.access.op != "write" for it in workload.items)
    as_stored = c.kind == "current" and source.chunks is not None and workload.dataset.file is not None
    nbytes = math.prod(source.shape) * np.dtype(source.dtype).itemsize
    n = nchunks(source.shape, c.chunks) if c.chunks else 1
    file_s = plan.file_estimate(n, nbytes, not c.filters.is_none) if reads and not as_stored else 0.0
    work = plan.file_work(n, nbytes, not c.filters.is_none) if reads and not as_stored else 0.0
    return LayoutNeed(c.label, file_s, len(workload.items), budget_s, work)


def make_work_file(work_dir: Path, sweep, source, cells) -> float:
    """The layout's work file made now (as the run would make it, which then reuses it): seconds, 0 if none
    was needed or it was there."""
    from ccp.run.job import work_file
    from ccp.workload.files import layout_path

    cell = next((c for c in cells if c.access.op == "read" and not c.from_source and c.storage.file_space is None
                 and not c.storage.remote), None)
    if cell is None or layout_path(work_dir, sweep, source, cell.chunks, cell.filters).exists():
        return 0.0
    t0 = time.perf_counter()
    work_file(work_dir, sweep, source, cell.chunks, cell.filters)
    return time.perf_counter() - t0


def item_passes(run_dir: Path, rows) -> tuple:
    """Each cell's timed passes from the run's requests.parquet (None for a cell without them)."""
    path = run_dir / "requests.parquet"
    if not path.exists():
        return tuple(None for _ in rows)
    import pandas as pd

    columns = ["cell_id", "pass", "phase", "time_s"]
    try:
        req = pd.read_parquet(path, columns=[*columns, "pass_cpu_s", "pass_wall_s"])
    except (KeyError, ValueError, OSError):     # a run from before the passes' CPU time was kept
        req = pd.read_parquet(path, columns=columns)
    req = req[req["pass"] >= 0]
    out: list[ItemPasses | None] = []
    for row in rows:
        cell = req[req["cell_id"] == row["cell_id"]] if row is not None else req.iloc[:0]
        if row is None or cell.empty or row["status"] not in FINISHED:
            out.append(None)
            continue
        out.append(_req_passes(cell, int(float(row["requests"]))))
    return tuple(out)


def cpu_shares(req, passes) -> tuple[float, ...]:
    """Each of ``passes``' process CPU time over its wall time, from the requests table's pass_cpu_s and
    pass_wall_s (on each timed pass's open row); () when any is missing (an older run)."""
    if "pass_cpu_s" not in req or "pass_wall_s" not in req:
        return ()
    per = req.dropna(subset=["pass_cpu_s", "pass_wall_s"]).groupby("pass")[["pass_cpu_s", "pass_wall_s"]].first()
    if any(p not in per.index for p in passes):
        return ()
    return tuple(float(min(1.0, c / w)) if w > 0 else 1.0 for c, w in (per.loc[p] for p in passes))


def _req_passes(req, requests: int) -> ItemPasses | None:
    """One cell's timed passes from its requests table (as :func:`item_passes` reads them from a run)."""
    req = req[req["pass"] >= 0]
    if req.empty:
        return None
    totals = req.groupby("pass")["time_s"].sum()
    measured = int((req["phase"] == "request").sum() // max(1, len(totals)))
    return ItemPasses(requests, measured, tuple(float(t) for t in totals.values), cpu_shares(req, list(totals.index)))


def measure_interleaved(workload, source, contenders, out_dir: Path, work_dir: Path, rounds: int,
                        cell_budget: float | None, echo=print, phase: str = "runoff") -> list[Measured]:
    """Every distinct contender measured ``rounds`` times, one cold pass of each of its patterns a round,
    the contenders alternating (as asv's ``--interleave-rounds``; the order reversed every round), so a
    load that drifts falls on all of them alike: pass i of each is paired with pass i of the others.
    Each pass gets the share of ``cell_budget`` a pass of a ``rounds``-pass cell gets (its counted pass
    included). The jobs are the sweep engine's (its work files, its cold passes), measured in this
    process without a counted pass; each contender's sweep file is kept under ``out_dir``, and every pass
    measured in ``out_dir``'s ``rounds.csv`` (:func:`write_rounds`). ``phase`` names the rounds as they run
    (the runoff, the slot check, the cache check)."""
    import shutil

    from ccp.measurement.runner import measure
    from ccp.run import prepare
    from ccp.run.job import job_for

    distinct: dict[tuple, Contender] = {}
    for c in contenders:
        distinct.setdefault(c.key, c)
    out_dir.mkdir(parents=True, exist_ok=True)
    per_pass = cell_budget / (rounds + 1) if cell_budget else None
    jobs: dict[tuple, list] = {}
    for i, (key, c) in enumerate(distinct.items()):
        sweep_file = out_dir / f"{i:02d}-{slug(c.label)}.yaml"
        sweep_file.write_text(yaml.safe_dump(sweep_doc(workload, c, source, 1, per_pass), sort_keys=False))
        sweep, src, cells = prepare(sweep_file)
        by_access = {cell.access: cell for cell in cells}
        jobs[key] = [job_for(by_access[it.access], sweep, src, work_dir, True) for it in workload.items]
    order = list(distinct)
    got: dict[tuple, list[list]] = {key: [[] for _ in workload.items] for key in order}
    scratch = out_dir / "scratch"
    try:
        for r in range(rounds):
            for key in (order if r % 2 == 0 else order[::-1]):
                for j, job in enumerate(jobs[key]):
                    row, req, _ = measure(job, scratch / f"{slug(distinct[key].label)}-{j}")
                    got[key][j].append((row, req))
            echo(f"  {phase} round {r + 1}/{rounds}: {len(order)} "
                 f"{'layouts' if phase == 'runoff' else 'settings of the pick'}, alternating")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_rounds(out_dir, [(distinct[key], got[key]) for key in order])
    return [_interleaved_result(distinct[c.key], got[c.key], workload.items, out_dir) for c in contenders]


ROUNDS_CSV = "rounds.csv"
ROUNDS_COLUMNS = ["round", "layout", "chunks", "filters", "cache_nbytes", "cache_nslots", "cache_w0", "pattern", "op",
                  "block", "status", "requests", "measured_requests", "pass_s", "time_s", "load_max", "cpus"]


def write_rounds(out_dir: Path, measured: list) -> Path:
    """Every pass of interleaved rounds kept in ``out_dir/rounds.csv`` (their requests in ``requests.parquet``),
    a row per round, layout and pattern: ``pass_s`` the pass as timed (open, its measured requests, close: what
    tune completes with the fitted model when ``measured_requests`` < ``requests``), ``time_s`` the sweep
    engine's figure for it (a prefix scaled up to every request when its status is 'extrapolated').
    ``measured``: (contender, per pattern [(row, requests table), ...]) in the order measured."""
    import pandas as pd

    lines, tables = [], []
    for c, per_item in measured:
        for j, got in enumerate(per_item):
            for r, (row, req) in enumerate(got):
                timed = req[req["pass"] >= 0] if req is not None and "pass" in req else None
                n = int((timed["phase"] == "request").sum()) if timed is not None and not timed.empty else None
                pass_s = float(timed["time_s"].sum()) if timed is not None and n is not None else None
                lines.append({"round": r + 1, "layout": c.label, "chunks": shape_str(c.chunks), "filters": c.filters.spec,
                              "cache_nbytes": c.cache.nbytes, "cache_nslots": c.cache.nslots, "cache_w0": c.cache.w0,
                              "pattern": j, "op": row.op, "block": row.block, "status": row.status,
                              "requests": row.requests, "measured_requests": n,
                              "pass_s": pass_s,
                              "time_s": row.time_s, "load_max": row.load_max, "cpus": row.cpus})
                if timed is not None and not timed.empty:
                    tables.append(timed.assign(round=r + 1, layout=c.label, pattern=j))
    path = out_dir / ROUNDS_CSV
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=ROUNDS_COLUMNS)
        w.writeheader()
        w.writerows(lines)
    if tables:
        pd.concat(tables, ignore_index=True).to_parquet(out_dir / "requests.parquet", index=False)
    return path


def _interleaved_result(c: Contender, per_item: list[list], items, out_dir: Path) -> Measured:
    """A contender's rounds as one :class:`Measured`: each pattern's median pass (the engine's time of a
    prefix where the budget cut a pass short), and its passes in round order."""
    import statistics

    per: list = []
    passes: list[ItemPasses | None] = []
    total, lo, hi, ok = 0.0, 0.0, 0.0, True
    for it, got in zip(items, per_item):
        times = [row.time_s for row, _ in got if row.status in FINISHED and row.time_s is not None]
        done = len(times) == len(got) and bool(got)
        ok &= done
        status = (next((row.status for row, _ in got if row.status not in FINISHED), "ok") if not done
                  else "extrapolated" if any(row.status == "extrapolated" for row, _ in got) else "ok")
        t = statistics.median(times) if done else math.nan
        per.append((t, status))
        total += it.weight * t
        lo += it.weight * (min(times) if done else math.nan)
        hi += it.weight * (max(times) if done else math.nan)
        each = [_req_passes(req, int(row.requests or 0)) for row, req in got] if done else []
        whole = [p for p in each if p is not None]
        if done and len(whole) == len(each):
            shares = tuple(x for p in whole for x in p.cpu_share) if all(p.cpu_share for p in whole) else ()
            passes.append(ItemPasses(whole[0].requests, min(p.measured for p in whole),
                                     tuple(t for p in whole for t in p.passes), shares,
                                     each=tuple(p.measured for p in whole for _ in p.passes)))
        else:
            passes.append(None)
    rounds = tuple(tuple(row.time_s if row.status in FINISHED and row.time_s is not None else math.nan for row, _ in got)
                   for got in per_item)
    return Measured(c, total if ok else None, tuple(per), out_dir, lo if ok else None, hi if ok else None, tuple(passes),
                    round_s=rounds)
