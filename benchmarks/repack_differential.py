"""The differential repack harness, larger run: N hypothesis-generated HDF5 files, each repacked by
ccp under one drawn option set (plain, -f GZIP=6, -f SHUF -f GZIP=1, -l CONTI, -l CHUNK=2,
-l CHUNK=2x2, -f NONE) and compared value by value with its input (ccp.repack.compare) and,
where h5repack is installed, with h5repack's output of the same command (h5diff).

    .venv/bin/python benchmarks/repack_differential.py --files 2000 [--seed 0] [--out results/repack_differential.json]

Generation only (no shrinking), so every failure is listed as drawn; the run goes on after one.
Exit status 1 if any file differed. The generator is tests/repack/h5gen.py (the test suite runs
12 examples of the same property).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "repack"))
sys.path.insert(0, os.path.join(HERE, ".."))

SCHEMA = 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results", "repack_differential.json"))
    args = ap.parse_args(argv)

    import h5py
    from h5gen import check_example, files, options
    from hypothesis import HealthCheck, Phase, given, seed, settings

    counts = collections.Counter()
    failures = []
    t0 = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.files, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(spec=files(), option=options())
    def run(spec, option):
        counts["files"] += 1
        counts[f"option {option}"] += 1
        with tempfile.TemporaryDirectory() as folder:
            try:
                checked = check_example(spec, option, folder)
            except Exception as exc:  # every failure is recorded, the run goes on
                counts["failed"] += 1
                failures.append({"option": option, "spec": repr(spec), "error": f"{type(exc).__name__}: {exc}"[:2000],
                                 "traceback": traceback.format_exc()[-3000:]})
                return
        counts["h5repack compared"] += bool(checked["h5repack"])
        if counts["files"] % 100 == 0:
            print(f"  {counts['files']} files, {counts['failed']} failed, {time.perf_counter() - t0:.0f} s", flush=True)

    run()
    seconds = time.perf_counter() - t0
    result = {"schema": SCHEMA, "command": " ".join([os.path.basename(sys.argv[0]), *(argv or sys.argv[1:])]),
              "files": counts["files"], "failed": counts["failed"], "h5repack_compared": counts["h5repack compared"],
              "options": {k[7:]: v for k, v in counts.items() if k.startswith("option ")}, "seconds": round(seconds, 1),
              "seed": args.seed, "environment": {"python": platform.python_version(), "h5py": h5py.version.version,
                                                  "hdf5": h5py.version.hdf5_version, "machine": platform.machine(),
                                                  "cpus": os.cpu_count()},
              "failures": failures}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"{counts['files']} generated files repacked and compared in {seconds:.0f} s: {counts['failed']} differed; "
          f"{counts['h5repack compared']} also compared with h5repack's output (h5diff); result in {args.out}")
    for f in failures[:5]:
        print(f"  {f['option']}: {f['error'][:300]}\n    {f['spec'][:600]}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
