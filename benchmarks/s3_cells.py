"""Run an S3 config (configs/s3-*.yaml) with `ccp run` and check the issue's criterion on its results:
on every S3 cell the predicted GETs and bytes equal the measured ones, and every pass made the same GETs.

    PYTHONPATH=. .venv/bin/python benchmarks/s3_cells.py configs/s3-cris.yaml [--scale 0.5] [--out results/s3/cris]

A thin check over the normal sweep machinery (ccp.run.run_sweep): the table of GETs, bytes and times is the
run's report (`ccp report OUT`) and cells.csv. Latency and bandwidth are EMULATED on the client, per GET.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def main() -> None:
    from ccp.run import run_sweep
    from ccp.units import format_bytes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--out", default=None, help="run folder (default: a new one under results/)")
    ap.add_argument("--work", default="results/work")
    args = ap.parse_args()
    summary = run_sweep(Path(args.config), out=Path(args.out) if args.out else None, work_dir=Path(args.work),
                        scale=args.scale, report=None)
    cells = pd.read_csv(summary.run_dir / "cells.csv", keep_default_na=False, na_values=[""])
    s3 = cells[cells["storage"] == "s3"]
    bad = s3[(s3["http_gets"] != s3["predicted_http_gets"]) | (s3["http_bytes"] != s3["predicted_http_bytes"])
             | s3["flags"].fillna("").str.contains("http-counts-vary")]
    for _, c in s3.iterrows():
        print(f"{c['block']:>16} {c['fsspec']:>16} {c['latency']:>5} {c['file_space']:>10} {c['page_buffer']:>5}: "
              f"{int(c['http_gets'])} GETs (model {c['predicted_http_gets']:g}), {format_bytes(c['http_bytes'])}, "
              f"{c['time_s']:.3f} s")
    print(f"\n{len(s3)} S3 cells (latency EMULATED), {len(cells) - len(s3)} local; predicted == measured GETs and bytes "
          f"on {len(s3) - len(bad)} of {len(s3)}; results in {summary.run_dir}")
    if len(bad) or summary.failed:
        print(f"FAILURES: {len(bad)} S3 cell(s) differ from the prediction, {summary.failed} cell(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
