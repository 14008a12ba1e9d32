"""The recorder never changes what the program does, and every trace says whether it is complete and why not."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import os, sys, h5py, numpy as np
    n, ending = int(sys.argv[2]), sys.argv[3]
    with h5py.File(sys.argv[1], "a") as f:
        d = f["x"] if "x" in f else f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        total = 0.0
        for i in range(n):
            total += float(d[i % 100])
        print("sum", total, flush=True)
        if ending == "fork":                        # a raw fork child reads too, then leaves by os._exit
            pid = os.fork()
            if pid == 0:
                for i in range(n):
                    d[i % 100]
                os._exit(0)
            os.waitpid(pid, 0)
    if ending == "_exit":
        os._exit(3)
    if ending == "segfault":
        import ctypes
        ctypes.string_at(0)
    if ending in ("SIGKILL", "SIGTERM"):
        import signal
        os.kill(os.getpid(), getattr(signal, ending))
    sys.exit(4 if ending == "status4" else 0)
""")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def trace(tmp_path, out, *program, env=None):
    return subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", *map(str, program)],
                          capture_output=True, text=True, env=env or _env(), timeout=300, check=False)


def header(out: Path) -> dict:
    return json.loads((out / "trace.json").read_text())


@pytest.fixture
def program(tmp_path):
    p = tmp_path / "prog.py"
    p.write_text(PROGRAM)
    return p


@pytest.mark.parametrize("ending,status,complete,reason", [
    ("normal", 0, True, None),
    pytest.param("status4", 4, False, "exited with status 4", marks=pytest.mark.slow),
    ("_exit", 3, False, "exited with status 3"),
    ("fork", 0, True, None),
    pytest.param("segfault", 128 + 11, False, "killed by SIGSEGV", marks=pytest.mark.slow),
    ("SIGKILL", 128 + 9, False, "killed by SIGKILL"),
    pytest.param("SIGTERM", 128 + 15, False, "killed by SIGTERM", marks=pytest.mark.slow),
], ids=lambda v: str(v))
def test_every_ending_passes_through_and_says_if_complete(tmp_path, program, ending, status, complete, reason):
    out = tmp_path / "t"
    r = trace(tmp_path, out, sys.executable, program, tmp_path / "d.h5", 300, ending)
    assert r.returncode == status, r.stderr
    assert r.stdout.startswith("sum 14850.0\n")
    c = header(out)["completeness"]
    assert c["complete"] is complete, c
    assert (c["signal"] == status - 128) if status > 128 else (c["exit_status"] == status)
    if reason:
        assert any(reason in x for x in c["reasons"]), c["reasons"]
        assert "INCOMPLETE" in r.stderr
    if ending in ("normal", "_exit", "status4", "SIGTERM"):    # os._exit and SIGTERM write the buffer first:
        assert header(out)["calls"] == 301                      # every call kept
        assert not any("without the recorder's exit hook" in x for x in c["reasons"])
    if ending == "fork":
        assert header(out)["calls"] == 601 and c["processes_seen"] == 2
    if ending in ("segfault", "SIGKILL"):   # the buffer died with the process, and the trace says so
        assert any("without the recorder's exit hook" in x for x in c["reasons"])


@pytest.mark.parametrize("wrapper", [["env", "-i"], pytest.param(["-I"], marks=pytest.mark.slow)], ids=["env-i", "python-I"])
def test_a_process_without_the_recorder_makes_the_trace_incomplete(tmp_path, program, wrapper):
    out = tmp_path / "t"
    cmd = [*wrapper, sys.executable] if wrapper[0] == "env" else [sys.executable, *wrapper]
    r = trace(tmp_path, out, *cmd, program, tmp_path / "d.h5", 5, "normal")
    assert r.returncode == 0 and "sum" in r.stdout, r.stderr
    c = header(out)["completeness"]
    assert c["complete"] is False and any("without the recorder" in x for x in c["reasons"])


def test_a_child_python_without_the_recorder_is_named(tmp_path):
    out = tmp_path / "t"
    code = "import subprocess, sys; subprocess.run([sys.executable, '-I', '-c', 'import time; time.sleep(1)'])"
    r = trace(tmp_path, out, sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    c = header(out)["completeness"]
    assert c["complete"] is False and any("-I -c" in x for x in c["reasons"]), c


@pytest.mark.parametrize("errno_name", ["ENOSPC", pytest.param("EIO", marks=pytest.mark.slow), pytest.param("EACCES", marks=pytest.mark.slow)])
def test_a_failing_part_file_never_reaches_the_program(tmp_path, program, errno_name):
    out = tmp_path / "t"
    r = trace(tmp_path, out, sys.executable, program, tmp_path / "d.h5", 20000, "normal",
              env=_env(CCP_TRACE_FAULT=f"{errno_name}:3"))     # the records, the first batch of calls, then this
    assert r.returncode == 0 and r.stdout == "sum 990000.0\n", r.stderr
    h = header(out)
    c = h["completeness"]
    assert c["complete"] is False and c["lost_records"] > 0
    assert any("recording stopped" in x and errno_name != "" for x in c["reasons"]), c
    assert 0 < h["calls"] < 20001         # what was written before the fault is kept


def test_a_full_disk_under_the_trace_folder(tmp_path, program):
    """A real full disk: the program's output and status pass through; ccp says the trace was not written."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                                           capture_output=True, check=False).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        private = tmp_path / "tmp"      # where ccp trace makes the recorder's folder (ccp.trace.parts_folder)
        private.mkdir()
        r = trace(tmp_path, disk / "t", sys.executable, program, tmp_path / "d.h5", 20000, "status4",
                  env=_env(TMPDIR=str(private)))
        assert r.stdout == "sum 990000.0\n"
        assert r.returncode == 4, r.stderr                     # the program's own status
        assert "the trace could not be written" in r.stderr and "Traceback" not in r.stderr
        assert not (disk / "t" / "trace.json").exists() and not (disk / "t" / "calls.parquet").exists()
        assert not [p for p in (disk / "t").iterdir() if p.name.endswith(".tmp")]
        kept = list(private.iterdir())      # the recorded files stay where they were written, and the message says so
        assert len(kept) == 1 and f"kept in {kept[0]}" in r.stderr and sorted(kept[0].glob("*.part")), r.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_old_traces_load_with_completeness_unknown(tmp_path, program):
    from ccp.workload.tracefile import load_trace

    out = tmp_path / "t"
    trace(tmp_path, out, sys.executable, program, tmp_path / "d.h5", 3, "normal")
    h = header(out)
    assert load_trace(out).completeness["complete"] is True
    del h["completeness"]
    (out / "trace.json").write_text(json.dumps(h))
    assert load_trace(out).completeness["complete"] is None
