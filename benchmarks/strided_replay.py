"""A sweep's replay of a traced program's strided calls against the program itself (issue 23): per pattern and layout,
the raw-data reads and bytes HDF5 made (log VFD) and the time per call, for the program run untraced, the runner's
replay as it is (each strided call one hyperslab read) and as it was (RequestPlan.as_boxes: a box per run of
each traced chunk), and the model's prediction. Median of --repeats timed passes; the load average printed.

    PYTHONPATH=. .venv/bin/python benchmarks/strided_replay.py [--calls 200] [--repeats 5] [--out results/strided-replay]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from ccp.measurement import iolog

PROGRAM = """import json, sys, time, h5py
from h5py import MultiBlockSlice
path, name, key, n, cache = sys.argv[1], sys.argv[2], eval(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
log = sys.argv[6] if len(sys.argv) > 6 else None
if log:            # untraced, under the log VFD, the same cache on the file access list
    from h5py import h5f
    from ccp.measurement import iolog
    fapl = iolog.log_fapl(log)
    fapl.set_cache(0, 521, cache, 0.75)
    f = h5py.File(h5f.open(path.encode(), h5f.ACC_RDONLY, fapl))
else:
    f = h5py.File(path, "r", rdcc_nbytes=cache, rdcc_nslots=521, rdcc_w0=0.75)
d = f[name]
t0 = time.perf_counter()
for _ in range(n):
    d[key]
print(json.dumps({"call_s": (time.perf_counter() - t0) / n}))
f.close()
"""

# pattern: (dataset shape, dtype, the key as the program writes it)
PATTERNS = {
    "a[::3]": ((100_000,), "f8", "slice(None, None, 3)"),
    "g[5, ::2]": ((200, 1000), "f4", "(5, slice(None, None, 2))"),
    "g[2:100:5, 1:40:4]": ((200, 1000), "f4", "(slice(2, 100, 5), slice(1, 40, 4))"),
    "g[10:20:2, 5]": ((200, 1000), "f4", "(slice(10, 20, 2), 5)"),
    "g[MultiBlockSlice(1, 7, 20, 3), :100]": ((200, 1000), "f4",
                                              "(MultiBlockSlice(start=1, stride=7, count=20, block=3), slice(0, 100))"),
}
LAYOUTS = {   # name: (chunks for a rank-1 / rank-2 dataset, h5py compression, the program's chunk cache)
    "chunked": (((1000,), (10, 100)), None, 8 << 20),
    "gzip": (((1000,), (10, 100)), "gzip", 8 << 20),
    "chunks-bigger-than-the-cache": (((10_000,), (100, 1000)), None, 64 << 10),   # 80 KB / 400 KB chunks
    "contiguous": ((None, None), None, 8 << 20),
}


def _make(path: Path, shape, dtype, chunks, compression) -> None:
    with h5py.File(path, "w") as f:
        data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
        if chunks is not None:
            chunks = tuple(min(c, s) for c, s in zip(chunks, shape))
        f.create_dataset("d", data=data, chunks=chunks, compression=compression)


def _run(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}


def _replay(path: Path, trace: Path, repeats: int) -> dict:
    from ccp.config.sweep import AccessSpec
    from ccp.hdf5.dataset import DatasetInfo
    from ccp.hdf5.filters import parse_filters
    from ccp.matrix.cells import Cell
    from ccp.measurement import iolog, runner
    from ccp.model import chunk_size_table, simulate_arrays, summarise
    from ccp.workload.replay_batches import replay_sequence
    from ccp.workload.requestplan import Hyperslabs
    from ccp.workload.tracefile import load_trace

    seq = replay_sequence(load_trace(trace), "/d", op="read")
    cache = seq.session_caches[0]
    with h5py.File(path, "r") as f:
        d = f["d"]
        shape, dtype, chunks, filtered = d.shape, d.dtype, d.chunks, d.compression is not None
        sizes: dict = {}
        if chunks:
            d.id.chunk_iter(lambda info: sizes.__setitem__(tuple(info.chunk_offset), info.size))
    source = DatasetInfo(shape, dtype, shape, None, chunks, parse_filters("none"), "d")
    cell = Cell(chunks, parse_filters("none"), cache, AccessSpec("read", tuple(1 for _ in shape)))
    job = runner.CellJob(cell=cell, file=str(path), dataset_path="/d", source=source, generate=None, user_file=None,
                         repeats=1, cold=False, counted_pass=True)
    plan = seq.plan
    out = {"calls": len(plan)}
    ways = {"one call": (plan, Hyperslabs.of(plan.counts, plan.strides, plan.blocks) if plan.strides is not None
                         else None),
            "boxes (before)": (plan.as_boxes(seq.chunks), None)}
    for way, (p, hyper) in ways.items():
        starts = [tuple(int(x) for x in s) for s in p.starts]
        counts = [tuple(int(x) for x in c) for c in p.counts]
        kw = {"hyperslabs": hyper} if hyper is not None else {}
        times = [runner.read_pass(job, starts, counts, counted=False, log_path=None, progress=runner.Progress(),
                                  **kw).request_ns.sum() / 1e9 / len(plan) for _ in range(repeats)]
        log = path.with_suffix(".log")
        runner.read_pass(job, starts, counts, counted=True, log_path=log, progress=runner.Progress(), **kw)
        tot = iolog.totals(iolog.parse_log(log))
        out[way] = {"requests": len(p), "call_s": statistics.median(times), "raw_reads": tot["raw_reads"],
                    "raw_read_bytes": tot["raw_read_bytes"]}
    pred = simulate_arrays(shape, chunks, dtype.itemsize, filtered=filtered, cache=cache, ops="read",
                           starts=plan.starts, counts=plan.counts, strides=plan.strides, blocks=plan.blocks,
                           stored_chunk_bytes=chunk_size_table(shape, chunks, sizes) if chunks else None)
    s = summarise(pred)
    out["model"] = {"raw_reads": int(s.raw_reads), "raw_read_bytes": int(s.raw_read_bytes),
                    "chunk_loads": int(s.chunk_loads)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls of the pattern the program makes")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="results/strided-replay")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    program = out / "program.py"
    program.write_text(PROGRAM)
    py = sys.executable
    print(f"load average {os.getloadavg()[0]:.2f}; {args.calls} calls a program, median of {args.repeats} passes")
    for pattern, (shape, dtype, key) in PATTERNS.items():
        for layout, (chunks, compression, cache) in LAYOUTS.items():
            tag = f"{len(shape)}-{layout}"
            path = out / f"{tag}-{abs(hash(pattern)) % 10**6}.h5"
            _make(path, shape, dtype, chunks[len(shape) - 1], compression)
            base = [py, str(program), str(path), "d", key, str(args.calls), str(cache)]
            trace = out / f"trace-{path.stem}"
            subprocess.run([py, "-m", "ccp.cli", "trace", "--force", "-o", str(trace), "--", *base], check=True,
                           capture_output=True)
            prog_t = statistics.median(_run(base)["call_s"] for _ in range(args.repeats))
            log = out / f"{path.stem}-program.log"
            _run([*base, str(log)])
            tot = iolog.totals(iolog.parse_log(log))
            r = _replay(path, trace, args.repeats)
            one, old, m = r["one call"], r["boxes (before)"], r["model"]
            print(f"{pattern:40s} {layout:29s} program {tot['raw_reads']:6d} reads {tot['raw_read_bytes']:10d} B "
                  f"{prog_t * 1e6:8.1f} us/call | one call: {one['requests']:5d} req {one['raw_reads']:6d} reads "
                  f"{one['raw_read_bytes']:10d} B {one['call_s'] * 1e6:8.1f} us/call | boxes: {old['requests']:6d} req "
                  f"{old['raw_reads']:6d} reads {old['raw_read_bytes']:10d} B {old['call_s'] * 1e6:8.1f} us/call | "
                  f"model {m['raw_reads']:6d} reads {m['raw_read_bytes']:10d} B {m['chunk_loads']} loads", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
