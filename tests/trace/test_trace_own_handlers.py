"""A program with its own Ctrl-C / SIGTERM handler runs under `ccp trace` as it runs untraced.

Its handler quits cleanly on the second signal ("press Ctrl-C again to quit"): each signal sent to ccp trace reaches
it, it cleans up and exits 0, and every call it made is in the trace (ccp trace once SIGKILLed it at the second
Ctrl-C: no cleanup, status 137, an empty trace). Run as the shell's foreground job: a background job ignores SIGINT.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import signal, sys, time, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("c", data=np.arange(1000.0), chunks=(100,))
    f = h5py.File(sys.argv[1], "r")
    seen = {}
    calls = 0
    quit = []
    def handler(signum, _frame):
        seen[signum] = seen.get(signum, 0) + 1
        print("handler", signal.Signals(signum).name, seen[signum], flush=True)
        if seen[signum] >= 2:
            print("cleanup, calls", calls, flush=True)
            quit.append(signum)
            sys.exit(0)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    f["c"][0]
    calls += 1
    print("ready", flush=True)
    end = time.monotonic() + 120
    while time.monotonic() < end and not quit:
        f["c"][calls % 1000]
        calls += 1
        time.sleep(0.002)
    # a handler that ran inside a weakref callback (h5py's registry frees ids after each read) had its SystemExit
    # dropped by CPython, traced or not: the loop leaves on the flag
    sys.exit(0) if quit else print("timed out", flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c-twice", "sigterm-twice"])
def test_a_program_quitting_on_its_second_signal_runs_its_handler_and_keeps_its_calls(tmp_path, sig):
    prog = tmp_path / "p.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    with open(tmp_path / "err.txt", "w") as errf:
        ccp = subprocess.Popen([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable,
                                str(prog), str(tmp_path / "d.h5")],
                               stdout=subprocess.PIPE, stderr=errf, text=True, env={**env, "PYTHONPATH": str(ROOT)})
        try:
            assert ccp.stdout.readline() == "ready\n", (tmp_path / "err.txt").read_text()
            time.sleep(0.5)
            ccp.send_signal(sig)
            time.sleep(0.5)
            ccp.send_signal(sig)
            stdout, _ = ccp.communicate(timeout=120)
        finally:
            if ccp.poll() is None:
                ccp.kill()
                ccp.wait()
    err = (tmp_path / "err.txt").read_text()
    name = signal.Signals(sig).name
    lines = stdout.splitlines()
    assert lines[:2] == [f"handler {name} 1", f"handler {name} 2"], (stdout, err)
    assert lines[2].startswith("cleanup, calls"), (stdout, err)
    assert ccp.returncode == 0, err
    made = int(lines[2].split()[-1])
    h = json.loads((out / "trace.json").read_text())
    assert h["calls"] >= made > 0, err          # nothing lost to a kill
    reasons = h["completeness"]["reasons"]
    assert reasons and reasons[0].startswith("ccp trace was ") and "ccp trace was ccp trace" not in reasons[0]
    if sig == signal.SIGINT:
        assert "Ctrl-C" in err and "killed" not in reasons[0], reasons
    else:
        assert reasons[0] == "ccp trace was sent SIGTERM: passed on to the program", reasons


DEAF = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ready", flush=True)
    time.sleep(120)
""")


def test_a_program_deaf_to_ctrl_c_and_sigterm_is_killed_at_the_fourth_ctrl_c(tmp_path):
    (tmp_path / "p.py").write_text(DEAF)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    with open(tmp_path / "err.txt", "w") as errf:
        ccp = subprocess.Popen([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "t"), "--",
                                sys.executable, str(tmp_path / "p.py")],
                               stdout=subprocess.PIPE, stderr=errf, text=True, env={**env, "PYTHONPATH": str(ROOT)})
        try:
            assert ccp.stdout.readline() == "ready\n", (tmp_path / "err.txt").read_text()
            for press in range(3):
                ccp.send_signal(signal.SIGINT)
                time.sleep(0.5)
                assert ccp.poll() is None, f"ccp trace left after Ctrl-C {press + 1}"
            ccp.send_signal(signal.SIGINT)
            ccp.wait(timeout=60)
        finally:
            if ccp.poll() is None:
                ccp.kill()
                ccp.wait()
            ccp.stdout.close()
    err = (tmp_path / "err.txt").read_text()
    assert ccp.returncode == 128 + 9, err
    assert "sending SIGTERM" in err and "Ctrl-C once more kills it" in err, err
    reasons = json.loads((tmp_path / "t" / "trace.json").read_text())["completeness"]["reasons"]
    assert reasons[0] == "ccp trace was interrupted 4 times (Ctrl-C): the program was killed", reasons
