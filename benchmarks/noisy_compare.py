"""A busy machine must not fake a regression, and must not hide a real one: `ccp compare` on one sweep run six ways.

    .venv/bin/python benchmarks/noisy_compare.py [--out results/noisy] [--competitors N] [--memory-competitors M]
        [--memory-mib 200] [--fail-above 1.5]

1. A: the sweep, as quiet as the machine is.
2. B: the same sweep, the same code, while N CPU-bound competitor processes (default: 2 per CPU ccp may use) spin and
   M memory-bound ones (default 1) copy a 200 MiB array again and again (numpy: memory bandwidth, which a pass's CPU
   share does not see; under one such competitor identical work's CPU time per pass rose 1.9x at an equal load,
   breaker11); the benchmark starts them and ends them by pid.
3. C: the same sweep under the same competitors, with a planted real regression: every chunk cache ccp sets is 1/8 of
   the configured size (a library change that shrank it), so the row-by-row cells' chunks no longer fit: more chunk
   loads, the kind of change the I/O counts see.

4. D: the same sweep under the same competitors with a planted same-work regression: every timed read spends 200 us
   more of CPU (the same requests, chunk loads and bytes: only the passes and their CPU time can tell).
5. E: D's regression again, the competitors gone.
6. F: the same sweep, the same code, under the M memory-bound competitors alone.

Then `ccp compare A B --fail-above R` (and `A F`) must report 0 regressions (exit 0: the difference is the machine's, or exit 3:
undecided, the rule cannot clear it; never exit 1), and so must `--remeasure 5` of it (A and B measured again,
alternating, once the competitors are gone); `ccp compare A C --fail-above R` must catch the planted one (exit 1);
`ccp compare A D` and `A E` must never pass the CPU regression (exit 1, or 3: undecided). Printed: each run's load (highest 1-minute load average over its passes),
how many cells a naive rule (median time ratio above R) would have failed, and the verdicts. Counts, not timings, decide.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
SWEEP = {
    "name": "noisy",
    "dataset": {"path": "/data", "generate": {"shape": [8, 32, 32, 64], "dtype": "<f4", "data": "normal", "seed": 0}},
    "matrix": {"chunks": [[4, 32, 32, 64], [1, 32, 32, 64]],        # 1 MiB and 256 KiB chunks
               "filters": ["gzip:1", "none"],
               "cache": ["2MiB"],                                    # holds a 1 MiB chunk; 1/8 of it (C) does not
               "client": ["h5py-lowlevel"],                          # its reads go through a Python call D can slow
               "access": [{"op": "read", "block": [1, 1, 32, 64]},    # row by row: 256 requests
                          {"op": "read", "block": [4, 32, 32, 64]}]}, # whole big chunks: 2 requests
    "repeats": 5,
    "cold": False,        # warm passes: CPU-bound, the case load hurts most
}
PLANT = """
import sys
from dataclasses import dataclass
import ccp.hdf5.plists as plists

real = plists.cache_dapl

@dataclass(frozen=True)
class Shrunk:
    nslots: int
    nbytes: int
    w0: float

