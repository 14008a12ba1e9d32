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

from ccp.errors import CcpError
from ccp.workload.tracefile import COLUMNS, LIST_COLUMNS, SCHEMA_VERSION

PARTS = "parts"


def read_parts(parts_dir: Path, torn: list | None = None) -> tuple[list[dict], list[dict], list[dict]]:
    """(records, layouts, errors) from every part file; a torn last batch (a killed process, a full disk)
    is skipped and its file named in ``torn``."""
    records, layouts, errors = [], [], []
    for part in sorted(Path(parts_dir).glob("*.part")):
        with open(part, "rb") as f:
            while True:
                try:
                    batch = pickle.load(f)
                except EOFError:
                    break
                except Exception:  # noqa: BLE001 -- torn by a killed process or a full disk: keep what came before
                    if torn is not None:
                        torn.append(part.name)
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


def _signal_name(n: int) -> str:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def completeness(run: dict | None, part_pids: set[int], torn: list[str], errors: list[dict]) -> dict:
    """Whether the trace holds every h5py call the program made, and if not, why (see tracefile)."""
    if run is None:         # merged without ccp trace's view of the run (a part folder merged by hand)
        return {"complete": None, "reasons": ["merged without the run's status: completeness unknown"],
                "exit_status": None, "signal": None, "processes_seen": len(part_pids), "lost_records": 0,
                "recorder_errors": [e.get("error") for e in errors]}
    rc = run["returncode"]
    reasons: list[str] = []
    started: dict[int, str] = {}
    ended: dict[int, tuple[int, int, str]] = {}
    problems: list[str] = []
    for line in run.get("status_lines", []):
        if len(line) < 2 or not line[0].isdigit():
            continue
        pid, what = int(line[0]), line[1]
        if what == "start":
            started.setdefault(pid, line[3] if len(line) > 3 else "")
        elif what == "end" and len(line) >= 5:
            ended[pid] = (int(line[2]), int(line[3]), line[4])
        elif what in ("error", "problem") and len(line) > 2:
            problems.append(f"pid {pid}: {line[2]}")
    if run.get("stopped_by"):
        reasons.append(f"ccp trace was {run['stopped_by']}")
    if rc < 0:
        reasons.append(f"the program was killed by {_signal_name(-rc)}")
    elif rc > 0:
        reasons.append(f"the program exited with status {rc}: it may have stopped before its usual end")
    if run.get("top_is_python") and run["pid"] not in started:
        reasons.append(f"the program (pid {run['pid']}) ran without the recorder (python -I, -E or -S, env -i, "
                       "or a wrapper that clears PYTHONPATH or CCP_TRACE_DIR): its h5py calls are not in the trace")
    for pid, cmd in sorted(run.get("python_seen", {}).items()):
        if pid not in started and pid != run["pid"]:
            reasons.append(f"process {pid} ({cmd}) ran Python without the recorder (python -I/-E/-S or a cleared "
                           "environment): its h5py calls, if any, are not in the trace")
    lost = 0
    for pid in sorted(started):
        if pid not in ended:
            reasons.append(f"process {pid} ended without the recorder's exit hook (a crash, a signal, kill -9) or "
                           "was still running: the calls it made after its last write are lost")
            continue
        _written, lost_here, stopped = ended[pid]
        lost += lost_here
        if stopped:
            reasons.append(f"process {pid}: recording stopped ({stopped}); {lost_here} record(s) lost")
    for name in torn:
        reasons.append(f"part file {name} is cut short: its last batch of records is lost")
    unknown_pids = part_pids - set(started)
    if unknown_pids and started:
        reasons.append(f"{len(unknown_pids)} process(es) wrote records without reporting to ccp trace")
    recorder_errors = list(dict.fromkeys([*problems, *(f"pid {e.get('pid')}: {e.get('error')}" for e in errors)]))
    signal_no = -rc if rc < 0 else None
    return {"complete": not reasons, "reasons": reasons, "exit_status": rc if rc >= 0 else None, "signal": signal_no,
            "processes_seen": len(set(started) | part_pids | {p for p in run.get("python_seen", {}) if p not in started}),
            "lost_records": lost, "recorder_errors": recorder_errors}


def merge(trace_dir: Path, command: list[str], exit_status: int, wall_s: float, checksum: bool = True,
          run: dict | None = None) -> dict:
    """Write ``calls.parquet`` and ``trace.json`` from ``trace_dir/parts``; returns the header.

    ``run`` is ccp trace's view of the run (return code, status lines, Python processes seen), from which
    the header's ``completeness`` is worked out.
    """
    import pandas as pd

    trace_dir = Path(trace_dir)
    torn: list[str] = []
    records, layouts, errors = read_parts(trace_dir / PARTS, torn)
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
    table_tmp = trace_dir / "calls.parquet.tmp"
    df.to_parquet(table_tmp, index=False)

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
        "completeness": completeness(run, {int(r["pid"]) for r in records if r.get("pid") is not None}, torn, errors),
        "checksum_note": "sha256 and size taken after the program ended" if checksum else "checksums skipped (--no-checksum)",
    }
    head_tmp = trace_dir / "trace.json.tmp"
    head_tmp.write_text(json.dumps(header, indent=2, default=str))
    os.replace(table_tmp, trace_dir / "calls.parquet")
    os.replace(head_tmp, trace_dir / "trace.json")      # last: a folder with trace.json holds a whole trace
    return header


def merge_or_explain(trace_dir: Path, *args, **kwargs) -> dict:
    """:func:`merge`, with any failure (a full disk, a damaged part file) one CcpError and no half-written trace."""
    try:
        return merge(trace_dir, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- the run is over: say why its trace is missing, leave no half files
        for name in ("calls.parquet.tmp", "trace.json.tmp"):
            try:
                (Path(trace_dir) / name).unlink(missing_ok=True)
            except OSError:
                pass
        if isinstance(exc, OSError) and exc.strerror:
            detail = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
        else:
            detail = f"{type(exc).__name__}: {exc}"
        raise CcpError(f"{trace_dir}: the trace could not be written: {detail}; the recorded part files are "
                       f"kept in {Path(trace_dir) / PARTS}") from None
