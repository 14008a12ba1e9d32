"""Recording cost per netCDF4-python call under `ccp trace`: ``v[i]`` untraced and traced, in one process.

Each call reads one element of a netCDF-4 variable whose one chunk is already in netCDF-C's cache, so the
call is as cheap as netCDF4-python gets and the recorder's share is the largest it can be. Rounds alternate
netCDF4's own ``Variable.__getitem__``/``_get`` with the recorder's (``ccp.trace.netcdf``); the median ratio
and the spread over rounds are reported, with the load average.

    PYTHONPATH=. python benchmarks/trace_overhead_netcdf4.py [--calls 4000] [--rounds 40]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

INPROCESS = textwrap.dedent("""
    import json, statistics, sys, time
    import netCDF4
    from netCDF4 import _netCDF4 as m
    names = ("__getitem__", "_get")
    plain = {k: m.Variable.__dict__[k] for k in names}
    from ccp.trace.netcdf import set_slot
    from ccp.trace.recorder import install
    rec = install(sys.argv[2])
    traced = {k: m.Variable.__dict__[k] for k in names}
    n, rounds = int(sys.argv[3]), int(sys.argv[4])
    per = max(n // rounds, 1)
    with netCDF4.Dataset(sys.argv[1]) as nc:
        v = nc["x"]
        v[0]
        times = {"plain": [], "traced": []}
        cpu = {"plain": [], "traced": []}
        for r in range(rounds):
            for mode in (("plain", "traced") if r % 2 else ("traced", "plain")):
                for k in names:
                    set_slot(m.Variable, k, (plain if mode == "plain" else traced)[k])
                t0, c0 = time.perf_counter(), time.process_time()
                for i in range(per):
                    v[i % 1000]
                times[mode].append((time.perf_counter() - t0) / per)
                cpu[mode].append((time.process_time() - c0) / per)
    ratios = [t / p for t, p in zip(times["traced"], times["plain"])]
    cpu_ratios = [t / p for t, p in zip(cpu["traced"], cpu["plain"]) if p > 0]
    print(json.dumps({"plain_cpu_us": statistics.median(cpu["plain"]) * 1e6,
                      "traced_cpu_us": statistics.median(cpu["traced"]) * 1e6,
                      "cpu_ratio": statistics.median(cpu_ratios), "cpu_ratio_min": min(cpu_ratios),
                      "cpu_ratio_max": max(cpu_ratios),"plain_us": statistics.median(times["plain"]) * 1e6,
                      "traced_us": statistics.median(times["traced"]) * 1e6,
                      "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "recorded": rec.written + len(rec.buf), "calls": per * rounds}))
""")


def main() -> None:
    import netCDF4
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.nc")
        with netCDF4.Dataset(path, "w") as nc:
            nc.createDimension("n", 1000)
            nc.createVariable("x", "f4", ("n",), chunksizes=(1000,))[:] = np.arange(1000, dtype="f4")
        res = subprocess.run([sys.executable, "-c", INPROCESS, path, os.path.join(tmp, "parts"), str(args.calls),
                              str(args.rounds)], capture_output=True, text=True, check=True,
                             env={**os.environ, "CCP_TRACE_DIR": ""})
    out = json.loads(res.stdout)
    print(f"{out['calls']} reads v[i] (netCDF4 {netCDF4.__version__}) in {args.rounds} alternating rounds, in one "
          f"process; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"untraced {out['plain_us']:.1f} us/call, traced {out['traced_us']:.1f} us/call, recording "
          f"{out['traced_us'] - out['plain_us']:.1f} us/call; traced/untraced median {out['ratio']:.3f} "
          f"(rounds {out['ratio_min']:.3f}-{out['ratio_max']:.3f}); records kept {out['recorded']}")
    print(f"CPU time (steadier on a shared machine): untraced {out['plain_cpu_us']:.1f} us/call, traced "
          f"{out['traced_cpu_us']:.1f} us/call; median ratio {out['cpu_ratio']:.3f} "
          f"(rounds {out['cpu_ratio_min']:.3f}-{out['cpu_ratio_max']:.3f})")


if __name__ == "__main__":
    main()
