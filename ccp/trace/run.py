"""Run a program with the recorder on in it and in every Python process it starts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ccp.errors import CcpError
from ccp.trace.store import PARTS, merge

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def traced_env(parts_dir: Path, base: dict | None = None) -> dict:
    """The environment that starts the recorder in every Python interpreter that inherits it."""
    env = dict(os.environ if base is None else base)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP) + (os.pathsep + old if old else "")
    env["CCP_TRACE_DIR"] = str(parts_dir)
    env["CCP_TRACE_ROOT"] = str(PACKAGE_ROOT)
    return env


def resolve_command(cmd: list[str]) -> list[str]:
    """A bare ``script.py`` runs with this Python; anything else runs as given."""
    if not cmd:
        raise CcpError("no command given: ccp trace -o TRACE -- python your_program.py ARGS")
    if cmd[0].endswith(".py") and not shutil.which(cmd[0]):
        return [sys.executable, *cmd]
    return list(cmd)


def prepare_dir(out: Path, force: bool) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CcpError(f"{out}: exists and is not a folder")
    if (out / "trace.json").exists() or (out / PARTS).exists():
        if not force:
            raise CcpError(f"{out}: already holds a trace (use --force to replace it)")
        for name in ("trace.json", "calls.parquet"):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / PARTS, ignore_errors=True)
    (out / PARTS).mkdir(parents=True, exist_ok=True)
    return out


def run_traced(cmd: list[str], out: Path, force: bool = False, checksum: bool = True) -> tuple[int, dict]:
    """Run ``cmd`` with recording on; its stdin/stdout/stderr are the caller's. Returns (status, header).

    Status is the program's exit status, or 128 + N when a signal N killed it (as a shell says).
    """
    out = prepare_dir(out, force)
    argv = resolve_command(cmd)
    env = traced_env(out / PARTS)
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, env=env)
    except FileNotFoundError:
        raise CcpError(f"{argv[0]}: command not found") from None
    except PermissionError:
        raise CcpError(f"{argv[0]}: permission denied") from None
    # Ctrl-C reaches the program (same process group); we wait for it and still write the trace.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    wall = time.perf_counter() - t0
    status = rc if rc >= 0 else 128 - rc
    header = merge(out, argv, status, wall, checksum=checksum)
    return status, header
