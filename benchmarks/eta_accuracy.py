"""How true is `ccp run`'s ETA through a long run? (issue 22: "within 1.5x of the truth; updates at least every
few seconds; no '0 ns left'").

Runs one sweep under a pseudo-terminal (the status line and its ticker only draw on a terminal), timestamps every
redraw of the status line, and once the sweep has ended compares each "sweep X left" with the time that was really
left (the sweep's end minus the moment of the line). Prints the worst ratio predicted / actual remaining over the
run (and over the part with at least a minute left, where a few seconds of overhead cannot dominate), the longest
gap between redraws, the longest silence before the first status line, whether any line said "0 ns", and the load
average while it ran.

A line that says "ETA estimating" (too little of the model's prices measured yet to correct them) gives no number:
it is counted apart, neither right nor wrong, with the longest stretch of such lines; it is still a redraw, so the
gaps between redraws include it.

    .venv/bin/python benchmarks/eta_accuracy.py configs/cris.yaml --scale 0.71 --events results/cris-events.jsonl
    .venv/bin/python benchmarks/eta_accuracy.py configs/quickstart.yaml --log results/eta-quickstart.tsv
    .venv/bin/python benchmarks/eta_accuracy.py --replay results/cris-events.jsonl
    .venv/bin/python benchmarks/eta_accuracy.py --replay results/cris-events.jsonl --pace-change 0.4:2
    .venv/bin/python benchmarks/eta_accuracy.py --replay results/cris-events.jsonl --passes

The run folder and work files go to a temporary folder (removed at the end) unless --out / --work are given;
--log writes every (elapsed, eta, actual, line) as a TSV. The sweep runs with --no-report: the ETA covers the
sweep, not the page written after it. --events saves what the ETA was told (each cell's prediction, the worker's
reports, each cell's end, timed) and --replay re-scores this code's ETA on them without rerunning the sweep: the
line after every report and every 2 s within a cell, as the ticker draws it, from the ETA's start (after the sweep's
data is made, so its times are a few seconds short of the live run's) to the last cell's end. A replay tunes the
estimator cheaply; the figures to quote are a live run's. --pace-change AT:FACTOR replays a run as if the machine's
pace had changed at AT of it (every second after it taking FACTOR seconds) and scores the lines from a minute after
the change apart: how fast the ETA catches up. --passes [MIN_S] (with --replay) also prints the passes of each cell
whose passes took MIN_S (default 1) seconds or more on average, from its reports: how long each took and its counted pass against its timed ones (the
counted pass runs to the cell's end: reading its log and writing the cell's parts are its cost too).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ccp.run.eta import ESTIMATING, EVENTS_ENV, TICK_S

ROOT = Path(__file__).resolve().parents[1]
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
SWEEP_LEFT = re.compile(r"sweep (<1 s|(?:(\d+) h )?([\d.]+) (ns|us|ms|s|min)) left")
MIN_LEFT_S = 60.0      # the headline figure: lines with at least this much really left


def seconds_of(match: re.Match) -> float:
    if match.group(1) == "<1 s":
        return 0.5
    hours = float(match.group(2) or 0)
    return hours * 3600 + float(match.group(3)) * UNITS[match.group(4)]


def run_under_pty(args: list[str], env: dict,
                  arrivals: list[float] | None = None) -> tuple[list[tuple[float, str]], float, int, list[float]]:
    """Run ``args`` with stdout and stderr on a pty; returns ([(seconds since start, line)], seconds to exit, exit
    status, load averages sampled once a second). A line's time is when it ended (its "\r" or newline): a status
    line is on the screen from its first byte, which ``arrivals`` (if given) gets, the time of every read."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    lines: list[tuple[float, str]] = []
    loads: list[float] = []
    buf = b""
    last_load = 0.0
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:          # EIO: the child closed the terminal
                break
            if not chunk:
                break
            now = time.monotonic() - t0
            if arrivals is not None:
                arrivals.append(now)
            buf += chunk
            *parts, buf = re.split(rb"[\r\n]", buf)
            lines += [(now, p.decode(errors="replace").strip()) for p in parts if p.strip()]
            if now - last_load >= 1.0:
                loads.append(os.getloadavg()[0])
                last_load = now
    finally:
        code = proc.wait()
        end = time.monotonic() - t0
        os.close(master)
    if buf.strip():
        lines.append((end, buf.decode(errors="replace").strip()))
    return lines, end, code, loads


