"""Reading a run folder for the report: cells with predictable dtypes, labels people can read, stability.

Every function here works on runs written by any schema version-1 engine, including runs that predate a
column (it reads back as missing) and quick runs (no traced pass: counts are NaN, no ``io.parquet``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ccp.store.results import read_cells
from ccp.store.schema import CELL_COLUMNS, FINISHED, SHORT_REQUEST_S, UNSTABLE_SPREAD  # noqa: F401 -- the report names them
from ccp.units import format_bytes

TEXT_COLUMNS = ("cell_id", "chunks", "filters", "op", "block", "order", "client", "flags", "traps", "status",
                "dataset_file", "host", "started_at", "storage", "fsspec", "latency", "bandwidth", "file_space",
                "page_buffer", "network")
# runs before the storage axes (schema < 3) read every file locally, as written, without a page buffer
OLD_STORAGE = {"storage": "local", "file_space": "default", "page_buffer": "none"}
STORAGE_COLUMNS = ["storage", "fsspec", "latency", "bandwidth", "file_space", "page_buffer"]


# how each storage axis is named in a label (its value alone would not say which axis it is: "none", "1MiB")
AXIS_WORDS = {"storage": "{}", "fsspec": "fsspec {}", "latency": "latency {} (emulated)",
              "bandwidth": "bandwidth {} (emulated)", "file_space": "file space {}", "page_buffer": "page buffer {}"}


def _text(c, k, default=""):
    v = c.get(k)
    return default if v is None or (isinstance(v, float) and math.isnan(v)) or v == "" else str(v)


def axis_text(axis: str, value) -> str:
    """One storage axis's value, named: 'fsspec readahead/64KiB', 'latency 20ms (emulated)', 'page buffer none'."""
    v = "-" if value is None or (isinstance(value, float) and math.isnan(value)) or value == "" else str(value)
    return AXIS_WORDS.get(axis, "{}").format(v)


def storage_text(c, varying=()) -> str:
    """One cell's storage axes in a few words: 'local', 'local page/4MiB, page buffer 16MiB',
    's3 readahead/4MiB 20ms (emulated)'. Every axis in ``varying`` (those that differ between the cells
    being compared) is named even at its default, so two labels never read alike: 'local, page buffer none'."""
    varying = set(varying)
    parts = [_text(c, "storage", "local")]
    if parts[0] == "s3":
        lat, bw = _text(c, "latency", "0ms"), _text(c, "bandwidth", "unlimited")
        emulated = lat not in ("0ms", "") or bw not in ("unlimited", "")
        parts.append(f"{_text(c, 'fsspec')} {lat}" + ("" if bw in ("unlimited", "") and "bandwidth" not in varying
                                                       else f" {bw}") + (" (emulated)" if emulated else ""))
    if _text(c, "file_space", "default") != "default":
        parts.append(_text(c, "file_space"))
    elif "file_space" in varying:
        parts.append("file space default")
    out = " ".join(parts)
    if _text(c, "page_buffer", "none") != "none" or "page_buffer" in varying:
        out += f", page buffer {_text(c, 'page_buffer', 'none')}"
    return out


LABEL_SEP = " | "


