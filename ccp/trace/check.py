"""A trace folder checked before ``ccp diagnose`` trusts it: damage is one line naming the file and the field.

:func:`ccp.workload.tracefile.load_trace` reads the folder; this checks what diagnosis relies on, so a
truncated parquet, a ``trace.json`` of ``[]``, a shape of 10**30, NaN or negative times, a selection
outside any dataset or a call on a dataset with no recorded layout is a ``CcpError`` (exit 2), never an
internal error and never a diagnosis of garbage. Checks are vectorised (a million-row trace costs a
few numpy passes). Also: the trace's completeness line and whether its data files changed since.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from ccp.errors import CcpError
from ccp.workload.tracefile import Trace, load_trace

MAX_ELEMENTS = 2 ** 62           # the model's int64 arithmetic; no HDF5 dataset a program reads is larger
MAX_CHUNK_DIM = 2 ** 32 - 1      # HDF5's limit on a chunk dimension
MAX_RANK = 32                    # H5S_MAX_RANK
REQUIRED = ("kind", "pid", "seq", "depth", "api", "op", "file", "dataset", "sel", "start", "count", "bytes",
            "wall_s", "hdf5_s", "cache_nbytes", "cache_nslots", "cache_w0")
KINDS = ("call", "event")
SELS = ("all", "box", "regular", "blocks", "points", "none", "unknown")


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def load_checked(path, batch_rows: int | None = None) -> Trace:
    """:func:`load_trace` (``batch_rows`` at a time), with every kind of damage a one-line error naming the
    file and the field."""
    path = Path(path)
    check_header_text(path)
    try:
        trace = load_trace(path, batch_rows)
    except CcpError:
        raise
    except Exception as exc:  # pyarrow's errors for a damaged file are many; each is "unreadable"
        text = " ".join(str(exc).split())[:160]
        raise CcpError(f"{path / 'calls.parquet'}: unreadable ({type(exc).__name__}: {text}); the trace is damaged") from None
    check_header(trace.header, path / "trace.json")
    check_table(trace, path / "calls.parquet")
    return trace


def check_header_text(path: Path) -> dict | None:
    """trace.json, if there, is UTF-8 JSON of an object (what diagnosis checks before reading the trace): that
    object (NaN and infinities read as NaN, as :func:`ccp.workload.tracefile.read_header` reads them), or None
    with no trace.json."""
    head = path / "trace.json"
    raw = None
    if head.is_file():
        try:
            raw = json.loads(head.read_bytes().decode("utf-8"), parse_constant=lambda c: float("nan"))
        except UnicodeDecodeError:
            raise CcpError(f"{head}: not UTF-8 text, so not a trace header (the trace is damaged)") from None
        except json.JSONDecodeError as exc:
            raise CcpError(f"{head}: not valid JSON ({exc.msg} at line {exc.lineno}; the trace is damaged)") from None
        if not isinstance(raw, dict):
            raise CcpError(f"{head}: expected a JSON object (the trace header), got {type(raw).__name__}")
    return raw


def check_header(h: dict, where: Path) -> None:
    def bad(key: str, why: str, value) -> CcpError:
        shown = repr(value)
        return CcpError(f"{where}: {key}: {why}, got {shown[:80]}")

    wall = h.get("wall_s")
    if wall is not None and not (_number(wall) and math.isfinite(wall) and wall >= 0):
        raise bad("wall_s", "expected the program's time in seconds (a number >= 0)", wall)
    pids = h.get("pids", [])
    if not isinstance(pids, list) or not all(_whole(p) for p in pids):
        raise bad("pids", "expected a list of process ids", pids)
    files = h.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("path"), str) for f in files):
        raise bad("files", "expected a list of {path, size, sha256}", files)
    for i, f in enumerate(files):
        if f.get("sha256") is not None and not isinstance(f["sha256"], str):
            raise bad(f"files[{i}].sha256", "expected a hex digest", f["sha256"])
        if f.get("size") is not None and not (_whole(f["size"]) and f["size"] >= 0):
            raise bad(f"files[{i}].size", "expected a size in bytes", f["size"])
    datasets = h.get("datasets", [])
    if not isinstance(datasets, list):
        raise bad("datasets", "expected a list of dataset layouts", datasets)
    for i, d in enumerate(datasets):
        key = f"datasets[{i}]"
        if not isinstance(d, dict):
            raise bad(key, "expected a dataset layout (an object)", d)
        for name in ("file", "dataset", "dtype"):
            if not isinstance(d.get(name), str):
                raise bad(f"{key}.{name}", "expected a string", d.get(name))
        shape = d.get("shape")
        if (not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_whole(s) and s >= 0 for s in shape)
                or math.prod(shape) > MAX_ELEMENTS or any(s > MAX_ELEMENTS for s in shape)):
            raise bad(f"{key}.shape", f"expected at most {MAX_RANK} whole numbers >= 0 of at most 2**62 elements", shape)
        item = d.get("itemsize")
        if not (isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= 2 ** 31):
            raise bad(f"{key}.itemsize", "expected the bytes per element (1 to 2**31)", item)
        chunks = d.get("chunks")
        if chunks is not None and (not isinstance(chunks, list) or len(chunks) != len(shape)
                                   or not all(_whole(c) and 1 <= c <= MAX_CHUNK_DIM for c in chunks)):
            raise bad(f"{key}.chunks", f"expected null or {len(shape)} whole numbers from 1 to 2**32-1", chunks)
        filters = d.get("filters", [])
        if not isinstance(filters, list) or not all(isinstance(x, dict) and isinstance(x.get("name"), str) for x in filters):
            raise bad(f"{key}.filters", "expected a list of {id, name, values}", filters)


def _bad_rows(mask: np.ndarray, table, column: str, where: Path, why: str, offset: int = 0) -> None:
    if mask.any():
        i = int(np.argmax(mask))
        row = table.iloc[i]
        raise CcpError(f"{where}: {column} of row {i + offset} (pid {row['pid']}, seq {row['seq']}): {why}, got "
                       f"{row[column]!r}; the trace is damaged")


def row_counts(t) -> dict[str, int]:
    """The table's calls, nested calls and events (summed over batches when it is read in batches)."""
    import pandas as pd

    kind = t["kind"].to_numpy(object)
    depth = pd.to_numeric(t["depth"], errors="coerce").to_numpy(float)
    call = kind == "call"
    return {"calls": int((call & (depth == 0)).sum()), "nested_calls": int((call & (depth != 0)).sum()),
            "events": int((kind == "event").sum())}


