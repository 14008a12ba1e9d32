"""Everything checked before a sweep measures anything: the sweep file, the layouts HDF5 must accept,
the request counts a pass can hold, the options beside the sweep file, and the disk both folders need."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ccp.config.sweep import Sweep
from ccp.errors import CcpError
from ccp.hdf5.dataset import DatasetInfo, describe_source
from ccp.matrix.cells import Cell, expand
from ccp.units import shape_str
from ccp.workload.sweep import load_sweep_with_replays

MAX_REQUESTS = 10**8     # a pass's plan is held in memory: 16 bytes per request and dimension
EXECUTORS = ("local", "dask")
LOG_LINE_BYTES = 100      # one line of HDF5's I/O log (offsets, size, memory type, timestamps)
PART_ROW_BYTES = 64       # one requests/io parquet row, uncompressed (an upper bound)


def one_line(exc: BaseException) -> str:
    """An exception as one line: a CcpError's own text, anything else prefixed with its type."""
    text = str(exc).strip().splitlines()
    if isinstance(exc, CcpError):
        return text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def prepare(sweep_path, scale: float | None = None) -> tuple[Sweep, DatasetInfo, list[Cell]]:
    """Load, validate and expand a sweep: everything checked before anything is measured."""
    sweep = load_sweep_with_replays(sweep_path, scale)
    try:
        source = describe_source(sweep.dataset)
    except CcpError:
        raise
    except Exception as exc:  # a dataset h5py opens but cannot describe (a time type, no fill value)
        raise CcpError(f"dataset.path: {sweep.dataset.path!r} in {sweep.dataset.file}: ccp cannot measure it "
                       f"({one_line(exc)})") from None
    if any(d == 0 for d in source.shape):
        raise CcpError(f"dataset.path: {sweep.dataset.path!r} has shape {tuple(source.shape)}: an empty dataset has nothing to read or write")
    cells = expand(sweep, source)
    check_layouts(cells, source)
    check_request_counts(sweep, cells, source)
    return sweep, source, cells


def check_request_counts(sweep: Sweep, cells: list[Cell], source: DatasetInfo) -> None:
    for cell in cells:
        n = request_count(cell.access, source.shape)
        if n > MAX_REQUESTS:
            i = sweep.access.index(cell.access) if cell.access in sweep.access else 0
            raise CcpError(f"matrix.access[{i}].block: {shape_str(cell.access.block)} tiles {list(source.shape)} in {n:,} requests; "
                           f"ccp plans at most {MAX_REQUESTS:,} a pass (use a larger block, or random: N)")


def check_layouts(cells: list[Cell], source: DatasetInfo) -> None:
    """Build each layout's dataset creation property list in memory, as the work files will.

    A filter or chunk shape HDF5 refuses is refused here (one line, before anything is written),
    so `ccp check` refuses what `ccp run` would fail on.
    """
    from ccp.hdf5.plists import dcpl as make_dcpl

    seen = set()
    for cell in cells:
        if cell.layout in seen or (cell.from_source and cell.access.op == "read"):   # reads the user's file as stored
            continue
        seen.add(cell.layout)
        try:
            make_dcpl(source, cell.chunks, cell.filters)
        except CcpError:
            raise
        except Exception as exc:  # whatever HDF5 or a filter raises, named by layout
            raise CcpError(f"matrix: chunks {shape_str(cell.chunks)} with filters {cell.filters.spec!r} cannot be laid out: "
                           f"{one_line(exc)}") from None


def check_run_options(*, cell_timeout=None, time_budget=None, out=None, work_dir=None, executor="local", scheduler=None) -> None:
    """The options `ccp run` takes beside the sweep file, checked before anything is written."""
    if executor not in EXECUTORS:
        raise CcpError(f"--executor: unknown executor {executor!r}; use local or dask")
    if executor == "dask" and not scheduler:
        raise CcpError("--executor dask needs --scheduler tcp://HOST:PORT")
    if cell_timeout is not None and (isinstance(cell_timeout, bool) or not isinstance(cell_timeout, (int, float))
                                     or not math.isfinite(cell_timeout) or cell_timeout <= 0):
        raise CcpError(f"--cell-timeout: must be a positive number of seconds, got {cell_timeout!r}")
    if time_budget is not None and (not math.isfinite(time_budget) or time_budget <= 0):
        raise CcpError(f"--time-budget: must be a positive duration, got {time_budget!r}")
    for name, value in (("--out", out), ("--work", work_dir)):
        if value is not None and (str(value).strip() == "" or "\0" in str(value)):
            raise CcpError(f"{name}: expected a folder name, got {str(value)!r}")
        if value is not None and Path(value).exists() and not Path(value).is_dir():
            raise CcpError(f"{name} {value}: is a file, not a folder")


