"""Merge time and peak memory of a large trace: N d[i] calls (the recorder's fast-path records) merged by
``ccp trace``'s streaming merge into ``calls.parquet``, then read back in row groups with ``iter_trace``.

The part file is written here as the recorder writes it (pickled batches of 16,384 records: one handle,
then one tuple per call), so a million calls need no million-call program run.

    PYTHONPATH=. python benchmarks/trace_merge_large.py [--calls 1000000] [--batch-rows 200000]
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


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM; ru_maxrss where /proc is missing), in MiB."""
    try:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=None, help="rows the merge converts at once (its default)")
    args = ap.parse_args()
    from ccp.trace.store import PARTS, ROWS_PER_CHUNK, merge
    from ccp.workload.tracefile import iter_trace

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "t"
        (out / PARTS).mkdir(parents=True)
        write_part(out / PARTS, args.calls)
        rss_before = peak_rss_mib()
        load = os.getloadavg()
        t0, c0 = time.perf_counter(), time.process_time()
        header = merge(out, ["synthetic"], 0, 0.0, checksum=False, batch_rows=args.batch_rows or ROWS_PER_CHUNK)
        merge_s, merge_cpu = time.perf_counter() - t0, time.process_time() - c0
        rss_merge = peak_rss_mib()
        t0 = time.perf_counter()
        rows = user = 0
        for frame in iter_trace(out, columns=["kind", "depth", "wall_s"]):
            rows += len(frame)
            user += int(((frame["kind"] == "call") & (frame["depth"] == 0)).sum())
        read_s = time.perf_counter() - t0
        size = os.path.getsize(out / "calls.parquet")
    print(f"{args.calls} calls -> {header['calls']} user calls, {rows} rows, calls.parquet {size / 2**20:.1f} MiB; "
          f"load average before {' '.join(f'{x:.1f}' for x in load)}, after "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"merge wall {merge_s:.1f} s, CPU {merge_cpu:.1f} s, peak RSS {rss_merge:.0f} MiB (writing the part file "
          f"before it: {rss_before:.0f} MiB); streamed read-back {read_s:.1f} s, {user} user calls "
          f"(peak RSS {peak_rss_mib():.0f} MiB)")
    sys.exit(0 if header["calls"] == user == args.calls else 1)


if __name__ == "__main__":
    main()