def compare_counts(found: dict[str, int], header: dict, where: Path) -> None:
    """The header's call and event counts (written by the merge from the same rows) against the table's:
    rows lost or added since (a half-copied folder, a table from another trace) are damage, not a smaller trace."""
    for key, n in found.items():
        want = header.get(key)
        if _whole(want) and want != n:
            raise CcpError(f"{where}: holds {n} {key.replace('_', ' ')}, but trace.json's {key} says {want}; "
                           "the trace is damaged")


def _check_counts(t, header: dict, where: Path) -> None:
    compare_counts(row_counts(t), header, where)


def check_table(trace: Trace, where: Path) -> None:
    check_columns(trace.table, where)
    _check_counts(trace.table, trace.header, where)
    check_rows(trace.table, trace.header, where)


def check_columns(t, where: Path) -> None:
    missing = [c for c in REQUIRED if c not in t.columns]
    if missing:
        raise CcpError(f"{where}: no column {missing[0]!r} (not a ccp trace, or a damaged one)")


def check_rows(t, header: dict, where: Path, offset: int = 0) -> None:
    """Every row's values (``t`` may be a batch of the table: ``offset`` is its first row's number)."""
    import pandas as pd

    if not len(t):
        return
    for c in ("pid", "seq"):
        v = pd.to_numeric(t[c], errors="coerce")
        _bad_rows(v.isna().to_numpy(), t, c, where, "expected a whole number", offset)
    _bad_rows(~t["kind"].isin(list(KINDS)).fillna(False).to_numpy(bool), t, "kind", where, "expected 'call' or 'event'",
              offset)
    call = t["kind"].eq("call").fillna(False).to_numpy(bool)
    for c in ("wall_s", "hdf5_s"):
        v = pd.to_numeric(t[c], errors="coerce").to_numpy(float)
        _bad_rows(call & ~(np.isfinite(v) & (v >= 0)), t, c, where, "expected a time in seconds >= 0", offset)
    depth = pd.to_numeric(t["depth"], errors="coerce").to_numpy(float)
    _bad_rows(call & ~(depth >= 0), t, "depth", where, "expected a call depth >= 0", offset)
    sel_ok = t["sel"].isna().to_numpy(bool) | t["sel"].isin(list(SELS)).fillna(False).to_numpy(bool)
    _bad_rows(call & ~sel_ok, t, "sel", where, f"expected one of {', '.join(SELS)}", offset)
    for c, lo, hi in (("bytes", 0, np.inf), ("cache_nbytes", 0, np.inf), ("cache_nslots", 0, np.inf), ("cache_w0", 0, 1)):
        v = pd.to_numeric(t[c], errors="coerce").to_numpy(float)
        _bad_rows(~np.isnan(v) & ~((v >= lo) & (v <= hi)), t, c, where, f"expected a number from {lo} to {hi}", offset)
    known = {(d["file"], d["dataset"]) for d in header.get("datasets", [])}
    pairs = t.loc[call, ["file", "dataset"]].drop_duplicates().astype(object).itertuples(index=False)
    for file, dataset in pairs:
        if isinstance(file, str) and isinstance(dataset, str) and (file, dataset) not in known:
            raise CcpError(f"{where}: calls on {dataset} in {file}, but trace.json records no layout for it; "
                           "the trace is damaged")


