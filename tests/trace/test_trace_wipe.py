"""A traced program that empties its output folder where ``-o`` is keeps every call (breaker6 F2b, F7; issue 23).

The recorders write into a private folder outside ``-o`` (:mod:`ccp.trace.parts_folder`), moved into ``-o/parts`` once
the program has ended. Each program runs traced, in a folder of its own with ``-o out/T`` relative to it (as breaker6
ran it): the trace holds exactly the reads the program counted, the program's own files stay, and ``$TMPDIR`` (where
the private folder is made) is left empty."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAD = """
    import os, shutil, subprocess, sys, h5py
    def reads(d, n):
        for i in range(n):
            d[i % 100] if i % 2 else d[i % 99:i % 99 + 1]
        return n
    DATA = os.path.abspath("d.h5")
"""

CHILD = "import sys, h5py; d = h5py.File(sys.argv[1], 'r')['d']; [d[i % 100] for i in range(300)]"

PROGRAMS = {
    # the output folder emptied (with -o in it) before the first read, the results written there
    "wipe-before-reads": ("""
        shutil.rmtree("out"); os.makedirs("out"); open("out/result.txt", "w").write("mine\\n")
        d = h5py.File(DATA, "r")["d"]
        print("made", reads(d, 500))
    """, 500),
    # calls before the wipe (already written: batches of 64) and after it
    "wipe-mid-run": ("""
        d = h5py.File(DATA, "r")["d"]
        made = reads(d, 400)
        shutil.rmtree("out"); os.makedirs("out"); open("out/result.txt", "w").write("mine\\n")
        print("made", made + reads(d, 600))
    """, 1000),
    # -o itself removed and made again, the program's own file left in it
    "remove-o-keep-own-file": ("""
        d = h5py.File(DATA, "r")["d"]
        made = reads(d, 300)
        shutil.rmtree("out/T"); os.makedirs("out/T"); open("out/T/result.txt", "w").write("mine\\n")
        print("made", made + reads(d, 300))
    """, 600),
    # every descriptor past stderr closed before the first read (daemon-style), then a normal end
    "closeall": ("""
        os.closerange(3, 4096)
        d = h5py.File(DATA, "r")["d"]
        print("made", reads(d, 500))
    """, 500),
    # a chdir, then a child Python in yet another folder: the relative -o never matters to the recorders
    "chdir-and-child": ("""
        d = h5py.File(DATA, "r")["d"]
        made = reads(d, 200)
        os.makedirs("sub", exist_ok=True); os.chdir("sub")
        subprocess.run([sys.executable, "-c", CHILD, DATA], cwd="/", check=True)
        print("made", made + 300)
    """, 500),
}


def _traced(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    work, private = tmp_path / "w", tmp_path / "tmp"
    work.mkdir()
    private.mkdir()
    with h5py.File(work / "d.h5", "w") as f:
        f.create_dataset("d", data=np.arange(100.0), chunks=(10,))
    prog = work / "p.py"
    prog.write_text(textwrap.dedent(HEAD) + f"CHILD = {CHILD!r}\n" + textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    env.update(PYTHONPATH=str(ROOT), CCP_TRACE_TEST_CAPACITY="64", TMPDIR=str(private))
    return subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", "out/T", "--", sys.executable, "p.py"],
                          cwd=work, capture_output=True, text=True, timeout=300, env=env)


def _reads(trace: Path) -> int:
    t = pd.read_parquet(trace / "calls.parquet")
    return int(((t["kind"] == "call") & (t["depth"] == 0) & (t["op"] == "read")).sum())


@pytest.mark.parametrize("name", list(PROGRAMS), ids=list(PROGRAMS))
def test_the_trace_holds_every_call_whatever_the_program_does_to_its_output_folder(tmp_path, name):
    body, made = PROGRAMS[name]
    r = _traced(tmp_path, body)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"made {made}", r.stdout
    trace = tmp_path / "w" / "out" / "T"
    header = json.loads((trace / "trace.json").read_text())
    assert header["completeness"]["complete"], header["completeness"]
    assert header["calls"] == made == _reads(trace), r.stderr
    assert sorted(trace.glob("parts/*.part")), "the recorded files are kept in -o/parts"
    assert not list((tmp_path / "tmp").iterdir()), "the private folder is gone once moved"
    if "wipe" in name:
        assert (tmp_path / "w" / "out" / "result.txt").read_text() == "mine\n"
    if name == "remove-o-keep-own-file":
        assert (trace / "result.txt").read_text() == "mine\n"
    if name == "chdir-and-child":
        assert len(header["pids"]) == 2, header["pids"]


def test_a_trace_is_never_written_over_files_the_program_left_under_its_names(tmp_path):
    r = _traced(tmp_path, """
        d = h5py.File(DATA, "r")["d"]
        reads(d, 300)
        open("out/T/trace.json", "w").write("the program's own\\n")
    """)
    assert r.returncode == 2, r.stderr
    trace = tmp_path / "w" / "out" / "T"
    assert (trace / "trace.json").read_text() == "the program's own\n"
    assert not (trace / "calls.parquet").exists()
    kept = list((tmp_path / "tmp").iterdir())
    assert len(kept) == 1 and sorted(kept[0].glob("*.part")), kept
    assert f"left its own trace.json there; the trace is not written over them; the recorded part files are kept " \
           f"in {kept[0]}" in r.stderr, r.stderr


def test_the_recorders_own_folder_removed_is_named_as_the_loss(tmp_path):
    r = _traced(tmp_path, """
        d = h5py.File(DATA, "r")["d"]
        made = reads(d, 300)
        shutil.rmtree(os.environ["CCP_TRACE_DIR"])
        print("made", made + reads(d, 300))
    """)
    assert r.returncode == 0, r.stderr
    header = json.loads((tmp_path / "w" / "out" / "T" / "trace.json").read_text())
    reasons = header["completeness"]["reasons"]
    assert not header["completeness"]["complete"] and any("was removed while the program ran" in x for x in reasons)
    assert "made no h5py dataset calls" not in r.stderr and "was removed while the program ran" in r.stderr


@pytest.mark.parametrize("how", ["rename", "copy"], ids=["same-filesystem", "other-filesystem"])
def test_the_recorded_files_reach_the_trace_folder(tmp_path, monkeypatch, how):
    import tempfile

    from ccp.trace import parts_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out = tmp_path / "T"
    folder = parts_folder.PartsFolder(out)
    (folder.path / "1-2.part").write_bytes(b"calls")
    (out / "parts").mkdir(parents=True)         # ccp trace's placeholder
    if how == "copy":
        def cross_device(*_args):
            raise OSError(18, "Invalid cross-device link")
        monkeypatch.setattr(parts_folder.os, "rename", cross_device)
    assert folder.lost() is None
    assert folder.move_to_out() == out / "parts"
    assert (out / "parts" / "1-2.part").read_bytes() == b"calls" and not folder.path.exists()
    assert (out / "parts").stat().st_mode & 0o777 == 0o777 & ~_umask()
    assert "was removed while the program ran" in (folder.lost() or "")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
