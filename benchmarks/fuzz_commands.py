"""Fault-and-fuzz suite for the newer commands: bad inputs and faults against trace, diagnose, from-darshan,
tune, the S3 axes and repack, each run as a user runs it (`python -m ccp.cli ...` in a subprocess).

    /work/venv/bin/python benchmarks/fuzz_commands.py [--seed 1] [--only from-darshan,repack] [--timeout 120]
                                                      [--signals 3] [--verbose] [--json out.json]

Every case says what a careful tool does with it (``refuse``: one line ``ccp: error: ...``, exit 2, nothing
written; ``accept``: exit 0 and a right answer; ``either``; ``interrupt``: exit 130 or the signal, with the
command's own line) and is classified as one of:

  clean       refused as promised (one ``ccp: error:`` line, exit 2) or, when it may run, run right
  internal    ``ccp: internal error: ...`` (exit 1): a bug the CLI caught
  traceback   a Python traceback on stderr
  signal      the process died of a signal (SIGSEGV, SIGABRT, SIGFPE, ...)
  hang        still running at --timeout: killed
  accepted    exit 0 for an input that should have been refused, or a wrong answer (silent acceptance)
  untidy      refused or stopped, but: more than one line, another exit status, a result or a temporary
              file left, an input modified, a process left running, or the wrong Ctrl-C line

Damaged Darshan logs are made from the real logs pydarshan ships (IOR and MACSio, written by Darshan
itself); damaged trace folders from a real trace of a small program; HDF5 oddities with h5py. Faults:
SIGINT/SIGTERM at a random moment (seeded) in trace, tune and repack; a full disk (a 1 MiB tmpfs, root only,
else skipped) under each command's output. Prints one table of counts per command; exit status 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
FIX = Path()                            # the fixtures folder, set by main()
STDERR: dict = {}                      # (command, case) -> the tail of stderr of a case that was not clean
CATEGORIES = ("clean", "internal", "traceback", "signal", "hang", "accepted", "untidy")


@dataclass
class Case:
    id: str
    command: str                        # the row of the table: trace, diagnose, from-darshan, tune, s3-axes, repack
    argv: list                          # after `ccp`; {W} is the case's own folder, {F} the shared fixtures
    expect: str = "refuse"              # refuse | accept | either | interrupt
    setup: object = None                # setup(W) before the run
    verify: object = None               # verify(W, proc) -> a problem (str) or None, after the run
    outputs: tuple = ()                 # paths (with {W}) that must not exist after a refusal
    sig: tuple | None = None            # (signal, seconds after start) for the interrupt cases; more pairs: sent in turn
    to: str = "auto"                    # who gets it: "group" (a terminal's Ctrl-C), "ccp" (kill PID); auto: SIGINT group
    env: dict = field(default_factory=dict)
    root_only: bool = False
    status: int = 0                     # the exit status of a right run (trace passes the program's through)


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("CCP_DEBUG", None)
    return {**env, **extra}


def sha_tree(folder: Path) -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# ---------------------------------------------------------------- fixtures (made once, read-only to the cases)

PROG = """\
import os, signal, sys, time
import h5py
def say_pids(pids):                    # the harness's orphan check reads them
    if len(sys.argv) > 2:
        open(sys.argv[2] + ".tmp", "w").write(" ".join(map(str, pids)))
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])
if os.environ.get("IGNORE_INT"):       # a program that ignores Ctrl-C: only a second one (a kill) stops it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
say_pids([os.getpid()])
mode = os.environ.get("MODE", "r")
try:                                   # a well-behaved program: Ctrl-C is exit 130, not a traceback of its own
    with h5py.File(sys.argv[1], mode) as f:
        d = f["d"]
        if os.environ.get("FORK"):     # a child that only sleeps: it too must not outlive ccp trace
            child = os.fork()
            if child == 0:
                try:
                    while True:
                        time.sleep(0.05)
                except KeyboardInterrupt:
                    os._exit(130)
            say_pids([os.getpid(), child])
        for i in range(int(os.environ.get("N", "200"))):
            if mode == "r":
                d[i % d.shape[0], :]
            else:
                d[i % d.shape[0], :] = i
            if os.environ.get("SLOW"):
                time.sleep(float(os.environ["SLOW"]))
except KeyboardInterrupt:
    sys.exit(130)
print("prog done")
"""

WORKLOAD = """\
name: fz
dataset: {generate: {shape: [32, 16, 16], dtype: "<f4"}}
workload:
  - {access: {op: read, block: [32, 1, 1]}, weight: 1}
  - {access: {op: read, block: [1, 16, 16]}, weight: 1}
constraints: {cache_nbytes: 16KiB, max_chunk_bytes: 16KiB}
"""

S3_SWEEP = """\
name: fz3
s3: local
dataset:
  path: /x
  generate: {shape: [8, 16], dtype: "<f4", data: normal, seed: 0}
matrix:
  chunks: [[4, 16]]
  cache: ["1MiB"]
  access: [{op: read, block: [1, 16]}]
  storage: [s3]
