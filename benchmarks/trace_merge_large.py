"""Merge time and peak memory of a large trace: N d[i] calls (the recorder's fast-path records) merged by
``ccp trace``'s streaming merge into ``calls.parquet``, then read back in row groups with ``iter_trace``.

The part file is written here as the recorder writes it (pickled batches of 16,384 records: one handle,
then one tuple per call), so a million calls need no million-call program run.

    PYTHONPATH=. python benchmarks/trace_merge_large.py [--calls 1000000]
"""

import argparse
import os
import pickle
import resource
import sys
import tempfile
import time
from pathlib import Path


def write_part(parts: Path, calls: int) -> None:
    pid = 4242
    with open(parts / f"{pid}-1.part", "wb") as f:
        batch = [{"kind": "handle", "token": 1, "file": "/data/x.h5", "dataset": "/x", "itemsize": 4,
                  "shape": [1000, 1000]},
                 {"kind": "layout", "pid": pid, "file": "/data/x.h5", "dataset": "/x", "shape": [1000, 1000],
                  "dtype": "<f4", "itemsize": 4, "chunks": [100, 100], "filters": [], "fill_value": 0,
                  "layout": "chunked", "storage_size": 4_000_000}]
        t = 0
        for i in range(calls):
            batch.append((2 * i + 2, t, t + 5000, 1, (i % 1000, slice(0, 10))))
            t += 7000
            if len(batch) >= 16384:
                pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
        pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    args = ap.parse_args()
    from ccp.trace.store import PARTS, merge
    from ccp.workload.tracefile import iter_trace

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "t"
        (out / PARTS).mkdir(parents=True)
        write_part(out / PARTS, args.calls)
        t0 = time.perf_counter()
        header = merge(out, ["synthetic"], 0, 0.0, checksum=False)
        merge_s = time.perf_counter() - t0
        rss_merge = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        rows = user = 0
        for frame in iter_trace(out, columns=["kind", "depth", "wall_s"]):
            rows += len(frame)
            user += int(((frame["kind"] == "call") & (frame["depth"] == 0)).sum())
        read_s = time.perf_counter() - t0
        size = os.path.getsize(out / "calls.parquet")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.calls} calls -> {header['calls']} user calls, {rows} rows, calls.parquet {size / 2**20:.1f} MiB; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"merge {merge_s:.1f} s (peak RSS {rss_merge:.0f} MiB); streamed read-back {read_s:.1f} s, "
          f"{user} user calls (peak RSS {rss:.0f} MiB)")
    sys.exit(0 if header["calls"] == user == args.calls else 1)


if __name__ == "__main__":
    main()
