"""Fault injection and fuzzing for `ccp repack` (issue 21): signals at random moments, full disks under the
output, odd HDF5 types through every filter. Prints counts of clean errors, internal errors, silent
acceptances and crashes.

    .venv/bin/python benchmarks/fault_injection_repack.py [--trials 12] [--seed 1] [--kinds signals,full-disk,odd-types]

Kinds:

- signals: `ccp repack` (and `ccp repack -o OUTDIR` on several files) gets SIGINT, SIGTERM or SIGKILL at a
  random moment of its run. Clean: exit 130 / 143 with one line saying what was kept, or -9; the input
  unchanged; OUT either absent (or as it was) or complete and equal to the input value by value; no
  temporary file left (after SIGKILL: the next repack to that OUT removes it, and succeeds).
- full-disk: OUT (or OUTDIR) on a 1 MiB tmpfs (root only; skipped otherwise) while the copy needs 0.5 to
  6 MiB. Clean: exit 2 with one line naming OUT, nothing left on the tmpfs; or, when it fits, exit 0 and
  an output equal to the input.
- odd-types: every registered filter (ccp specs and h5repack's -f keywords) on each dataset of a file of
  odd types (vlen strings and sequences, enum, compound, compound with a vlen member, array, opaque,
  bool, bitfield, object and region references, 16-bit and 128-bit floats, big-endian numbers, a NaN
  fill, a named datatype). Clean: exit 2 with one line naming the dataset and the filter, nothing
  written; or exit 0 and the output read back equal (through scaleoffset on floats: the note of its
  checked rounding).

Outcomes: clean (as above), internal (a traceback or "internal error"), silent (exit 0 with a wrong or
unreadable output, a temp file left, the input changed, a missing message), crash (death by a signal we
did not send, or no exit within the time limit).
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
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "repack"))
sys.path.insert(0, str(ROOT))

KINDS = ("signals", "full-disk", "odd-types")
H5REPACK_FORMS = ("NBIT", "SOFF=0,IN", "SOFF=2,DS", "SOFF=0,DS", "SZIP=8,NN", "GZIP=6", "SHUF", "FLET")
TIMEOUT = 180


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("CCP_DEBUG", None)
    return env


def ccp(*args) -> list[str]:
    return [sys.executable, "-m", "ccp.cli", "repack", *map(str, args)]


def sha(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def temps(folder: Path) -> list[str]:
    return sorted(p for p in os.listdir(folder) if ".ccp-tmp-" in p)


_HDF5 = threading.Lock()     # the comparison calls libhdf5 through ctypes too, outside h5py's lock: one at a time


def same_values(a: Path, b: Path) -> list[str]:
    from ccp.repack.compare import differences

    try:
        with _HDF5:
            return differences(a, b, layouts_may_differ=True)
    except Exception as exc:  # an unreadable output is the finding
        return [f"unreadable: {type(exc).__name__}: {exc}"]


def classify_exit(code: int | None, stderr: str, sent: int | None = None) -> str | None:
    """internal / crash from how the process ended, or None (judge the files)."""
    if code is None:
        return "crash"                                  # hung: killed at the time limit
    if "Traceback" in stderr or "internal error" in stderr:
        return "internal"
    if code < 0 and -code != sent:
        return "crash"
    return None


def one_line_error(stderr: str, many: bool = False) -> bool:
    """One ``ccp: ...`` line (with -o: one per failed file and a summary, and nothing else)."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    ours = [x for x in lines if x.startswith("ccp: ")]
    return bool(lines) and lines[-1].startswith("ccp: ") and (len(ours) == 1 or (many and len(ours) == len(lines)))


# ------------------------------------------------------------------ files

def make_big(path: Path, rows: int = 1500) -> Path:
    import h5py
    import numpy as np

    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("noise", data=rng.normal(size=(rows, 4000)), chunks=(50, 4000))
        f.create_dataset("ints", data=np.arange(rows * 1000, dtype="<i4").reshape(rows, 1000), chunks=(100, 1000))
        f["t"] = np.dtype("<f8")
        f.create_dataset("named", data=np.arange(2000.0), dtype=f["t"], chunks=(500,))
        f.create_dataset("names", data=np.array([f"n{i}" for i in range(500)], dtype=object),
                         dtype=h5py.string_dtype(), chunks=(100,))
    return path


def make_sized(path: Path, mib: float, seed: int) -> Path:
    """A file of incompressible data that needs about ``mib`` MiB."""
    import h5py
    import numpy as np

    n = int(mib * 2**20 / 8)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.random.default_rng(seed).normal(size=n), chunks=(min(n, 8192),))
        f.attrs["note"] = "x" * 100
    return path


# ------------------------------------------------------------------ signals

