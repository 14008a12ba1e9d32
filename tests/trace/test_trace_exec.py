"""A traced process that execs keeps the calls it made before (tester breaker3 F-exec).

``os.exec*`` replaces the image and its recorder's buffer with it: a forked child reading then exec'ing a program
kept none of its reads, and trace.json still said complete. The recorder now writes and ends before the exec; an
exec'd Python goes on numbering its calls after the old image's; an exec that fails leaves recording as it was; an
exec'd Python that dies unrecorded makes the trace incomplete.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import os, signal, sys, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("c", data=np.arange(100.0), chunks=(10,))
    f = h5py.File(sys.argv[1], "r")
    how = sys.argv[2]
    then = "" if how != "exec-dies" else "; import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    pid = os.fork()
    if pid == 0:                    # reads, then becomes another Python that reads once more
        for i in range(7):
            f["c"][i]
        os.execv(sys.executable, [sys.executable, "-c",
                                  f"import h5py; h5py.File({sys.argv[1]!r}, 'r')['c'][50]{then}"])
    os.waitpid(pid, 0)
    pid = os.fork()
    if pid == 0:                    # reads, then becomes a program that is not Python
        for i in range(5):
            f["c"][i]
        os.execv("/bin/true", ["/bin/true"])
    os.waitpid(pid, 0)
    for i in range(3):
        f["c"][i]
    if how == "exec-fails":
        try:
            os.execv("/nonexistent/prog", ["prog"])
        except OSError as exc:
            print("exec failed:", type(exc).__name__, flush=True)
        for i in range(4):
            f["c"][i]
        print("done", flush=True)
    else:
        sys.stdout.flush()
        os.execlp("echo", "echo", "bye")          # the traced program itself becomes echo
""")


@pytest.mark.parametrize("how", ["execs", "exec-fails", "exec-dies"])
def test_calls_made_before_an_exec_are_kept(tmp_path, how):
    from ccp.workload.tracefile import load_trace

    prog = tmp_path / "p.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    p = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp_path / "d.h5"), how], capture_output=True, text=True, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    want = {"execs": "bye\n", "exec-fails": "exec failed: FileNotFoundError\ndone\n", "exec-dies": "bye\n"}[how]
    assert p.stdout == want, p.stderr
    calls = load_trace(out).calls
    reads = calls[(calls["depth"] == 0) & (calls["op"] == "read")]
    per_pid = sorted(reads.groupby("pid").size().tolist())
    exec_d = 0 if how == "exec-dies" else 1     # killed before its exit: the exec'd image's one read is lost
    assert per_pid == sorted([7 + exec_d, 5, 3 + (4 if how == "exec-fails" else 0)]), (per_pid, p.stderr)
    assert not calls[["pid", "seq"]].duplicated().any()     # the exec'd Python numbers on from the old image
    c = json.loads((out / "trace.json").read_text())["completeness"]
    if how == "exec-dies":
        assert c["complete"] is False and any("ended without the recorder's exit hook" in r for r in c["reasons"]), c
    else:
        assert c["complete"] is True and c["reasons"] == [], c


OUTLIVING = textwrap.dedent("""
    import os, sys, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("c", data=np.arange(100.0), chunks=(10,))
    f = h5py.File(sys.argv[1], "r")
    if os.fork() == 0:              # reads, then becomes a Python that reads after the program has left
        f["c"][1]
        os.execv(sys.executable, [sys.executable, "-c", "import time, h5py; time.sleep(2); "
                                  f"h5py.File({sys.argv[1]!r}, 'r')['c'][2]"])
    f["c"][0]
""")


def test_an_execd_python_outliving_the_program_is_waited_for(tmp_path):
    from ccp.workload.tracefile import load_trace

    (tmp_path / "p.py").write_text(OUTLIVING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    p = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "t"), "--", sys.executable,
                        str(tmp_path / "p.py"), str(tmp_path / "d.h5")], capture_output=True, text=True, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    calls = load_trace(tmp_path / "t").calls
    reads = calls[(calls["depth"] == 0) & (calls["op"] == "read")]
    assert sorted(reads.groupby("pid").size().tolist()) == [1, 2], p.stderr    # its read after the exec too
    c = json.loads((tmp_path / "t" / "trace.json").read_text())["completeness"]
    assert c["complete"] is True, c
