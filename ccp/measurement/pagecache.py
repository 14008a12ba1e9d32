"""Drop a file from the OS page cache, so a cold pass reads from the device, not from memory."""

from __future__ import annotations

import os


def drop_file(path) -> bool:
    """fsync then POSIX_FADV_DONTNEED; needs no root. Returns False where the OS cannot do it."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            os.fsync(fd)          # dirty pages are not dropped; write them first
        except OSError:
            pass
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    finally:
        os.close(fd)
