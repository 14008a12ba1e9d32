"""Fixtures for the reliability tests: a small real filesystem that fills up, and ccp as a subprocess."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tmpfs(tmp_path):
    """``make(size_mib) -> Path``: a loopback tmpfs of that size (root only; skipped otherwise)."""
    mounts = []

    def make(size_mib: int, name: str = "fs") -> Path:
        if os.geteuid() != 0:
            pytest.skip("a full disk is emulated with a tmpfs mount, which needs root")
        if shutil.which("mount") is None:
            pytest.skip("no mount command to make a small tmpfs")
        d = tmp_path / name
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(d)], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounts.append(d)
        return d

    yield make
    for d in mounts:
        subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)


def ccp_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "ccp.cli", *map(str, args)]


def ccp_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


@pytest.fixture
def run_ccp():
    """Run ``ccp ARGS`` as a subprocess: returns CompletedProcess (text)."""

    def _run(*args, timeout=300, cwd=None, **env):
        return subprocess.run(ccp_cmd(*args), capture_output=True, text=True, timeout=timeout, env=ccp_env(**env), cwd=cwd, check=False)

    return _run
