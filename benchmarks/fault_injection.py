"""Fault injection: kill, interrupt, race and starve `ccp run`, then check nothing was lost or miscounted.

    /work/venv/bin/python benchmarks/fault_injection.py --trials 20 [--seed 1] [--kinds kill-parent,fill-work]

Each trial starts `ccp run` on a small sweep (reads and writes, 8 cells), injects one fault at a
random moment, reruns the same command to completion, and checks the invariants:

- every cell once in cells.csv, every one `ok` after the rerun;
- parts consistent with rows: a requests/io part exists exactly for the finished cells, holds only
  that cell's rows, and as many as its passes make;
- counts never smaller than the truth (a clean reference run of the same sweep);
- inputs unchanged (the sweep file);
- no temp left: no `.tmp-` file in the run folder, no lock, no scratch folder in the work folder.

Faults: kill-parent (SIGKILL to `ccp run` alone: its worker must die too), kill-worker, sigint (Ctrl-C
to the process group), concurrent (a second `ccp run` on the same --out: refused, exit 2),
fill-work and fill-out (the work folder's or --out's filesystem fills up mid-run: a small tmpfs,
root only; skipped otherwise). tests/reliability/test_faults.py runs one trial of each.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SWEEP = """
name: faults
dataset:
  generate: {shape: [16, 10, 400], dtype: "<f4", data: normal}
matrix:
  chunks: [[4, 10, 400], [1, 10, 400]]
  filters: ["gzip:1", "none"]
  cache: ["8KiB"]
  access: [{op: read, block: [1, 1, 400]}, {op: write, block: [1, 10, 400]}]
