"""A forking program's trace holds every call of each process under its own pid, whatever lands in the recorder as
it forks: the program's exception cutting a child's after-fork reset short (a Ctrl-C to the process group as it
forks), a fork from the program's signal handler in the middle of a part file's write, the parent killed by SIGINT
after its children ended. The recorder before this fix let such a child cut and overwrite the parent's part file.

Where the program's signal lands is chosen with a profile function (``sys.setprofile``), one place per child: it
raises a KeyboardInterrupt (or forks) at the n-th call into or return from a C function, or entry to a Python
function, of the recorder's code, the points where CPython runs a signal handler."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import os, signal, sys, h5py, numpy as np
    path, where, ending = sys.argv[1], sys.argv[2], sys.argv[3]
    PLACES, CHILD_READS = 40, 150
    parent, children, child, reads, fired = os.getpid(), [], False, 0, False

    def read(d, i):
        global reads
        if i % 7 == 0:
            d.astype("f8")[[1, 2]]      # through astype: the recorder's full path (records naming their pid)
        elif i % 3 == 0:
            d[i % 90:i % 90 + 5]        # a slice key: the fast path's slice columns
        else:
            d[i % 100]                  # an int key: the fast path's index columns
        reads += 1

    def ours(frame):
        return os.sep + os.path.join("ccp", "trace") + os.sep in frame.f_code.co_filename

    def interrupt_reset_at(n):
        # in the child only: a KeyboardInterrupt at the n-th place in the recorder (its after-fork reset first)
        seen = [0]
        def prof(frame, event, arg):
            global fired
            if os.getpid() != parent and event in ("call", "c_return") and ours(frame):
                seen[0] += 1
                if seen[0] == n:
                    fired = True
                    raise KeyboardInterrupt
        return prof

    # a flush: the records' part-file write, then the calls' journal rows (ccp.trace.journal), then what is left
    WRITING = ("flush", "_write_some", "write_at", "_journal", "put", "_fd")

    def fork_in_write():
        # in the parent: os.fork at the k-th place of the k-th flush (as a signal handler calling it), until a flush
        # has fewer places than its number
        state = {"writes": 0, "seen": 0}
        def prof(frame, event, arg):
            global child, fired
            if child or event not in ("call", "c_return") or frame.f_code.co_name not in WRITING:
                return
            if event == "call" and frame.f_code.co_name == "flush":
                fired = state["seen"] and state["seen"] < state["writes"]       # the last write had no k-th place
                state["writes"] += 1
                state["seen"] = 0
            state["seen"] += 1
            if state["seen"] == state["writes"] and not fired:
                pid = os.fork()
                if pid == 0:
                    child = True
                else:
                    children.append(pid)
        return prof

    def child_reads(d):
        sys.setprofile(None)
        for i in range(CHILD_READS):
            read(d, i)
        os._exit(3 if fired else 0)     # the way a forked child leaves (and multiprocessing's); 3: interrupted

    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
    f = h5py.File(path, "r")
    d = f["x"]
    for i in range(300):
        read(d, i)
    if where == "reset":
        for n in range(1, PLACES + 1):
            sys.setprofile(interrupt_reset_at(n))
            pid = os.fork()
            if pid == 0:
                child_reads(d)
            sys.setprofile(None)
            children.append(pid)
            for i in range(50):
                read(d, i)
    else:
        sys.setprofile(fork_in_write())
        i = 0
        while not fired and not child:
            read(d, i)
            i += 1
        if child:
            child_reads(d)
        sys.setprofile(None)
    interrupted = sum(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3 for pid in children)
    print(parent, reads, len(children), interrupted, flush=True)
    if ending == "sigint":
        try:
            while True:
                read(d, 0)
                if reads % 1000 == 0:
                    os.kill(os.getpid(), signal.SIGINT)
        finally:
            print(reads, flush=True)
""")


@pytest.mark.parametrize("where,ending", [("reset", "exit"), ("write", "exit"), ("reset", "sigint")],
                         ids=["signal-in-the-child-reset", "fork-in-a-write", "parent-ctrl-c-after-its-children"])
def test_each_process_of_a_forking_program_keeps_its_own_calls(tmp_path, where, ending):
    prog = tmp_path / "p.py"
    prog.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", tmp_path / "t", "--", sys.executable, prog,
                        tmp_path / "d.h5", where, ending], capture_output=True, text=True, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT), "CCP_TRACE_TEST_CAPACITY": "64"})
    lines = r.stdout.split("\n")
    parent, parent_reads, nchildren, interrupted = map(int, lines[0].split())
    # a KeyboardInterrupt in each of the first 10 or more places of a child's reset; a fork at each place of a write
    assert nchildren >= 10 and (interrupted >= 10 if where == "reset" else True), (r.stdout, r.stderr)
    if ending == "sigint":
        assert r.returncode == 128 + 2 and "the program was killed by SIGINT" in r.stderr
        parent_reads = int(lines[1])
    else:
        assert r.returncode == 0, r.stderr
    t = pd.read_parquet(tmp_path / "t" / "calls.parquet")
    user = t[(t["kind"] == "call") & (t["depth"] == 0) & (t["op"] == "read")]      # not create_dataset's write
    per_pid = user.groupby("pid").size().to_dict()
    # every read of the parent (the one a SIGINT cut may be recorded without being counted), each child's 150
    assert parent_reads <= per_pid.pop(parent) <= parent_reads + (ending == "sigint")
    assert sorted(per_pid.values()) == [150] * nchildren
    assert not t.duplicated(["pid", "seq"]).any()
    h = json.loads((tmp_path / "t" / "trace.json").read_text())
    assert h["completeness"]["complete"] is (ending == "exit"), h["completeness"]
    assert all("SIGINT" in reason for reason in h["completeness"]["reasons"]), h["completeness"]    # nothing lost
    c = h["completeness"]
    assert c["processes_seen"] == nchildren + 1 and c["lost_records"] == 0 and not c["recorder_errors"], c
