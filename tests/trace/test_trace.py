"""`ccp trace` end to end: calls counted by the program itself, pass-through of output and status."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def ccp(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True, text=True,
                          cwd=cwd, env={**_env(), "PYTHONPATH": str(ROOT)}, timeout=600)


def _env():
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}


def trace_run(tmp_path, *program, name="t"):
    out = tmp_path / name
    r = ccp("trace", "-o", out, "--", sys.executable, *program)
    return r, out


def own_count(stdout: str) -> int:
    return int(re.search(r"dataset calls: (\d+)", stdout).group(1))


def header(out: Path) -> dict:
    return json.loads((out / "trace.json").read_text())


@pytest.mark.parametrize("program", [
    pytest.param(["band_reader.py", "--bands", "5"], id="band-reader-reopens"),
    pytest.param(["tiny_chunks.py", "--repeats", "2"], id="tiny-chunks"),
    pytest.param(["shuffled_loader.py", "--samples", "60", "--workers", "2", "--start-method", "spawn"], id="loader-spawn"),
    pytest.param(["shuffled_loader.py", "--samples", "60", "--workers", "2", "--start-method", "fork"], id="loader-fork"),
])
def test_calls_in_trace_equal_the_programs_own_count(tmp_path, program):
    script, *args = program
    r, out = trace_run(tmp_path, EXAMPLES / script, *args, "--file", tmp_path / "data.h5")
    assert r.returncode == 0, r.stderr
    h = header(out)
    assert h["calls"] == own_count(r.stdout)
    import pandas as pd

    t = pd.read_parquet(out / "calls.parquet")
    assert int(((t["kind"] == "call") & (t["depth"] == 0)).sum()) == own_count(r.stdout)
    if "--workers" in args:      # worker processes were recorded: calls come from more than one pid
        calls = t[(t["kind"] == "call") & (t["depth"] == 0)]
        assert calls["pid"].nunique() >= 2
    assert h["schema_version"] == 1 and h["environment"]["hdf5"]
    f = next(x for x in h["files"] if x["path"].endswith("data.h5"))
    assert f["size"] > 0 and len(f["sha256"]) == 64
    assert all(d["shape"] and d["dtype"] for d in h["datasets"])


def test_output_and_status_pass_through(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text(textwrap.dedent("""
        import sys, h5py, numpy as np
        with h5py.File(sys.argv[1], "w") as f:
            d = f.create_dataset("x", shape=(10,), dtype="i4")
            d[:3] = 1
            print("out line", d[0])
        sys.stderr.write("err line\\n")
        sys.exit(5)
    """))
    r, out = trace_run(tmp_path, prog, tmp_path / "x.h5")
    assert r.returncode == 5
    assert r.stdout == "out line 1\n"
    assert r.stderr.startswith("err line\n")
    assert header(out)["calls"] == 2 and header(out)["exit_status"] == 5


def test_failing_program_status_and_traceback_pass_through(tmp_path):
    prog = tmp_path / "boom.py"
    prog.write_text("raise RuntimeError('boom')\n")
    r, out = trace_run(tmp_path, prog)
    assert r.returncode == 1
    assert "RuntimeError: boom" in r.stderr
    assert header(out)["exit_status"] == 1


def test_killed_program_reports_128_plus_signal(tmp_path):
    prog = tmp_path / "kill.py"
    prog.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    r, _ = trace_run(tmp_path, prog)
    assert r.returncode == 128 + 15


def test_program_without_h5py_gives_an_empty_trace(tmp_path):
    prog = tmp_path / "plain.py"
    prog.write_text("print(sum(range(10)))\n")
    r, out = trace_run(tmp_path, prog)
    assert r.returncode == 0 and r.stdout == "45\n"
    assert "made no h5py dataset calls" in r.stderr
    assert header(out)["calls"] == 0
    d = ccp("diagnose", out)
    assert d.returncode == 0 and "nothing to diagnose" in d.stdout


def test_low_level_calls_and_nested_views_count_once(tmp_path):
    prog = tmp_path / "low.py"
    prog.write_text(textwrap.dedent("""
        import sys, h5py, numpy as np
        from h5py import h5s
        with h5py.File(sys.argv[1], "w") as f:
            d = f.create_dataset("x", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5))   # 1
            out = np.empty((10, 10))
            d.id.read(h5s.ALL, h5s.ALL, out)                                                 # 2
            d.astype("f4")[2:4]                                                              # 3
            d.read_direct(out)                                                               # 4
            d[[1, 3], :]                                                                     # 5
            d[::2, 1]                                                                        # 6
            sp = d.id.get_space(); sp.select_elements([(0, 0), (9, 9)])
            small = np.empty((2,)); d.id.read(h5s.create_simple((2,)), sp, small)           # 7
        print("dataset calls: 7")
    """))
    r, out = trace_run(tmp_path, prog, tmp_path / "x.h5")
    assert r.returncode == 0, r.stderr
    assert header(out)["calls"] == 7
    import pandas as pd

    t = pd.read_parquet(out / "calls.parquet")
    user = t[(t["kind"] == "call") & (t["depth"] == 0)]
    assert list(user["api"]) == ["Group.create_dataset", "DatasetID.read", "astype.__getitem__", "Dataset.read_direct",
                                 "Dataset.__getitem__", "Dataset.__getitem__", "DatasetID.read"]
    assert user.iloc[-1]["sel"] == "points" and list(user.iloc[-1]["points"]) == [0, 0, 9, 9]
    assert (user["hdf5_s"] <= user["wall_s"] + 1e-9).all()
    calls = t[t["kind"] == "call"].set_index("seq")
    for _seq, row in calls[calls["depth"] > 0].iterrows():      # each nested call hangs under the call one level up
        assert calls.loc[row["parent"], "depth"] == row["depth"] - 1


@pytest.mark.parametrize("args,message", [
    (["diagnose", "{tmp}"], "not a ccp trace folder"),
    (["trace", "-o", "{tmp}/t", "--", "no-such-command-xyz"], "command not found"),
], ids=["diagnose-not-a-trace", "trace-missing-command"])
def test_errors_are_one_line_exit_2(tmp_path, args, message):
    r = ccp(*[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_existing_trace_needs_force(tmp_path):
    prog = tmp_path / "plain.py"
    prog.write_text("pass\n")
    trace_run(tmp_path, prog)
    r, _ = trace_run(tmp_path, prog)
    assert r.returncode == 2 and "--force" in r.stderr


@pytest.mark.parametrize("command", ["trace", "diagnose", "from-darshan"])
def test_help_has_an_example(command):
    r = ccp(command, "--help")
    assert r.returncode == 0 and "Example:" in r.stdout


def test_a_program_that_changes_folder_is_traced_into_the_relative_out_given(tmp_path):
    """`-o T` is relative to where ccp trace ran, not to wherever the program goes before its first flush."""
    import h5py

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("x", data=list(range(10)))
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(f"""
        import os, h5py
        os.chdir({str(elsewhere)!r})
        with h5py.File({str(tmp_path / "d.h5")!r}, "r") as f:
            print(f["x"][3])
    """))
    r = ccp("trace", "-o", "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert header(tmp_path / "T")["calls"] == 1
    assert list(elsewhere.iterdir()) == []          # nothing written where the program went
