"""A traced process that dies in any way (SIGKILL, os._exit, a segfault, an abort in C) keeps every call it made
before it died: the recorder's journal (ccp.trace.journal) holds what its buffers held. The trace says how the process
ended, and nothing else of the program changes (its exit status or signal, stdout, stderr). Issue 23."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

# every kind of key the fast path journals as a row (int, numpy int, slice, d[i, j]), a tuple key it journals as a
# record (d[i, :]), the recorder's full path (astype), events and handles (a second file opened and closed)
PROGRAM = textwrap.dedent("""
    import ctypes, os, signal, sys, h5py, numpy as np
    path, how, loops, count_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        f.create_dataset("y", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5))
    calls = 0
    with h5py.File(path, "r") as f:
        d, e = f["x"], f["y"]
        for i in range(loops):
            d[i % 100]; d[np.int64(i % 7)]; d[i % 90:i % 90 + 3]; d[:2]; e[i % 10, 3]; e[i % 10, :]
            calls += 6
            if i % 97 == 0:
                d.astype("f4")[i % 100]
                with h5py.File(path, "r") as g:
                    g["y"][1]
                calls += 2
        print("made", calls, "calls", flush=True)
        print("a line on stderr", file=sys.stderr, flush=True)
        with open(count_file, "w") as out:
            out.write(str(calls))
        if how == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif how == "os-exit":
            os._exit(3)
        elif how == "os-exit-unpatched":        # os._exit as the program took it before the recorder patched it
            sys.modules["posix"]._exit(4)
        elif how == "segfault":
            ctypes.string_at(0)
        elif how == "abort":
            os.abort()
        elif how == "wait":                     # killed from outside while it waits
            sys.stdin.read()
""")

STATUS = {"none": 0, "sigkill": -9, "os-exit": 3, "os-exit-unpatched": 4, "segfault": -11, "abort": -6, "wait": -9}


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": ""}


def _run(tmp: Path, how: str, loops: int, traced: bool, capacity: str | None = None):
    prog = tmp / "p.py"
    prog.write_text(PROGRAM)
    name = f"{how}-{'traced' if traced else 'plain'}"
    args = [sys.executable, str(prog), str(tmp / "d.h5"), how, str(loops), str(tmp / f"{name}.count")]
    if traced:
        args = [sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp / name), "--", *args]
    env = _env() if capacity is None else {**_env(), "CCP_TRACE_TEST_CAPACITY": capacity}
    if how == "wait":
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        line = p.stdout.readline()
        count = tmp / f"{name}.count"
        while not count.exists() or not count.read_text():
            time.sleep(0.01)
        pid = int(_status_pid(tmp / name)) if traced else p.pid
        os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=300)
        return subprocess.CompletedProcess(args, p.returncode, line + out, err), tmp / name, count
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    return r, tmp / name, tmp / f"{name}.count"


def _status_pid(trace: Path) -> str:
    """The traced program's pid: its journal is made with its first call (parts/<pid>-<n>.part)."""
    parts = sorted((trace / "parts").glob("*.part"))
    return parts[0].name.split("-", 1)[0]


def _calls(trace: Path) -> pd.DataFrame:
    """The trace's calls (a killed program closed no file: its trace has fewer close events)."""
    t = pd.read_parquet(trace / "calls.parquet")
    t = t[t["kind"] == "call"]
    keep = [c for c in ("kind", "api", "op", "depth", "file", "dataset", "sel", "start", "count", "stride", "block",
                        "nbytes", "event") if c in t.columns]
    return t[keep].astype(str).reset_index(drop=True)


def _program_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(("ccp trace", "ccp:"))]


