"""Reading a run folder for the report: cells with predictable dtypes, labels people can read, stability.

Every function here works on runs written by any schema version-1 engine, including runs that predate a
column (it reads back as missing) and quick runs (no counted pass: counts are NaN, no ``io.parquet``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.config import axes as matrix_axes
from ccp.config.axes.access import access_text  # noqa: F401 -- the report's name for it
from ccp.config.axes.cache import cache_text  # noqa: F401 -- the report's name for it
from ccp.config.axes.storage import STORAGE, storage_text  # noqa: F401 -- the report's name for it

# the store is the one reader of a run folder; the report's names for what it reads:
from ccp.store.reader import TEXT_COLUMNS, read_run_cells, read_run_sweep  # noqa: F401
from ccp.store.reader import normalise_cells as normalise  # noqa: F401
from ccp.store.reader import read_env as load_env  # noqa: F401
from ccp.store.reader import read_parts as load_parts  # noqa: F401
from ccp.store.schema import CELL_COLUMNS, FINISHED, SHORT_REQUEST_S, UNSTABLE_SPREAD  # noqa: F401 -- the report names them

STORAGE_COLUMNS = list(STORAGE.columns)


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
    """cells.parquet (or cells.csv), every CELL_COLUMNS column present, text as str ('' for missing), numbers as float
    (the store's one reader: :func:`ccp.store.reader.read_run_cells`)."""
    return read_run_cells(Path(run_dir))


def is_ok(cells: pd.DataFrame) -> pd.Series:
    return cells["status"].isin(FINISHED)


def _label_order():
    """The axes as a label names them: how a cell is set up, then what it does."""
    axes = matrix_axes.axes()
    return [a for a in axes if not a.describes_work] + [a for a in axes if a.describes_work]


def _rows(cells: pd.DataFrame, columns) -> list[dict]:
    return cells.reindex(columns=list(columns)).to_dict("records")


def _joined(cells: pd.DataFrame, cols: list[str]) -> pd.Series:
    """Each row's ``cols`` as one text (an empty Series for no rows: pandas' agg would give a frame)."""
    if cells.empty:
        return pd.Series([], index=cells.index, dtype=object)
    return cells[cols].astype(str).agg(LABEL_SEP.join, axis=1)


@dataclass
class Labels:
    """Readable labels for a run's cells, from the axes that vary across the WHOLE run (not a subset of it)."""

    axes: list[tuple[str, str]] = field(default_factory=list)   # (axis name, labelled column)
    contexts: dict = field(default_factory=dict)                  # axis name -> what its text needs of the whole run

    @property
    def storage_varying(self) -> tuple:
        """The storage columns that differ across the run: named in every storage label."""
        return self.contexts.get("storage") or ()

    @classmethod
    def of(cls, *frames: pd.DataFrame) -> Labels:
        cols = matrix_axes.cell_columns()
        allc = pd.concat([f.reindex(columns=list(cols)).fillna(matrix_axes.read_back()) for f in frames], ignore_index=True)
        lab = cls(contexts={a.name: a.text_context(_rows(allc, cols)) for a in matrix_axes.axes()})
        allc = lab.add(allc, label=False)
        lab.axes = [(a.name, a.report_column) for a in _label_order() if allc[a.report_column].nunique() > 1]
        return lab

    def add(self, cells: pd.DataFrame, label: bool = True) -> pd.DataFrame:
        """Adds each axis's text column (cache_label, access_label, storage_label) and (with ``label``) label: the
        varying axes joined, and config_label: those but what the cell does."""
        texts = [a for a in matrix_axes.axes() if a.report_column not in a.columns]
        rows = _rows(cells, matrix_axes.cell_columns())
        cells = cells.assign(**{a.report_column: [a.text(r, self.contexts.get(a.name)) for r in rows] for a in texts})
        if {"chunks", "cache_nbytes", "cache_label", "cell_id"} <= set(cells.columns):
            unknown = _contiguous(cells) & cells["cache_nbytes"].isna()     # with_configured_cache: not known
            cells.loc[unknown, "cache_label"] = [f"not known (contiguous: no chunk cache; cell {i})"
                                                 for i in cells.loc[unknown, "cell_id"]]
        if label:
            cols = [c for _, c in self.axes] or ["access_label"]
            work = {a.report_column for a in matrix_axes.axes() if a.describes_work}
            conf = [c for c in cols if c not in work]   # the layout and cache alone, for charts grouped by pattern
            cells["label"] = _joined(cells, cols)
            cells["config_label"] = _joined(cells, conf) if conf else cells["access_label"]
        return cells

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.axes]


