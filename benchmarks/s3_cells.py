"""Run the read cells of an S3 config (configs/s3-*.yaml) through ccp.storage's runner API, before it is
wired into `ccp run`: every storage setting of every read cell, local and through the loopback S3 server,
with GETs and bytes measured beside predicted.

    PYTHONPATH=. .venv/bin/python benchmarks/s3_cells.py configs/s3-cris.yaml [--repeats 3] [--work results/work]
    python -m ccp.storage.product results/s3/product.nc --time 60 && \
        PYTHONPATH=. .venv/bin/python benchmarks/s3_cells.py configs/s3-netcdf.yaml

What `ccp run` will do once wired (phase 2), in the same order: the sweep's work file per layout (ccp's own),
its paged variant per ``file_space``, uploaded once; each pass a fresh fsspec file (fsspec's cache cold),
h5py's low-level loop over the cell's requests with the cell's chunk cache; local passes drop the file from
the page cache first. Time is the median over passes of open + requests (the emulated latency and bandwidth
are slept inside the GETs: EMULATED). The script fails if a pass's GET count differs from the first pass's
or from the prediction. Results: results/s3_cells/<config>-<time>.csv and a table on stdout.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from ccp.storage.axes import split_sweep, storage_cells
from ccp.storage.remote import (
    file_space_variant,
    lowlevel_fapl,
    open_dataset,
    remote_session,
    result_columns,
    stored_page_size,
)
from ccp.units import format_bytes


def _loop(fid, dataset, starts, counts, cache, dtype, mark):
    """The runner's read loop (h5py low-level, buffers prepared outside the timed calls); seconds per phase."""
    from h5py import h5s

    bufs = {c: (h5s.create_simple(c), np.empty(c, dtype=dtype)) for c in set(counts)}
    t0 = time.perf_counter()
    ds = open_dataset(fid, dataset, cache)
    t_open = time.perf_counter() - t0
    mark()
    fspace = ds.get_space()
    total = t_open
    for start, count in zip(starts, counts):
        mspace, arr = bufs[count]
        fspace.select_hyperslab(start, count)
        t0 = time.perf_counter()
        ds.read(mspace, fspace, arr)
        total += time.perf_counter() - t0
        mark()
    ds.close()
    return total


def main() -> None:
    from h5py import h5f

    from ccp.config.sweep import parse_sweep
    from ccp.hdf5.dataset import describe_source
    from ccp.matrix.cells import expand
    from ccp.measurement.pagecache import drop_file
    from ccp.run.job import work_file as _work_file
    from ccp.workload.requests import plan_for

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--repeats", type=int, default=None, help="passes per cell (default: the config's)")
    ap.add_argument("--work", default="results/work", help="work folder for layout files and paged copies")
    ap.add_argument("--out", default="results/s3_cells")
    args = ap.parse_args()
    config = Path(args.config)
    core, storage = split_sweep(yaml.safe_load(config.read_text()))
    sweep = parse_sweep(core, config.resolve().parent)
    repeats = args.repeats or sweep.repeats
    source = describe_source(sweep.dataset)
    cells = [c for c in expand(sweep, source) if c.access.op == "read"]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    bad = []
    with remote_session(storage.s3) as session:
        for cell in cells:
            path = Path(sweep.dataset.file) if cell.from_source else _work_file(work, sweep, source, cell.chunks,
                                                                                cell.filters)[0]
            plan = plan_for(cell.access, source.shape)
            starts = [tuple(int(x) for x in s) for s in plan.starts]
            counts = [tuple(int(x) for x in c) for c in plan.counts]
            dtype = np.dtype(source.dtype)
            for setting in storage_cells("read", storage.axes, stored_page_size(path)):
                file = file_space_variant(path, setting.file_space, work)
                row = {"access": "x".join(map(str, cell.access.block)), "requests": len(starts),
                       "cache": cell.cache.label, **setting.labels()}
                times, waits, first = [], [], None
                if setting.remote:
                    remote = session.cell(file, sweep.dataset.path, setting)
                    pred = remote.predict(starts, counts, cell.cache)
                    for _ in range(repeats):
                        fid = remote.open_file()
                        try:
                            t = _loop(fid, sweep.dataset.path, starts, counts, cell.cache, dtype, remote.mark)
                        finally:
                            fid.close()
                        c = remote.end_pass()
                        times.append(t)
                        waits.append(c.open.wait_s + c.wait_s)
                        first = first or c
                        if c.open.gets + c.http_gets != first.open.gets + first.http_gets:
                            bad.append(f"{row}: GETs differ between passes")
                    row.update(result_columns(first, pred, remote.page_buffer_effective))
                    if row["predicted_http_gets"] != row["http_gets"] or row["predicted_http_bytes"] != row["http_bytes"]:
                        bad.append(f"{row}: predicted {row['predicted_http_gets']} GETs / {row['predicted_http_bytes']} B, "
                                   f"measured {row['http_gets']} / {row['http_bytes']}")
                else:
                    for _ in range(repeats):
                        if sweep.cold:
                            drop_file(str(file))
                        fid = h5f.open(str(file).encode(), h5f.ACC_RDONLY, lowlevel_fapl(None, setting.page_buffer))
                        try:
                            times.append(_loop(fid, sweep.dataset.path, starts, counts, cell.cache, dtype, lambda: None))
                        finally:
                            fid.close()
                row.update(time_s=statistics.median(times), spread=max(times) / min(times) if min(times) else float("nan"),
                           wait_s=statistics.median(waits) if waits else None)
                rows.append(row)
                print(_line(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dest = out / f"{sweep.name}-{time.strftime('%Y%m%dT%H%M%S')}.csv"
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(dest, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print(f"\n{len(rows)} cells ({sum(r['storage'] == 's3' for r in rows)} over S3, latency EMULATED); {dest}")
    if bad:
        print("\n".join(["PREDICTION OR REPEATABILITY FAILURES:", *bad]), file=sys.stderr)
        sys.exit(1)


COLS = ["access", "cache", "storage", "fsspec", "latency", "file_space", "page_buffer", "http_open_gets", "http_gets",
        "predicted_http_gets", "http_bytes", "predicted_http_bytes", "time_s", "spread", "wait_s"]


def _line(r):
    def f(k):
        v = r.get(k)
        if v is None or v == "":
            return "-"
        if k in ("http_bytes", "predicted_http_bytes"):
            return format_bytes(v)
        if k in ("time_s", "wait_s"):
            return f"{v:.3f}"
        if k == "spread":
            return f"{v:.2f}"
        return str(v)
    return " | ".join(f(k) for k in COLS)


if __name__ == "__main__":
    main()
