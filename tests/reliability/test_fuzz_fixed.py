"""The cases `benchmarks/fuzz_commands.py` found not clean, fixed in the command's code: each is one line
`ccp: error: ...` naming the option, file or key, exit 2, and nothing written that looks like a result."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ccp.cli import main
from tests.reliability.conftest import ccp_cmd, ccp_env

PROGRAM = textwrap.dedent("""
    import sys, h5py
    with h5py.File(sys.argv[1], "r") as f:
        d = f["d"]
        for i in range(40):
            d[i % 8, :]
""")


def one_line(output: str, exit_code: int, words) -> None:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert exit_code == 2, output
    assert len(lines) == 1 and lines[0].startswith("ccp: error: "), output
    assert all(w in lines[0] for w in words), lines[0]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A real trace of a small program (40 reads of one dataset)."""
    tmp = tmp_path_factory.mktemp("trace")
    with h5py.File(tmp / "data.h5", "w") as h:
        h.create_dataset("d", data=np.arange(48, dtype="f4").reshape(8, 6), chunks=(4, 6))
    (tmp / "prog.py").write_text(PROGRAM)
    r = subprocess.run(ccp_cmd("trace", "-o", tmp / "t", "--", sys.executable, tmp / "prog.py", tmp / "data.h5"),
                       capture_output=True, text=True, env=ccp_env(), timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    return tmp / "t"


def test_trace_out_empty_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # Path('') is '.': the trace would land in the current folder
    r = CliRunner().invoke(main, ["trace", "-o", "", "--", sys.executable, "-c", "pass"])
    one_line(r.output, r.exit_code, ["-o/--out", "empty"])
    assert list(tmp_path.iterdir()) == []


def _set_header(key, value):
    def damage(folder: Path) -> None:
        h = json.loads((folder / "trace.json").read_text())
        h[key] = value(h[key]) if callable(value) else value
        (folder / "trace.json").write_text(json.dumps(h))
    return damage


def _drop_rows(keep):
    def damage(folder: Path) -> None:
        t = pd.read_parquet(folder / "calls.parquet")
        t.iloc[keep(len(t))].to_parquet(folder / "calls.parquet", index=False)
    return damage


COUNT_CASES = [
    ("calls-count-wrong", _set_header("calls", 10 ** 6), ["calls.parquet", "trace.json's calls says 1000000"]),
    ("calls-count-zero", _set_header("calls", 0), ["calls.parquet", "calls"]),
    ("events-count-wrong", _set_header("events", lambda n: n + 1), ["calls.parquet", "events"]),
    ("nested-count-wrong", _set_header("nested_calls", lambda n: n + 3), ["calls.parquet", "nested_calls"]),
    ("rows-dropped", _drop_rows(lambda n: slice(0, n // 2)), ["calls.parquet", "trace.json's calls"]),
    ("last-row-dropped", _drop_rows(lambda n: slice(0, n - 1)), ["calls.parquet", "trace.json"]),
    ("all-rows-dropped", _drop_rows(lambda n: slice(0, 0)), ["calls.parquet", "trace.json"]),
]


@pytest.mark.parametrize("damage, words", [c[1:] for c in COUNT_CASES], ids=[c[0] for c in COUNT_CASES])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_diagnose_refuses_a_trace_whose_rows_and_header_disagree(trace, tmp_path, damage, words, as_json):
    import shutil

    folder = tmp_path / "t"
    shutil.copytree(trace, folder)
    damage(folder)
    r = CliRunner().invoke(main, ["diagnose", str(folder), *(["--json"] if as_json else [])])
    one_line(r.output, r.exit_code, words)


def test_diagnose_still_reads_the_intact_trace(trace):
    r = CliRunner().invoke(main, ["diagnose", str(trace)])
    assert r.exit_code == 0, r.output
    assert "40 dataset call(s)" in r.output.splitlines()[0], r.output


def test_repack_filter_named_on_an_unchunkable_empty_dataset_is_refused(tmp_path):
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as h:
        h.create_dataset("empty_fixed", shape=(0, 5), dtype="<f4")        # contiguous, a fixed 0 extent
        h.create_dataset("x", data=np.arange(10.0), chunks=(5,))
    r = CliRunner().invoke(main, ["repack", "-f", "/empty_fixed:GZIP=1", str(src), str(out)])
    one_line(r.output, r.exit_code, ["-f /empty_fixed", "size 0", "cannot be chunked or filtered"])
    assert not out.exists()
    r = CliRunner().invoke(main, ["repack", "-f", "GZIP=1", str(src), str(out)])   # for all: kept, said
    assert r.exit_code == 0, r.output
    assert "/empty_fixed: kept as it is: has a fixed dimension of size 0" in r.output
    with h5py.File(out, "r") as h:
        assert h["empty_fixed"].shape == (0, 5) and h["x"].compression == "gzip"


WORKLOAD = """\
name: fz
dataset: {generate: {shape: [32, 16, 16], dtype: "<f4"}}
workload:
  - {access: {op: read, block: [32, 1, 1]}, weight: 1}
  - {access: {op: read, block: [1, 16, 16]}, weight: 1}
constraints: {cache_nbytes: 16KiB, max_chunk_bytes: 16KiB}
"""


@pytest.mark.slow
def test_tune_on_a_full_disk_leaves_no_tune_json(tmpfs, tmp_path):
    fs = tmpfs(1)
    with open(fs / "ballast", "wb", buffering=0) as fh:     # fill it up
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    r = subprocess.run(ccp_cmd("tune", tmp_path / "w.yaml", "--no-measure", "--work", tmp_path / "work", "--out", fs / "out"),
                       capture_output=True, text=True, env=ccp_env(), timeout=600, check=False)
    one_line(r.stderr, r.returncode, ["--out", "No space left on device", str(fs / "out")])
    assert sorted(p.name for p in fs.rglob("*")) == ["ballast", "out"], list(fs.rglob("*"))


@pytest.mark.parametrize("a, b", [("/a/b", "/a-b"), ("/a/b", "/a_b"), ("/", "/root"), ("/x y", "/x-y"), ("/t.1", "/t-1"),
                                  ("/grp/temp", "/grp_temp"), ("/é", "/_")],
                         ids=["slash-dash", "slash-underscore", "root", "space", "dot", "group", "non-ascii"])
def test_diagnose_cure_files_of_two_datasets_never_share_a_name(a, b):
    from ccp.trace.diagnose import repack_output
    from ccp.trace.harm import dataset_slug

    assert dataset_slug(a) != dataset_slug(b)                                  # tune-<slug>.yaml, name: diagnose-<slug>
    assert repack_output("/d/f.h5", a, (4, 8)) != repack_output("/d/f.h5", b, (4, 8))
    assert dataset_slug("/tas") == "tas" and repack_output("/d/f.h5", "/tas", (4, 8)) == "/d/f-tas-4x8.h5"


def test_ctrl_c_while_ccp_starts_is_one_line(tmp_path):
    """The handler `ccp` installs before its imports (deterministic: the signal is sent after the import)."""
    code = ("import sys; sys.argv[0] = '/usr/bin/ccp'; import ccp.cli, os, signal, time; "
            "os.kill(os.getpid(), signal.SIGINT); time.sleep(30)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ccp_env(), timeout=120,
                       check=False)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == "ccp: interrupted while starting; nothing was done", r.stderr


def test_importing_ccp_cli_elsewhere_leaves_ctrl_c_alone(tmp_path):
    code = "import signal, ccp.cli; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ccp_env(), timeout=120,
                       check=False)
    assert r.stdout.strip() == "True", r.stderr


def test_ctrl_c_while_the_recorder_loads_leaves_the_program_as_python_would(tmp_path):
    """A Ctrl-C inside the recorder's sitecustomize (here: the program's own sitecustomize, which it chains,
    raises it) ends the program killed by SIGINT, as an uncaught Ctrl-C does, not with site's fatal error."""
    from ccp.trace.run import traced_env

    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("raise KeyboardInterrupt\n")
    env = traced_env(tmp_path / "parts")
    env["PYTHONPATH"] += os.pathsep + str(own)
    r = subprocess.run([sys.executable, "-c", "print('ran')"], capture_output=True, text=True, env=env, timeout=120,
                       check=False)
    assert r.returncode == -signal.SIGINT, (r.returncode, r.stderr)
    assert "ran" not in r.stdout and "Fatal Python error" not in r.stderr, r.stderr


def test_the_trace_watchdog_kills_a_program_whose_ccp_trace_died_right_after_starting_it():
    """The program tells the watchdog its group before its exec: ccp trace dying at once (its pipe closed
    without "done") still takes the program with it."""
    from ccp.trace.run import _watchdog

    w = _watchdog(lambda pgid: None)

    def tell():
        os.write(w, f"pgid {os.getpid()}\n".encode())

    prog = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0, preexec_fn=tell)
    os.close(w)                                  # ccp trace "dies": no "done"
    try:
        assert prog.wait(timeout=30) == -signal.SIGKILL
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()


LOST_CTRL_C = textwrap.dedent("""
    import signal, sys, time, weakref
    from ccp import cli
    signal.signal(signal.SIGINT, cli._on_ctrl_c)
    if sys.argv[1] == "hook":
        sys.unraisablehook = cli._resend_lost_ctrl_c(sys.unraisablehook)
    class A:
        pass
    a = A()
    def callback(_ref):
        raise KeyboardInterrupt       # as if Ctrl-C landed here: Python prints "Exception ignored" and drops it
    r = weakref.ref(a, callback)
    try:
        del a
        for _ in range(200):
            time.sleep(0.01)
        print("lost")
    except KeyboardInterrupt:
        print("kept")
""")


@pytest.mark.parametrize("hook, said", [("hook", "kept"), ("none", "lost")], ids=["resent", "python-drops-it"])
def test_a_ctrl_c_python_drops_in_a_weakref_callback_is_sent_again(hook, said):
    r = subprocess.run([sys.executable, "-c", LOST_CTRL_C, hook], capture_output=True, text=True, env=ccp_env(),
                       timeout=120, check=False)
    assert r.stdout.strip() == said, r.stderr
    assert ("Exception ignored" in r.stderr) == (hook == "none"), r.stderr


def test_sigterm_that_surfaces_as_another_error_in_repack_is_said_as_sigterm(tmp_path, monkeypatch):
    """SIGTERM raised inside a lock comes out as RuntimeError('cannot release un-acquired lock') -> the repack's
    CcpError; it was the signal: the repack's own 'terminated' line and 143, not 'could not be repacked'."""
    import ccp.repack.command as rc
    from ccp.errors import CcpError

    def repack_one(*_args):
        rc._SIGTERMS.append(signal.SIGTERM)
        raise CcpError("/d: could not be repacked (fast path): cannot release un-acquired lock; nothing written")

    monkeypatch.setattr(rc, "_repack_one", repack_one)
    monkeypatch.setattr(rc, "_SIGTERMS", [])
    r = CliRunner().invoke(main, ["repack", "-f", "GZIP=1", str(tmp_path / "in.h5"), str(tmp_path / "out.h5")])
    assert r.exit_code == 128 + signal.SIGTERM, r.output
    assert "ccp: terminated: nothing written" in r.output and "could not be repacked" not in r.output, r.output
