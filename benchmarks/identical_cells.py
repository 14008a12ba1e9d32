"""Cells of one run that do identical work: does the report's rule call one faster than another? (issue 22: the
rule between two runs demands 6x of the CPU time alone because a run measures each cell's passes in one forked worker;
the cells of one run are each measured in their own worker too, and judged by the pass's bar.)

    .venv/bin/python benchmarks/identical_cells.py --out /tmp/cells [--runs 3]
    .venv/bin/python benchmarks/identical_cells.py --judge FIXTURE [--pass-bar]
    .venv/bin/python benchmarks/identical_cells.py --clients /tmp/clients

The sweep: benchmarks/noisy_compare.py's dataset, each layout and access under four chunk caches that all hold what
the access needs (so the same requests, chunk loads and bytes: identical work whose cells differ only in the cache
setting), 5 timed passes a cell, warm. It runs --runs times as quiet as the machine is (Q1..) alternating with as many
runs under one memory-bound competitor (M1..; this script's child, ended by pid), and the runs are kept in
FIXTURE (``--out``/cells.json, as benchmarks/judge_recorded.py --extract writes them). Then, in each run, every
ordered pair of cells that differ only in the cache is judged by ``ccp.report.stats.judge`` at the report's threshold,
as the report judges two of its cells (one origin: one run): printed, per run and in all, how many pairs the rule
calls the same work and "faster"/"slower" (a false winner: nothing but the worker differs), and each false winner
with its ratio and reason. Counts first: a pair whose counts differ is printed as such (the sweep is wrong, not the
rule).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import re
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import judge_recorded
import noisy_compare as nc

from ccp.report.sample import Sample
from ccp.report.stats import THRESHOLD, WORK, judge

# every cache holds a 1 MiB chunk (the row-by-row access reuses each chunk 32 or 4 times; the whole-chunk access
# reads each once): the same chunk loads under each
SWEEP = {**nc.SWEEP, "name": "identical-cells", "matrix": {**nc.SWEEP["matrix"], "cache": ["2MiB", "3MiB", "4MiB", "6MiB"]}}
CACHE = re.compile(r"^[\d.]+ [KMG]?i?B$")   # the label's cache field ("2 MiB"): labels name only what differs


class Toggled:
    """One memory-bound competitor switched on and off every ``every`` seconds while a run goes (this script's child,
    ended by pid): cells of one run measured under different machines."""

    def __init__(self, every: float):
        self.every, self.stop_flag, self.procs = every, threading.Event(), []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        on = False
        while not self.stop_flag.wait(self.every):
            if on:
                nc.stop(self.procs)
                self.procs = []
            else:
                self.procs = nc.start_competitors(0, 1, 200)
            on = not on

    def __enter__(self) -> Toggled:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_flag.set()
        self.thread.join()
        nc.stop(self.procs)


def record(out: Path, runs: int, toggle: float) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    sweep = out / "cells.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    work = out / "work"
    names = []
    kinds = [("Q", 0), ("M", 1)] + ([("T", -1)] if toggle else [])
    for i in range(1, runs + 1):
        for kind, memory in kinds:
            name = f"{kind}{i}"
            procs = nc.start_competitors(0, memory, 200) if memory > 0 else []
            try:
                if procs:
                    time.sleep(3)
                load = os.getloadavg()[0]
                if memory < 0:
                    with Toggled(toggle):
                        wall = nc.run(sweep, out / name, work)
                else:
                    wall = nc.run(sweep, out / name, work)
            finally:
                nc.stop(procs)
            names.append(name)
            print(f"{time.strftime('%H:%M:%S', time.gmtime())} {name}: {wall:.1f} s, load before {load:.2f}", flush=True)
            time.sleep(2)
    fixture = out / "cells.json"
    judge_recorded.extract(fixture, [out / n for n in names])
    return fixture


# the cost of the workers' bar: the same I/O through three clients, whose CPU time per call really differs
CLIENTS = {**nc.SWEEP, "name": "clients", "matrix": {
    "chunks": [[1, 32, 32, 64]], "filters": ["none", "gzip:1"], "cache": ["4MiB"],
    "client": ["native", "h5py", "h5py-lowlevel"],
    "access": [{"op": "read", "block": [1, 1, 32, 64]}, {"op": "read", "block": [1, 1, 1, 64]}]}}


def clients(out: Path) -> int:
    """One run of CLIENTS; each pair of cells that differ only in the client, judged as the report judges them and by
    the pass's bar alone."""
    out.mkdir(parents=True, exist_ok=True)
    sweep = out / "clients.yaml"
    sweep.write_text(yaml.safe_dump(CLIENTS))
    load = os.getloadavg()[0]
    nc.run(sweep, out / "run", out / "work")
    fixture = out / "clients.json"
    judge_recorded.extract(fixture, [out / "run"])
    cells = json.loads(fixture.read_text())["run"]
    print(f"load before {load:.2f}")
    names = CLIENTS["matrix"]["client"]
    by: dict = collections.defaultdict(dict)
    for label in cells:   # a label names the client only where it is not the first (native)
        fields = label.split(" | ")
        client = next((f for f in fields if f in names), names[0])
        by[" | ".join(f for f in fields if f not in names)][client] = cells[label]
    for rest, of in by.items():
        for a, b in itertools.combinations(names, 2):
            sa, sb = (Sample.from_record(of[x]) for x in (a, b))
            now = judge(replace(sa, origin="run"), replace(sb, origin="run"))
            alone = judge(sa, sb)
            cpu = statistics.median(sb.cpu) / statistics.median(sa.cpu)
            print(f"{rest}: {b} against {a}: CPU time a pass {cpu:.2f}x, wall {now.ratio:.2f}x: {now.word} "
                  f"(by the pass's bar alone: {alone.word})")
    return 0


