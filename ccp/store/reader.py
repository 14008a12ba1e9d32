"""The one reader of a finished run folder, for the report, ``ccp compare`` and notebooks: every file of the
folder is read here, and rows of every readable schema come back as this ccp writes them.

:func:`read_run_cells` reads cells.parquet (or cells.csv) through :func:`ccp.store.results.read_cells` and types
it as :class:`~ccp.store.row.CellRow` declares: every column present (a column an older schema lacks is
added), text columns as ``str`` ('' for missing), ``cold`` as an object column, every other column as float.
A run written before a column existed reads as every cell then was (:data:`ccp.store.schema.READ_BACK`:
client ``h5py-lowlevel`` before schema 2, storage ``local``/``default``/``none`` before 3). Old schemas are
kept readable by the committed run folders under ``tests/store/fixtures``.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

import pandas as pd
import yaml

from ccp.errors import CcpError
from ccp.store.results import error_summary, read_cells
from ccp.store.row import CellRow
from ccp.store.schema import CELL_COLUMNS, FAILED_PREFIX, FINISHED, READ_BACK

#: The cells columns that hold text, as CellRow types them (``str`` or ``str | None``).
TEXT_COLUMNS = tuple(f.name for f in fields(CellRow) if str(f.type).split(" |")[0] == "str")


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def normalise_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """Cells of any readable schema typed as this ccp writes them (the module docstring says how)."""
    cells = cells.copy()
    for col in CELL_COLUMNS:
        if col not in cells:
            cells[col] = "" if col in TEXT_COLUMNS else float("nan")
    for col in cells.columns:
        if col in TEXT_COLUMNS:
            cells[col] = pd.Series(["" if _missing(v) else str(v) for v in cells[col]], index=cells.index, dtype=object)
        elif col == "cold":
            cells[col] = cells[col].astype(object)
        else:
            cells[col] = pd.to_numeric(cells[col], errors="coerce").astype(float)
    cells["random"] = cells["random"].fillna(0)
    for col, value in READ_BACK.items():
        cells[col] = [c or value for c in cells[col]]
    return cells.reset_index(drop=True)


def read_run_cells(run_dir: Path) -> pd.DataFrame:
    """A run folder's cells, every column present and typed (:func:`normalise_cells`); a status ccp never writes is
    bad input, one line naming the file, the column and the value (a hand-edited ``OK`` read as a cell that did not
    finish failed a gate: breaker10 B10)."""
    cells = normalise_cells(read_cells(Path(run_dir)))
    for i, status in enumerate(cells["status"]):
        if status and status not in FINISHED and not status.startswith(FAILED_PREFIX):
            file = "cells.parquet" if (Path(run_dir) / "cells.parquet").exists() else "cells.csv"
            raise CcpError(f"{Path(run_dir) / file}: row {i + 1}, column status: {status!r} is not a status ccp writes "
                           f"({', '.join(map(repr, FINISHED))} or '{FAILED_PREFIX}REASON')")
    return cells


def read_parts(folder: Path, columns, cell_ids=None, filters=None) -> pd.DataFrame | None:
    """A parquet directory of the run (``requests.parquet``, ``io.parquet``: one part per cell), only ``columns``,
    only ``cell_ids`` if given; None if absent."""
    folder = Path(folder)
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return None
    f = list(filters or [])
    if cell_ids is not None:
        ids = [str(c) for c in cell_ids]
        if not ids:
            return None
        f.append(("cell_id", "in", ids))
    try:
        df = pd.read_parquet(folder, columns=list(columns), filters=f or None)
    except (OSError, ValueError) as exc:        # a part cut short or damaged (pyarrow's ArrowInvalid is a ValueError)
        raise CcpError(f"{_damaged_part(folder) or folder} is damaged ({error_summary(exc)}): remove it to read the "
                       "rest (that cell's per-request rows are then missing), or run the sweep again into a new --out") from None
    if "cell_id" in df:
        df["cell_id"] = df["cell_id"].astype(str)
    return df


def _damaged_part(folder: Path) -> Path | None:
    """The first part of a parquet folder whose footer cannot be read."""
    import pyarrow.parquet as pq

    for part in sorted(folder.glob("*.parquet")):
        try:
            pq.read_metadata(part)
        except (OSError, ValueError):
            return part
    return None


def _json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def read_env(run_dir: Path) -> dict:
    """env.json: the machine and versions the run was measured with ({} when missing or unreadable)."""
    return _json(Path(run_dir) / "env.json")


def read_run_record(run_dir: Path) -> dict:
    """run.json: schema version, dataset identity, sweep name and settings ({} when missing or unreadable)."""
    return _json(Path(run_dir) / "run.json")


def read_run_sweep(run_dir: Path) -> tuple[str, dict]:
    """sweep.yaml: its text and its mapping (both empty when it is missing; the mapping empty when not YAML)."""
    p = Path(run_dir) / "sweep.yaml"
    text = p.read_text() if p.exists() else ""
    try:
        sweep = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        sweep = {}
    return text, sweep if isinstance(sweep, dict) else {}
