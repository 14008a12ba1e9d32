"""The work folder: what ccp wrote there, so `ccp clean` removes that and nothing else.

ccp records every work file it is about to create in a manifest beside them (``.ccp-work-manifest``,
one relative path a line, appended before the file exists, so a half-written ``.tmp-PID`` of a
killed run is recognised too). `ccp clean` removes an entry only when it is in the manifest *and*
its name is one ccp gives (``<sweep>-<16 hex>.h5`` and its ``.json``, ``calibration.json``, the
``tmp/<cell>-<pid>`` scratch folders, the ``file-space`` folder of paged copies): a user's file that happens to sit in the folder, a run folder
(``--work results``) or the folder itself (``--work .``) is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

MANIFEST = ".ccp-work-manifest"
TMP = "tmp"
_LAYOUT = re.compile(r"^[^/]+-[0-9a-f]{16}\.h5(\.json)?$")
_SCRATCH = re.compile(r"^[0-9a-f]{12}-(\d+)$")            # tmp/<cell_id>-<pid>
_PARTIAL = re.compile(r"^(?P<base>.+)\.tmp-(?P<pid>\d+)$")   # <file>.tmp-<pid>: a file being written
FILE_SPACE = "file-space"     # paged (file_space) copies of layout files, for the storage axes
OURS = ("calibration.json", TMP, FILE_SPACE)


def _ccp_name(rel: str) -> bool:
    return rel in OURS or bool(_LAYOUT.match(rel))


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class WorkDir:
    path: Path

    @property
    def manifest(self) -> Path:
        return Path(self.path) / MANIFEST

    def entries(self) -> list[str]:
        try:
            text = self.manifest.read_text()
        except (OSError, UnicodeDecodeError):
            return []
        return list(dict.fromkeys(ln for ln in text.splitlines() if ln and _ccp_name(ln)))

    def register(self, target: Path) -> None:
        """Record ``target`` (a file ccp is about to create in this folder) as ccp's.

        Only a name ccp gives, and only when nothing is there yet or it is already ccp's: a file
        that was there before is the user's, whatever its name.
        """
        rel = Path(target).name if Path(target).parent == Path(self.path) else None
        if rel is None or not _ccp_name(rel) or rel in self.entries():
            return
        if Path(target).exists() or Path(target).is_symlink():
            return
        Path(self.path).mkdir(parents=True, exist_ok=True)
        fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (rel + "\n").encode())   # one small O_APPEND write: whole lines even with workers
        finally:
            os.close(fd)

    def scratch_root(self) -> Path:
        """``tmp/`` for the cells' scratch folders, made (and registered) if missing."""
        tmp = Path(self.path) / TMP
        self.register(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp

    # -- what is ours ------------------------------------------------------
    def owned(self) -> list[Path]:
        """Files and folders ccp made here that exist now (never a symlink, never a run folder)."""
        root = Path(self.path)
        out = []
        for rel in self.entries():
            p = root / rel
            if rel == TMP:
                if p.is_dir() and not p.is_symlink():
                    out += [d for d in sorted(p.iterdir()) if _SCRATCH.match(d.name) and d.is_dir() and not d.is_symlink()]
                continue
            if rel == FILE_SPACE:          # the paged copies ccp names <layout>-<hash>.fs-<strategy>.h5
                if p.is_dir() and not p.is_symlink():
                    out += [q for q in sorted(p.iterdir()) if ".fs-" in q.name and q.is_file() and not q.is_symlink()]
                continue
            if p.is_file() and not p.is_symlink():
                out.append(p)
            out += [q for q in sorted(root.glob(f"{glob_escape(rel)}.tmp-*"))
                    if _PARTIAL.match(q.name) and q.is_file() and not q.is_symlink()]
        return [p for p in out if not _is_run_folder(p)]

    def stale(self) -> list[Path]:
        """Scratch folders and partial files left by ccp processes that are gone (killed workers)."""
        dead = []
        for p in self.owned():
            m = _SCRATCH.match(p.name) if p.is_dir() else _PARTIAL.match(p.name)
            if m and not pid_alive(int(m.groups()[-1])):
                dead.append(p)
        return dead

    def remove(self, paths) -> int:
        """Remove ``paths`` (from owned()/stale()); returns the bytes freed."""
        freed = 0
        for p in paths:
            freed += _size(p)
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        return freed

    def removable(self) -> list[Path]:
        """owned(), less the scratch folders and partial files of ccp processes still running."""
        out = []
        for p in self.owned():
            m = _SCRATCH.match(p.name) if p.is_dir() else _PARTIAL.match(p.name)
            if m and pid_alive(int(m.groups()[-1])):
                continue
            out.append(p)
        return out

    def clean(self) -> tuple[int, int]:
        """Remove everything ccp made here (but what running ccp processes write); returns (entries, bytes)."""
        owned = self.removable()
        freed = self.remove(owned)
        root = Path(self.path)
        tmp = root / TMP
        for name in (TMP, FILE_SPACE):
            d = root / name
            if name in self.entries() and d.is_dir() and not d.is_symlink() and not any(d.iterdir()):
                d.rmdir()
        left = [rel for rel in self.entries() if (root / rel).exists() and rel != TMP]
        if left or (tmp.exists() and TMP in self.entries()):
            text = "".join(f"{rel}\n" for rel in self.entries() if (root / rel).exists())
            self.manifest.write_text(text)
        else:
            self.manifest.unlink(missing_ok=True)
        return len(owned), freed


def glob_escape(text: str) -> str:
    import glob

    return glob.escape(text)


def _size(p: Path) -> int:
    try:
        if p.is_dir():
            return sum(q.stat().st_size for q in p.rglob("*") if q.is_file() and not q.is_symlink())
        return p.stat().st_size
    except OSError:
        return 0


def _is_run_folder(p: Path) -> bool:
    return p.is_dir() and ((p / "run.json").exists() or (p / "cells.csv").exists())
