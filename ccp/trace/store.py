"""The trace folder: merge per-process part files into ``calls.parquet`` + ``trace.json``, and read it back.

``calls.parquet`` holds one row per record, calls and events alike, ordered by pid then seq:

* calls (``kind == "call"``): ``depth == 0`` rows are the program's own dataset calls (the number
  of calls it made); deeper rows are what h5py did for them (``parent`` is the user call's seq).
  ``wall_s`` is the call's time, ``hdf5_s`` the time spent inside HDF5 (the low-level calls).
* events (``kind == "event"``): ``file_open``/``file_close``/``dataset_open``/``dataset_close``,
  with the chunk cache in force.

Selections: ``sel`` is ``all``/``box``/``regular``/``blocks``/``points``/``none``/``unknown``;
``start``/``count`` the box (bounds for blocks and points); ``stride``/``block`` for regular
hyperslabs; ``blocks`` (start and end corners, flattened) and ``points`` (flattened) when listed.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from ccp.errors import CcpError

SCHEMA_VERSION = 1
PARTS = "parts"
LIST_COLUMNS = ("start", "count", "stride", "block", "blocks", "points")
COLUMNS = ("kind", "pid", "seq", "depth", "parent", "api", "op", "file", "dataset", "sel", "start", "count", "stride",
           "block", "nblocks", "blocks", "points", "nelems", "bytes", "t0_ns", "wall_s", "hdf5_s", "nlow",
           "mode", "rdcc_nbytes", "rdcc_nslots", "rdcc_w0", "cache_nbytes", "cache_nslots", "cache_w0", "reason")


def read_parts(parts_dir: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """(records, layouts, errors) from every part file; a torn last line (a killed process) is skipped."""
    records, layouts, errors = [], [], []
    for part in sorted(Path(parts_dir).glob("*.part")):
        with open(part, "rb") as f:
            while True:
                try:
                    batch = pickle.load(f)
                except EOFError:
                    break
                except (pickle.UnpicklingError, ValueError, TypeError):   # torn by a killed process
                    break
                for r in batch:
                    kind = r.get("kind")
                    (layouts if kind == "layout" else errors if kind == "error" else records).append(r)
    return records, layouts, errors


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def environment() -> dict:
    env = {"python": sys.version.split()[0], "platform": platform.platform(), "host": platform.node(),
           "cpus": os.cpu_count()}
    try:
        import h5py

        env["h5py"] = h5py.__version__
        env["hdf5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    return env


def merge(trace_dir: Path, command: list[str], exit_status: int, wall_s: float, checksum: bool = True) -> dict:
    """Write ``calls.parquet`` and ``trace.json`` from ``trace_dir/parts``; returns the header."""
    import pandas as pd

    trace_dir = Path(trace_dir)
    records, layouts, errors = read_parts(trace_dir / PARTS)
    df = pd.DataFrame.from_records(records)
    for c in (*COLUMNS, "wall_ns", "hdf5_ns"):
        if c not in df.columns:
            df[c] = None
    if len(df):
        df = df.sort_values(["pid", "seq"], kind="stable").reset_index(drop=True)
    df["wall_s"] = pd.to_numeric(df["wall_ns"]).astype(float) / 1e9
    df["hdf5_s"] = pd.to_numeric(df["hdf5_ns"]).astype(float) / 1e9
    df = df[list(COLUMNS)].copy()
    for c in LIST_COLUMNS:
        df[c] = df[c].map(lambda v: [int(x) for x in v] if isinstance(v, list) else None)
    for c in ("depth", "parent", "nblocks", "nelems", "bytes", "nlow", "rdcc_nbytes", "rdcc_nslots", "cache_nbytes",
              "cache_nslots"):
        df[c] = pd.array(df[c], dtype="Int64")
    for c in ("kind", "api", "op", "file", "dataset", "sel", "mode", "reason"):
        df[c] = df[c].astype("string")
    df.to_parquet(trace_dir / "calls.parquet", index=False)

    datasets: dict[str, dict] = {}
    for lay in layouts:
        key = f"{lay['file']}::{lay['dataset']}"
        entry = {k: v for k, v in lay.items() if k not in ("kind", "pid")}
        datasets.setdefault(key, entry)
    files = {}
    for name in sorted({r["file"] for r in records if r.get("file")} | {d["file"] for d in datasets.values()}):
        info = {"path": name, "exists": os.path.isfile(name)}
        if info["exists"]:
            info["size"] = os.path.getsize(name)
            if checksum:
                info["sha256"] = _sha256(name)
        files[name] = info
    calls = df[(df["kind"] == "call")]
    user = calls[calls["depth"] == 0]
    header = {
        "schema_version": SCHEMA_VERSION, "tool": "ccp trace", "command": list(command), "exit_status": exit_status,
        "wall_s": wall_s, "environment": environment(), "pids": sorted(int(p) for p in df["pid"].dropna().unique()),
        "calls": len(user), "nested_calls": int(len(calls) - len(user)),
        "events": int((df["kind"] == "event").sum()), "files": list(files.values()), "datasets": list(datasets.values()),
        "recorder_errors": errors,
        "checksum_note": "sha256 and size taken after the program ended" if checksum else "checksums skipped (--no-checksum)",
    }
    (trace_dir / "trace.json").write_text(json.dumps(header, indent=2, default=str))
    return header


@dataclass(frozen=True)
class Trace:
    """A trace folder read back: its header, user calls, nested calls and events."""

    path: Path
    header: dict
    table: object           # pandas.DataFrame of every row

    @property
    def calls(self):
        t = self.table
        return t[(t["kind"] == "call") & (t["depth"] == 0)]

    @property
    def low_calls(self):
        """The calls that reached HDF5 (low-level rows; a low-level call made by the user is one too)."""
        t = self.table
        return t[(t["kind"] == "call") & t["api"].isin(["DatasetID.read", "DatasetID.write", "fast_reader"])]

    @property
    def events(self):
        t = self.table
        return t[t["kind"] == "event"]

    def layout(self, file: str, dataset: str) -> dict | None:
        for d in self.header.get("datasets", []):
            if d["file"] == file and d["dataset"] == dataset:
                return d
        return None

    def find_dataset(self, dataset: str, file: str | None = None) -> tuple[str, str]:
        """(file, dataset) of a dataset named by path (and file when several files hold that path)."""
        matches = [(d["file"], d["dataset"]) for d in self.header.get("datasets", [])
                   if d["dataset"] == dataset and (file is None or d["file"] == file)]
        if not matches:
            known = sorted({d["dataset"] for d in self.header.get("datasets", [])})
            from ccp.errors import suggest

            raise CcpError(f"{self.path}: dataset {dataset!r} is not in the trace{suggest(dataset, known)}"
                           f" (traced: {', '.join(known) or 'none'})")
        if len(set(matches)) > 1:
            raise CcpError(f"{self.path}: dataset {dataset!r} is in several files ({', '.join(m[0] for m in matches)}); "
                           "name the file too")
        return matches[0]


def load_trace(path) -> Trace:
    import pandas as pd

    path = Path(path)
    head, table = path / "trace.json", path / "calls.parquet"
    if not head.is_file() or not table.is_file():
        raise CcpError(f"{path}: not a ccp trace folder (no trace.json and calls.parquet; make one with `ccp trace -o {path} -- ...`)")
    try:
        header = json.loads(head.read_text())
    except json.JSONDecodeError as exc:
        raise CcpError(f"{head}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if header.get("schema_version") != SCHEMA_VERSION:
        raise CcpError(f"{head}: schema_version {header.get('schema_version')!r}, this ccp reads {SCHEMA_VERSION}")
    return Trace(path, header, pd.read_parquet(table))