def run_signal_trial(rng: random.Random, tmp: Path, src: Path, duration: float, many: bool) -> tuple[str, str]:
    sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
    delay = rng.uniform(0.0, duration * 1.1)
    trial = Path(tempfile.mkdtemp(dir=tmp, prefix="sig-"))
    before = sha(src)
    if many:
        out_dir = trial / "outdir"
        out_dir.mkdir()
        inputs = []
        for i in range(3):
            p = trial / f"in{i}.h5"
            shutil.copy(src, p)
            inputs.append(p)
        args = ccp("-f", "GZIP=1", *inputs, "-o", out_dir, "-j", "2")
        outs = [out_dir / p.name for p in inputs]
        folder = out_dir
    else:
        out = trial / "out.h5"
        preexisting = rng.random() < 0.3
        if preexisting:
            out.write_bytes(b"an older copy")
        args = ccp("-f", "/noise:GZIP=4", "-l", "/ints:CHUNK=50x1000", "--threads", "2", src, out)
        outs, inputs, folder = [out], [src], trial
    # Ctrl-C reaches the whole process group (a terminal's ^C); SIGTERM and SIGKILL the ccp process
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=None)
    time.sleep(delay)
    try:
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = None
    label = f"{'many' if many else 'one'} {signal.Signals(sig).name} at {delay:.2f}s -> {code}"
    bad = classify_exit(code, err, sig)
    if bad == "crash" and many and code == -sig:
        bad = None
    if bad:
        return bad, f"{label}: {err.strip()[-300:]}"
    problems = []
    if any(sha(p) != before for p in inputs):
        problems.append("input changed")
    if sig == signal.SIGKILL and code == -signal.SIGKILL:
        # a killed repack leaves its temp (and, with -o, forked workers finish or die): the next run cleans up
        time.sleep(0.5)
        if not many:
            again = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
            if again.returncode != 0:
                problems.append(f"rerun after kill -9 failed: {again.stderr.strip()[-200:]}")
    elif code in (130, 143):
        if not one_line_error(err, many) or ("untouched" not in err and "complete in" not in err):
            problems.append(f"message: {err.strip()[-200:]!r}")
    elif code != 0 and code != -sig:    # -sig: it came before ccp's handler was in place (Python starting)
        problems.append(f"exit {code}: {err.strip()[-200:]}")
    deadline = time.monotonic() + 10      # after kill -9 of `-o`, its workers unwind (SIGTERM from the kernel)
    while temps(folder) and sig == signal.SIGKILL and many and time.monotonic() < deadline:
        time.sleep(0.2)
    if temps(folder):
        problems.append(f"temp left: {temps(folder)}")
    for p in outs:
        if p.exists() and p.stat().st_size > 100:
            diffs = same_values(src, p)
            if diffs:
                problems.append(f"{p.name}: {diffs[0]}")
    if code == 0 and not all(p.exists() for p in outs):
        problems.append("exit 0 without the output")
    shutil.rmtree(trial, ignore_errors=True)
    return ("silent", f"{label}: {'; '.join(problems)}") if problems else ("clean", label)


# ------------------------------------------------------------------ full disk

class Tmpfs:
    """Small tmpfs mounts (root only)."""

    def __init__(self, base: Path):
        self.base, self.mounts, self.count = base, [], 0

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            return False
        probe = Path(tempfile.mkdtemp(prefix="ccp-tmpfs-probe-"))
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)], capture_output=True)
        if done.returncode == 0:
            subprocess.run(["umount", str(probe)], capture_output=True)
        probe.rmdir()
        return done.returncode == 0

    def __call__(self, size_mib: int, name: str) -> Path:
        self.count += 1
        d = self.base / f"{name}-{self.count}"
        d.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(d)], check=True,
                       capture_output=True)
        self.mounts.append(d)
        return d

    def close(self) -> None:
        for d in self.mounts:
            subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)
        self.mounts = []


def run_full_disk_trial(rng: random.Random, tmp: Path, fs: Tmpfs, i: int) -> tuple[str, str]:
    mib = rng.choice([0.3, 0.6, 0.9, 1.2, 2, 6])
    src = make_sized(tmp / f"full{i}.h5", mib, i)
    before = sha(src)
    mount = fs(1, "outfs")
    many = rng.random() < 0.3
    opts = rng.choice([[], ["-f", "GZIP=1"], ["-f", "NONE"], ["-l", "CHUNK=4096"], ["-f", "shuffle+fletcher32"]])
    if many:
        args = ccp(*opts, src, "-o", mount, "-j", "1")
        out = mount / src.name
    else:
        out = mount / "out.h5"
        args = ccp(*opts, src, out)
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    label = f"{mib} MiB {'-o' if many else 'IN OUT'} {' '.join(opts) or '(copy)'} -> {done.returncode}"
    bad = classify_exit(done.returncode, done.stderr)
    problems = []
    if bad:
        result = (bad, f"{label}: {done.stderr.strip()[-300:]}")
    else:
        if sha(src) != before:
            problems.append("input changed")
        if done.returncode == 0:
            diffs = same_values(src, out) if out.exists() else ["no output"]
            if diffs:
                problems.append(diffs[0])
        else:
            if done.returncode != 2 or not one_line_error(done.stderr, many):
                problems.append(f"exit {done.returncode}: {done.stderr.strip()[-200:]!r}")
            left = [p for p in os.listdir(mount) if p != "lost+found"]
            if left:
                problems.append(f"left on the full disk: {left}")
        result = ("silent", f"{label}: {'; '.join(problems)}") if problems else ("clean", label)
    fs.close()
    src.unlink()
    return result


