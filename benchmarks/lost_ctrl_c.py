"""Does the recorder make a lost Ctrl-C likelier? The Ctrl-C test's program, traced and untraced, one SIGINT each.

    PYTHONPATH=. python benchmarks/lost_ctrl_c.py [--trials 100] [--competitors 2] [--seed 1] [--wait 10] \
        [--recorder ROOT ...]

CPython drops a KeyboardInterrupt raised inside a weakref callback ("Exception ignored in: ... remove"), and h5py's
object registry runs one as each read's ids are freed: a program can lose its Ctrl-C there and run on. The program
of ``tests/trace/test_trace_signals.py`` (40,000 reads, a forked grandchild, then ``d[0]`` and a 1 ms sleep in a loop)
runs ``--trials`` times untraced and as many times traced, alternated, each getting one SIGINT (to its own pid, as a
terminal's Ctrl-C reaches it) at a random moment 0-200 ms after it says it is in its loop. A program still alive
``--wait`` s later lost its Ctrl-C (then it and its grandchild are killed by pid). The traced runs have the recorder
as ``ccp trace`` starts it (its bootstrap on PYTHONPATH, ``CCP_TRACE_DIR``) without ``ccp trace`` around it, so the
only difference is the recorder in the process. ``--recorder ROOT`` (repeatable) traces with the ``ccp`` of another
checkout (``git archive COMMIT ccp | tar -x -C ROOT``), one traced arm each; the default is this one. ``--competitors`` busy-looping processes (started here and ended by
pid) keep the cores loaded, as the test suite does.

Prints, per arm: runs, Ctrl-C lost, the exit statuses, and where the dropped KeyboardInterrupts were (the
``Exception ignored in`` lines of the program's stderr); with a two-sided Fisher exact p-value for the difference.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.trace.test_trace_signals import PROGRAM  # noqa: E402  (the test's program itself)


def _env(recorder: Path | None, parts: Path) -> dict:
    """The program's environment: untraced (``recorder`` None) or traced with the ``ccp`` under ``recorder``
    (first on PYTHONPATH: before the editable install's finder, which comes after sys.path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    env["PYTHONPATH"] = str(ROOT)
    if recorder is not None:
        env["PYTHONPATH"] = f"{recorder / 'ccp' / 'trace' / 'bootstrap'}{os.pathsep}{recorder}"
        env["CCP_TRACE_DIR"] = str(parts)
        env["CCP_TRACE_ROOT"] = str(recorder)
    return env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def trial(tmp: Path, recorder: Path | None, rng: random.Random, wait_s: float) -> tuple[bool, int | None, list[str]]:
    """One run: (Ctrl-C lost, exit status or None when killed here, the 'Exception ignored in' lines)."""
    prog = tmp / "p.py"
    parts = tmp / f"parts-{time.time_ns()}"
    errf = tmp / "err.txt"
    with open(errf, "w") as err:
        p = subprocess.Popen([sys.executable, str(prog), str(tmp / "d.h5"), "-"], stdout=subprocess.PIPE, stderr=err,
                             text=True, env=_env(recorder, parts))
    assert p.stdout is not None
    line = p.stdout.readline()
    if not line.startswith("pids"):
        p.kill()
        p.wait()
        raise RuntimeError(f"the program did not start: {line!r} {errf.read_text()[-2000:]}")
    parent, grandchild = (int(x) for x in line.split()[1:3])
    time.sleep(rng.uniform(0.0, 0.2))
    os.kill(parent, signal.SIGINT)
    try:
        status: int | None = p.wait(timeout=wait_s)
        lost = False
    except subprocess.TimeoutExpired:
        lost, status = True, None
        _kill(parent)
        p.wait()
    _kill(grandchild)
    end = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < end:
        time.sleep(0.05)
    p.stdout.close()
    ignored = [re.sub(r" at 0x[0-9a-f]+", "", ln.strip()) for ln in errf.read_text().splitlines()
               if ln.startswith("Exception ignored in")]
    for f in parts.glob("*") if parts.exists() else ():
        f.unlink()
    if parts.exists():
        parts.rmdir()
    return lost, status, ignored


def fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Fisher's exact test of the 2x2 table [[a, b], [c, d]] (two-sided, by summing tables no likelier)."""
    n1, n2, k = a + b, c + d, a + c

    def prob(x: int) -> float:
        return math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n1 + n2, k)

    p0 = prob(a)
    return min(1.0, sum(prob(x) for x in range(max(0, k - n2), min(k, n1) + 1) if prob(x) <= p0 * (1 + 1e-9)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=100, help="runs of each arm")
    ap.add_argument("--competitors", type=int, default=2, help="busy-looping processes beside the runs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait", type=float, default=10.0, help="seconds after the SIGINT before a run counts as lost")
    ap.add_argument("--recorder", type=Path, action="append", help="a checkout whose ccp traces an arm (repeatable)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    arms: list[Path | None] = [None, *(p.resolve() for p in args.recorder or [ROOT])]
    names = ["untraced", *(f"traced ({p})" for p in arms[1:])]
    competitors = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.competitors)]
    results: list[list] = [[] for _ in arms]
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="lost-ctrl-c-") as tmp:
            (Path(tmp) / "p.py").write_text(PROGRAM)
            for i in range(args.trials):
                order = list(range(len(arms)))
                rng.shuffle(order)
                for k in order:
                    results[k].append(trial(Path(tmp), arms[k], rng, args.wait))
                if (i + 1) % 10 == 0:
                    lost = ", ".join(f"{n} {sum(r[0] for r in rs)}" for n, rs in zip(names, results))
                    print(f"  {i + 1} trials: lost {lost} ({time.monotonic() - started:.0f} s; load "
                          f"{os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for c in competitors:
            c.kill()
            c.wait()
    print(f"{args.trials} trials per arm, {args.competitors} CPU competitor(s), SIGINT 0-200 ms into the loop, "
          f"lost = still running {args.wait:g} s later; {time.monotonic() - started:.0f} s, load {os.getloadavg()}")
    for name, rs in zip(names, results):
        lost = sum(r[0] for r in rs)
        statuses = collections.Counter("lost" if r[1] is None else r[1] for r in rs)
        where = collections.Counter(line for r in rs for line in r[2])
        print(f"{name}: Ctrl-C lost {lost} of {len(rs)}; exit statuses {dict(statuses)}")
        for line, n in where.most_common():
            print(f"    {n} x {line}")
    a = sum(r[0] for r in results[0])
    for name, rs in zip(names[1:], results[1:]):
        c = sum(r[0] for r in rs)
        p = fisher_two_sided(a, args.trials - a, c, args.trials - c)
        print(f"Fisher exact (two-sided) p = {p:.3g}: untraced {a}/{args.trials} vs {name} {c}/{args.trials}")


if __name__ == "__main__":
    main()
