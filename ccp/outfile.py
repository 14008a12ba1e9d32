"""Where a command puts a file the user named: a regular file replaced whole, never a device or a link.

Commands write a result beside its destination and rename it over the destination, so a reader never
sees half a file. A rename replaces whatever is at the name: ``-o /dev/null --force`` run as root would
put a regular file where the device was, and a symbolic link would become a file and stop pointing at
its target. So the destination is resolved first: a link's target is written (the link stays), and a
device, pipe, socket or folder is refused by the caller with this module's reason.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def output_target(path: str | os.PathLike) -> tuple[Path, str | None]:
    """``(file to rename onto, None)``, or ``(path, why not)`` when the name is not a regular file."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target, None                 # a new file (or a link to one not yet made)
    except OSError as exc:
        return path, f"cannot use {path}: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return target, None
    kind = ("a folder" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    shown = f"{path} ({target})" if target != path else f"{path}"
    return path, f"{shown} is {kind}, not a file: write to a file"


def head_holds(path: str | os.PathLike, marker: bytes, size: int = 4096) -> bool:
    """Whether the first ``size`` bytes of ``path`` hold ``marker``: a page a command wrote before (its title),
    which it may replace, told from a file of the user's, which it may not."""
    with open(path, "rb") as fh:
        return marker in fh.read(size)


def umask_mode() -> int:
    """The mode a file made with ``open()`` gets (``mkstemp`` makes 0600, private where a user expects 0644)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