repeats: 2
cold: false
"""
KINDS = ("kill-parent", "kill-worker", "sigint", "concurrent", "fill-work", "fill-out")
COUNTS = ("raw_reads", "raw_writes", "raw_read_bytes", "raw_write_bytes")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def ccp_args(sweep: Path, out: Path, work: Path) -> list[str]:
    return [sys.executable, "-m", "ccp.cli", "run", str(sweep), "--out", str(out), "--work", str(work), "--no-report"]


def start(args, stderr_path: Path, **env) -> subprocess.Popen:
    with open(stderr_path, "wb") as err:
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env={**_env(), **env}, start_new_session=True)


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def fill(folder: Path) -> Path:
    """Fill ``folder``'s filesystem (a ballast file); returns it, for the caller to remove."""
    ballast = folder / "ballast.fault"
    with open(ballast, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError:
            pass
    return ballast


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def reference(sweep: Path, tmp: Path) -> tuple[dict, float]:
    """The truth: a clean run's counts per cell, and how long the run took."""
    import pandas as pd

    t0 = time.monotonic()
    r = subprocess.run(ccp_args(sweep, tmp / "reference", tmp / "reference-work"), capture_output=True, env=_env(),
                       timeout=600, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"reference run failed: {r.stderr.decode()[-500:]}")
    df = pd.read_csv(tmp / "reference" / "cells.csv").set_index("cell_id")
    return {cid: {c: int(df.loc[cid, c]) for c in COUNTS} for cid in df.index}, time.monotonic() - t0


def check_invariants(out: Path, work: Path, truth: dict, inputs: dict) -> list[str]:
    """Everything that must hold after a fault and a completed rerun; returns the violations."""
    import pandas as pd

    bad = []
    df = pd.read_csv(out / "cells.csv")
    if not df["cell_id"].is_unique:
        bad.append(f"cells twice in cells.csv: {df['cell_id'][df['cell_id'].duplicated()].tolist()}")
    if set(df["cell_id"]) != set(truth):
        bad.append(f"cells missing or extra: {sorted(set(truth) ^ set(df['cell_id']))}")
    notok = df[df["status"] != "ok"]
    if len(notok):
        bad.append(f"cells not ok after the rerun: {notok['status'].tolist()}")
    rows = df.set_index("cell_id")
    for cid, want in truth.items():
        if cid in rows.index:
            for c, v in want.items():
                got = rows.loc[cid, c]
                if pd.isna(got) or int(got) < v:
                    bad.append(f"{cid} {c} = {got}, smaller than the truth {v}")
    done = set(df["cell_id"][df["status"].isin(["ok", "extrapolated"])])
    for folder in ("requests.parquet", "io.parquet"):
        parts = {p.stem for p in (out / folder).glob("*.parquet")}
        if parts != done:
            bad.append(f"{folder}: parts {sorted(parts ^ done)} do not match the finished rows")
    for cid in done & {p.stem for p in (out / "requests.parquet").glob("*.parquet")}:
        part = pd.read_parquet(out / "requests.parquet" / f"{cid}.parquet")
        n = int(rows.loc[cid, "requests"])
        # the timed passes, the counted pass and, where the row says it made one, the warm-up pass (schema 6)
        passes = int(rows.loc[cid, "repeats"]) + 1 + int(pd.notna(rows.loc[cid].get("warmup_s")))
        if set(part["cell_id"]) != {cid} or len(part) != passes * (n + 2):
            bad.append(f"requests part of {cid}: {len(part)} rows of {set(part['cell_id'])}")
    for path, digest in inputs.items():
        if sha(path) != digest:
            bad.append(f"input changed: {path}")
    temps = [str(p) for p in out.rglob("*") if ".tmp-" in p.name] + [str(p) for p in out.glob(".ccp.lock")]
    temps += [str(p) for p in (work / "tmp").glob("*")] if (work / "tmp").exists() else []
    temps += [str(p) for p in work.glob("*.tmp-*")]
    if temps:
        bad.append(f"temporaries left: {temps}")
    return bad


def run_trial(kind: str, rng: random.Random, tmp: Path, sweep: Path, truth: dict, duration: float, tmpfs=None,
              hang_cell: str | None = None) -> dict:
    """One fault of ``kind`` at a random moment, a rerun, the invariants. tmpfs(size_mib, name) -> Path for fill-*.

    ``hang_cell``: that cell hangs in the faulted run (never in the rerun), so a fault always lands.
    """
    tmp.mkdir(parents=True, exist_ok=True)
    out, work = tmp / "out", tmp / "work"
    if kind == "fill-work":
        work = tmpfs(80, "workfs") / "work"     # room for the work files and complete logs, until a fault fills it
    if kind == "fill-out":
        out = tmpfs(4, "outfs") / "out"
    inputs = {sweep: sha(sweep)}
    args = ccp_args(sweep, out, work)
    delay = rng.uniform(0.2, max(0.3, duration * 0.6))
    proc = start(args, tmp / "stderr.txt", **({"CCP_FAULT_INJECT": f"{hang_cell}:hang"} if hang_cell else {}))
    note = ""
    ballast = None
    missed = False
    try:
        if kind == "concurrent":
            time.sleep(rng.uniform(0.0, min(1.0, delay)))
            second = subprocess.run(args, capture_output=True, env=_env(), timeout=600, check=False)
            note = f"second run: exit {second.returncode}"
            if second.returncode not in (0, 2):
                return {"kind": kind, "violations": [f"second concurrent run exited {second.returncode}: {second.stderr[-300:]}"]}
            if second.returncode == 2 and b"another ccp run" not in second.stderr:
                return {"kind": kind, "violations": [f"second run refused for another reason: {second.stderr[-300:]}"]}
            proc.wait(timeout=600)
        else:
            time.sleep(delay)
            if proc.poll() is not None:
                missed = True             # the run finished before the fault: the trial tests nothing
            elif kind == "kill-parent":
                workers = children(proc.pid)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                deadline = time.monotonic() + 10
                while any(_alive(w) for w in workers) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if any(_alive(w) for w in workers):
                    return {"kind": kind, "violations": ["a worker outlived its killed ccp run"]}
            elif kind == "kill-worker":
                deadline = time.monotonic() + 30      # between cells there is no worker: wait for the next
                while not (workers := children(proc.pid)) and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.01)
                killed = 0
                for w in workers:
                    try:
                        os.kill(w, signal.SIGKILL)
                        killed += 1
                    except ProcessLookupError:    # its cell ended between the listing and the kill
                        pass
                missed = not killed
                note = f"killed {killed} worker(s)"
                proc.wait(timeout=600)
            elif kind == "sigint":
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(timeout=600)
                # 130: ccp's "interrupted" line; -SIGINT: Ctrl-C while Python was still starting (before ccp ran)
                if proc.returncode not in (0, 130, -signal.SIGINT):
                    return {"kind": kind, "violations": [f"Ctrl-C: exit {proc.returncode}"]}
            elif kind in ("fill-work", "fill-out"):
                ballast = fill((work if kind == "fill-work" else out).parent)
                proc.wait(timeout=600)
                err = (tmp / "stderr.txt").read_text(errors="replace")
                if "Traceback" in err or "internal error" in err:
                    return {"kind": kind, "violations": [f"full disk: {err.strip()[-300:]}"]}
                ballast.unlink()
                ballast = None
            note = note or f"exit {proc.returncode} after {delay:.2f} s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if ballast is not None:
            ballast.unlink(missing_ok=True)
    rerun = subprocess.run(args, capture_output=True, env=_env(), timeout=600, check=False)
    if rerun.returncode != 0:
        return {"kind": kind, "note": note, "violations": [f"rerun exited {rerun.returncode}: {rerun.stderr.decode()[-300:]}"]}
    return {"kind": kind, "note": note, "missed": missed, "violations": check_invariants(out, work, truth, inputs)}


