"""The trace folder format (``ccp trace`` writes it, ccp.trace.store): its columns, schema version and reader.

A trace folder holds ``calls.parquet`` (one row per record, calls and events alike, ordered by pid then
seq) and ``trace.json`` (the header: command, environment, pids, files and dataset layouts).
:func:`load_trace` reads it back as a :class:`Trace`; a sweep's replay (``ccp.workload.replay``) and
``ccp diagnose`` both start from one.

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

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ccp.errors import CcpError, suggest

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
LIST_COLUMNS = ("start", "count", "stride", "block", "blocks", "points")
COLUMNS = ("kind", "pid", "seq", "depth", "parent", "api", "op", "file", "dataset", "sel", "start", "count", "stride",
           "block", "nblocks", "blocks", "points", "nelems", "bytes", "t0_ns", "wall_s", "hdf5_s", "nlow",
           "mode", "rdcc_nbytes", "rdcc_nslots", "rdcc_w0", "cache_nbytes", "cache_nslots", "cache_w0", "reason")


@dataclass(frozen=True)
class Trace:
    """A trace folder read back: its header, user calls, nested calls and events."""

    path: Path
    header: dict
    table: pd.DataFrame     # every row

    @property
    def completeness(self) -> dict:
        """Whether the trace holds every call the program made (``complete``: True, False or None for
        unknown), ``reasons`` when not, the program's ``exit_status`` or ``signal``, ``processes_seen``,
        ``lost_records`` and ``recorder_errors``. Traces written before ccp recorded it are unknown."""
        c = self.header.get("completeness")
        if not isinstance(c, dict):
            return {"complete": None, "reasons": ["the trace predates ccp's completeness record: unknown"],
                    "exit_status": self.header.get("exit_status"), "signal": None, "processes_seen":
                    len(self.header.get("pids") or []), "lost_records": None, "recorder_errors": []}
        return c

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
