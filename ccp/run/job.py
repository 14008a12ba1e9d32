"""One job description per cell, the same for every executor: what a worker needs to measure it.

The job names the file the cell reads (a work file laid out in the cell's layout, made here if it is
missing, or the user's file as stored), the pass count and the time budget. A cell whose job cannot be
made (a layout HDF5 refuses, a full disk) gets a failed row instead; the sweep goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ccp.config.sweep import Sweep
from ccp.errors import CcpError
from ccp.hdf5.dataset import DatasetInfo
from ccp.matrix.cells import Cell
from ccp.measurement.passes import CellJob
from ccp.store.disk import check_free
from ccp.store.row import CellRow
from ccp.store.schema import FAILED_PREFIX
from ccp.store.workdir import FILE_SPACE, WorkDir
from ccp.workload.files import ensure_layout_file, layout_path

if TYPE_CHECKING:
    from ccp.remote.sweep_cell import RemoteSession


def job_for(cell: Cell, sweep: Sweep, source: DatasetInfo, work_dir: Path, quick: bool,
            s3: RemoteSession | None = None) -> CellJob:
    """The cell's job, its work file made if missing (write and copy cells: disk for two pass files checked).

    A read cell with a ``file_space`` reads a copy of its file with that strategy (made once in the work
    folder); an S3 cell's file is uploaded once through ``s3`` (the sweep's
    :class:`ccp.remote.sweep_cell.RemoteSession`) and has no counted pass: its I/O counts are its GETs."""
    repack_s = float("nan")
    if cell.access.op in ("write", "copy"):     # each pass writes a new file of about the dataset's size
        logical = logical_bytes(source)
        check_free(Path(work_dir) / "tmp", 2 * logical, f"a {cell.access.op} cell's pass files")
    if cell.access.op == "write":
        file = ""
    elif cell.access.op == "copy":         # copy from the dataset as stored into the cell's layout
        if sweep.dataset.file is not None:
            file = str(sweep.dataset.file)
        else:
            file = str(work_file(work_dir, sweep, source, source.chunks, source.filters)[0])
    elif cell.from_source:
        file = str(sweep.dataset.file)
    else:
        path, seconds = work_file(work_dir, sweep, source, cell.chunks, cell.filters)
        file = str(path)
        if sweep.dataset.file is not None:
            repack_s = seconds
    remote = None
    dataset_path = sweep.dataset.path
    if cell.access.op == "read" and cell.storage.file_space is not None:
        from ccp.remote.sweep_cell import file_space_variant

        if cell.from_source:         # the user's dataset itself, links resolved, in the copy
            dataset_path = source.path or dataset_path
        variants = Path(work_dir) / FILE_SPACE      # paged copies of layout files (never beside a user's file)
        WorkDir(work_dir).register(variants)       # ccp's, before it exists: `ccp clean` removes it
        variants.mkdir(parents=True, exist_ok=True)
        file = str(file_space_variant(file, cell.storage.file_space, variants))
    if cell.storage.remote:
        if s3 is None:
            raise CcpError("an S3 cell needs the sweep's S3 session (run it through run_sweep)")
        remote = s3.target(file, dataset_path, cell.storage)
    return CellJob(cell=cell, file=file, dataset_path=dataset_path, source=source,
                   generate=sweep.dataset.generate, user_file=str(sweep.dataset.file) if sweep.dataset.file else None,
                   repeats=sweep.repeats, cold=sweep.cold, counted_pass=not quick and remote is None, repack_s=repack_s,
                   time_budget=sweep.time_budget, remote=remote, warmup=not quick)


def logical_bytes(source: DatasetInfo) -> int:
    """The dataset's values in bytes, uncompressed: about a work file's size."""
    return int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize


def work_file_to_make(cell: Cell, sweep: Sweep, source: DatasetInfo, work_dir: Path) -> Path | None:
    """The layout work file :func:`job_for` will make for ``cell`` (generating or repacking the data), None if it
    needs none or it exists: what the progress line says while it is made (audit22 A2)."""
    if cell.access.op == "write" or (cell.access.op == "copy" and sweep.dataset.file is not None):
        return None
    if cell.access.op == "copy":
        path = layout_path(work_dir, sweep, source, source.chunks, source.filters)
    elif cell.from_source:
        return None
    else:
        path = layout_path(work_dir, sweep, source, cell.chunks, cell.filters)
    return None if path.exists() else path


def work_file(work_dir: Path, sweep: Sweep, source: DatasetInfo, chunks, filters) -> tuple[Path, float]:
    """ensure_layout_file, with the file (and its .json) recorded as ccp's before it exists (for `ccp clean`)."""
    path = layout_path(work_dir, sweep, source, chunks, filters)
    wd = WorkDir(work_dir)
    wd.register(path)
    wd.register(path.with_name(path.name + ".json"))
    return ensure_layout_file(work_dir, sweep, source, chunks, filters)


def failed_row(cell: Cell, reason: str) -> CellRow:
    """The row of a cell that was not measured: its parameters and ``failed: reason``."""
    return CellRow.for_cell(cell, f"{FAILED_PREFIX}{reason}")
