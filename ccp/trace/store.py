"""The trace folder's writer: merge per-process part files into ``calls.parquet`` + ``trace.json``.

The format (its columns and schema version) and its reader, :func:`ccp.workload.tracefile.load_trace`, live
in the workload room: a sweep's replay loads traces there, below this app.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import platform
import sys
from pathlib import Path

from ccp.workload.tracefile import COLUMNS, LIST_COLUMNS, SCHEMA_VERSION

PARTS = "parts"


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