def paced(events: list[dict], at: float, factor: float) -> list[dict]:
    """The same run as if every second after ``at`` (a fraction of the run) had taken ``factor`` seconds: the machine's
    pace changing within a run, on a saved run's events (``--pace-change``)."""
    t0 = at * max(ev["t"] for ev in events)

    def warped(t: float) -> float:
        return t if t <= t0 else t0 + (t - t0) * factor

    out = []
    for ev in events:
        t = ev["t"]
        ev = {**ev, "t": round(warped(t), 4)}
        if ev["call"] == "cell_done" and ev["args"][1] is not None:     # the seconds the worker measured, warped too
            k, measured = ev["args"]
            ev["args"] = [k, warped(t) - warped(t - measured)]
        out.append(ev)
    return out


def replay(events_file: str, tick_s: float = TICK_S,
           pace_change: tuple[float, float] | None = None) -> tuple[list[tuple[float, str]], float]:
    """Re-run the ETA of a saved run on its events (``--events``): the status line's ETA text after every worker
    report and every ``tick_s`` seconds within a cell, as the live line draws it; returns ([(seconds, line)], the
    sweep's end: its last cell done)."""
    from ccp.run.eta import EtaClock

    try:
        events = [json.loads(ln) for ln in Path(events_file).read_text().splitlines() if ln.strip()]
        ok = bool(events) and all(isinstance(ev, dict) and {"t", "call", "args"} <= set(ev) for ev in events)
        if ok and pace_change is not None:
            events = paced(events, *pace_change)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"eta_accuracy: --replay {events_file}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if not ok or events[0]["call"] != "__init__":
        print(f"eta_accuracy: --replay {events_file}: not an events file of --events (predictions first, then "
              "{t, call, args} lines)", file=sys.stderr)
        raise SystemExit(2)
    now = [0.0]
    eta = EtaClock(*events[0]["args"], clock=lambda: now[0])
    lines: list[tuple[float, str]] = []
    in_cell, next_tick = False, tick_s
    for ev in events[1:]:
        while in_cell and next_tick < ev["t"]:
            now[0] = next_tick
            lines.append((next_tick, "[" + eta.describe()))
            next_tick += tick_s
        now[0] = ev["t"]
        getattr(eta, ev["call"])(*ev["args"])
        if ev["call"] == "begin_cell":
            in_cell, next_tick = True, ev["t"] + tick_s
        elif ev["call"] == "cell_done":
            in_cell = False
        elif ev["call"] == "progress":
            lines.append((ev["t"], "[" + eta.describe()))
    end = max((ev["t"] for ev in events if ev["call"] == "cell_done"), default=now[0])
    return lines, end


def cell_passes(events: list[dict]) -> list[tuple[int, list[tuple[str, float]]]]:
    """[(cell, [(stage, seconds)])] of every cell whose worker reported its passes (request 0 starts one); a cell's last
    pass runs to its cell_done."""
    out: list[tuple[int, list[tuple[str, float]]]] = []
    starts: list[tuple[str, float]] = []
    for ev in events:
        if ev["call"] == "begin_cell":
            starts = []
        elif ev["call"] == "progress" and ev["args"][1] == 0:
            starts.append((ev["args"][0], ev["t"]))
        elif ev["call"] == "cell_done" and starts:
            ends = [t for _, t in starts[1:]] + [ev["t"]]
            out.append((ev["args"][0], [(stage, end - t) for (stage, t), end in zip(starts, ends)]))
    return out


def passes_text(events: list[dict], min_s: float = 1.0) -> list[str]:
    """A line per cell whose passes took ``min_s`` or more on average: each pass's seconds, and the counted pass over
    the last and the mean timed pass."""
    lines = []
    for k, passes in cell_passes(events):
        if statistics.fmean(s for _, s in passes) < min_s:
            continue
        timed = [s for stage, s in passes if stage == "timed pass"]
        counted = [s for stage, s in passes if stage == "counted pass"]
        text = ", ".join(f"{stage} {s:.1f} s" for stage, s in passes)
        if timed and counted:
            text += (f"; counted / last timed {counted[-1] / timed[-1]:.2f}x, / mean timed "
                     f"{counted[-1] / statistics.fmean(timed):.2f}x")
        lines.append(f"cell {k}: {text}")
    return lines


