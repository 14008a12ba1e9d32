"""Run cells on a Dask distributed cluster: one benchmark at a time per worker, results to the client.

Workers need ccp installed and the work folder's path valid on them (a shared filesystem, or each
worker makes the layout files it needs: they are deterministic, named by layout). Each task makes the
cell's job as the local executors do, predicts it with the client's calibration (the work file's chunk
index is on the worker), measures it and returns the row and tables; the client commits them to the
run folder as they arrive.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ccp.config.sweep import Sweep
from ccp.errors import CcpError
from ccp.hdf5.dataset import DatasetInfo
from ccp.matrix.cells import Cell
from ccp.measurement.runner import measure
from ccp.predict import Calibration
from ccp.run.executors import Executor, SweepContext, predicted_columns
from ccp.run.job import failed_row, job_for
from ccp.store.row import CellRow


def dask_cell(sweep: Sweep, source: DatasetInfo, cell: Cell, work_dir: str, quick: bool,
              calibration: Calibration | None = None):
    """Runs on a Dask worker: lay out the file if needed, predict, measure, hand back (row, requests, io)."""
    try:
        if cell.storage.remote:      # the worker's own S3 session (an endpoint it reaches; `s3: local` is refused)
            from ccp.remote.sweep_cell import remote_session

            with remote_session(sweep.storage.s3) as s3:
                job = job_for(cell, sweep, source, Path(work_dir), quick, s3)
        else:
            job = job_for(cell, sweep, source, Path(work_dir), quick)
    except (CcpError, MemoryError) as exc:
        return failed_row(cell, str(exc) or type(exc).__name__), None, None
    predicted, job = predicted_columns(job, calibration)
    scratch = Path(work_dir) / "tmp" / f"{cell.cell_id}-{os.getpid()}"
    try:
        row, req, io = measure(job, scratch)
    except (CcpError, MemoryError) as exc:
        row, req, io = failed_row(cell, str(exc) or type(exc).__name__), None, None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row.with_columns(**predicted), req, io


def parse_resources(text: str | None) -> dict:
    """'benchmark=1,gpu=2' -> {'benchmark': 1.0, 'gpu': 2.0}."""
    out = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = float(value) if sep else 1.0
        except ValueError:
            raise CcpError(f"--resources: expected NAME=NUMBER[,NAME=NUMBER], got {text!r}") from None
    return out


class DaskExecutor(Executor):
    """Every cell submitted at once to a Dask scheduler (an address, or a ``distributed.Client`` already made)."""

    name = "dask"

    def __init__(self, scheduler, resources: dict | None = None):
        if not scheduler:
            raise CcpError("--executor dask needs --scheduler tcp://HOST:PORT")
        self.scheduler = scheduler
        self.resources = resources or {}

    def _client(self):
        try:
            from distributed import Client
        except ImportError:
            raise CcpError("--executor dask needs the dask extra: pip install 'ccp[dask]'") from None
        if not isinstance(self.scheduler, str):
            return self.scheduler
        try:
            return Client(self.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise CcpError(f"--scheduler {self.scheduler}: cannot connect ({exc})") from None

    def run(self, todo: list[Cell], ctx: SweepContext) -> Iterator[tuple[Cell, CellRow]]:
        """(cell, row) as cells finish on the cluster, in completion order; parts written here, on the client."""
        from distributed import as_completed

        client = self._client()
        own = isinstance(self.scheduler, str)
        try:
            futures = {}
            for cell in todo:
                fut = client.submit(dask_cell, ctx.sweep, ctx.source, cell, str(Path(ctx.work_dir).resolve()), ctx.quick,
                                    ctx.calibration, resources=self.resources or None, pure=False,
                                    key=f"ccp-{cell.cell_id}-{os.getpid()}")
                futures[fut] = cell
            for fut in as_completed(futures):
                cell = futures[fut]
                try:
                    row, req, io = fut.result()
                except Exception as exc:  # a worker that died or raised: that cell failed, the sweep goes on
                    row, req, io = failed_row(cell, f"{type(exc).__name__}: {exc}"), None, None
                if req is not None or io is not None:
                    ctx.store.write_parts(cell.cell_id, req, io)
                yield cell, row
        finally:
            if own:
                client.close()
