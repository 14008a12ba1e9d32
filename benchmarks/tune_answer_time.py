"""``ccp tune``'s answer time on the league's workloads, as the league runs it (issue 24: "within two minutes").

    PYTHONPATH=. .venv/bin/python benchmarks/tune_answer_time.py [--only NAME ...] [--out results/tune-time]
        [--full] [--within 120] [--budget 20] [--repeats 3]

For each workload of ``benchmarks/league.py`` (quick scale unless ``--full``): its workload file
written as the league writes it, then :func:`ccp.tune.tune.tune` with the league's arguments
(``--budget`` 20 s quick / 60 s full, 3 repeats, ``--within`` 120 s, the search limited to 10 s
quick), timed on the wall clock from the call to its return, the dataset's generation included (a
fresh work folder per run, as the league's first pass over a workload). Each of tune's console lines
is printed with the seconds since the call began, so where the time went is read off the output;
the load average is printed beside every workload. Nothing is asserted: the figures are the output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import league

from ccp.tune import tune as tune_mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(league.WORKLOADS), action="append")
    ap.add_argument("--out", type=Path, default=Path("results/tune-time"))
    ap.add_argument("--full", action="store_true", help="the league's full scale (default: --quick's)")
    ap.add_argument("--within", type=float, default=120.0)
    ap.add_argument("--budget", type=float, default=None, help="tune's --budget (default 20 s quick, 60 s full)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    quick = not args.full
    budget = args.budget or (20.0 if quick else 60.0)
    if quick:
        tune_mod.SEARCH_LIMIT_S = 10.0           # as league.py --quick
    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.only or league.WORKLOADS:
        wdir = out / name
        wdir.mkdir(parents=True)
        wfile = wdir / f"{name}.yaml"
        wfile.write_text(yaml.safe_dump(league.workload_doc(name, league.WORKLOADS[name], quick), sort_keys=False))
        load0 = os.getloadavg()
        t0 = time.perf_counter()

        def echo(*a, _t0=t0, _name=name):
            print(f"[{_name} {time.perf_counter() - _t0:6.1f} s] " + " ".join(str(x) for x in a), flush=True)

        r = tune_mod.tune(wfile, budget=budget, out=wdir / "tune", work_dir=wdir / "work", repeats=args.repeats,
                          echo=echo, within=args.within)
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()
        row = {"workload": name, "wall_s": round(wall, 1), "load_before": load0, "load_after": load1,
               "trimmed": r.get("trimmed"), "recommended": r["recommended"]["chunks"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        (out / "answer-time.json").write_text(json.dumps(rows, indent=2))
    print(f"{'workload':<13} {'wall s':>7}  load (1-min avg) before / after")
    for row in rows:
        print(f"{row['workload']:<13} {row['wall_s']:>7.1f}  {row['load_before'][0]:.1f} / {row['load_after'][0]:.1f}"
              + (f"  trimmed {len(row['trimmed'])}" if row["trimmed"] else ""))
    print(f"max {max(r['wall_s'] for r in rows):.1f} s; {sum(r['wall_s'] <= args.within for r in rows)}/{len(rows)} "
          f"within {args.within:.0f} s; out {out}")


if __name__ == "__main__":
    main()
