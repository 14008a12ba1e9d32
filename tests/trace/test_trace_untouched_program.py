"""Programs the trace must not disturb in ways a tester found (breaker5): a read in a ``__del__`` at interpreter exit
(the recorder imported on the program's call path, which fails once Python is shutting down: the read failed; such
a read is not recorded, as it comes after the trace's last write), and a key whose
``__index__`` h5py asks once (the recorder asked again to describe it), and a warning h5py raises for its caller
(it named the recorder's wrapper, and a filter on the program's module missed it), and the name and docstring of a
wrapped method (help() of a traced program showed the recorder's). Traced and untraced, the program
prints the same, writes the same to stderr and exits the same. Issue 23."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAMS = {
    "read-in-del-at-exit": """
        import sys, h5py, numpy as np
        with h5py.File(sys.argv[1] + "/d.h5", "w") as f:
            f.create_dataset("x", data=np.arange(10.0))
        class Reader:
            def __init__(self):
                self.f = h5py.File(sys.argv[1] + "/d.h5", "r")
                self.d = self.f["x"]
            def __del__(self):
                print("del read", float(self.d[5]), float(self.d[2:4][1]))
                self.f.close()
                print("closed")
        r = Reader()
        print("main", float(r.d[0]))
    """,
    "index-asked-once": """
        import sys, h5py, numpy as np
        class Key:
            n = 0
            def __index__(self):
                Key.n += 1
                return Key.n          # another answer each time it is asked
        f = h5py.File(sys.argv[1] + "/d.h5", "w")
        d = f.create_dataset("x", data=np.arange(10.0))
        print("read", d[Key()], "asked", Key.n)
        print("read", d[(Key(),)], "asked", Key.n)
        f.close()
    """,
    "warning-names-the-programs-line": """
        import sys, warnings, h5py, numpy as np
        f = h5py.File(sys.argv[1] + "/d.h5", "w")
        f.create_dataset("x", (4,))                 # no dtype: h5py warns, stacklevel pointing here
        warnings.filterwarnings("error", module="__main__")
        try:
            f.create_dataset("y", (4,))             # the same warning, an error for this module's lines
            print("created y")
        except Exception as exc:
            print("refused y:", type(exc).__name__)
        f.close()
    """,
    "wrapped-methods-keep-h5pys-names-and-docs": """
        import h5py
        from h5py import h5d, _selector
        for owner, name in ((h5py.Dataset, "__getitem__"), (h5py.Dataset, "__setitem__"),
                            (h5py.Dataset, "read_direct"), (h5py.Dataset, "write_direct"),
                            (h5d.DatasetID, "read"), (h5d.DatasetID, "write"), (h5d.DatasetID, "set_extent"),
                            (_selector.Reader, "read")):
            f = getattr(owner, name)
            print(name, f.__name__, f.__qualname__, getattr(f, "__module__", None), repr(f.__doc__)[:60])
    """,
}


def _run(tmp_path: Path, name: str, traced: bool) -> subprocess.CompletedProcess:
    """The program run in ``tmp_path/w`` (the same path both times: a warning names it), moved aside after."""
    where = tmp_path / "w"
    where.mkdir()
    prog = where / "p.py"
    prog.write_text(textwrap.dedent(PROGRAMS[name]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    cmd = [sys.executable, str(prog), str(where)]
    if traced:
        cmd = [sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**env, "PYTHONPATH": str(ROOT)})
    where.rename(tmp_path / ("t" if traced else "u"))
    return done


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_program_sees_no_difference(tmp_path, name):
    untraced, traced = _run(tmp_path, name, False), _run(tmp_path, name, True)
    assert untraced.returncode == 0, untraced.stderr
    assert traced.returncode == untraced.returncode and traced.stdout == untraced.stdout, traced.stderr
    own = "".join(line for line in traced.stderr.splitlines(keepends=True) if not line.startswith("ccp trace: "))
    assert own == untraced.stderr and "recorder problem" not in traced.stderr, traced.stderr
    if name == "index-asked-once":      # the trace holds the elements read (1, 2), not the next answers (2, 3)
        calls = pd.read_parquet(tmp_path / "trace" / "calls.parquet")
        low = calls[calls["api"] == "fast_reader"]
        assert [list(s) for s in low["start"]] == [[1], [2]], low[["api", "start", "count"]]


def test_children_that_exec_another_program_leave_the_trace_complete(tmp_path):
    """subprocess with a preexec_fn forks (running Python's at-fork hooks) and then execs ``true``: no traced process
    there, and the trace is complete (breaker5: INCOMPLETE with a reason per child, every call recorded). Without a
    preexec_fn the child, seen in /proc before its exec, is a fork's image, not a Python process without the
    recorder."""
    import json

    (tmp_path / "p.py").write_text(textwrap.dedent("""
        import subprocess, sys, h5py, numpy as np
        with h5py.File(sys.argv[1] + "/d.h5", "w") as f:
            f.create_dataset("x", data=np.arange(10.0))
        f = h5py.File(sys.argv[1] + "/d.h5", "r")
        for i in range(5):
            f["x"][i]
            subprocess.run(["true"], preexec_fn=lambda: None, check=True)
            subprocess.run(["true"], check=True)
        f.close()
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "t"), "--", sys.executable,
                        str(tmp_path / "p.py"), str(tmp_path)], capture_output=True, text=True, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    head = json.loads((tmp_path / "t" / "trace.json").read_text())
    assert head["completeness"]["complete"] is True, head["completeness"]
    assert "INCOMPLETE" not in r.stderr, r.stderr


def test_the_checkouts_other_folders_are_not_importable_traced(tmp_path):
    """breaker6 F8: the recorder put ccp's checkout on sys.path, so a traced program could import its tests,
    benchmarks or examples (an ``import tests`` that fails untraced succeeded). Only ``ccp`` is found there now."""
    prog = tmp_path / "p.py"
    prog.write_text(textwrap.dedent("""
        import importlib.util
        print([n for n in ("tests", "benchmarks", "examples", "ccp") if importlib.util.find_spec(n)])
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE") and k != "PYTHONPATH"}
    untraced = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=300, env=env,
                              cwd=tmp_path)
    traced = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "T"), "--", sys.executable,
                             str(prog)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert traced.returncode == 0 and traced.stdout == untraced.stdout, (untraced.stdout, traced.stdout, traced.stderr)
