"""A traced process that dies in any way (SIGKILL, os._exit, a segfault, an abort in C) keeps every call it made but
its last batch: the recorder writes the fast path's calls every BATCH calls of a kind (ccp.trace.journal) and its
records every BATCH, and everything whenever a call finds the last write older than BATCH_AGE_NS. The trace says how
the process ended and what it may have lost; nothing else of the program changes (its exit status or signal, stdout,
stderr). Issue 23."""

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

from ccp.trace.fastpath import BATCH_AGE_NS

ROOT = Path(__file__).resolve().parents[2]
BATCH = 64      # CCP_TRACE_TEST_CAPACITY: the batch the recorder writes (the least of fastpath.BATCH and this); the trace states BATCH

# every kind of key the fast path keeps as rows (int, numpy int, slice, d[i, j]), a tuple key it writes to the part
# file (d[i, :]), the recorder's full path (astype), events and handles (a second file opened and closed). ``pause``:
# the last call comes after a pause longer than BATCH_AGE_NS, so it writes every call before it, and itself
PROGRAM = textwrap.dedent("""
    import ctypes, os, signal, sys, time, h5py, numpy as np
    path, how, loops, count_file, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
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
        if pause:
            time.sleep(pause)
            d[0]
            calls += 1
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
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "", "CCP_TRACE_TEST_CAPACITY": str(BATCH)}


def _run(tmp: Path, how: str, loops: int, traced: bool, pause: float):
    prog = tmp / "p.py"
    prog.write_text(PROGRAM)
    name = f"{how}-{'traced' if traced else 'plain'}"
    count = tmp / f"{name}.count"
    args = [sys.executable, str(prog), str(tmp / f"{name}.h5"), how, str(loops), str(count), str(pause)]
    if traced:
        args = [sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp / name), "--", *args]
    if how != "wait":
        r = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=600)
        return r, tmp / name, count
    private = tmp / f"{name}.tmp"         # where ccp trace makes the recorder's folder (ccp.trace.parts_folder)
    private.mkdir()
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**_env(), "TMPDIR": str(private)})
    line = p.stdout.readline()
    while not count.exists() or not count.read_text():
        time.sleep(0.01)
    pid = int(sorted(private.glob("*/*.part"))[0].name.split("-", 1)[0]) if traced else p.pid
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(args, p.returncode, line + out, err), tmp / name, count


def _calls(trace: Path) -> pd.DataFrame:
    """The trace's user calls (a killed program closed no file: its trace has fewer close events)."""
    t = pd.read_parquet(trace / "calls.parquet")
    t = t[(t["kind"] == "call") & (t["depth"] == 0)]
    keep = ["api", "op", "dataset", "sel", "start", "count", "stride", "block", "nelems"]
    return t[[c for c in keep if c in t.columns]].astype(str).reset_index(drop=True)


def _program_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(("ccp trace", "ccp:"))]


@pytest.mark.parametrize("how,loops,pause", [
    ("sigkill", 300, 0.0),              # no pause: at most the last batch of each kind lost
    pytest.param("sigkill", 300, 2 * BATCH_AGE_NS / 1e9, marks=pytest.mark.slow),  # a pause, then a call: it writes all
    ("os-exit", 300, 0.0),              # os._exit is patched: every call kept
    pytest.param("wait", 300, 0.0, marks=pytest.mark.slow),                 # SIGKILL from outside
    pytest.param("os-exit-unpatched", 300, 0.0, marks=pytest.mark.slow),
    pytest.param("segfault", 300, 0.0, marks=pytest.mark.slow),
    pytest.param("abort", 300, 0.0, marks=pytest.mark.slow),
], ids=["sigkill", "sigkill-after-a-pause", "os-exit", "sigkill-outside", "os-exit-unpatched", "segfault", "abort"])
def test_a_process_that_dies_keeps_its_calls_but_the_last_batch(tmp_path, how, loops, pause):
    plain, _, plain_count = _run(tmp_path, how, loops, traced=False, pause=pause)
    traced, trace, traced_count = _run(tmp_path, how, loops, traced=True, pause=pause)
    _, whole, _ = _run(tmp_path, "none", loops, traced=True, pause=pause)     # the same calls, ended normally
    # nothing of the program changes: its status, its output
    status = STATUS[how]
    assert plain.returncode == status
    assert traced.returncode == (status if status >= 0 else 128 - status), traced.stderr
    assert plain.stdout == traced.stdout and _program_lines(plain.stderr) == _program_lines(traced.stderr)
    assert plain_count.read_text() == traced_count.read_text()
    head, normal = json.loads((trace / "trace.json").read_text()), json.loads((whole / "trace.json").read_text())
    made = normal["calls"]          # the program's count and the file's writes (create_dataset)
    assert made > int(traced_count.read_text())
    c = head["completeness"]
    assert c["complete"] is False and c["exit_status"] == (status if status >= 0 else None)
    assert c["signal"] == (-status if status < 0 else None)
    kept = _calls(trace)
    if how == "os-exit" or pause:       # os._exit writes the buffers; a call after a pause writes them
        assert head["calls"] == made
        pd.testing.assert_frame_equal(kept, _calls(whole))
    else:       # the calls kept are the first ones made: at most a batch of each kind of key (and of records) missing
        assert made - 4 * BATCH <= head["calls"] < made
        have, made_each = kept.value_counts(), _calls(whole).value_counts()
        assert (have <= made_each.reindex(have.index).fillna(0)).all()     # each one a call the program made
    silent = c["silent_processes"]
    if how == "os-exit":
        assert silent == []
    else:       # how it ended, what the trace holds of it, the bound
        assert [s["calls"] for s in silent] == [head["calls"]]
        ended = f"killed by {signal.Signals(-status).name}" if status < 0 else f"exited with status {status}"
        assert silent[0]["ended"] == ended
        reason = next(r for r in c["reasons"] if "without the recorder's exit hook" in r)
        assert ended in reason and f"its {head['calls']} call(s)" in reason and "at most its last batch" in reason
        assert c["batch_bound"]["calls_per_kind"] >= BATCH and c["batch_bound"]["seconds"] == BATCH_AGE_NS / 1e9
    assert normal["completeness"]["complete"] is True and normal["completeness"]["silent_processes"] == []