# ------------------------------------------------------------------ odd types x filters

def run_odd_case(src: Path, folder: Path, dset: str, spec: str) -> tuple[str, str]:
    folder = Path(tempfile.mkdtemp(dir=folder, prefix="case-"))     # its own: cases run two at a time
    out = folder / "out.h5"
    before = sha(src)
    try:
        done = subprocess.run(ccp("-f", f"{dset}:{spec}", src, out), env=_env(), capture_output=True, text=True,
                              timeout=TIMEOUT)
        code: int | None = done.returncode
        err, stdout = done.stderr, done.stdout
    except subprocess.TimeoutExpired:
        code, err, stdout = None, "timeout", ""
    label = f"{spec} on {dset} -> {code}"
    bad = classify_exit(code, err)
    problems = []
    if bad:
        out.unlink(missing_ok=True)
        return bad, f"{label}: {err.strip()[-300:]}"
    if sha(src) != before:
        problems.append("input changed")
    if code == 0:
        diffs = same_values(src, out) if out.exists() else ["no output"]
        lossy = "lossy filter" in stdout and ("scaleoffset" in spec or "SOFF" in spec)
        if diffs and not lossy:
            problems.append(diffs[0])
    elif code == 2:
        if not one_line_error(err) or dset not in err:
            problems.append(f"message: {err.strip()[-200:]!r}")
        if out.exists():
            problems.append("refused but OUT written")
    else:
        problems.append(f"exit {code}: {err.strip()[-200:]}")
    if temps(folder):
        problems.append(f"temp left: {temps(folder)}")
    out.unlink(missing_ok=True)
    kind = "clean" if not problems else "silent"
    return kind, f"{label}: {'; '.join(problems) or ('refused' if code == 2 else 'round trip')}"


def run_odd_types(tmp: Path, jobs: int) -> list[tuple[str, str]]:
    from odd_types import filter_specs, make_odd_types_file

    folder = tmp / "odd"
    folder.mkdir()
    src = folder / "odd.h5"
    datasets = make_odd_types_file(src)
    specs = filter_specs() + list(H5REPACK_FORMS)
    cases = [(d, s) for s in specs for d in datasets]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda c: run_odd_case(src, folder, *c), cases))


# ------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12, help="signal and full-disk trials each")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="odd-types cases at once")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, from {', '.join(KINDS)}")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case, not only the unclean ones")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    rng = random.Random(args.seed)
    tally: dict[str, Counter] = {}
    findings: list[str] = []

    def record(kind: str, outcome: tuple[str, str]) -> None:
        tally.setdefault(kind, Counter())[outcome[0]] += 1
        if outcome[0] != "clean" or args.verbose:
            findings.append(f"[{kind}] {outcome[0]}: {outcome[1]}")
            print(findings[-1], flush=True)

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="ccp-repack-faults-") as tmp_name:
        tmp = Path(tmp_name)
        if "signals" in kinds:
            src = make_big(tmp / "big.h5")
            t0 = time.perf_counter()
            subprocess.run(ccp("-q", "-f", "/noise:GZIP=4", "-l", "/ints:CHUNK=50x1000", "--threads", "2", src,
                               tmp / "ref.h5"), env=_env(), check=True)
            duration = time.perf_counter() - t0
            (tmp / "ref.h5").unlink()
            print(f"signals: a full repack of {src.stat().st_size / 2**20:.0f} MiB takes {duration:.1f} s here")
            for i in range(args.trials):
                record("signals", run_signal_trial(rng, tmp, src, duration, many=i % 4 == 3))
        if "full-disk" in kinds:
            if not Tmpfs.available():
                print("skipping full-disk: a full disk is emulated with a tmpfs mount, which needs root")
            else:
                fs = Tmpfs(tmp / "mnt")
                try:
                    for i in range(args.trials):
                        record("full-disk", run_full_disk_trial(rng, tmp, fs, i))
                finally:
                    fs.close()
        if "odd-types" in kinds:
            for outcome in run_odd_types(tmp, args.jobs):
                record("odd-types", outcome)
    print()
    print(f"{'kind':<10} {'cases':>6} {'clean':>6} {'internal':>9} {'silent':>7} {'crash':>6}")
    total: Counter = Counter()
    for kind, counts in tally.items():
        total.update(counts)
        print(f"{kind:<10} {sum(counts.values()):>6} {counts['clean']:>6} {counts['internal']:>9} "
              f"{counts['silent']:>7} {counts['crash']:>6}")
    print(f"{'all':<10} {sum(total.values()):>6} {total['clean']:>6} {total['internal']:>9} {total['silent']:>7} "
          f"{total['crash']:>6}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sys.exit(1 if total["internal"] or total["silent"] or total["crash"] else 0)


if __name__ == "__main__":
    main()