def _num(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return v


def finite(v) -> bool:
    v = _num(v)
    return not math.isnan(v) and not math.isinf(v)


def load_cells(run_dir: Path) -> pd.DataFrame:
    """cells.parquet (or cells.csv), every CELL_COLUMNS column present, text as str ('' for missing), numbers as float."""
    return normalise(read_cells(Path(run_dir)))


def normalise(cells: pd.DataFrame) -> pd.DataFrame:
    cells = cells.copy()
    for col in CELL_COLUMNS:
        if col not in cells:
            cells[col] = "" if col in TEXT_COLUMNS else np.nan
    for col in cells.columns:
        if col in TEXT_COLUMNS:
            cells[col] = [("" if (v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA) else str(v))
                          for v in cells[col]]
            cells[col] = cells[col].astype(object)
        elif col == "cold":
            cells[col] = cells[col].astype(object)
        else:
            cells[col] = pd.to_numeric(cells[col], errors="coerce").astype(float)
    cells["random"] = cells["random"].fillna(0)
    # runs before the client axis (schema 1) measured with h5py's low-level API
    cells["client"] = [c or "h5py-lowlevel" for c in cells["client"]]
    for col, default in OLD_STORAGE.items():
        cells[col] = [c or default for c in cells[col]]
    return cells.reset_index(drop=True)


def load_parts(folder: Path, columns, cell_ids=None, filters=None) -> pd.DataFrame | None:
    """A parquet directory (one part per cell), only ``columns``, only ``cell_ids`` if given; None if absent."""
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return None
    f = list(filters or [])
    if cell_ids is not None:
        ids = [str(c) for c in cell_ids]
        if not ids:
            return None
        f.append(("cell_id", "in", ids))
    df = pd.read_parquet(folder, columns=list(columns), filters=f or None)
    if "cell_id" in df:
        df["cell_id"] = df["cell_id"].astype(str)
    return df


def load_env(run_dir: Path) -> dict:
    p = run_dir / "env.json"
    try:
        return json.loads(p.read_text()) if p.exists() else {}
    except ValueError:
        return {}


def load_sweep(run_dir: Path) -> tuple[str, dict]:
    p = run_dir / "sweep.yaml"
    text = p.read_text() if p.exists() else ""
    try:
        sweep = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        sweep = {}
    return text, sweep if isinstance(sweep, dict) else {}


def is_ok(cells: pd.DataFrame) -> pd.Series:
    return cells["status"].isin(FINISHED)


def _default_order(block: str) -> str:
    return "x".join(str(i) for i in range(len(str(block).split("x"))))


def cache_text(nbytes, nslots, w0, with_slots: bool, with_w0: bool) -> str:
    if not finite(nbytes):
        return "-"
    s = format_bytes(nbytes)
    if with_slots and finite(nslots):
        s += f", {int(nslots):,} slots"
    if with_w0 and finite(w0):
        s += f", w0 {float(w0):g}"
    return s


def access_text(op, block, order, random) -> str:
    s = f"{op} {block}".strip()
    if order and order != _default_order(block):
        s += f" order {order}"
    if finite(random) and int(random):
        s += f" random {int(random):,}"
    return s


S3_ONLY = ("fsspec", "latency", "bandwidth")     # empty on local cells: only S3 cells can differ in them


def _storage_varying(cells: pd.DataFrame) -> tuple[str, ...]:
    """The storage columns whose values differ between cells they apply to (the S3-only ones among S3 cells)."""
    s3 = cells["storage"].fillna("local").astype(str) == "s3"
    return tuple(c for c in STORAGE_COLUMNS
                 if cells.loc[s3 if c in S3_ONLY else cells.index, c].fillna("").astype(str).nunique() > 1)


@dataclass
class Labels:
    """Readable labels for a run's cells, from the axes that vary across the WHOLE run (not a subset of it)."""

    axes: list[tuple[str, str]] = field(default_factory=list)   # (axis name, labelled column)
    with_slots: bool = False
    with_w0: bool = False
    storage_varying: tuple = ()     # the storage columns that differ across the run: named in every storage label

    @classmethod
    def of(cls, *frames: pd.DataFrame) -> Labels:
        cols = ["chunks", "filters", "cache_nbytes", "cache_nslots", "cache_w0", "op", "block", "order", "random",
                *STORAGE_COLUMNS]
        allc = pd.concat([f.reindex(columns=[*cols, "client"]).fillna({"client": "h5py-lowlevel", **OLD_STORAGE})
                          for f in frames], ignore_index=True)
        lab = cls(with_slots=allc["cache_nslots"].dropna().nunique() > 1, with_w0=allc["cache_w0"].dropna().nunique() > 1,
                  storage_varying=_storage_varying(allc))
        allc = lab.add(allc, label=False)
        lab.axes = [(n, c) for n, c in (("chunks", "chunks"), ("filters", "filters"), ("cache", "cache_label"),
                                        ("client", "client"), ("storage", "storage_label"), ("access", "access_label"))
                    if allc[c].nunique() > 1]
        return lab

    def add(self, cells: pd.DataFrame, label: bool = True) -> pd.DataFrame:
        """Adds cache_label, access_label and (with ``label``) label: the varying axes joined."""
        cells = cells.assign(
            cache_label=[cache_text(n, s, w, self.with_slots, self.with_w0)
                         for n, s, w in zip(cells["cache_nbytes"], cells["cache_nslots"], cells["cache_w0"])],
            access_label=[access_text(o, b, r, x) for o, b, r, x in zip(cells["op"], cells["block"], cells["order"], cells["random"])],
            storage_label=[storage_text(c, self.storage_varying)
                           for _, c in cells.reindex(columns=STORAGE_COLUMNS).iterrows()])
        if label:
            cols = [c for _, c in self.axes] or ["access_label"]
            cells["label"] = cells[cols].astype(str).agg(LABEL_SEP.join, axis=1)
            conf = [c for c in cols if c != "access_label"]   # the layout and cache alone, for charts grouped by pattern
            cells["config_label"] = cells[conf].astype(str).agg(LABEL_SEP.join, axis=1) if conf else cells["access_label"]
        return cells

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.axes]