def groups(cells: dict) -> dict:
    """The run's cells by their label less the cache: cells that differ only in the cache setting."""
    by = collections.defaultdict(list)
    for label in cells:
        by[" | ".join(f for f in label.split(" | ") if not CACHE.match(f))].append(label)
    return {k: sorted(v) for k, v in by.items() if len(v) > 1}


def judge_fixture(path: Path, threshold: float, pass_bar: bool = False) -> int:
    runs = json.loads(path.read_text())
    total: collections.Counter = collections.Counter()
    wrong = []
    spread: list = []
    why: collections.Counter = collections.Counter()
    for name, cells in runs.items():
        tally: collections.Counter = collections.Counter()
        for members in groups(cells).values():
            for a, b in itertools.permutations(members, 2):
                # as the report judges two cells of one run (one origin), or, with --pass-bar, as if one process had
                # measured both (the rule before WORKERS_CPU)
                sa, sb = (replace(Sample.from_record(cells[x]), origin="" if pass_bar else name) for x in (a, b))
                v = judge(sa, sb, threshold)
                if v.basis == WORK:
                    tally["different work"] += 1
                    wrong.append(f"  {name}: {a} -> {b}: counts differ ({v.why})")
                    continue
                tally[v.word] += 1
                if v.word == "undecided":
                    why[re.sub(r"\d[\d.,]*", "N", v.why)[:110]] += 1
                if v.differs:
                    wrong.append(f"  {name}: {a} -> {b}: {v.word} {v.ratio:.2f}x: {v.why}")
        total.update(tally)
        for key, members in groups(cells).items():     # the worker-to-worker spread: the CPU time per pass's medians
            cpu = [statistics.median(cells[x]["cpu"]) for x in members if cells[x].get("cpu")]
            if len(cpu) > 1 and min(cpu) > 0:
                spread.append((max(cpu) / min(cpu), name, key))
        print(f"{name}: {sum(tally.values())} ordered pairs: " + ", ".join(f"{w} {n}" for w, n in sorted(tally.items())))
    print(f"all runs: {sum(total.values())} ordered pairs at threshold {threshold:g}: "
          + ", ".join(f"{w} {n}" for w, n in sorted(total.items())))
    print(f"false winners (faster/slower between identical work): {total['faster'] + total['slower']}")
    for line in wrong:
        print(line)
    spread.sort(reverse=True)
    print("CPU time per pass, the largest median over the smallest among a group's cells (one run, one worker each):")
    for ratio, name, key in spread[:8]:
        print(f"  {ratio:.2f}x  {name}: {key}")
    print(f"undecided, why (numbers blanked): {sum(why.values())}")
    for text, n in why.most_common():
        print(f"  {n:4d}  {text}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="record the runs here, then judge them")
    ap.add_argument("--runs", type=int, default=3, help="quiet runs, and as many under the competitor")
    ap.add_argument("--toggle", type=float, default=0.0, metavar="S",
                    help="also runs T1.. under one memory-bound competitor switched on and off every S seconds")
    ap.add_argument("--judge", type=Path, metavar="FIXTURE", help="judge recorded runs instead of recording")
    ap.add_argument("--clients", type=Path, metavar="OUT",
                    help="instead: one run of three clients doing the same I/O, the cost of the workers' bar")
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--pass-bar", action="store_true",
                    help="judge the cells as if one process had measured them (the pass's bar alone, no WORKERS_CPU)")
    args = ap.parse_args()
    if args.clients is not None:
        return clients(args.clients)
    if (args.out is None) == (args.judge is None):
        ap.error("give --out (record, then judge), --judge FIXTURE or --clients OUT")
    fixture = args.judge if args.judge is not None else record(args.out, args.runs, args.toggle)
    return judge_fixture(fixture, args.threshold, args.pass_bar)


if __name__ == "__main__":
    sys.exit(main())
