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
  with the chunk cache in force; for a file read through an fsspec file object (``file`` is its URL),
  ``fsspec_read`` (a read HDF5 made: ``start``/``count`` its offset and size) and ``get`` (a byte range
  fsspec's cache fetched: one GET), both with ``t0_ns`` and ``wall_s``.
* netCDF4-python calls: ``Variable.__getitem__``/``__setitem__`` at depth 0, each ``Variable._get``/``_put``
  (one ``nc_get_vars``/``nc_put_vars``) below them with its selection; ``dataset`` is the variable's HDF5 path.

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
        return t[(t["kind"] == "call") & t["api"].isin(["DatasetID.read", "DatasetID.write", "fast_reader",
                                                          "Variable._get", "Variable._put"])]

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


MAX_DIM = 2**62            # HDF5's dimensions are 64-bit; a bigger number is damage, not data
KINDS = {"call", "event", "error"}


def _bad(where, field: str, what: str) -> CcpError:
    return CcpError(f"{where}: {field}: {what} (a damaged trace folder: trace it again with `ccp trace`)")


def _check_dims(where, field: str, value, allow_none: bool = False, positive: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _bad(where, field, f"{value!r} is not a list of integers")
    low = 1 if positive else 0
    for v in value:
        if not low <= v <= MAX_DIM:
            raise _bad(where, field, f"{v} is out of range [{low}, 2**62]")


def check_header(head: Path, header) -> dict:
    """trace.json's fields the readers rely on, checked; one CcpError naming the file and the field."""
    if not isinstance(header, dict):
        raise _bad(head, "top level", f"a JSON {type(header).__name__}, not an object")
    if header.get("schema_version") != SCHEMA_VERSION:
        raise CcpError(f"{head}: schema_version {header.get('schema_version')!r}, this ccp reads {SCHEMA_VERSION}")
    for key, kind in (("datasets", list), ("files", list), ("pids", list), ("calls", int)):
        if key in header and not isinstance(header[key], kind):
            raise _bad(head, key, f"{header[key]!r} is not a {kind.__name__}")
    for i, d in enumerate(header.get("datasets", [])):
        where = f"datasets[{i}]"
        if not isinstance(d, dict):
            raise _bad(head, where, "not an object")
        for key in ("file", "dataset", "dtype"):
            if not isinstance(d.get(key), str):
                raise _bad(head, f"{where}.{key}", f"{d.get(key)!r} is not a string")
        _check_dims(head, f"{where}.shape", d.get("shape"))
        _check_dims(head, f"{where}.chunks", d.get("chunks"), allow_none=True, positive=True)
        if d.get("chunks") is not None and len(d["chunks"]) != len(d["shape"]):
            raise _bad(head, f"{where}.chunks", f"{d['chunks']} has not the rank of shape {d['shape']}")
        item = d.get("itemsize")
        if not isinstance(item, int) or isinstance(item, bool) or not 0 < item <= 2**31:
            raise _bad(head, f"{where}.itemsize", f"{item!r} is not a positive size")
        if not isinstance(d.get("filters", []), list):
            raise _bad(head, f"{where}.filters", f"{d.get('filters')!r} is not a list")
    c = header.get("completeness")
    if c is not None and (not isinstance(c, dict) or not isinstance(c.get("reasons", []), list)):
        raise _bad(head, "completeness", f"{c!r} is not an object with a list of reasons")
    return header


def check_table(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """calls.parquet's columns and values, checked (times finite and >= 0, known kinds, sane selections)."""
    import numpy as np
    import pandas as pd

    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise _bad(path, "columns", f"missing {', '.join(missing)}")
    kinds = set(table["kind"].dropna().unique()) - KINDS
    if kinds or table["kind"].isna().any():
        raise _bad(path, "kind", f"unknown value {sorted(map(str, kinds))[0] if kinds else 'null'}")
    calls = table["kind"] == "call"
    for col in ("wall_s", "hdf5_s"):
        v = table.loc[calls, col].to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(v) | (v < 0)
        if bad.any():
            raise _bad(path, col, f"{v[bad][0]} in row {table.index[int(np.flatnonzero(calls.to_numpy())[bad][0])]} "
                                  "(a call's time must be finite and >= 0)")
    for col in ("pid", "seq"):
        if table[col].isna().any() or (table[col].dropna() < 0).any():
            raise _bad(path, col, "a missing or negative value")
    for col in ("nelems", "bytes", "depth"):
        v = table[col].dropna()
        if len(v) and ((v < 0).any() or (v > MAX_DIM).any()):
            raise _bad(path, col, f"{v[(v < 0) | (v > MAX_DIM)].iloc[0]} is out of range")
    for col in ("start", "count"):
        values = table[col]
        if isinstance(values.dtype, pd.ArrowDtype):     # the loader's: checked column-wise, no object per row
            import pyarrow as pa
            import pyarrow.compute as pc

            arr = values.array.__arrow_array__()
            arr = pa.chunked_array([arr]) if isinstance(arr, pa.Array) else arr
            flat = pc.list_flatten(arr).to_numpy(zero_copy_only=False)
            bad = np.flatnonzero((flat < 0) | (flat > MAX_DIM))
            if len(bad):
                i = int(pc.list_parent_indices(arr).to_numpy()[bad[0]])
                raise _bad(path, col, f"{list(values.iloc[i])} in row {table.index[i]} is out of range")
            continue
        for i, v in table[col].items():
            if v is not None and len(v) and (min(v) < 0 or max(v) > MAX_DIM):
                raise _bad(path, col, f"{list(v)} in row {i} is out of range")
    return table


def iter_trace(path, columns: list[str] | None = None, batch_rows: int = 200_000):
    """The rows of ``path``'s calls.parquet as pandas frames of at most ``batch_rows`` rows, in file order
    (pid, then seq): a trace of millions of calls read in bounded memory. ``columns`` picks columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    table = path / "calls.parquet"
    if not table.is_file():
        raise CcpError(f"{path}: not a ccp trace folder (no calls.parquet)")
    try:
        pf = pq.ParquetFile(table)
        unknown = sorted(set(columns or ()) - set(pf.schema_arrow.names))
        if unknown:
            raise CcpError(f"{table}: no column {unknown[0]!r}{suggest(unknown[0], pf.schema_arrow.names)}")
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
            yield batch.to_pandas()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CcpError(f"{table}: not a readable parquet table ({' '.join(str(exc).split())[:200]})") from None


def _arrow_lists(type_):
    import pandas as pd
    import pyarrow as pa

    return pd.ArrowDtype(type_) if pa.types.is_list(type_) or pa.types.is_large_list(type_) else None


def read_header(path: Path) -> dict:
    """A trace folder's trace.json, checked (and the folder holds calls.parquet)."""
    head, table = path / "trace.json", path / "calls.parquet"
    if not head.is_file() or not table.is_file():
        raise CcpError(f"{path}: not a ccp trace folder (no trace.json and calls.parquet; make one with `ccp trace -o {path} -- ...`)")
    try:
        header = json.loads(head.read_text(), parse_constant=lambda c: float("nan"))
    except json.JSONDecodeError as exc:
        raise CcpError(f"{head}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise CcpError(f"{head}: cannot be read ({exc})") from None
    return check_header(head, header)


def load_trace(path, batch_rows: int | None = None) -> Trace:
    """A trace folder, checked: a damaged one is one CcpError naming the file and the field.
    ``batch_rows``: read calls.parquet that many rows at a time (the same trace)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    header = read_header(path)
    table = path / "calls.parquet"
    try:
        # list columns stay Arrow arrays (pd.ArrowDtype): a million-call trace holds no Python list per row
        # and text columns stay dictionary-encoded (pandas categoricals): a few distinct values per column
        pf = pq.ParquetFile(table)
        text = [f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        if batch_rows is None:
            arrow = pq.read_table(table, read_dictionary=text)
        else:       # in batches, each with its own dictionaries (the same frame: tests/trace/test_diagnose_batches.py)
            pf = pq.ParquetFile(table, read_dictionary=text)
            arrow = pa.Table.from_batches(list(pf.iter_batches(batch_size=batch_rows)), schema=pf.schema_arrow)
        frame = arrow.to_pandas(types_mapper=_arrow_lists, split_blocks=True, self_destruct=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CcpError(f"{table}: not a readable parquet table ({' '.join(str(exc).split())[:200]})") from None
    return Trace(path, header, check_table(table, frame))