def prepare(cells: pd.DataFrame) -> tuple[pd.DataFrame, Labels]:
    labels = Labels.of(cells)
    return labels.add(cells), labels


def itemsize(cell) -> float:
    """Bytes per element, from the chunk (or NaN when contiguous and unknown)."""
    chunks = str(cell.get("chunks", ""))
    if finite(cell.get("chunk_bytes")) and cell.get("chunk_bytes") > 0 and chunks not in ("", "contiguous"):
        try:
            return float(cell["chunk_bytes"]) / float(np.prod([int(d) for d in chunks.split("x")]))
        except ValueError:
            return float("nan")
    return float("nan")


def requested_bytes(cell) -> float:
    """Bytes the application asked for in one pass: the whole dataset when tiling, else requests x block."""
    if not finite(cell.get("random")) or int(cell.get("random") or 0) == 0:
        return _num(cell.get("logical_bytes"))
    try:
        elems = float(np.prod([int(d) for d in str(cell["block"]).split("x")]))
    except ValueError:
        return float("nan")
    return _num(cell.get("requests")) * elems * itemsize(cell)


def stability(cells: pd.DataFrame) -> pd.DataFrame:
    """unstable / short / partial / truncated, as the runner flagged each cell (thresholds: ccp.store.schema)."""
    flags = cells["flags"].astype(str)
    spread = cells["spread"].where(cells["spread"].notna(), cells["time_s_max"] / cells["time_s_min"])
    unstable = flags.str.contains("unstable")
    short = flags.str.contains("short")
    ok = is_ok(cells)
    return pd.DataFrame({"spread": spread, "unstable": unstable & ok, "short": short & ok,
                         "partial": flags.str.contains("partial") & ok,
                         "truncated": flags.str.contains("io-trace-truncated") & ok}, index=cells.index)


def storage_overhead(cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell: metadata and raw-data overhead in ppm of the logical size (seed 002, Table 1).

    metadata_ppm = (file_bytes - storage_bytes) / logical_bytes * 1e6: the file's bytes that are not the
    dataset's stored data (object headers, chunk index, superblock, free space).
    raw_ppm: unfiltered, the allocated chunk bytes beyond the data, (storage_bytes - logical_bytes) / logical,
    the partly filled edge chunks. Filtered data has no honest stored figure for that (the padding is
    compressed with the data), so ``padding_ppm`` gives the edge-chunk padding BEFORE compression,
    (nchunks * chunk_bytes - logical) / logical, an upper bound on what it costs on disk.
    """
    logical = cells["logical_bytes"].where(cells["logical_bytes"] > 0)
    meta = (cells["file_bytes"] - cells["storage_bytes"]) / logical * 1e6
    unfiltered = cells["filters"].isin(["none", ""])
    raw = ((cells["storage_bytes"] - logical) / logical * 1e6).where(unfiltered)
    chunked = cells["nchunks"] > 0
    allocated = (cells["nchunks"] * cells["chunk_bytes"]).where(chunked, logical)
    padding = ((allocated - logical) / logical * 1e6)
    return pd.DataFrame({"meta_ppm": meta, "raw_ppm": raw, "padding_ppm": padding, "allocated_bytes": allocated,
                         "unfiltered": unfiltered}, index=cells.index)


def workload(cells: pd.DataFrame) -> pd.Series:
    """What a cell's passes ask for, so only cells doing the same work are ranked against each other:
    'whole dataset' for tiling, else the random requests (a different amount of data)."""
    return pd.Series([f"{op} the whole dataset" if not finite(r) or not int(r)
                      else f"{op} {int(r):,} random {b} blocks" for op, r, b in zip(cells["op"], cells["random"], cells["block"])],
                     index=cells.index, dtype=object)
