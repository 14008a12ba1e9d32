"""A league run's every contender measured again beside its oracle's layout, in paired rounds: no grid-only cell.

    PYTHONPATH=. .venv/bin/python benchmarks/league_pair_all.py results/league/STAMP --out results/pair-all

``benchmarks/league.py`` pairs only the contenders within ``PAIRED_WITHIN`` of the oracle in its grid (and
tune's answer); a layout further off keeps its grid ratio, which a busy machine can make several times too
large (NISAR's Unidata balanced shape: 2.71 in the grid, 0.59 paired as tune's layout). This re-measures
every distinct contender layout of a finished run (its workload files, grids and work files reused) with
:func:`league.paired_rounds`, the grid's cache for all and tune's answer as recommended, the league's round
count (:func:`league.paired_round_count`), and each pass cut to a prefix past ``--pass-budget`` (the engine's
time scaled, as in the grid): the geometric means with every cell measured the same way.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import time
from pathlib import Path

_spec = importlib.util.spec_from_file_location("league", Path(__file__).with_name("league.py"))
assert _spec is not None and _spec.loader is not None
league = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(league)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a league run's folder (holding league.json)")
    ap.add_argument("--out", type=Path, default=Path("results/pair-all"))
    ap.add_argument("--pass-budget", type=float, default=2.0, help="seconds a pattern's pass may take before it is cut")
    args = ap.parse_args()
    d = json.loads((args.run / "league.json").read_text())
    res = []
    for r in d["results"]:
        name = r["workload"]
        grid_cache = {"nbytes": r["cache_budget"], "nslots": league.GRID_NSLOTS, "w0": 0.75}
        lay = {k: (v, grid_cache) for k, v in r["picks"].items() if k != "ccp tune" and math.isfinite(r["times_s"][k])}
        lay["ccp tune"] = (r["picks"]["ccp tune"], r["as_recommended"]["cache"])
        t0 = time.perf_counter()
        p = league.paired_rounds(args.run / name / f"{name}.yaml", lay, (r["oracle"]["chunks"], grid_cache),
                                 league.WORKLOADS[name]["filters"], args.out / name, args.run.parent / "work",
                                 league.paired_round_count(r["oracle"]["time_s"], 3), args.pass_budget)
        ratio = {k: p[k]["ratio"] if k in p else math.inf for k in league.CONTENDERS}
        res.append({"workload": name, "ratio": ratio, "paired": p, "wall_s": time.perf_counter() - t0,
                    "load": os.getloadavg()})
        print(name, {k: round(v, 2) for k, v in ratio.items()}, f"{time.perf_counter() - t0:.0f} s", os.getloadavg(), flush=True)
        (args.out / "pair-all.json").write_text(json.dumps(res, indent=1, default=str))
    gm = {c: league.geomean(x["ratio"][c] for x in res) for c in league.CONTENDERS}
    print("geomeans", {k: round(v, 2) for k, v in gm.items()})
    print("tune within 1.10:", sum(x["ratio"]["ccp tune"] <= 1.10 for x in res))


if __name__ == "__main__":
    main()