def estimating_stretches(status: list[tuple[float, str]], end: float) -> list[float]:
    """The lengths of the runs of consecutive "estimating" lines: from the first such line to the next line that
    is not one (or the sweep's end)."""
    out, since = [], None
    for t, ln in status:
        if ESTIMATING in ln:
            since = t if since is None else since
        elif since is not None:
            out.append(t - since)
            since = None
    if since is not None:
        out.append(end - since)
    return out


def score(status: list[tuple[float, str]], sweep_end: float, changed_at: float | None = None) -> None:
    samples = []
    for t, ln in status:
        m = SWEEP_LEFT.search(ln)
        if m:
            samples.append((t, seconds_of(m), sweep_end - t, ln))
    gaps = [b - a_ for (a_, _), (b, _) in zip(status, status[1:])]
    zero = [ln for _, ln in status if re.search(r"\b0 ns\b", ln)]
    stretches = estimating_stretches(status, sweep_end)
    print(f"{len(status)} status lines, {len(samples)} with a sweep ETA, "
          f"{sum(ESTIMATING in ln for _, ln in status)} saying '{ESTIMATING}' (no number: not counted as right or "
          f"wrong below) in {len(stretches)} stretch(es), the longest {max(stretches, default=0.0):.1f} s")
    if gaps:
        print(f"redraws: median gap {statistics.median(gaps):.1f} s, longest {max(gaps):.1f} s")
    print(f"'0 ns' on a status line: {len(zero)}" + (f" (first: {zero[0]!r})" if zero else ""))
    first = next((t for t, _, _, ln in samples if "measured)" in ln), None)
    print("the first line corrected by a measurement: " + (f"at {first:.0f} s" if first is not None else "none")
          + f" (before it, '{ESTIMATING}' or the model's prices alone)")
    groups = [("every line", 1.0, 0.0), (f"lines with >= {MIN_LEFT_S:.0f} s really left", MIN_LEFT_S, 0.0),
              (f"corrected lines with >= {MIN_LEFT_S:.0f} s really left", MIN_LEFT_S,
               first if first is not None else float("inf"))]
    if changed_at is not None:
        groups.append((f"lines with >= {MIN_LEFT_S:.0f} s really left from a minute after the pace changed",
                       MIN_LEFT_S, changed_at + 60.0))
    for label, floor, since in groups:
        rs = [(eta / actual, t, eta, actual) for t, eta, actual, _ in samples if actual >= floor and t >= since]
        if not rs:
            print(f"{label}: no sample")
            continue
        hi, lo = max(rs), min(rs)
        worst = max(hi[0], 1 / lo[0])
        within = sum(1 / 1.5 <= r <= 1.5 for r, *_ in rs)
        print(f"{label} ({len(rs)}): predicted/actual remaining from {lo[0]:.2f} (at {lo[1]:.0f} s: said "
              f"{lo[2]:.0f} s, {lo[3]:.0f} s left) to {hi[0]:.2f} (at {hi[1]:.0f} s: said {hi[2]:.0f} s, {hi[3]:.0f} s "
              f"left); worst {worst:.2f}x; {within}/{len(rs)} within 1.5x")


def silence_before_the_first_status_line(arrivals: list[float], status: list[tuple[float, str]]) -> str:
    """The longest time with nothing written to the terminal from the start to the first status line (the sweep
    engine's imports, the calibration, the first work files: audit22 A2 found 8-30 s of it); "redraws" count after
    it. ``arrivals``: when each read of the terminal's output returned."""
    if not status:
        return "no status line"
    first = status[0][0]
    times = [0.0] + [t for t in arrivals if t <= first]
    gaps = [b - a for a, b in zip(times, times[1:])]
    return (f"before the first status line (ended at {first:.1f} s): first output at {times[1]:.1f} s, the "
            f"longest silence {max(gaps, default=0.0):.1f} s")


