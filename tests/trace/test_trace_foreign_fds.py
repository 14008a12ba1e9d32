"""The recorder never writes to or closes a descriptor that is not its own, and a fork no hook saw keeps the child's
calls (breaker6 F1-F3, issue 23).

A program that closes every descriptor past stderr (``os.closerange(3, 4096)``, as python-daemon does) and opens its
own files on the freed numbers had the journal's int64 rows written into them (F1) and, in a forked child, closed
under it (F2); a child forked by libc's ``fork()`` (no at-fork hook) lost its first calls unreported (F3). Each
program is run untraced and traced in a folder of its own: the same output, the same files, and the trace holds
every call the program counted, or names what it lost."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAD = """
    import ctypes, os, sys, h5py, numpy as np
    with h5py.File("d.h5", "w") as f:
        f.create_dataset("d", data=np.arange(1000.0), chunks=(100,))
    counted = [0]
    def reads(d, n):
        for i in range(n):
            d[i % 1000] if i % 2 else d[i % 999:i % 999 + 1]
        counted[0] += n
"""

PROGRAMS = {
    # reads (the journal's files made), closes every descriptor past stderr, opens its own files, reads again
    "closerange-then-own-files": """
        f = h5py.File("d.h5", "r"); reads(f["d"], 3000); f.close()
        os.closerange(3, 4096)
        outs = [open(f"out{k}.txt", "w") for k in range(6)]
        with h5py.File("mine.h5", "w") as h:
            h["x"] = np.arange(100.0)
            g = h5py.File("d.h5", "r"); reads(g["d"], 3000)
            for k, o in enumerate(outs):
                o.write(f"line {k}\\n")
        for o in outs:
            o.close()
        print("reads", counted[0])
    """,
    # the same start, then os.fork(): the child writes through the descriptors it inherited
    "closerange-then-fork": """
        f = h5py.File("d.h5", "r"); reads(f["d"], 3000); f.close()
        os.closerange(3, 4096)
        fds = [os.open(f"out{k}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for k in range(8)]
        g = h5py.File("d.h5", "r"); e = g["d"]
        pid = os.fork()
        if pid == 0:
            counted[0] = 0          # the child's own
            reads(e, 1000)
            bad = []
            for k, fd in enumerate(fds):
                try:
                    os.write(fd, f"child {k}\\n".encode())
                except OSError as x:
                    bad.append((k, x.errno))
            print("child write errors:", bad, "reads", counted[0], flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        for k, fd in enumerate(fds):
            os.write(fd, f"parent {k}\\n".encode()); os.close(fd)
        print("parent reads", counted[0])
    """,
    # libc's fork() (a C extension's): no Python at-fork hook runs; both sides read on
    "c-fork": """
        f = h5py.File("d.h5", "r"); d = f["d"]
        reads(d, 1500)
        pid = ctypes.CDLL(None).fork()
        if pid == 0:
            counted[0] = 0          # the child's own
        reads(d, 3000)
        if pid == 0:
            print("child reads", counted[0], flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent reads", counted[0])
    """,
}


def _run(folder: Path, prog: Path, traced: bool) -> subprocess.CompletedProcess:
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    command = [sys.executable, prog]
    if traced:
        command = [sys.executable, "-m", "ccp.cli", "trace", "-o", folder.parent / "T", "--", *command]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(ROOT), "CCP_TRACE_TEST_CAPACITY": "256"})


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix == ".txt"}


@pytest.mark.parametrize("name", [
    "closerange-then-own-files",
    pytest.param("closerange-then-fork", marks=pytest.mark.slow),
    pytest.param("c-fork", marks=pytest.mark.slow),
], ids=lambda name: name)
def test_a_program_s_own_descriptors_stay_its_own(tmp_path, name):
    prog = tmp_path / "p.py"
    prog.write_text(textwrap.dedent(HEAD) + textwrap.dedent(PROGRAMS[name]))
    untraced = _run(tmp_path / "u", prog, traced=False)
    traced = _run(tmp_path / "t", prog, traced=True)
    assert untraced.returncode == 0 and traced.returncode == 0, (untraced.stderr, traced.stderr)
    assert sorted(traced.stdout.splitlines()) == sorted(untraced.stdout.splitlines()), traced.stderr
    assert name != "closerange-then-fork" or "errors: []" in traced.stdout
    assert _files(tmp_path / "t") == _files(tmp_path / "u")        # never a row or a close in the program's files
    own = sum(int(line.rsplit(" ", 1)[1]) for line in traced.stdout.splitlines() if "reads" in line)
    header = json.loads((tmp_path / "T" / "trace.json").read_text())
    completeness = header["completeness"]
    t = pd.read_parquet(tmp_path / "T" / "calls.parquet")
    reads = int(((t["kind"] == "call") & (t["depth"] == 0) & (t["op"] == "read")).sum())     # not the files' writes
    if completeness["complete"]:
        assert reads == own, (own, header["calls"], completeness)
    else:           # a loss is named, never a call counted twice: what is missing is at most what it says is lost
        assert name == "c-fork", completeness
        assert reads <= own <= reads + completeness["lost_records"], (own, header["calls"], completeness)
        assert any("record(s) lost" in reason for reason in completeness["reasons"]), completeness
        assert any("fork() Python did not see" in error for error in completeness["recorder_errors"]), completeness
