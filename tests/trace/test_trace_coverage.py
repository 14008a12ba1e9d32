"""The recorder is invisible to the program's own tracers: `coverage run` reports what it reports untraced.

Under ccp trace a program's coverage report gained 13 of ccp's modules (ccp installed editable, outside
site-packages) and TOTAL fell from 100% to 28% (tester breaker3 F-coverage). ccp's modules in a traced process
now carry code file names starting ``<ccp trace, ...>``, which coverage.py (like any tracer keeping to real files)
leaves out.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import sys, h5py, numpy as np
    seen = set()
    def tracer(frame, event, arg):
        seen.add(frame.f_code.co_filename)
        return None
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("c", data=np.arange(100.0), chunks=(10,))
    sys.settrace(tracer)
    with h5py.File(sys.argv[1], "r") as f:
        for i in range(10):
            f["c"][i]
            f["c"][i:i + 3]
    sys.settrace(None)
    for name in sorted(seen):
        print(name)
""")


def _trace(tmp_path, *cmd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "t"), "--", *cmd],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(ROOT)})


def test_a_tracer_of_the_program_sees_no_file_of_ccp(tmp_path):
    (tmp_path / "p.py").write_text(PROGRAM)
    p = _trace(tmp_path, sys.executable, "p.py", "d.h5")
    assert p.returncode == 0, p.stderr
    files = p.stdout.splitlines()
    assert any("h5py" in f for f in files), files          # the tracer ran over the reads
    ccp_dir = str(ROOT / "ccp")
    assert not [f for f in files if f.startswith(ccp_dir)], files
    assert int(p.stderr.split("ccp trace: ", 1)[1].split()[0]) >= 20, p.stderr      # and the reads were recorded


def test_coverage_run_reports_the_program_alone(tmp_path):
    pytest.importorskip("coverage")
    (tmp_path / "p.py").write_text(PROGRAM)
    p = _trace(tmp_path, sys.executable, "-m", "coverage", "run", "--branch", "p.py", "d.h5")
    assert p.returncode == 0, p.stderr
    rep = subprocess.run([sys.executable, "-m", "coverage", "report"], capture_output=True, text=True, cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert "ccp" not in rep.stdout and "p.py" in rep.stdout, rep.stdout