POOL = textwrap.dedent("""
    import os, signal, sys, time, multiprocessing as mp, h5py, numpy as np
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    path, method, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])

    reads = [0]

    def work(n, die):
        with h5py.File(path, "r") as f:
            d = f["x"]
            for i in range(n):
                d[i % 100]; d[i % 90:i % 90 + 2]
                reads[0] += 2
            if die:                     # a pause, then one more read: it writes every call before it
                time.sleep(pause)
                d[0]
                reads[0] += 1
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


@pytest.mark.parametrize("method", ["fork", pytest.param("forkserver", marks=pytest.mark.slow),
                                    pytest.param("spawn", marks=pytest.mark.slow)])
def test_a_pool_worker_killed_keeps_its_calls(tmp_path, method):
    prog = tmp_path / "pool.py"
    prog.write_text(POOL)
    out = tmp_path / "t"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp_path / "d.h5"), method, str(2 * BATCH_AGE_NS / 1e9)], capture_output=True, text=True,
                       env=_env(), timeout=600)
    assert r.returncode == 0 and "a worker was killed" in r.stdout, r.stderr
    t = pd.read_parquet(out / "calls.parquet")
    user = t[(t["kind"] == "call") & (t["depth"] == 0) & (t["api"] == "Dataset.__getitem__")]
    counts = {int(p.name.split(".")[-2]): p.read_text().split() for p in tmp_path.glob("d.h5.*.count")}
    dead = [pid for pid, (_n, die) in counts.items() if die == "1"]
    assert len(dead) == 1, counts
    assert (user["pid"] == dead[0]).sum() == int(counts[dead[0]][0])      # every read of the killed worker
    c = json.loads((out / "trace.json").read_text())["completeness"]
    silent = {s["pid"]: s for s in c["silent_processes"]}
    assert c["complete"] is False and silent[dead[0]]["calls"] == int(counts[dead[0]][0]), c
    assert silent[dead[0]]["ended"] == "unknown"        # ccp trace sees the program's status, not its workers'
    assert any(f"process {dead[0]}" in x and "at most its last batch" in x for x in c["reasons"]), c["reasons"]


@pytest.mark.parametrize("batch_rows", [64, pytest.param(1000, marks=pytest.mark.slow)], ids=["small-chunks", "larger-chunks"])
def test_the_journal_merges_in_seq_order_whatever_the_chunk(tmp_path, batch_rows):
    """The journal's rows (three kinds, each its own file) placed between the part file's batches: the same trace
    merged in chunks of any size, every call once and in seq order."""
    from ccp.trace.store import merge

    _, trace, _ = _run(tmp_path, "none", 150, traced=True, pause=0.0)
    whole = pd.read_parquet(trace / "calls.parquet")
    assert list((trace / "parts").glob("*.index.rows")) and list((trace / "parts").glob("*.slice.rows"))
    merge(trace, ["p.py"], 0, 0.0, checksum=False, batch_rows=batch_rows)
    again = pd.read_parquet(trace / "calls.parquet")
    pd.testing.assert_frame_equal(again, whole)
    assert again["seq"].is_monotonic_increasing and not again.duplicated(["pid", "seq"]).any()