repeats: 1
"""


def make_fixtures(f: Path) -> dict:
    import h5py
    import numpy as np

    f.mkdir(parents=True, exist_ok=True)
    (f / "prog.py").write_text(PROG)
    with h5py.File(f / "data.h5", "w") as h:
        h.create_dataset("d", data=np.arange(48, dtype="f4").reshape(8, 6), chunks=(4, 6))
    with h5py.File(f / "odd.h5", "w") as h:
        h.create_dataset("f", data=np.arange(64, dtype="f8").reshape(8, 8), chunks=(4, 8), fillvalue=np.nan)
        h.create_dataset("s", data=np.array(["ab", "cde", "f"] * 4, dtype=h5py.string_dtype()), chunks=(4,))
        h.create_dataset("i", data=np.arange(64, dtype="i4").reshape(8, 8), chunks=(4, 8))
        h["T"] = np.dtype("<f4")                          # a committed (named) datatype
        h.create_dataset("named", data=np.ones((8, 8), "f4"), dtype=h["T"], chunks=(4, 8))
        h.create_dataset("scalar", data=1.5)
        h.create_dataset("empty", shape=None, dtype="f4")
    with h5py.File(f / "big.h5", "w") as h:               # a repack that takes a moment: room for a signal
        h.create_dataset("d", data=np.random.default_rng(0).random((4096, 4096), "f4"), chunks=(64, 4096))
    (f / "workload.yaml").write_text(WORKLOAD)
    (f / "s3.yaml").write_text(S3_SWEEP)
    (f / "text.txt").write_text("not hdf5\n")
    r = subprocess.run([PY, "-m", "ccp.cli", "trace", "-o", str(f / "trace"), "--", PY, str(f / "prog.py"),
                        str(f / "data.h5")], capture_output=True, env=_env(), timeout=300, check=False)
    if r.returncode != 0:
        raise SystemExit(f"could not make the fixture trace: {r.stderr.decode()[-400:]}")
    try:
        import darshan
        logs = Path(darshan.__file__).parent / "examples" / "example_logs"
        for name in ("ior_hdf5_example.darshan", "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"):
            shutil.copy(logs / name, f / ("ior.darshan" if name.startswith("ior") else "macsio.darshan"))
    except ImportError:
        pass
    return sha_tree(f)


# ---------------------------------------------------------------- the cases, per command

def trace_cases(rng: random.Random, n_signals: int) -> list[Case]:
    run = ["--", PY, "{F}/prog.py", "{F}/data.h5"]
    cases = [
        Case("out-empty", "trace", ["trace", "-o", "", *run]),
        Case("out-is-a-file", "trace", ["trace", "-o", "{F}/text.txt", *run]),
        Case("no-program", "trace", ["trace", "-o", "{W}/t"], outputs=("{W}/t",)),
        Case("program-not-found", "trace", ["trace", "-o", "{W}/t", "--", "/no/such/program"], outputs=("{W}/t/trace.json",)),
        Case("existing-trace", "trace", ["trace", "-o", "{W}/t", *run],
             setup=lambda w: shutil.copytree(FIX / "trace", w / "t"),
             verify=lambda w, p: None if (w / "t" / "trace.json").read_bytes() == (FIX / "trace" / "trace.json").read_bytes()
             else "an existing trace was replaced without --force"),
        Case("program-fails", "trace", ["trace", "-o", "{W}/t", "--", PY, "-c", "import sys; sys.exit(7)"], expect="accept",
             status=7),
        Case("program-writes", "trace", ["trace", "-o", "{W}/t", "--", PY, "{F}/prog.py", "{W}/copy.h5"], expect="accept",
             setup=lambda w: shutil.copy(FIX / "data.h5", w / "copy.h5"), env={"MODE": "r+"},
             verify=lambda w, p: None if b"prog done" in p.stdout else "the program's output was lost"),
        # The program must run untouched (its output whole); ccp trace then either keeps a trace that says it is
        # incomplete (the program's exit status) or, when not even trace.json fits, says so in one line, exit 2.
        Case("out-full-disk", "trace", ["trace", "-o", "{W}/fs/t", *run], expect="either", root_only=True,
             setup=lambda w: _fill(w / "fs"), outputs=("{W}/fs/t/trace.json",),
             verify=lambda w, p: None if b"prog done" in p.stdout and p.returncode in (0, 2)
             else f"the program's run changed: exit {p.returncode}, stdout {p.stdout[-80:]!r}"),
    ]
    # Ctrl-C of the terminal (the group), SIGTERM and Ctrl-C of ccp trace alone, Ctrl-C three times on a program that
    # ignores it (the third sends SIGTERM), kill -9 of ccp trace: never an orphan, and what was recorded is kept, readable, marked incomplete.
    kinds = (("sigint", ((signal.SIGINT, 0),), "group", {}), ("sigterm", ((signal.SIGTERM, 0),), "ccp", {}),
             ("sigint-ccp-fork", ((signal.SIGINT, 0),), "ccp", {"FORK": "1"}),
             ("ctrl-c-thrice", ((signal.SIGINT, 0), (signal.SIGINT, 1.0), (signal.SIGINT, 2.0)), "group",
              {"IGNORE_INT": "1", "FORK": "1"}),
             ("kill-9", ((signal.SIGKILL, 0),), "ccp", {"FORK": "1"}))
    for i in range(n_signals):
        for name, sigs, to, env in kinds:
            at = rng.uniform(0.5, 4.0)
            cases.append(Case(f"{name}-{i}", "trace", ["trace", "-o", "{W}/t", "--", PY, "{F}/prog.py", "{F}/data.h5",
                                                       "{W}/pid"],
                              expect="interrupt", sig=tuple((sg, at + dt) for sg, dt in sigs), to=to,
                              env={"SLOW": "0.01", "N": "1000", **env}, verify=_trace_kept))
    return cases


def _no_orphan(w: Path, p) -> str | None:
    pid_file = w / "pid"
    if not pid_file.exists():
        return None
    pids = [int(x) for x in pid_file.read_text().split()]
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return f"the traced program's process(es) {left} outlived ccp trace" if left else None


def _trace_kept(w: Path, p) -> str | None:
    """No orphan; and once the program ran (it wrote its pid), a stopped ccp trace kept a readable trace that
    says it is incomplete, its header's call count that of its calls.parquet."""
    problem = _no_orphan(w, p)
    if problem or not (w / "pid").exists() or not getattr(p, "signalled", False):
        return problem
    head = w / "t" / "trace.json"
    if not head.exists():
        return "the program ran, but no trace.json was kept"
    import pyarrow.parquet as pq

    h = json.loads(head.read_text())
    if h.get("completeness", {}).get("complete") is not False:
        return "a stopped trace does not say it is incomplete"
    table = pq.read_table(w / "t" / "calls.parquet", columns=["kind", "depth"]).to_pandas()
    n = int(((table["kind"] == "call") & (table["depth"] == 0)).sum())
    return None if n == h.get("calls") else f"trace.json says {h.get('calls')} calls, calls.parquet holds {n}"