def shrunk(cache):   # the planted regression: every cache ccp sets is 1/8 of what the sweep configured
    return real(Shrunk(cache.nslots, cache.nbytes // 8, cache.w0))

plists.cache_dapl = shrunk
from ccp.cli import main
main(sys.argv[1:])
"""
# the planted same-work regression (breaker10): every timed read spends CPU_US more of CPU before HDF5 reads (a
# library change that costs CPU, not I/O): the same requests, chunk loads and bytes; only the CPU time per pass and
# the passes can tell
CPU_US = 200
PLANT_CPU = f"""
import sys, time
import ccp.measurement.runner as runner

real = runner.open_timed

class Slower:
    def __init__(self, ds):
        self._ds = ds
    def __getattr__(self, k):
        return getattr(self._ds, k)
    def read(self, *a, **k):
        until = time.thread_time_ns() + {CPU_US} * 1000
        while time.thread_time_ns() < until:
            pass
        return self._ds.read(*a, **k)

def open_timed(*a, **k):
    ds, *rest = real(*a, **k)
    return (Slower(ds), *rest)

runner.open_timed = open_timed
from ccp.cli import main
main(sys.argv[1:])
"""


def ccp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / ".venv/bin/ccp"), *args], capture_output=True, text=True, cwd=ROOT)


def run(sweep: Path, out: Path, work: Path, planted: str = "") -> float:
    args = ["run", str(sweep), "--out", str(out), "--work", str(work), "--no-report"]
    t0 = time.perf_counter()
    if planted:     # in this process's child with the plant; --no-isolate keeps the cells in it
        code = PLANT if planted == "cache" else PLANT_CPU
        r = subprocess.run([sys.executable, "-c", code, *args, "--no-isolate"], capture_output=True, text=True, cwd=ROOT)
    else:
        r = ccp(*args)
    if r.returncode != 0:
        raise SystemExit(f"ccp run failed ({out}): {r.stderr.strip()[-500:]}")
    return time.perf_counter() - t0


# streams through memory: two arrays of MIB MiB, one copied onto the other, again and again
MEMORY_BOUND = """
import numpy as np
a = np.ones({mib} * 2**20 // 8)
b = np.empty_like(a)
while True:
    np.copyto(b, a)
"""


def start_competitors(n: int, memory: int = 0, mib: int = 200) -> list[subprocess.Popen]:
    return ([subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
            + [subprocess.Popen([sys.executable, "-c", MEMORY_BOUND.format(mib=mib)]) for _ in range(memory)])


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:                 # by pid: only the processes this benchmark started
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def load_of(run_dir: Path) -> str:
    c = pd.read_parquet(run_dir / "cells.parquet")
    contended = int(c["flags"].fillna("").str.contains("contended").sum())
    return f"load max {c['load_max'].max():.1f} on {int(c['cpus'].max())} CPUs, {contended}/{len(c)} cells contended"


def naive(a: Path, b: Path, ratio: float) -> int:
    ca, cb = pd.read_parquet(a / "cells.parquet"), pd.read_parquet(b / "cells.parquet")
    j = ca.merge(cb, on="cell_id", suffixes=("_a", "_b"))
    return int((j["time_s_b"] / j["time_s_a"] > ratio).sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "noisy")
    ap.add_argument("--competitors", type=int, default=None, help="CPU-bound processes during B, C and D "
                                                                  "(default: 2 per CPU ccp may use)")
    ap.add_argument("--memory-competitors", type=int, default=1, help="memory-bound processes during B, C, D and F")
    ap.add_argument("--memory-mib", type=int, default=200, help="MiB each memory-bound competitor copies per loop")
    ap.add_argument("--fail-above", type=float, default=1.5)
    opts = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    n = opts.competitors if opts.competitors is not None else 2 * cpus
    m, mib = opts.memory_competitors, opts.memory_mib
    out = opts.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sweep = out / "noisy.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    work = out / "work"
    print(f"machine: {cpus} CPUs, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    wall = {"A": run(sweep, out / "A", work)}
    procs = start_competitors(n, m, mib)
    try:
        time.sleep(3)               # let the load average see them
        wall["B"] = run(sweep, out / "B", work)
        wall["C"] = run(sweep, out / "C", work, planted="cache")
        wall["D"] = run(sweep, out / "D", work, planted="cpu")
    finally:
        stop(procs)
    time.sleep(3)
    wall["E"] = run(sweep, out / "E", work, planted="cpu")       # the same CPU regression, the competitors gone
    if m:
        procs = start_competitors(0, m, mib)
        try:
            time.sleep(3)
            wall["F"] = run(sweep, out / "F", work)                 # identical work under memory-bound competitors
        finally:
            stop(procs)
    runs = "ABCDE" + ("F" if m else "")
    with_them = f"{n} CPU-bound and {m} memory-bound ({mib} MiB) competitors" if m else f"{n} CPU-bound competitors"
    said = {"C": " and the planted I/O regression", "D": f" and the planted CPU regression ({CPU_US} us a read)",
            "E": f"the planted CPU regression ({CPU_US} us a read), no competitors",
            "F": f" with {m} memory-bound competitor(s) alone"}
    for k in runs:
        print(f"{k}: {load_of(out / k)}; ran in {wall[k]:.1f} s"
              + (f" with {with_them}" if k in "BCD" else "") + (", " if k == "E" else "") + said.get(k, ""))
    fail = f"{opts.fail_above:g}"
    verdict = {}
    compares = [("B", ()), ("C", ()), ("D", ()), ("E", ()), *([("F", ())] if m else []),
                ("B --remeasure 5", ("--remeasure", "5"))]
    for k, more in compares:
        r = ccp("compare", str(out / "A"), str(out / k.split()[0]), "--fail-above", fail, *more)
        (out / f"compare-A-{k.replace(' --', '-').replace(' ', '')}.txt").write_text(r.stdout + r.stderr)
        gate = next((line for line in r.stdout.splitlines() if line.startswith(("FAIL:", "pass:", "undecided:"))), "?")
        regressions = int(gate.split()[1]) if gate.startswith("FAIL:") else 0
        verdict[k] = (r.returncode, regressions)
        print(f"ccp compare A {k} --fail-above {fail}: exit {r.returncode}, {regressions} regression(s); a naive median "
              f"ratio > {fail} would fail {naive(out / 'A', out / k.split()[0], opts.fail_above)} cell(s)")
        print("  " + gate[:300])
    # exit 3 (undecided: the rule cannot clear a slowdown, "measure again quiet or --remeasure") is no false
    # regression: a quiet run against a busy one is no comparison of times, and the gate says so instead of passing it
    false_ok = all(verdict[k][1] == 0 and verdict[k][0] in (0, 3) for k in ("B", "B --remeasure 5", "F") if k in verdict)
    caught = verdict["C"][0] == 1 and verdict["C"][1] > 0
    # the same-work regression under competitors: caught, or undecided; never passed as the machine's (exit 0)
    cpu_not_passed = verdict["D"][0] in (1, 3) and verdict["E"][0] in (1, 3)
    print(f"false regressions under load: {verdict['B'][1]} (remeasured: {verdict['B --remeasure 5'][1]}"
          + (f"; memory-bound alone: {verdict['F'][1]}, exit {verdict['F'][0]}" if "F" in verdict else "") + ") "
          f"({'ok' if false_ok else 'WRONG'}); planted I/O regression {'caught' if caught else 'MISSED'} "
          f"({verdict['C'][1]} cell(s)); planted CPU regression under competitors: exit {verdict['D'][0]}, without "
          f"them: exit {verdict['E'][0]} ({'never passed' if cpu_not_passed else 'PASSED: WRONG'})")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if false_ok and caught and cpu_not_passed else 1


if __name__ == "__main__":
    sys.exit(main())
