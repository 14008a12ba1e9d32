"""HDF5's log file driver: a fapl that records every file-level operation, and its parser.

Each log line gives the byte range, the memory type (H5FD_MEM_DRAW = raw data, anything else is
metadata) and a CLOCK_MONOTONIC timestamp with microsecond resolution. Operations are attributed to
the request whose time window holds them; the counted pass keeps windows a microsecond apart.

The driver writes its log with unchecked ``fprintf``: on a full disk lines are dropped silently and
the pass itself succeeds. So the log also carries the driver's own operation counters (LOG_NUM_IO),
which it prints when the file closes, and :func:`parse_log` refuses a log whose closing summary is
missing or disagrees with the lines it holds: a truncated log fails the cell, never a smaller count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ccp.errors import CcpError
from ccp.hdf5.plists import log_fapl  # noqa: F401  (the builder lives with the other property lists)

_LINE = re.compile(rb"^\s*(\d+)-\s*(\d+)\s+\(\s*(\d+) bytes\)\s+\(H5FD_MEM_(\w+)\)\s+(Read|Written)\s+\([\d.]+s @ ([\d.]+)\)",
                   re.MULTILINE)


MEM_NAMES = np.array(["draw", "super", "btree", "ohdr", "lheap", "gheap", "default", "nolist", "other"], dtype=object)
_MEM_CODE = {name.upper().encode(): i for i, name in enumerate(MEM_NAMES)}


@dataclass(frozen=True)
class IoOps:
    """Operations of one counted pass, in log order (numpy columns)."""

    offset: np.ndarray     # int64
    size: np.ndarray       # int64
    is_raw: np.ndarray     # bool: H5FD_MEM_DRAW
    is_write: np.ndarray   # bool
    mem_code: np.ndarray   # int8 index into MEM_NAMES
    t_us: np.ndarray       # int64 microseconds, CLOCK_MONOTONIC

    def __len__(self) -> int:
        return len(self.offset)

    @property
    def mem_type(self) -> np.ndarray:
        return MEM_NAMES[self.mem_code]


def _parse_block(text: bytes):
    rows = _LINE.findall(text)
    if not rows:
        return None
    start, _end, size, mem, kind, t = zip(*rows)
    mem_code = np.array([_MEM_CODE.get(m, len(MEM_NAMES) - 1) for m in mem], dtype=np.int8)
    return (np.array(start, dtype=np.int64), np.array(size, dtype=np.int64), mem_code == 0,
            np.array([k == b"Written" for k in kind]), mem_code,
            np.rint(np.array(t, dtype=np.float64) * 1e6).astype(np.int64))


_TOTAL = re.compile(rb"^Total number of (read|write) operations: (\d+)\s*$", re.MULTILINE)
_LAST_LINE = b"Total time in truncate operations:"   # the summary's last line (H5FD__log_close)


class IoLogError(CcpError):
    """The counted pass's I/O log is incomplete or unreadable: its counts cannot be trusted."""


def _free(path: Path) -> str:
    import shutil

    from ccp.units import format_bytes
    try:
        return f"{format_bytes(shutil.disk_usage(path.parent).free)} free in {path.parent}"
    except OSError:
        return f"{path.parent} unreadable"


def parse_log(path: Path, block_bytes: int = 64 * 1024 * 1024, complete: bool = True) -> IoOps:
    """Parse in blocks of whole lines, so a log of millions of operations stays within bounded memory.

    ``complete``: the log must end with the driver's closing summary, and its read and write totals
    must equal the lines parsed (else :class:`IoLogError`); a log cut short by a full disk, or one with
    a gap where a buffer was dropped, is never taken for a pass that did less I/O.
    """
    path = Path(path)
    parts = []
    totals_seen: dict[bytes, int] = {}
    last = b""
    if not path.is_file():
        raise IoLogError(f"counted pass: HDF5's I/O log {path} is missing ({_free(path)})")
    with open(path, "rb") as fh:
        tail = b""
        while True:
            data = fh.read(block_bytes)
            if not data:
                break
            data = tail + data
            cut = data.rfind(b"\n") + 1
            tail = data[cut:]
            parsed = _parse_block(data[:cut])
            if parsed:
                parts.append(parsed)
            for kind, n in _TOTAL.findall(data[:cut]):
                totals_seen[kind] = int(n)
            if cut:
                last = data[:cut].rstrip(b"\n").rsplit(b"\n", 1)[-1]
        if tail and (parsed := _parse_block(tail)):
            parts.append(parsed)
    if complete:
        nread = sum(int(np.sum(~p[3])) for p in parts)
        nwrite = sum(int(np.sum(p[3])) for p in parts)
        if tail or not last.startswith(_LAST_LINE) or set(totals_seen) != {b"read", b"write"}:
            raise IoLogError(f"counted pass: HDF5's I/O log {path.name} is cut short (no closing summary; {_free(path)}): "
                             "its counts would be too small")
        if (nread, nwrite) != (totals_seen[b"read"], totals_seen[b"write"]):
            raise IoLogError(f"counted pass: HDF5's I/O log {path.name} holds {nread:,} reads and {nwrite:,} writes but the "
                             f"driver counted {totals_seen[b'read']:,} and {totals_seen[b'write']:,} (lines lost; {_free(path)})")
    if not parts:
        e = np.empty(0, np.int64)
        return IoOps(e, e, e.astype(bool), e.astype(bool), e.astype(np.int8), e)
    return IoOps(*[np.concatenate(c) for c in zip(*parts)])


def merge(a: IoOps, b: IoOps) -> IoOps:
    """Operations of two log files (a copy's destination and source) in time order."""
    order = np.argsort(np.concatenate([a.t_us, b.t_us]), kind="stable")
    return IoOps(*[np.concatenate([x, y])[order] for x, y in zip(
        (a.offset, a.size, a.is_raw, a.is_write, a.mem_code, a.t_us),
        (b.offset, b.size, b.is_raw, b.is_write, b.mem_code, b.t_us))])


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