def prepare(cells: pd.DataFrame, configured: dict | None = None) -> tuple[pd.DataFrame, Labels]:
    """The cells labelled; ``configured`` (:func:`configured_caches`): the cache each cell's sweep set, which a
    contiguous cell is labelled by (:func:`with_configured_cache`)."""
    cells = with_configured_cache(cells, configured)
    labels = Labels.of(cells)
    return labels.add(cells), labels


CACHE_COLUMNS = ("cache_nbytes", "cache_nslots", "cache_w0")
#: a run's sweep.yaml keys the run added to the sweep it ran (already applied to its values)
RUN_ONLY_KEYS = ("quick", "scale")


def configured_caches(run_dir: Path) -> dict[str, tuple[int, int, float]]:
    """Cell id -> (nbytes, nslots, w0) of the chunk cache the run's sweep set for it: its sweep.yaml expanded as the
    run expanded it (a cell id is the hash of what the sweep configured). cells.parquet holds the cache HDF5 read
    back, and for a contiguous dataset that is the library's default whatever was set, so three contiguous cells of
    three caches all read "cache 8 MiB" (breaker8 F9). Empty when the sweep cannot be expanded here (its input
    file gone or changed, a replay's trace not loaded): :func:`with_configured_cache` then tells them apart by id."""
    from ccp.config.sweep import parse_sweep
    from ccp.errors import CcpError
    from ccp.hdf5.dataset import describe_source
    from ccp.matrix.cells import expand

    doc = read_run_sweep(Path(run_dir))[1]
    if not doc:
        return {}
    for key in RUN_ONLY_KEYS:
        doc.pop(key, None)
    try:
        sweep = parse_sweep(doc, Path(run_dir))
        cells = expand(sweep, describe_source(sweep.dataset))
    except (CcpError, OSError, ValueError, KeyError, TypeError):   # a sweep this ccp cannot expand: labels by id
        return {}
    return {c.cell_id: (c.cache.nbytes, c.cache.nslots, c.cache.w0) for c in cells}


def _contiguous(cells: pd.DataFrame) -> pd.Series:
    return cells["chunks"].astype(str) == "contiguous"


def with_configured_cache(cells: pd.DataFrame, configured: dict | None) -> pd.DataFrame:
    """A contiguous cell's cache columns as its sweep set them (``configured``, by cell id), not as HDF5 read them
    back (the library default: a contiguous dataset has no chunk cache), so two cells the sweep set apart are never
    labelled alike. A contiguous cell whose setting is not known, among others that read back alike, gets its cell
    id beside a cache of NaN: its label says it is not known rather than name a cache it was not given."""
    cont = _contiguous(cells)
    if not cont.any():
        return cells
    cells = cells.copy()
    known = cont & cells["cell_id"].astype(str).isin(list(configured or {}))
    for i in cells.index[known]:
        cells.loc[i, list(CACHE_COLUMNS)] = list((configured or {})[str(cells.at[i, "cell_id"])])
    unknown = cont & ~known
    if unknown.any():
        # only cells whose labels would collide (alike in every column, the cache read back too) lose it
        others = [c for c in matrix_axes.cell_columns() if c in cells]
        alike = cells[unknown].astype({c: str for c in others}).duplicated(others, keep=False)
        ids = cells.index[unknown][alike.to_numpy()]
        cells.loc[ids, list(CACHE_COLUMNS)] = float("nan")
    return cells


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


def contended_cells(cells: pd.DataFrame) -> pd.Series:
    """Whether each cell was flagged measured under contention (schema 4: ccp.store.schema.contended)."""
    return cells["flags"].fillna("").astype(str).str.split(",").map(lambda f: "contended" in f).astype(bool)


def contention_line(cells: pd.DataFrame) -> str:
    """One sentence on the run's contention, or "" when no cell was flagged: how many cells, the highest load on how
    many CPUs, and what it means for their times (the report's top and ``ccp run``'s last lines say it)."""
    busy = cells[contended_cells(cells)] if len(cells) else cells
    if not len(busy):
        return ""
    loads = pd.to_numeric(busy.get("load_max"), errors="coerce")
    cpus = pd.to_numeric(busy.get("cpus"), errors="coerce")
    load = (f" (load up to {float(loads.max()):.1f} on {int(cpus.max())} CPUs)"
            if loads is not None and loads.notna().any() and cpus is not None and cpus.notna().any() else "")
    return (f"{len(busy)} of {len(cells)} cells measured under contention{load}: their times say more about the "
            "machine than the layout; their I/O counts are exact (rerun on a quiet machine to rank them by time)")


def run_contention(run_dir: Path) -> str:
    """:func:`contention_line` of a run folder ("" when none was flagged, or the folder cannot say)."""
    from ccp.errors import CcpError

    try:
        return contention_line(load_cells(run_dir))
    except (CcpError, OSError, ValueError, KeyError):
        return ""
