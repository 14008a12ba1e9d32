"""The S3 notebook's latency check, run on a small sweep with the emulated latency on or off: it must pass with it
and fail without it (issue 22, A8).

    PYTHONPATH=. .venv/bin/python benchmarks/s3_latency_check.py OUT [--no-sleep]

The sweep: configs/s3-cris.yaml at 8 scans, the 8 MiB cache, rows only, 0 and 20 ms, one timed pass (6 pairs of
S3 cells). ``--no-sleep`` disables the emulated delay (``EmulatedNetwork.delay`` returns 0 in this process and the
forked workers), so the "20ms" cells wait no longer than the 0 ms ones. The check is the notebook's own code
(``latency_pairs`` and ``quickest_get_wait`` from notebooks/s3_object_storage.ipynb): per pair, the quickest GET
wait at 20 ms minus at 0 ms; it passes when the median over the pairs is at least 10 ms. Exit 1 when it fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from ccp.run import run_sweep

    out = Path(sys.argv[1])
    no_sleep = "--no-sleep" in sys.argv[2:]
    if no_sleep:
        from ccp.config.storage import EmulatedNetwork

        EmulatedNetwork.delay = lambda self, nbytes: 0.0    # type: ignore[method-assign]
    doc = yaml.safe_load((ROOT / "configs/s3-cris.yaml").read_text())
    doc["dataset"]["generate"]["shape"][0] = 8
    doc["matrix"].update(cache=["8MiB"], latency=["0ms", "20ms"], access=doc["matrix"]["access"][:1])
    doc["repeats"] = 1
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    run_sweep(out / "sweep.yaml", out=out / "run", work_dir=out / "work", echo=lambda *a: None, report=None)
    notebook = nbformat.read(ROOT / "notebooks/s3_object_storage.ipynb", as_version=4)
    source = next(c.source for c in notebook.cells if "def latency_pairs" in c.source)
    ns: dict = {"pd": pd}
    exec(source.split("waits = pd.concat")[0], ns)        # the notebook's two functions, as committed
    cells = pd.read_csv(out / "run" / "cells.csv").assign(sweep="s3-cris")
    pairs = ns["latency_pairs"](cells, ns["quickest_get_wait"](out / "run"))
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    print(pairs.reset_index()[["fsspec", "file_space", "page_buffer", "http_gets 0ms", "quickest_get_wait_s 0ms",
                               "quickest_get_wait_s 20ms", "wait difference s", "pays (>= 10 ms)", "time_s 0ms",
                               "time_s 20ms"]].round(4))
    median_ms = pairs["wait difference s"].median() * 1e3
    passed = median_ms >= 10
    print(f"{'emulated delay disabled: ' if no_sleep else ''}{int(pairs['pays (>= 10 ms)'].sum())} of {len(pairs)} "
          f"pairs at least 10 ms apart; median difference {median_ms:.1f} ms: the check "
          f"{'passes' if passed else 'FAILS'}")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
