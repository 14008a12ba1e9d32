"""Tune's pick, predicted / measured, on the league's workloads (issue 22: within 1.25x on every one).

    PYTHONPATH=. .venv/bin/python benchmarks/tune_fit.py --out results/tunefit [--only NAME ...] [--workload FILE ...]

``ccp tune`` alone, as ``benchmarks/league.py --quick`` calls it (its workload files, budget 20 s, search
10 s, 3 repeats, ``--within`` 120 s), one workload after another; no grid, no paired score. Per workload:
``recommended.predicted_in_choice_s / measured_in_choice_s`` (the pick's prediction at the final prices
against the median of its passes in the rounds those prices were fitted to), two out-of-sample figures
against the same passes (``predicted_before_runoff_s``, and the prediction from prices fitted without the
pick's own runoff passes, recomputed from ``prices.cells``), the prediction before the runoff brought to the
runoff's CPU share (``predicted_before_runoff_at_runoff_share_s``: x the pick's median CPU share in the first
round / in the runoff; tune prints both shares), the recommendation as recommended against every whole pass of it, the 1-minute load average before and after, and tune's wall time. Each workload's
``tune.json`` is kept under ``--out`` (``prices.cells`` holds the final fit's equations). ``--workload FILE``
adds a tune workload file as it is (``configs/tune-series-maps.yaml``, the README's ``ccp tune`` example),
named by its file's stem, run with this script's --budget and search limit.

``--analyse`` adds what a held-out miss is judged against: the held-out figure again with every pass as
its CPU time equivalent (wall x the pass's process CPU share, kept per pass in ``prices.cells`` as
``cpu_share``: what the pass would have taken had it never waited for a core); the pick measured twice
minutes apart (its first round's median over its runoff's: the measurement's own reproducibility, the
floor a prediction fitted to one round meets on the other); the spread of its runoff passes (interquartile
range / median); and which misses had an unstable measurement (its two rounds over 1.25x apart, or the
middle half of its passes wider than the 1.25x band, 0.5 of their median).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np
import yaml

_spec = importlib.util.spec_from_file_location("league", Path(__file__).with_name("league.py"))
assert _spec is not None and _spec.loader is not None
league = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(league)

WITHIN = 1.25


def ratio(rec: dict, pred: str, meas: str) -> float | None:
    p, m = rec.get(pred), rec.get(meas)
    return p / m if p and m and math.isfinite(m) else None


def fmt(xs) -> str:
    return ", ".join("-" if x is None else f"{x:.2f}" for x in xs)


def within(xs) -> int:
    return sum(1 for x in xs if x is not None and 1 / WITHIN <= x <= WITHIN)


def cpu_equivalent(cell: dict) -> float | None:
    """A cell's median pass with each pass's wall time scaled by its process CPU share (the time the pass
    would have taken had it never waited for a core: a busy machine's run queue, not the work); None when
    the cell did not keep its passes' CPU time (runs before it was kept)."""
    passes, shares = cell.get("passes") or [], cell.get("cpu_share") or []
    if not passes or len(shares) != len(passes):
        return None
    return float(statistics.median(p * s for p, s in zip(passes, shares)))


def held_out(t: dict, weights: list[float], cpu: bool = False) -> float | None:
    """The pick's prediction from prices fitted without its own runoff passes (the first round's fit
    updated by the other finalists' runoff cells only), over its measured time in the runoff: the
    update's out-of-sample test, from ``tune.json``'s ``prices.cells`` (no measuring again). None without
    a runoff of cells of this kind. With ``cpu``, every cell's time is its CPU equivalent
    (:func:`cpu_equivalent`), the fits' and the pick's alike (None where a cell lacks it)."""
    from ccp.predict import Calibration
    from ccp.tune.fit import Observation, fit_prices
    from ccp.tune.search import PRICE_GROUPS, Costs

    cells = t["prices"].get("cells") or []
    mine = pick_labels(t)
    if cpu:
        cells = [{**c, "measured_s": cpu_equivalent(c)} for c in cells]
        if any(c["measured_s"] is None for c in cells):
            return None
    obs = [(c, Observation(tuple(c["parts"]), c["measured_s"], len(c["passes"] or [1]))) for c in cells]
    first = [o for c, o in obs if c.get("round") == "first"]
    others = [o for c, o in obs if c.get("round") == "runoff" and c["label"] not in mine]
    pick = [(c["pattern"], c) for c, _ in obs if c.get("round") == "runoff" and c["label"] in mine]
    measured = (sum(weights[i] * c["measured_s"] for i, c in pick) if cpu
                else t["recommended"].get("measured_in_choice_s"))
    if not pick or any(c["first"] is not None for _, c in pick) or not measured:
        return None
    dummy = Costs(Calibration(1.0, 1.0, {}, {}), 1.0)
    f1 = fit_prices(dummy, first)
    if f1 is None:
        return None
    f2 = fit_prices(dummy, others, prior=f1.scales) or f1
    s = f2.scales
    pred = sum(weights[i] * (sum(s[g] * p for g, p in zip(PRICE_GROUPS, c["parts"]) if g != "open") + s["open"])
               for i, c in pick)
    return pred / measured


def pick_labels(t: dict) -> set:
    """The contenders' labels of the recommended layout and cache (the pick measured under several names)."""
    keys = ("chunks", "filters", "cache_nbytes", "cache_nslots", "cache_w0")
    rows = {r["label"]: r for r in t["contenders"]}
    key = [rows[t["recommended"]["label"]][k] for k in keys]
    return {label for label, r in rows.items() if [r[k] for k in keys] == key}


def spread(t: dict) -> float | None:
    """The pick's runoff passes, the widest of its patterns' interquartile range over their median; None
    without a runoff of it. Over ``2 * (WITHIN - 1)`` the middle half of its passes is wider than the
    target's band: its median cannot be judged to 1.25x."""
    mine = pick_labels(t)
    got = [c["passes"] for c in t["prices"].get("cells") or [] if c.get("round") == "runoff" and c["label"] in mine
           and c.get("passes")]
    if not got:
        return None
    return max(float((np.percentile(p, 75) - np.percentile(p, 25)) / np.median(p)) for p in got)


def unstable(r: dict) -> bool:
    """The pick's own measurement cannot be judged to the target: its two rounds over WITHIN apart, or its
    runoff passes' middle half wider than the target's band."""
    rep, spr = r.get("reproduced"), r.get("spread")
    return (rep is not None and not within([rep])) or (spr is not None and spr > 2 * (WITHIN - 1))


def reproduced(t: dict, weights: list[float]) -> float | None:
    """The pick measured twice minutes apart, its first round's weighted median over its runoff's: the
    measurement's own reproducibility, the floor no prediction fitted to one round beats on the other.
    None without both rounds of every pattern."""
    mine = pick_labels(t)
    total = {}
    for rnd in ("first", "runoff"):
        got = {c["pattern"]: c["measured_s"] for c in t["prices"].get("cells") or []
               if c.get("round") == rnd and c["label"] in mine and c["first"] is None}
        if len(got) != len(weights):
            return None
        total[rnd] = sum(w * got[i] for i, w in enumerate(weights))
    return total["first"] / total["runoff"] if total["runoff"] else None


def analyse(run: Path) -> None:
    """The table of a finished (or partial) run, with the held-out figure, from its tune.json files."""
    rows = json.loads((run / "tune_fit.json").read_text())["rows"]
    for r in rows:
        t = json.loads((run / r["workload"] / "tune" / "tune.json").read_text())
        doc = yaml.safe_load((run / r["workload"] / f"{r['workload']}.yaml").read_text())
        weights = [float(it["weight"]) for it in doc["workload"]]
        r["held_out"] = held_out(t, weights)
        r["held_out_cpu"] = held_out(t, weights, cpu=True)
        r["reproduced"] = reproduced(t, weights)
        r["spread"] = spread(t)
    report(rows)


def report(rows: list[dict]) -> None:
    for key, what in (("in_choice", "predicted / measured in the rounds its final prices were fitted to"),
                      ("held_out", "predicted by prices fitted without its own runoff passes / measured in the runoff"),
                      ("held_out_cpu", "the same, every cell's passes as CPU time equivalents (wall x the pass's CPU share)"),
                      ("before_runoff", "predicted before the runoff's passes were fitted / measured in the runoff"),
                      ("before_runoff_at_share", "the same, brought to the runoff's CPU share (x first round's / runoff's)"),
                      ("as_recommended", "predicted / measured as recommended (every whole pass)")):
        xs = [r.get(key) for r in rows]
        print(f"{what}: within {WITHIN}x on {within(xs)} of {sum(x is not None for x in xs)} ({fmt(xs)})")
    xs = [r.get("reproduced") for r in rows]
    print(f"the pick measured twice minutes apart (first round / runoff): within {WITHIN}x on {within(xs)} of "
          f"{sum(x is not None for x in xs)} ({fmt(xs)})")
    missed = [r for r in rows if r.get("held_out") is not None and not within([r["held_out"]])]
    print(f"the pick's runoff passes, interquartile range / median (widest pattern): {fmt([r.get('spread') for r in rows])}")
    flagged = [r for r in missed if unstable(r)]
    print(f"held-out misses: {len(missed)} ({', '.join(r['workload'] for r in missed) or 'none'}); of them the pick's own "
          f"measurement unstable (its two rounds over {WITHIN}x apart, or its passes' middle half wider than "
          f"{2 * (WITHIN - 1):.2f} of their median): {len(flagged)} ({', '.join(r['workload'] for r in flagged) or 'none'})")
    print("workloads: " + ", ".join(r["workload"] for r in rows))
    print("load (1 min) before/after each: " + ", ".join(f"{r['load_before']:.1f}/{r['load_after']:.1f}" for r in rows))
    print("tune wall: " + ", ".join(f"{r['wall_s']:.0f}" for r in rows) + " s")


def main() -> None:
    from ccp.tune import tune as tune_mod

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/tunefit"))
    ap.add_argument("--only", choices=sorted(league.WORKLOADS), action="append")
    ap.add_argument("--workload", type=Path, action="append", default=[],
                    help="a tune workload file, run as it is (named by its stem); with no --only, only these")
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--within", type=float, default=120.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--analyse", type=Path, help="print the table of an earlier run's folder (no measuring) and exit")
    args = ap.parse_args()
    if args.analyse:
        analyse(args.analyse)
        return
    tune_mod.SEARCH_LIMIT_S = 10.0
    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    work = args.out / "work"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"tune fit: load average {os.getloadavg()}, out {out}", flush=True)
    given = {f.stem: yaml.safe_load(f.read_text()) for f in args.workload}
    for name in [*(args.only or ([] if given else league.WORKLOADS)), *given]:
        doc = given[name] if name in given else league.workload_doc(name, league.WORKLOADS[name], True)
        wfile = out / name / f"{name}.yaml"
        wfile.parent.mkdir(parents=True, exist_ok=True)
        wfile.write_text(yaml.safe_dump(doc, sort_keys=False))
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = tune_mod.tune(wfile, budget=args.budget, out=out / name / "tune", work_dir=work, repeats=args.repeats,
                          echo=lambda *_: None, within=args.within)
        rec = r["recommended"]
        row = {"workload": name, "wall_s": time.perf_counter() - t0, "load_before": load0, "load_after": os.getloadavg()[0],
               "in_choice": ratio(rec, "predicted_in_choice_s", "measured_in_choice_s"),
               "before_runoff": ratio(rec, "predicted_before_runoff_s", "measured_in_choice_s"),
               "before_runoff_at_share": ratio(rec, "predicted_before_runoff_at_runoff_share_s", "measured_in_choice_s"),
               "shares": [rec.get("first_round_cpu_share"), rec.get("runoff_cpu_share")],
               "as_recommended": ratio(rec, "predicted_s", "measured_s"),
               "runoff": any(c.get("runoff") for c in r["contenders"]),
               "pick": rec["label"], "chunks": rec["chunks"],
               "predicted_in_choice_s": rec.get("predicted_in_choice_s"), "measured_in_choice_s": rec.get("measured_in_choice_s"),
               "trimmed": r.get("trimmed")}
        rows.append(row)
        print(json.dumps(row), flush=True)
        (out / "tune_fit.json").write_text(json.dumps({"rows": rows}, indent=2, default=str))
    analyse(out)

if __name__ == "__main__":
    main()
