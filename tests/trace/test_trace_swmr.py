"""An SWMR reader traced while another process appends (breaker6 F0): ``refresh()`` gives the reader's dataset the
writer's new shape, and the recorder describes later keys (``d[-1]``, slices to the end) against it. Before, it kept
the shape it saw first: with a spawned writer diagnose refused the trace as damaged (a start out of range), with a
forked one every ``d[-1]`` was recorded as the first shape's last element. Issue 23."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
    import multiprocessing as mp, sys, time, h5py

    def writer(ready, n):
        with h5py.File("s.h5", "w", libver="latest") as f:
            d = f.create_dataset("x", (0,), maxshape=(None,), chunks=(16,), dtype="f8")
            f.swmr_mode = True
            ready.set()
            for i in range(n):
                d.resize((i + 1,)); d[i] = i; d.flush()
                time.sleep(0.002)

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        ready, n = ctx.Event(), 60
        p = ctx.Process(target=writer, args=(ready, n)); p.start(); ready.wait()
        f = h5py.File("s.h5", "r", libver="latest", swmr=True)
        d, last, t0 = f["x"], -1, time.time()
        while time.time() - t0 < 60:
            d.refresh(); now = d.shape[0]
            if now:
                last = int(d[-1]); d[max(0, now - 5):now]
            if now >= n:
                break
        p.join()
        print("last", last, p.exitcode)
"""


@pytest.mark.parametrize("start", ["spawn", pytest.param("fork", marks=pytest.mark.slow)])
def test_an_swmr_readers_keys_follow_the_writers_appends(tmp_path, start):
    (tmp_path / "p.py").write_text(textwrap.dedent(PROGRAM))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "T"), "--", sys.executable, "p.py",
                        start], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "last 59 0" in r.stdout, r.stderr
    calls = pd.read_parquet(tmp_path / "T" / "calls.parquet")
    reads = calls[(calls["op"] == "read") & calls["count"].notna()]
    ones = reads[reads["count"].map(lambda c: list(c) == [1])]
    assert max(int(s[0]) for s in ones["start"]) == 59        # d[-1] at the writer's last element
    d = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", str(tmp_path / "T")], capture_output=True,
                       text=True, timeout=300, env=env)
    assert d.returncode == 0, d.stderr
