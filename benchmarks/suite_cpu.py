"""Which tests are slow, measured in CPU seconds as well as wall seconds, so a busy machine does not mislead.

On a shared machine a test's wall time grows with the load; the CPU seconds it and the processes it waited for
spend do not (much). This is a pytest plugin that records, per test (setup, call and teardown together), its wall
seconds, this process's CPU seconds and its finished child processes' CPU seconds, appending one JSON line per
test to $CCP_SUITE_CPU (works under xdist: every worker appends). Then this script, run as a program, prints the
slowest by CPU, with the load average each test saw.

    CCP_SUITE_CPU=results/cpu.jsonl PYTHONPATH=benchmarks .venv/bin/python -m pytest -q -p suite_cpu -m 'not slow' tests/run
    .venv/bin/python benchmarks/suite_cpu.py results/cpu.jsonl --top 30

A test that sleeps or waits on a server shows wall well above CPU even on a quiet machine; one that is CPU-bound
takes about its CPU seconds on a quiet core. Numbers quoted anywhere come with the command and load beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Around setup, call and teardown, in the process that runs the test (an xdist worker, not the controller)."""
    out = os.environ.get("CCP_SUITE_CPU")
    wall0, (own0, kids0) = time.perf_counter(), _cpu()
    yield
    if not out:
        return
    own, kids = _cpu()
    row = {"test": item.nodeid, "wall_s": time.perf_counter() - wall0, "cpu_s": own - own0,
           "children_cpu_s": kids - kids0, "load": os.getloadavg()[0]}
    with open(out, "a") as f:                   # one short line per write: whole lines from every worker
        f.write(json.dumps(row) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--over", type=float, default=0.0, help="only tests over this many CPU seconds")
    a = ap.parse_args()
    rows = [json.loads(line) for line in a.jsonl.read_text().splitlines() if line.strip()]
    for r in rows:
        r["total_cpu_s"] = r["cpu_s"] + r["children_cpu_s"]
    rows.sort(key=lambda r: -r["total_cpu_s"])
    total_cpu = sum(r["total_cpu_s"] for r in rows)
    total_wall = sum(r["wall_s"] for r in rows)
    print(f"{len(rows)} tests: {total_cpu:.0f} CPU s (self + children), {total_wall:.0f} wall s summed over tests")
    print(f"{'cpu s':>7} {'child':>7} {'wall s':>7} {'load':>5}  test")
    for r in rows[:a.top]:
        if r["total_cpu_s"] < a.over:
            break
        print(f"{r['cpu_s']:7.1f} {r['children_cpu_s']:7.1f} {r['wall_s']:7.1f} {r['load']:5.1f}  {r['test']}")


if __name__ == "__main__":
    main()