@pytest.mark.parametrize("how,loops,capacity", [
    ("sigkill", 3000, None),            # more than the buffers hold at 16,384 calls: the part file and the journal
    ("sigkill", 300, "64"),             # many flushes, each a new generation of the journal
    ("os-exit", 300, "64"),
    pytest.param("os-exit-unpatched", 300, "64", marks=pytest.mark.slow),
    pytest.param("segfault", 300, "64", marks=pytest.mark.slow),
    pytest.param("abort", 300, "64", marks=pytest.mark.slow),
    ("wait", 300, "64"),               # SIGKILL from outside
], ids=["sigkill", "sigkill-many-flushes", "os-exit", "os-exit-unpatched", "segfault", "abort", "sigkill-outside"])
def test_a_process_that_dies_keeps_every_call_it_made(tmp_path, how, loops, capacity):
    plain, _, plain_count = _run(tmp_path, how, loops, traced=False)
    traced, trace, traced_count = _run(tmp_path, how, loops, traced=True, capacity=capacity)
    _, whole, _ = _run(tmp_path, "none", loops, traced=True, capacity=capacity)    # the same calls, ended normally
    # nothing of the program changes: its status, its output
    assert plain.returncode == STATUS[how]
    status = STATUS[how]
    assert traced.returncode == (status if status >= 0 else 128 - status), traced.stderr
    assert plain.stdout == traced.stdout and _program_lines(plain.stderr) == _program_lines(traced.stderr)
    assert plain_count.read_text() == traced_count.read_text()
    # every call it made is in the trace, as the trace of the run that ended normally has it
    head, normal = json.loads((trace / "trace.json").read_text()), json.loads((whole / "trace.json").read_text())
    assert head["calls"] == normal["calls"] > int(traced_count.read_text())     # and the file's writes
    pd.testing.assert_frame_equal(_calls(trace), _calls(whole))
    # and says how the process ended
    c = head["completeness"]
    assert c["complete"] is False and c["exit_status"] == (status if status >= 0 else None)
    assert c["signal"] == (-status if status < 0 else None)
    if status < 0:
        assert any(signal.Signals(-status).name in r for r in c["reasons"]), c["reasons"]
        assert any("every call it made up to then is kept" in r for r in c["reasons"]), c["reasons"]
        assert sum(c["journaled_records"].values()) > 0
    assert normal["completeness"]["complete"] is True and not normal["completeness"]["journaled_records"]


POOL = textwrap.dedent("""
    import os, signal, sys, multiprocessing as mp, h5py, numpy as np
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    path, method = sys.argv[1], sys.argv[2]

    reads = [0]

    def work(n, die):
        with h5py.File(path, "r") as f:
            d = f["x"]
            for i in range(n):
                d[i % 100]; d[i % 90:i % 90 + 2]
                reads[0] += 2
        with open(f"{path}.{os.getpid()}.count", "w") as out:     # every read this worker made, and whether it dies
            out.write(f"{reads[0]} {int(die)}")
        if die:
            os.kill(os.getpid(), signal.SIGKILL)
        return os.getpid()

    if __name__ == "__main__":
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        with ProcessPoolExecutor(2, mp_context=mp.get_context(method)) as pool:
            pool.submit(work, 500, False).result()
            try:
                pool.submit(work, 700, True).result()
            except BrokenProcessPool:
                print("a worker was killed")
""")


@pytest.mark.parametrize("method", ["fork", pytest.param("forkserver", marks=pytest.mark.slow), "spawn"])
def test_a_pool_worker_killed_keeps_its_calls(tmp_path, method):
    prog = tmp_path / "pool.py"
    prog.write_text(POOL)
    out = tmp_path / "t"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp_path / "d.h5"), method], capture_output=True, text=True, env={
                            **_env(), "CCP_TRACE_TEST_CAPACITY": "64"}, timeout=600)
    assert r.returncode == 0 and "a worker was killed" in r.stdout, r.stderr
    t = pd.read_parquet(out / "calls.parquet")
    user = t[(t["kind"] == "call") & (t["depth"] == 0) & (t["api"] == "Dataset.__getitem__")]
    counts = {int(p.name.split(".")[-2]): p.read_text().split() for p in tmp_path.glob("d.h5.*.count")}
    dead = [pid for pid, (_n, die) in counts.items() if die == "1"]
    assert len(dead) == 1, counts
    assert (user["pid"] == dead[0]).sum() == int(counts[dead[0]][0])      # every read of the killed worker
    c = json.loads((out / "trace.json").read_text())["completeness"]
    assert c["complete"] is False and str(dead[0]) in c["journaled_records"], c
    assert any(f"process {dead[0]}" in x and "is kept" in x for x in c["reasons"]), c["reasons"]
