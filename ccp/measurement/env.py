"""The environment a run was measured in: machine, filesystem, library versions, ccp's commit."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from ccp.measurement import allocator


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def filesystem_of(path: Path) -> str:
    """'ext4 on /dev/vda (/)' for the mount that holds ``path``."""
    path = Path(path).resolve()
    best = ("", "?", "?")
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, fstype, *_ = line.split()
            if (str(path) == mnt or str(path).startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, dev, fstype)
    except OSError:
        return "unknown"
    return f"{best[2]} on {best[1]} ({best[0]})"


def git_state() -> tuple[str | None, bool | None]:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None, None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
        return commit.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


def versions() -> dict:
    import h5py
    import numpy

    import ccp

    out = {"python": platform.python_version(), "h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version,
           "numpy": numpy.__version__, "ccp": ccp.__version__}
    try:
        import hdf5plugin
        out["hdf5plugin"] = hdf5plugin.version
    except ImportError:
        out["hdf5plugin"] = None
    for name in ("pandas", "pyarrow"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


def hdf5_default_cache() -> dict:
    """The library's own chunk cache default, recorded so no run depends on it silently."""
    from ccp.hdf5.defaults import library_cache

    dapl, fapl = library_cache("dataset"), library_cache("file")
    return {"dapl": {"nslots": dapl.nslots, "nbytes": dapl.nbytes, "w0": dapl.w0},
            "fapl": {"nslots": fapl.nslots, "nbytes": fapl.nbytes, "w0": fapl.w0}}


def collect(work_dir: Path) -> dict:
    commit, dirty = git_state()
    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "kernel": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "filesystem": filesystem_of(work_dir),
        "work_dir": str(Path(work_dir).resolve()),
        **versions(),
        "hdf5_default_chunk_cache": hdf5_default_cache(),
        # the malloc thresholds every measuring process sets (ccp.measurement.allocator; {} where not glibc)
        "malloc": allocator.settings(),
        "git_commit": commit,
        "git_dirty": dirty,
    }
