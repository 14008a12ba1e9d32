"""Free-space checks before a sweep writes: an estimate of what it writes, and a margin that scales.

The margin is 5% of the estimate plus 1 MiB (the metadata, logs and report a run writes beside its
data): a 2 KiB sweep on a disk with 30 MiB free runs, a 10 GiB one on 10 GiB free is refused.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ccp.errors import CcpError
from ccp.units import format_bytes

MARGIN_BYTES = 1024 * 1024
MARGIN_FRACTION = 0.05


def existing_parent(folder: Path) -> Path:
    """The folder, or its nearest existing ancestor (where it will be created): checked without writing."""
    p = Path(folder).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def needed_with_margin(needed: int) -> int:
    return int(needed * (1 + MARGIN_FRACTION)) + MARGIN_BYTES


def check_free(folder: Path, needed: int, what: str) -> None:
    """Refuse (one line) when ``folder``'s filesystem has less than ``needed`` plus the margin free."""
    where = existing_parent(folder)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return
    if free < needed_with_margin(needed):
        raise CcpError(f"disk: {what} needs about {format_bytes(needed)} (+{format_bytes(needed_with_margin(needed) - needed)} "
                       f"margin) in {folder} but only {format_bytes(free)} is free")