class Tmpfs:
    """Small tmpfs mounts for the fill-* faults (root only)."""

    def __init__(self, base: Path):
        self.base, self.mounts = base, []

    @staticmethod
    def available() -> bool:
        return os.geteuid() == 0 and shutil.which("mount") is not None

    def __call__(self, size_mib: int, name: str) -> Path:
        d = self.base / f"{name}-{len(self.mounts)}"
        d.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(d)], check=True, capture_output=True)
        self.mounts.append(d)
        return d

    def close(self) -> None:
        for d in self.mounts:
            subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, from {', '.join(KINDS)}")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if not Tmpfs.available():
        skipped = [k for k in kinds if k.startswith("fill-")]
        kinds = [k for k in kinds if not k.startswith("fill-")]
        if skipped:
            print(f"skipping {', '.join(skipped)}: a full disk is emulated with a tmpfs mount, which needs root")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ccp-faults-") as tmp:
        tmp = Path(tmp)
        sweep = tmp / "faults.yaml"
        sweep.write_text(SWEEP)
        truth, duration = reference(sweep, tmp)
        print(f"reference run: {len(truth)} cells in {duration:.1f} s")
        fs = Tmpfs(tmp / "mnt")
        failures = 0
        tally: dict[str, list[int]] = {}
        try:
            for t in range(args.trials):
                kind = kinds[t % len(kinds)] if t < len(kinds) else rng.choice(kinds)
                res = run_trial(kind, rng, tmp / f"trial{t}", sweep, truth, duration, fs)
                ok = not res["violations"]
                failures += not ok
                tally.setdefault(kind, [0, 0, 0])[2 if ok and res.get("missed") else 0 if ok else 1] += 1
                verdict = "ok" if ok else "VIOLATED"
                verdict += " (the run ended before the fault: not counted)" if res.get("missed") else ""
                print(f"trial {t + 1}/{args.trials} {kind}: {verdict} ({res.get('note', '')})"
                      + "".join(f"\n    {v}" for v in res["violations"]), flush=True)
        finally:
            fs.close()
    print("summary: " + ", ".join(f"{k} {v[0]} ok / {v[1]} violated / {v[2]} missed" for k, v in tally.items()))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