def _damage_trace(kind: str):
    def setup(w: Path) -> None:
        import pyarrow.parquet as pq

        t = w / "t"
        shutil.copytree(FIX / "trace", t)
        header = json.loads((t / "trace.json").read_text())
        calls = t / "calls.parquet"
        if kind == "no-calls":
            calls.unlink()
        elif kind == "calls-truncated":
            calls.write_bytes(calls.read_bytes()[: calls.stat().st_size // 2])
        elif kind == "calls-empty-file":
            calls.write_bytes(b"")
        elif kind == "calls-garbage":
            calls.write_bytes(random.Random(3).randbytes(5000))
        elif kind == "no-header":
            (t / "trace.json").unlink()
        elif kind in ("header-list", "header-null", "header-string", "header-garbage"):
            (t / "trace.json").write_text({"header-list": "[]", "header-null": "null", "header-string": '"x"',
                                           "header-garbage": "{not json"}[kind])
        elif kind == "shape-huge":
            header["datasets"][0]["shape"] = [10**30, 6]
        elif kind == "shape-negative":
            header["datasets"][0]["shape"] = [-8, 6]
        elif kind == "chunks-zero":
            header["datasets"][0]["chunks"] = [0, 6]
        elif kind == "itemsize-zero":
            header["datasets"][0]["itemsize"] = 0
        elif kind == "no-datasets":
            header["datasets"] = []
        elif kind == "calls-count-wrong":
            header["calls"] = 10**6
        elif kind in ("times-nan", "times-negative"):
            table = pq.read_table(calls).to_pandas()
            cols = [c for c in table.columns if table[c].dtype.kind == "f"]
            for c in cols:
                table[c] = float("nan") if kind == "times-nan" else -1.0
            table.to_parquet(calls)
        elif kind == "rows-dropped":
            table = pq.read_table(calls).to_pandas()
            table.iloc[: len(table) // 2].to_parquet(calls)
        elif kind == "data-changed":
            header["files"][0]["sha256"] = "0" * 64
        if kind in ("shape-huge", "shape-negative", "chunks-zero", "itemsize-zero", "no-datasets", "calls-count-wrong",
                    "data-changed"):
            (t / "trace.json").write_text(json.dumps(header))
    return setup


DAMAGED_TRACES = ("no-calls", "calls-truncated", "calls-empty-file", "calls-garbage", "no-header", "header-list",
                  "header-null", "header-string", "header-garbage", "shape-huge", "shape-negative", "chunks-zero",
                  "itemsize-zero", "no-datasets", "calls-count-wrong", "times-nan", "times-negative", "rows-dropped",
                  "data-changed")


def _changed_is_said(w: Path, p) -> str | None:
    """A data file changed since the trace: the diagnosis of the calls as traced stands, but it must say the
    file changed and offer no repack cure (that would rewrite data the program never read)."""
    if p.returncode != 0:
        return None
    out = p.stdout.decode("utf-8", "replace")
    if out.lstrip().startswith("{"):
        said = json.loads(out).get("files_changed")
    else:
        said = "CHANGED since the trace" in out
    return None if said and "ccp repack" not in out else "a changed data file was not said, or a repack cure offered"


def diagnose_cases() -> list[Case]:
    cases = [Case(f"trace-{k}", "diagnose", ["diagnose", "{W}/t"], setup=_damage_trace(k),
                  **({"expect": "either", "verify": _changed_is_said} if k == "data-changed" else {}))
             for k in DAMAGED_TRACES]
    cases += [Case(f"trace-{k}-json", "diagnose", ["diagnose", "{W}/t", "--json"], setup=_damage_trace(k),
                   **({"expect": "either", "verify": _changed_is_said} if k == "data-changed" else {}))
              for k in ("rows-dropped", "calls-count-wrong", "data-changed")]
    cases.append(Case("trace-data-changed-verify", "diagnose", ["diagnose", "{W}/t", "--verify"],
                      setup=_damage_trace("data-changed")))
    cases += [
        Case("missing-folder", "diagnose", ["diagnose", "{W}/nothere"]),
        Case("a-file", "diagnose", ["diagnose", "{F}/text.txt"]),
        Case("empty-folder", "diagnose", ["diagnose", "{W}/t"], setup=lambda w: (w / "t").mkdir()),
        Case("good-trace", "diagnose", ["diagnose", "{F}/trace"], expect="accept"),
    ]
    cases += [Case(f"memory-{name}", "diagnose", ["diagnose", "{F}/trace", "--memory", value])
              for name, value in (("empty", ""), ("word", "lots"), ("negative", "-1"), ("huge", str(10**30)),
                                  ("nan", "nan"))]
    cases.append(Case("memory-zero", "diagnose", ["diagnose", "{F}/trace", "--memory", "0"], expect="either"))  # no cache cure
    return cases


def _flip(src: str, seed: int):
    def setup(w: Path) -> None:
        data = bytearray((FIX / src).read_bytes())
        r = random.Random(seed)
        pos = r.randrange(len(data))
        data[pos] ^= 1 << r.randrange(8)
        (w / "job.darshan").write_bytes(bytes(data))
    return setup


def _cut(src: str, frac: float):
    def setup(w: Path) -> None:
        data = (FIX / src).read_bytes()
        (w / "job.darshan").write_bytes(data[: int(len(data) * frac)])
    return setup


def _same_sweep_as_intact(src: str):
    """A damaged log that is accepted must give the intact log's sweep (its notes aside): no wrong counts."""
    def verify(w: Path, p) -> str | None:
        if p.returncode != 0:
            return None
        ref = w / "ref.yaml"
        r = subprocess.run([PY, "-m", "ccp.cli", "from-darshan", str(FIX / src), "-o", str(ref)],
                           capture_output=True, env=_env(), timeout=300, check=False)
        body = [ln for ln in (w / "s.yaml").read_text().splitlines() if not ln.startswith(("#", "name:"))]
        want = [ln for ln in ref.read_text().splitlines() if not ln.startswith(("#", "name:"))] if r.returncode == 0 else None
        return None if body == want else "accepted a damaged log with a sweep that differs from the intact log's"
    return verify


def darshan_cases(rng: random.Random) -> list[Case]:
    out = ["-o", "{W}/s.yaml"]
    cases = [
        Case("empty", "from-darshan", ["from-darshan", "{W}/job.darshan", *out], outputs=("{W}/s.yaml",),
             setup=lambda w: (w / "job.darshan").write_bytes(b"")),
        Case("random", "from-darshan", ["from-darshan", "{W}/job.darshan", *out], outputs=("{W}/s.yaml",),
             setup=lambda w: (w / "job.darshan").write_bytes(random.Random(5).randbytes(4000))),
        Case("not-a-log", "from-darshan", ["from-darshan", "{F}/text.txt", *out], outputs=("{W}/s.yaml",)),
        Case("hdf5-file", "from-darshan", ["from-darshan", "{F}/data.h5", *out], outputs=("{W}/s.yaml",)),
        Case("missing", "from-darshan", ["from-darshan", "{W}/nothere.darshan", *out], outputs=("{W}/s.yaml",)),
        Case("a-folder", "from-darshan", ["from-darshan", "{W}", *out], outputs=("{W}/s.yaml",)),
        Case("out-exists", "from-darshan", ["from-darshan", "{F}/ior.darshan", *out],
             setup=lambda w: (w / "s.yaml").write_text("mine\n"),
             verify=lambda w, p: None if (w / "s.yaml").read_text() == "mine\n" else "overwrote -o without --force"),
        Case("out-is-the-log", "from-darshan", ["from-darshan", "{W}/job.darshan", "-o", "{W}/job.darshan", "--force"],
             setup=lambda w: shutil.copy(FIX / "ior.darshan", w / "job.darshan"),
             verify=lambda w, p: None if (w / "job.darshan").read_bytes() == (FIX / "ior.darshan").read_bytes()
             else "wrote over the input log"),
        Case("out-empty", "from-darshan", ["from-darshan", "{F}/ior.darshan", "-o", ""]),
        Case("out-folder", "from-darshan", ["from-darshan", "{F}/ior.darshan", "-o", "{W}"]),
        Case("out-no-parent", "from-darshan", ["from-darshan", "{F}/ior.darshan", "-o", "{W}/no/s.yaml"]),
        Case("file-empty", "from-darshan", ["from-darshan", "{F}/ior.darshan", *out, "--file", ""], outputs=("{W}/s.yaml",)),
        Case("dataset-unknown", "from-darshan", ["from-darshan", "{F}/ior.darshan", *out, "--dataset", "/nope"],
             outputs=("{W}/s.yaml",)),
        Case("ior-intact", "from-darshan", ["from-darshan", "{F}/ior.darshan", *out], expect="accept"),
        Case("macsio-id-past-int64", "from-darshan", ["from-darshan", "{F}/macsio.darshan", *out], expect="accept",
             verify=lambda w, p: None if "path: /constant" in (w / "s.yaml").read_text() else "dataset name became a number"),
        Case("out-full-disk", "from-darshan", ["from-darshan", "{F}/ior.darshan", "-o", "{W}/fs/s.yaml"], root_only=True,
             setup=lambda w: _fill(w / "fs"), outputs=("{W}/fs/s.yaml",)),
    ]
    for src in ("ior.darshan", "macsio.darshan"):
        for frac in (0.05, 0.3, 0.6, 0.9, 0.99):
            cases.append(Case(f"{src[:-8]}-cut-{frac:g}", "from-darshan", ["from-darshan", "{W}/job.darshan", *out],
                              setup=_cut(src, frac), outputs=("{W}/s.yaml",)))
        for i in range(12):
            cases.append(Case(f"{src[:-8]}-flip-{i}", "from-darshan", ["from-darshan", "{W}/job.darshan", *out],
                              expect="either", setup=_flip(src, rng.randrange(10**9)), verify=_same_sweep_as_intact(src)))
    return cases


def _fill(folder: Path) -> None:
    """``folder`` on a 1 MiB tmpfs, filled up (the caller's case is root_only)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], check=True, capture_output=True)
    with open(folder / "ballast", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass


def _workload(change: str, new: str):
    if change and change not in WORKLOAD:
        raise ValueError(f"{change!r} is not in the workload")

    def setup(w: Path) -> None:
        text = WORKLOAD.replace(change, new) if change else new
        (w / "workload.yaml").write_text(text)
    return setup


def tune_cases(rng: random.Random, n_signals: int) -> list[Case]:
    base = ["tune", "{W}/workload.yaml", "--no-measure", "--work", "{W}/work"]
    bad = [
        ("name-dotdot", "name: fz", "name: '..'"), ("name-slash", "name: fz", "name: a/b"),
        ("weight-inf", "weight: 1}", "weight: .inf}"), ("weight-nan", "weight: 1}", "weight: .nan}"),
        ("weight-negative", "weight: 1}", "weight: -1}"), ("weight-zero-all", "weight: 1", "weight: 0"),
        ("cache-nan", "cache_nbytes: 16KiB", "cache_nbytes: .nan"), ("cache-inf", "cache_nbytes: 16KiB", "cache_nbytes: .inf"),
        ("cache-huge", "cache_nbytes: 16KiB", "cache_nbytes: 1e30"), ("chunk-bytes-zero", "max_chunk_bytes: 16KiB", "max_chunk_bytes: 0"),
        ("chunk-bytes-nan", "max_chunk_bytes: 16KiB", "max_chunk_bytes: .nan"),
        ("overhead-nan", "max_chunk_bytes: 16KiB}", "max_chunk_bytes: 16KiB, max_storage_overhead: .nan}"),
        ("overhead-negative", "max_chunk_bytes: 16KiB}", "max_chunk_bytes: 16KiB, max_storage_overhead: -1}"),
        ("no-workload", "workload:\n  - {access: {op: read, block: [32, 1, 1]}, weight: 1}\n"
                        "  - {access: {op: read, block: [1, 16, 16]}, weight: 1}\n", "workload: []\n"),
        ("block-rank", "block: [32, 1, 1]", "block: [32, 1]"), ("block-zero", "block: [32, 1, 1]", "block: [0, 1, 1]"),
        ("unknown-key", "constraints:", "constrains:"), ("empty-file", "", ""), ("not-a-mapping", "", "- 1\n- 2\n"),
    ]
    cases = [Case(name, "tune", [*base, "--out", "{W}/out"], setup=_workload(a, b), outputs=("{W}/out/tune.json",))
             for name, a, b in bad]
    cases += [
        Case("out-empty", "tune", [*base, "--out", ""], setup=_workload("", WORKLOAD)),
        Case("out-is-a-run", "tune", [*base, "--out", "{W}/run"], setup=lambda w: (_workload("", WORKLOAD)(w), _make_run(w / "run")),
             verify=lambda w, p: None if not (w / "run" / "tune.json").exists() else "wrote into an existing run folder"),
        Case("budget-nan", "tune", ["tune", "{W}/workload.yaml", "--budget", "nan", "--out", "{W}/out"],
             setup=_workload("", WORKLOAD), outputs=("{W}/out/tune.json",)),
        Case("good-no-measure", "tune", [*base, "--out", "{W}/out"], expect="accept", setup=_workload("", WORKLOAD)),
        Case("out-full-disk", "tune", [*base, "--out", "{W}/fs/out"], root_only=True,
             setup=lambda w: (_workload("", WORKLOAD)(w), _fill(w / "fs")), outputs=("{W}/fs/out/tune.json",)),
    ]
    for i in range(n_signals):
        for sig in (signal.SIGINT, signal.SIGTERM):
            cases.append(Case(f"{sig.name.lower()}-{i}", "tune", ["tune", "{W}/workload.yaml", "--budget", "20s",
                                                                   "--repeats", "1", "--out", "{W}/out", "--work", "{W}/work"],
                              expect="interrupt", setup=_workload("", WORKLOAD), sig=((sig, rng.uniform(1.0, 8.0)),),
                              outputs=("{W}/out/tune.json",)))
    return cases


def _make_run(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    (folder / "cells.csv").write_text("cell_id\n")


def _s3_sweep(key: str, value: str):
    def setup(w: Path) -> None:
        text = S3_SWEEP.replace("  storage: [s3]", f"  storage: [s3]\n  {key}: {value}") if key != "s3" else \
            S3_SWEEP.replace("s3: local", f"s3: {value}")
        (w / "sweep.yaml").write_text(text)
    return setup


S3_BAD = [
    ("latency-1e9", "latency", "[1000000000]"), ("latency-inf", "latency", "[.inf]"), ("latency-nan", "latency", "[.nan]"),
    ("latency-negative", "latency", "[-1]"), ("latency-word", "latency", "[soon]"), ("latency-overflow", "latency", "['1e400ms']"),
    ("bandwidth-1B", "bandwidth", "['1B/s']"), ("bandwidth-nan", "bandwidth", "[.nan]"), ("bandwidth-negative", "bandwidth", "[-5]"),
    ("bandwidth-word", "bandwidth", "[fast]"), ("page-buffer-1e30", "page_buffer", "[1000000000000000000000000000000]"),
    ("page-buffer-unpaged", "page_buffer", "[16MiB]"), ("page-buffer-bool", "page_buffer", "[true]"),
    ("page-size-1e30", "file_space", "[{strategy: page, page_size: 1000000000000000000000000000000}]"),
    ("page-size-tiny", "file_space", "[{strategy: page, page_size: 1}]"),
    ("threshold-huge", "file_space", "[{strategy: none, threshold: 100000000000000000000000}]"),
    ("block-size-1e30", "fsspec", "[{block_size: 1000000000000000000000000000000}]"),
    ("block-size-zero", "fsspec", "[{block_size: 0}]"), ("cache-type-bogus", "fsspec", "[{cache_type: mmap}]"),
    ("storage-s4", "storage", "[s3, s4]"), ("axis-empty", "latency", "[]"),
    ("endpoint-port", "s3", "{endpoint: 'http://127.0.0.1:99999', bucket: b}"),
    ("endpoint-scheme", "s3", "{endpoint: 'ftp://x', bucket: b}"), ("bucket-missing", "s3", "{endpoint: 'http://127.0.0.1:9'}"),
    ("endpoint-unreachable", "s3", "{endpoint: 'http://127.0.0.1:9', bucket: b}"),
]
S3_GOOD = [("latency-1s", "latency", "[1s]"), ("bandwidth-100kB", "bandwidth", "['100kB/s']"),
           ("bandwidth-inf", "bandwidth", "[.inf]"), ("page-buffer-1TiB", "page_buffer", "[1TiB]\n  file_space: [page]")]


def s3_cases() -> list[Case]:
    cases = []
    for name, key, value in S3_BAD:        # check need not reach the endpoint; run must refuse before any cell
        cases.append(Case(f"check-{name}", "s3-axes", ["check", "{W}/sweep.yaml"], setup=_s3_sweep(key, value),
                          expect="either" if name == "endpoint-unreachable" else "refuse"))
        cases.append(Case(f"run-{name}", "s3-axes", ["run", "{W}/sweep.yaml", "--quick", "--no-report", "--out", "{W}/run",
                                                     "--work", "{W}/work"], setup=_s3_sweep(key, value),
                          outputs=("{W}/run/cells.csv",)))
    for name, key, value in S3_GOOD:       # what check accepts, run runs: a tiny cell, no failure
        cases.append(Case(f"run-{name}", "s3-axes", ["run", "{W}/sweep.yaml", "--quick", "--no-report", "--out", "{W}/run",
                                                     "--work", "{W}/work"], expect="accept", setup=_s3_sweep(key, value),
                          verify=lambda w, p: None if b", 0 failed" in p.stdout else "a cell check accepted failed in run"))
    return cases


def repack_cases(rng: random.Random, n_signals: int) -> list[Case]:
    odd, out = "{F}/odd.h5", "{W}/out.h5"
    refuse = [
        ("nbit-vlen", ["-f", "/s:NBIT"]), ("blosc-vlen", ["-f", "/s:blosc"]), ("soff-float-nan-fill", ["-f", "/f:SOFF=0,IN"]),
        ("gzip-level-99", ["-f", "GZIP=99"]), ("gzip-word", ["-f", "GZIP=x"]),
        ("filter-unknown", ["-f", "ZIPPY=1"]), ("filter-empty", ["-f", ""]), ("dataset-missing", ["-f", "/nope:GZIP=1"]),
        ("chunk-zero", ["-l", "/f:CHUNK=0x8"]), ("chunk-rank", ["-l", "/f:CHUNK=4"]), ("chunk-huge", ["-l", f"/f:CHUNK={2**40}x8"]),
        ("layout-word", ["-l", "/f:BLOB"]), ("chunk-scalar", ["-l", "/scalar:CHUNK=1"]), ("G-1e30", ["-G", str(10**30)]),
        ("G-16GiB", ["-G", "16GiB"]), ("G-tiny", ["-G", "1"]), ("S-bogus", ["-S", "FAST"]), ("buffer-zero", ["--buffer", "0"]),
        ("buffer-word", ["--buffer", "lots"]),
    ]
    cases = [Case(name, "repack", ["repack", *opts, odd, out], outputs=(out,)) for name, opts in refuse]
    # HDF5 (and h5repack) take SZIP on a vlen string dataset: it encodes the heap references. Right if the
    # strings read back exact, right if refused.
    cases.append(Case("szip-vlen", "repack", ["repack", "-f", "/s:SZIP=8,NN", odd, out], expect="either", outputs=(out,),
                      verify=_same_values(("s",))))
    cases += [
        Case("in-missing", "repack", ["repack", "{W}/nothere.h5", out], outputs=(out,)),
        Case("in-not-hdf5", "repack", ["repack", "{F}/text.txt", out], outputs=(out,)),
        Case("out-is-in", "repack", ["repack", "{W}/in.h5", "{W}/in.h5"],
             setup=lambda w: shutil.copy(FIX / "odd.h5", w / "in.h5"),
             verify=lambda w, p: None if (w / "in.h5").read_bytes() == (FIX / "odd.h5").read_bytes()
             else "the input was modified"),
        Case("out-is-a-folder", "repack", ["repack", odd, "{W}"]),
        Case("named-type-kept", "repack", ["repack", "-f", "GZIP=1", odd, out], expect="accept", verify=_named_type_kept),
        Case("G-1GiB", "repack", ["repack", "-G", "1GiB", "{F}/data.h5", out], expect="either",
             verify=lambda w, p: None if p.returncode != 0 or (w / "out.h5").stat().st_size < 2**30
             or b"the copy is 2 GiB" in p.stdout + p.stderr
             else "a 1 GiB page turned a small file into a huge one without a word"),
        Case("out-full-disk", "repack", ["repack", "-f", "GZIP=1", "{F}/big.h5", "{W}/fs/out.h5"], root_only=True,
             setup=lambda w: _fill(w / "fs"), outputs=("{W}/fs/out.h5",)),
    ]
    for i in range(n_signals):
        for sig in (signal.SIGINT, signal.SIGTERM):
            cases.append(Case(f"{sig.name.lower()}-{i}", "repack", ["repack", "-f", "GZIP=9", "--threads", "1",
                                                                     "{F}/big.h5", out],
                              expect="interrupt", sig=((sig, rng.uniform(1.0, 3.5)),), outputs=(out,)))
    return cases


def _same_values(names: tuple):
    """A repack that ran must read back every named dataset exactly (values, dtype, shape) as in odd.h5."""
    def verify(w: Path, p) -> str | None:
        import h5py
        import numpy as np

        if p.returncode != 0:
            return None
        with h5py.File(FIX / "odd.h5", "r") as a, h5py.File(w / "out.h5", "r") as b:
            for name in names:
                x, y = a[name], b[name]
                if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x[()], y[()]):
                    return f"/{name} does not read back as it was"
        return None
    return verify


def _named_type_kept(w: Path, p) -> str | None:
    import h5py

    if p.returncode != 0:
        return None
    with h5py.File(w / "out.h5", "r") as f:
        return None if f["named"].id.get_type().committed() else "the dataset lost its link to the committed datatype"


# ---------------------------------------------------------------- running and classifying

def run_case(case: Case, work: Path, fixtures: Path, timeout: float) -> tuple[str, str]:
    w = work / case.command / case.id
    w.mkdir(parents=True)

    def fill(a: str) -> str:
        return a.replace("{W}", str(w)).replace("{F}", str(fixtures))

    mounts = []
    try:
        if case.setup is not None:
            case.setup(w)
        mounts = [d for d in (w / "fs",) if d.is_mount()]
        before = {p for p in w.rglob("*")}
        proc = subprocess.Popen([PY, "-m", "ccp.cli", *map(fill, case.argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, cwd=w, env=_env(**case.env), start_new_session=True)
        proc.signalled = False
        started = time.monotonic()
        try:
            for sig, after in case.sig or ():
                try:
                    proc.wait(timeout=max(after - (time.monotonic() - started), 0.01))
                    break
                except subprocess.TimeoutExpired:
                    group = case.to == "group" or (case.to == "auto" and sig == signal.SIGINT)
                    os.killpg(proc.pid, sig) if group else os.kill(proc.pid, sig)
                    proc.signalled = True
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "hang", f"no answer in {timeout:g} s"
        proc.stdout, proc.stderr = stdout, stderr          # for verify
        category, detail = _classify(case, proc, w, before, fill)
        if category != "clean":          # the evidence, in --json
            STDERR[case.command, case.id] = stderr.decode("utf-8", "replace")[-3000:]
        return category, detail
    finally:
        for d in mounts:
            subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)


# Frames of the traced program's side: a program's own traceback (Ctrl-C in its imports) passes through them.
PROGRAM_SIDE = ("ccp/trace/recorder.py", "ccp/trace/fastpath.py", "ccp/trace/bootstrap/")


def ccp_traceback(err: str, command: str) -> bool:
    """Whether stderr holds a traceback of ccp's own code. Not one: a traceback with no ccp frame (Python's
    own startup, ``init_import_site``, before ccp runs a line) or, under ``trace``, the traced program's
    (its frames and the recorder's only: its stderr is passed through)."""
    for block in err.split("Traceback (most recent call last):")[1:]:
        files = [ln.split('"')[1] for ln in block.splitlines() if ln.strip().startswith('File "') and ln.count('"') >= 2]
        ours = [f for f in files if f.startswith(str(ROOT / "ccp"))]
        if command == "trace":
            ours = [f for f in ours if not any(side in f for side in PROGRAM_SIDE)]
        if ours:
            return True
    return False


def _classify(case: Case, proc, w: Path, before: set, fill) -> tuple[str, str]:
    err = proc.stderr.decode("utf-8", "replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    rc = proc.returncode
    problem = case.verify(w, proc) if case.verify is not None else None
    temps = [p for p in w.rglob("*") if p not in before and (".tmp" in p.name or p.name == ".ccp.lock")]
    written = [o for o in map(fill, case.outputs) if Path(o).exists()]
    if ccp_traceback(err, case.command):
        return "traceback", lines[-1][:160] if lines else ""
    if case.expect == "interrupt" and rc == 1 and "init_import_site" in err and "ccp" not in err.split("init_import_site")[0]:
        return "clean", "the signal came during Python's own startup, before ccp ran (Python's fatal error, exit 1)"
    sent = {sig for sig, _ in case.sig or ()}
    if rc is not None and rc < 0 and not (case.expect == "interrupt" and -rc in sent):
        return "signal", f"died of {signal.Signals(-rc).name}"
    if any("ccp: internal error" in ln for ln in lines):
        return "internal", next(ln for ln in lines if "internal error" in ln)[:160]
    if case.expect == "interrupt":
        names = "+".join(sig.name for sig, _ in case.sig)
        said = f"{names} at {case.sig[0][1]:.1f} s: exit {rc}, {lines[-1][:100] if lines else 'nothing on stderr'}"
        if not proc.signalled:
            return "clean" if rc == 0 else "untidy", f"finished before the signal, exit {rc}"
        if rc == 0 and case.command == "trace" and b"prog done" in proc.stdout and "(exit status 0)" in err:
            # the program ran to its end: Python dropped its KeyboardInterrupt (raised inside a weakref callback
            # of h5py's, "Exception ignored"); ccp trace passes on the program's own status, as it must
            return "clean", f"{said}: the program's own Ctrl-C was lost inside Python; it finished, status 0 passed on"
        if rc == 0:
            return "accepted", f"{said}: stopped work reported as a success"
        # 130/143 (a command's own exit after Ctrl-C/SIGTERM; ccp trace: a third Ctrl-C sent SIGTERM), 137 (killed),
        # or dying of the very signal sent (kill -9 of ccp itself)
        passed_on = case.command == "trace" and (f"exited with status {rc}:" in err or f"(exit status {rc})" in err)
        if rc not in (130, 143, 137) and -rc not in sent and not passed_on:     # trace: the program's own status
            return "untidy", f"exit {rc} after {names}: {lines[-1][:120] if lines else ''}"
        if case.command != "run" and "finished cells are saved" in err:
            return "untidy", "Ctrl-C said a sweep's 'finished cells are saved' line"
        if problem or temps or (rc != 0 and written):
            return "untidy", problem or f"left {[str(p) for p in temps + written][:3]}"
        return "clean", said
    if rc == case.status and case.expect != "refuse":
        if problem:
            return "accepted", problem
        return ("untidy", f"left {[str(p) for p in temps][:3]}") if temps else ("clean", "ran")
    if rc == 0:
        if case.expect == "refuse":
            return "accepted", (proc.stdout.decode(errors="replace").strip().splitlines() or [""])[-1][:160]
        if problem:
            return "accepted", problem
        return ("untidy", f"left {[str(p) for p in temps][:3]}") if temps else ("clean", "ran")
    if case.expect == "accept":
        return "untidy", f"exit {rc}: {lines[-1][:140] if lines else ''}"
    if rc == 2 and len(lines) == 1 and lines[0].startswith("ccp: error: ") and not problem and not temps and not written:
        return "clean", lines[0][:160]
    return "untidy", problem or (f"left {[str(p) for p in temps + [Path(x) for x in written]][:3]}" if temps or written
                                 else f"exit {rc}, {len(lines)} line(s): {' | '.join(lines)[:160]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated commands: trace, diagnose, from-darshan, tune, s3-axes, repack")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    ap.add_argument("--signals", type=int, default=3, help="random-moment signal trials per command and signal")
    ap.add_argument("--verbose", action="store_true", help="print every case, not only the ones that are not clean")
    ap.add_argument("--json", type=Path, help="also write every case's result here")
    args = ap.parse_args()
    # A suite started in the background (`nohup ... &`) inherits SIGINT ignored, and so would every ccp it
    # starts: Ctrl-C would then be lost on them. A handler here is reset to the default in each child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = random.Random(args.seed)
    is_root = os.geteuid() == 0 and shutil.which("mount") is not None
    with tempfile.TemporaryDirectory(prefix="ccp-fuzz-") as tmp:
        base = Path(tmp)
        fixtures = base / "fixtures"
        global FIX
        FIX = fixtures
        digests = make_fixtures(fixtures)
        cases = (trace_cases(rng, args.signals) + diagnose_cases() + darshan_cases(rng) + tune_cases(rng, args.signals)
                 + s3_cases() + repack_cases(rng, args.signals))
        only = {c for c in args.only.split(",") if c}
        cases = [c for c in cases if (not only or c.command in only) and (is_root or not c.root_only)]
        counts: dict[str, Counter] = {}
        results = []
        t0 = time.monotonic()
        for case in cases:
            try:
                category, detail = run_case(case, base / "work", fixtures, args.timeout)
            except Exception as exc:  # a broken case is reported, not fatal to the suite
                category, detail = "untidy", f"the case itself failed: {type(exc).__name__}: {exc}"
            counts.setdefault(case.command, Counter())[category] += 1
            results.append({"command": case.command, "case": case.id, "expect": case.expect, "result": category,
                            "detail": detail, "stderr": STDERR.get((case.command, case.id))})
            if args.verbose or category != "clean":
                print(f"{case.command:>13} {case.id:<28} {category:<9} {detail}", flush=True)
        changed = [str(p) for p, d in digests.items() if not p.exists() or hashlib.sha256(p.read_bytes()).hexdigest() != d]
    total = Counter()
    print(f"\n{'command':<13} {'cases':>5} " + " ".join(f"{c:>9}" for c in CATEGORIES))
    for cmd, c in counts.items():
        total += c
        print(f"{cmd:<13} {sum(c.values()):>5} " + " ".join(f"{c[k]:>9}" for k in CATEGORIES))
    print(f"{'all':<13} {sum(total.values()):>5} " + " ".join(f"{total[k]:>9}" for k in CATEGORIES))
    print(f"\n{len(cases)} cases in {time.monotonic() - t0:.0f} s, seed {args.seed}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; full-disk cases {'run' if is_root else 'skipped (not root)'}; "
          f"fixtures modified: {changed or 'none'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