# ---------------------------------------------------------------------- completeness and changed files

def completeness_line(trace: Trace) -> str:
    """'trace complete' / 'trace INCOMPLETE: reasons', from what the recorder wrote (an older trace: unknown)."""
    c = getattr(trace, "completeness", None)
    if c is None:
        c = trace.header.get("completeness")
    if not isinstance(c, dict):
        return "trace completeness not recorded (made by an older ccp trace)"
    if c.get("complete"):
        return "trace complete"
    reasons = c.get("reasons") or []
    text = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else str(reasons)
    return f"trace INCOMPLETE: {text or 'the recorder says so'}"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def file_state(trace: Trace, file: str) -> str:
    """'same' (size and sha256 as traced), 'changed', 'gone', 'remote' (not a local path) or 'unchecked'
    (the trace has no checksum: --no-checksum)."""
    entry = next((f for f in trace.header.get("files", []) if f.get("path") == file), None)
    if not os.path.isabs(file) or "://" in file or file.startswith("<"):
        return "remote"
    if not os.path.isfile(file):
        return "gone"
    if entry is None or not entry.get("sha256"):
        return "unchecked"
    if entry.get("size") is not None and os.path.getsize(file) != entry["size"]:
        return "changed"
    return "same" if _sha256(file) == entry["sha256"] else "changed"


def parse_patterns(texts) -> list[tuple[int, ...]]:
    """``--pattern 1x96x144`` (repeatable) as blocks; one line naming the option and value when bad."""
    out = []
    for text in texts:
        parts = str(text).lower().replace(",", "x").split("x")
        try:
            block = tuple(int(p) for p in parts)
        except ValueError:
            raise CcpError(f"--pattern: expected a block like 1x96x144, got {text!r}") from None
        if not block or len(block) > MAX_RANK or any(b < 1 or b > MAX_ELEMENTS for b in block):
            raise CcpError(f"--pattern: every extent must be a whole number from 1 to 2**62, got {text!r}")
        out.append(block)
    return out
