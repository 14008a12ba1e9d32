"""HDF5's log file driver: a fapl that records every file-level operation, and its parser.

Each log line gives the byte range, the memory type (H5FD_MEM_DRAW = raw data, anything else is
metadata) and a CLOCK_MONOTONIC timestamp with microsecond resolution. Operations are attributed to
the request whose time window holds them; the traced pass keeps windows a microsecond apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Never the LOG_FILE_* or LOG_FLAVOR flags: with buf_size 0 they crash the process.
_LINE = re.compile(rb"^\s*(\d+)-\s*(\d+)\s+\(\s*(\d+) bytes\)\s+\(H5FD_MEM_(\w+)\)\s+(Read|Written)\s+\([\d.]+s @ ([\d.]+)\)",
                   re.MULTILINE)
MEM_TYPES = {"DRAW": "draw", "SUPER": "super", "BTREE": "btree", "OHDR": "ohdr", "LHEAP": "lheap",
             "GHEAP": "gheap", "DEFAULT": "default", "NOLIST": "nolist"}


def log_fapl(log_path: Path):
    """A file access property list with the log driver writing to ``log_path``."""
    from h5py import h5fd, h5p

    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fapl_log(str(log_path).encode(), h5fd.LOG_LOC_IO | h5fd.LOG_TIME_IO, 0)
    return fapl


@dataclass(frozen=True)
class IoOps:
    """Operations of one traced pass, in log order (numpy columns)."""

    offset: np.ndarray     # int64
    size: np.ndarray       # int64
    is_raw: np.ndarray     # bool: H5FD_MEM_DRAW
    is_write: np.ndarray   # bool
    mem_type: np.ndarray   # object: 'draw', 'ohdr', ...
    t_us: np.ndarray       # int64 microseconds, CLOCK_MONOTONIC

    def __len__(self) -> int:
        return len(self.offset)


def parse_log(path: Path) -> IoOps:
    rows = _LINE.findall(Path(path).read_bytes())
    if not rows:
        e = np.empty(0, np.int64)
        return IoOps(e, e, e.astype(bool), e.astype(bool), e.astype(object), e)
    start, _end, size, mem, kind, t = zip(*rows)
    return IoOps(
        offset=np.array(start, dtype=np.int64),
        size=np.array(size, dtype=np.int64),
        is_raw=np.array([m == b"DRAW" for m in mem]),
        is_write=np.array([k == b"Written" for k in kind]),
        mem_type=np.array([MEM_TYPES.get(m.decode(), m.decode().lower()) for m in mem], dtype=object),
        t_us=np.rint(np.array(t, dtype=np.float64) * 1e6).astype(np.int64),
    )


def attribute(ops: IoOps, win_start_ns: np.ndarray, win_end_ns: np.ndarray) -> np.ndarray:
    """Index of the window holding each op, or -1 for ops outside every window (file open/close)."""
    if len(ops) == 0:
        return np.empty(0, np.int64)
    lo = win_start_ns // 1000                    # floor to the log's microseconds
    hi = -(-win_end_ns // 1000)                  # ceil
    idx = np.searchsorted(lo, ops.t_us, side="right") - 1
    ok = (idx >= 0) & (ops.t_us <= hi[np.clip(idx, 0, None)])
    return np.where(ok, idx, -1)


def count_by_window(ops: IoOps, owner: np.ndarray, nwin: int) -> dict[str, np.ndarray]:
    """Per window: counts and bytes of raw/meta reads/writes (the REQUEST_COLUMNS I/O fields)."""
    out = {}
    sel = owner >= 0
    for name, mask in (("raw_reads", ops.is_raw & ~ops.is_write), ("raw_writes", ops.is_raw & ops.is_write),
                       ("meta_reads", ~ops.is_raw & ~ops.is_write), ("meta_writes", ~ops.is_raw & ops.is_write)):
        m = mask & sel
        out[name] = np.bincount(owner[m], minlength=nwin).astype(np.int64)
        out[name[:-1] + "_bytes"] = np.bincount(
            owner[m], weights=ops.size[m], minlength=nwin).astype(np.int64)
    return out


def totals(ops: IoOps) -> dict[str, int]:
    """Whole-pass totals, file open and close included."""
    r, w = ops.is_raw, ops.is_write
    return {
        "raw_reads": int(np.sum(r & ~w)), "raw_read_bytes": int(ops.size[r & ~w].sum()),
        "raw_writes": int(np.sum(r & w)), "raw_write_bytes": int(ops.size[r & w].sum()),
        "meta_reads": int(np.sum(~r & ~w)), "meta_read_bytes": int(ops.size[~r & ~w].sum()),
        "meta_writes": int(np.sum(~r & w)), "meta_write_bytes": int(ops.size[~r & w].sum()),
    }