def write_log(path: str, status: list[tuple[float, str]], sweep_end: float) -> None:
    with open(path, "w") as fh:
        fh.write("elapsed_s\teta_s\tactual_left_s\tline\n")
        for t, ln in status:
            m = SWEEP_LEFT.search(ln)
            eta = f"{seconds_of(m):.1f}" if m else ""
            fh.write(f"{t:.2f}\t{eta}\t{sweep_end - t:.1f}\t{ln}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", nargs="?", help="the sweep to run (not with --replay)")
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="run folder to keep (default: a temporary one)")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--log", default=None, help="write every (elapsed, eta, actual, line) here as TSV")
    ap.add_argument("--events", default=None, help="save the ETA's events of the run here (for --replay)")
    ap.add_argument("--replay", default=None, help="score the ETA of this code on a saved run's events, not a new run")
    ap.add_argument("--passes", nargs="?", type=float, const=1.0, default=None, metavar="MIN_S",
                    help="with --replay: print the passes of each cell whose passes took MIN_S (default 1) seconds or "
                         "more on average, its counted pass against its timed ones")
    ap.add_argument("--pace-change", default=None, metavar="AT:FACTOR",
                    help="with --replay: as if every second after AT (a fraction of the run, e.g. 0.4) took FACTOR "
                         "seconds (2: the machine's pace halves)")
    a = ap.parse_args(argv)
    change = None
    if a.pace_change:
        try:
            at, factor = (float(x) for x in a.pace_change.split(":"))
        except ValueError:
            ap.error(f"--pace-change: expected AT:FACTOR (e.g. 0.4:2), got {a.pace_change!r}")
        if not (0 < at < 1 and 0 < factor < 100):
            ap.error(f"--pace-change: AT between 0 and 1 and FACTOR between 0 and 100, got {a.pace_change!r}")
        change = (at, factor)
    if a.replay:
        status, sweep_end = replay(a.replay, pace_change=change)
        changed_at = None
        if change is not None:      # where the change falls on the replay's clock
            changed_at = change[0] * max(json.loads(ln)["t"] for ln in Path(a.replay).read_text().splitlines() if ln.strip())
        print(f"replay of {a.replay}" + (f", every second from {changed_at:.0f} s taking {change[1]:g} s" if change else "")
              + f": sweep {sweep_end:.0f} s (the events' load is in the run's own output)")
        score(status, sweep_end, changed_at)
        if a.passes is not None:
            saved = [json.loads(ln) for ln in Path(a.replay).read_text().splitlines() if ln.strip()]
            print("\n".join(passes_text(saved, a.passes)) or f"no cell's passes took {a.passes:g} s or more")
        if a.log:
            write_log(a.log, status, sweep_end)
        return 0
    if not a.sweep:
        ap.error("a sweep to run, or --replay FILE")
    tmp = Path(tempfile.mkdtemp(prefix="ccp-eta-"))
    try:
        out = Path(a.out) if a.out else tmp / "out"
        work = Path(a.work) if a.work else tmp / "work"
        args = [str(ROOT / ".venv" / "bin" / "ccp"), "run", a.sweep, "--out", str(out), "--work", str(work), "--no-report"]
        if a.scale:
            args += ["--scale", str(a.scale)]
        if a.quick:
            args.append("--quick")
        env = {**os.environ, "COLUMNS": "400", "LINES": "50"}
        if a.events:
            Path(a.events).unlink(missing_ok=True)
            env[EVENTS_ENV] = str(Path(a.events).resolve())
        load0 = os.getloadavg()[0]
        arrivals: list[float] = []
        lines, end, code, loads = run_under_pty(args, env, arrivals)
    finally:
        if not a.out or not a.work:
            shutil.rmtree(tmp, ignore_errors=True)
    status = [(t, ln) for t, ln in lines if ln.startswith("[")]
    # the sweep ends when its last status line is cleared; what follows (the summary) is not the sweep's
    sweep_end = max((t for t, _ in status), default=end)
    sweep_end = min(end, sweep_end + 2.0)
    print(f"ccp run exit {code}; {end:.0f} s wall (sweep {sweep_end:.0f} s)")
    print(f"load average: {load0:.1f} at the start, median {statistics.median(loads or [load0]):.1f}, "
          f"max {max(loads or [load0]):.1f} on {os.cpu_count()} CPUs")
    print(silence_before_the_first_status_line(arrivals, status))
    score(status, sweep_end)
    if a.log:
        write_log(a.log, status, sweep_end)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