def run_settings(sweep: Sweep, *, quick: bool, scale: float | None) -> dict:
    """How cells are measured: cells measured with different settings never share a run folder."""
    g = sweep.dataset.generate
    return {"quick": bool(quick), "repeats": sweep.repeats, "cold": sweep.cold, "time_budget": sweep.time_budget,
            "scale": scale if scale not in (None, 1) else None, "dataset_path": sweep.dataset.path,
            "data": g.data if g else None, "fillvalue": g.fillvalue if g else None,
            "maxshape": list(g.maxshape) if g and g.maxshape else None}


def scale_warnings(sweep_path, scale) -> list[str]:
    """What ``--scale`` changes in the experiment's meaning (see :func:`ccp.workload.scale.scale_effects`)."""
    if scale is None or scale == 1:
        return []
    from ccp.workload.scale import scale_effects

    return scale_effects(sweep_path, scale)


def request_count(access, shape) -> int:
    """Requests of one pass, without building the plan (a huge sweep is refused, not allocated)."""
    if access.random:
        return int(access.random)
    return math.prod(-(-s // b) for s, b in zip(shape, access.block))


def _ops_per_request(cell: Cell, shape) -> int:
    """File operations one request may make when nothing is cached: chunks it touches, or contiguous runs."""
    block = cell.access.block
    if cell.chunks is not None:
        return int(np.prod([-(-b // c) + (1 if b % c else 0) for b, c in zip(block, cell.chunks)], dtype=np.float64))
    runs = 1
    for d in range(len(shape) - 1):            # a contiguous block is one run per row of its non-full tail
        if tuple(block[d + 1:]) != tuple(shape[d + 1:]):
            runs *= block[d]
    return runs


def disk_needed(sweep: Sweep, source: DatasetInfo, cells: list[Cell], work_dir: Path) -> int:
    """Bytes the work folder needs at most at once: missing work files, one cell's pass files and I/O log.

    Work files are counted uncompressed (an upper bound); write and copy cells keep at most two pass
    files at once; the counted pass's log is about 100 bytes per file operation (one cell's log is
    deleted before the next cell starts).
    """
    from ccp.workload.files import layout_path

    logical = int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize
    layouts = {(c.chunks, c.filters) for c in cells if c.access.op == "read" and not c.from_source}
    if any(c.access.op == "copy" for c in cells) and sweep.dataset.file is None:
        layouts.add((source.chunks, source.filters))
    missing = sum(1 for ch, f in layouts if not layout_path(work_dir, sweep, source, ch, f).exists())
    writes = any(c.access.op in ("write", "copy") for c in cells)
    io_log = max((LOG_LINE_BYTES * (request_count(c.access, source.shape) * _ops_per_request(c, source.shape) + 1000)
                  for c in cells), default=0)
    return missing * logical + (2 * logical if writes else 0) + io_log


def out_needed(sweep: Sweep, source: DatasetInfo, cells: list[Cell], quick: bool) -> int:
    """Bytes the run folder needs: per cell its request rows (every pass) and its file operations in io.parquet (capped)."""
    from ccp.measurement.runner import IO_ROWS_MAX

    passes = sweep.repeats + (0 if quick else 2)     # a full run: the counted pass and a warm cell's warm-up
    total = 0
    for c in cells:
        n = request_count(c.access, source.shape)
        total += PART_ROW_BYTES * (passes * (n + 2) + (0 if quick else min(IO_ROWS_MAX, n * _ops_per_request(c, source.shape) + 100)))
    return total
