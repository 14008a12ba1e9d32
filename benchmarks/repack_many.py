"""Many small files: `ccp repack DIR -o OUTDIR` (one invocation, parallel processes) against
`h5repack IN OUT` run once per file in a loop, in files per second. Also the start-up costs:
`ccp repack --help` and a one-file repack of a tiny file.

    .venv/bin/python benchmarks/repack_many.py [--files 200] [--rounds 3] [--options "-f GZIP=6"] [--work DIR]

Makes a folder of FILES small granule-like files (a chunked gzip float32 dataset 60x40, an int16
dataset, a string attribute, a group with a scalar), then for each round runs, in alternating
order: ccp once over the folder, and h5repack once per file (the same -l/-f options, sequentially,
as a shell loop would). Prints the median and spread (min-max) of the wall time and files/s of each,
with the load average (the machine may be shared). Needs h5repack on PATH (apt-get install hdf5-tools).
Writes results/repack_many.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
SCHEMA = 1


def make_files(folder: str, n: int) -> None:
    import h5py
    import numpy as np

    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        rng = np.random.default_rng(i)
        with h5py.File(os.path.join(folder, f"granule_{i:05d}.h5"), "w") as f:
            f.attrs["title"] = f"granule {i}"
            f.create_dataset("radiance", data=rng.standard_normal((60, 40)).astype("f4"), chunks=(20, 40),
                             compression="gzip", compression_opts=4)
            f.create_dataset("quality", data=rng.integers(0, 8, (60, 40)).astype("i2"))
            f.create_group("geo").create_dataset("time", data=float(i))


def ccp_cmd() -> list[str]:
    return [sys.executable, "-m", "ccp.cli", "repack"]


def timed(cmd, env=None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if r.returncode:
        raise SystemExit(f"failed: {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    return time.perf_counter() - t0


def summary(values) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--options", default="-f GZIP=6", help='repack options for both tools (default "-f GZIP=6")')
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "repack_many.json"))
    args = ap.parse_args(argv)
    h5repack = shutil.which("h5repack")
    if h5repack is None:
        raise SystemExit("h5repack is not on PATH (apt-get install hdf5-tools)")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    opts = shlex.split(args.options)
    work = args.work or tempfile.mkdtemp(prefix="ccp-repack-many-")
    src = os.path.join(work, "in")
    make_files(src, args.files)
    names = sorted(os.listdir(src))

    # start-up: --help and one tiny file
    help_t = [timed([*ccp_cmd(), "--help"], env) for _ in range(5)]
    tiny = os.path.join(src, names[0])
    one_t = [timed([*ccp_cmd(), "-q", *opts, tiny, os.path.join(work, "one.h5")], env) for _ in range(5)]
    one_h = [timed([h5repack, *opts, tiny, os.path.join(work, "one_h.h5")]) for _ in range(5)]

    ccp_t, h5_t = [], []
    for r in range(args.rounds):
        def run_ccp(r=r):
            out = os.path.join(work, f"ccp_{r}")
            ccp_t.append(timed([*ccp_cmd(), "-q", *opts, src, "-o", out], env))
            assert len(os.listdir(out)) == len(names)
            shutil.rmtree(out)

        def run_h5(r=r):
            out = os.path.join(work, f"h5_{r}")
            os.makedirs(out)
            t0 = time.perf_counter()
            for name in names:
                subprocess.run([h5repack, *opts, os.path.join(src, name), os.path.join(out, name)], check=True)
            h5_t.append(time.perf_counter() - t0)
            shutil.rmtree(out)

        for fn in ((run_ccp, run_h5) if r % 2 == 0 else (run_h5, run_ccp)):
            fn()
    n = len(names)
    result = {"schema": SCHEMA, "command": " ".join(["benchmarks/repack_many.py", *(argv or sys.argv[1:])]),
              "files": n, "options": args.options, "rounds": args.rounds,
              "ccp_seconds": summary(ccp_t), "h5repack_seconds": summary(h5_t),
              "ccp_files_per_s": n / statistics.median(ccp_t), "h5repack_files_per_s": n / statistics.median(h5_t),
              "ccp_help_seconds": summary(help_t), "ccp_one_tiny_file_seconds": summary(one_t),
              "h5repack_one_tiny_file_seconds": summary(one_h), "loadavg": os.getloadavg(),
              "environment": {"python": platform.python_version(), "cpus": os.cpu_count(),
                              "h5repack": subprocess.run([h5repack, "--version"], check=False, capture_output=True,
                                                         text=True).stdout.strip()}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    s, h = result["ccp_seconds"], result["h5repack_seconds"]
    print(f"{n} files, options {args.options!r}, {args.rounds} rounds (load average {os.getloadavg()[0]:.2f}):")
    print(f"  ccp repack DIR -o OUT (one invocation): {s['median']:.2f} s (range {s['min']:.2f}-{s['max']:.2f}) = "
          f"{result['ccp_files_per_s']:.1f} files/s")
    print(f"  h5repack once per file:                 {h['median']:.2f} s (range {h['min']:.2f}-{h['max']:.2f}) = "
          f"{result['h5repack_files_per_s']:.1f} files/s")
    print(f"  ratio ccp/h5repack files/s: {result['ccp_files_per_s'] / result['h5repack_files_per_s']:.2f}")
    print(f"  ccp repack --help: {statistics.median(help_t) * 1000:.0f} ms; one tiny file: ccp "
          f"{statistics.median(one_t) * 1000:.0f} ms, h5repack {statistics.median(one_h) * 1000:.0f} ms (medians of 5)")
    print(f"  result in {args.out}")
    if args.work is None:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
