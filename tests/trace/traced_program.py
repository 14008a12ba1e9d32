"""One program traced through `ccp trace` as a user runs it (a subprocess, a bare environment), for the tests
that need a real trace folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def trace_program(tmp: Path, source: str, timeout: float = 600) -> Path:
    """Write ``source`` to TMP/prog.py, trace it (its one argument: TMP/data.h5) into TMP/trace, return that."""
    prog = tmp / "prog.py"
    prog.write_text(source)
    out = tmp / "trace"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp / "data.h5")], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return out
