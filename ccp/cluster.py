"""Run cells on a Dask distributed cluster: one benchmark at a time per worker, results to the client.

Workers need ccp installed and the work folder's path valid on them (a shared filesystem, or each
worker makes the layout files it needs: they are deterministic, named by layout). Each task returns
the cell's row and tables; the client commits them to the run folder as they arrive.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ccp.errors import CcpError


def _dask_cell(sweep, source, cell, work_dir: str, quick: bool):
    """Runs on a Dask worker: lay out the file if needed, measure, hand back the results."""
    from ccp.engine import _job_for, failed_row
    from ccp.measurement.runner import measure

    job = _job_for(cell, sweep, source, Path(work_dir), quick)
    scratch = Path(work_dir) / "tmp" / f"{cell.cell_id}-{os.getpid()}"
    try:
        return measure(job, scratch)
    except (CcpError, MemoryError) as exc:
        return failed_row(cell, str(exc) or type(exc).__name__), None, None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


def run_on_dask(todo, sweep, source, work_dir: Path, quick: bool, scheduler: str, resources: dict):
    """Yield (cell, row, requests, io) as cells finish on the cluster, in completion order."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CcpError("--executor dask needs the dask extra: pip install 'ccp[dask]'") from None
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise CcpError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
    with client:
        futures = {}
        for cell in todo:
            fut = client.submit(_dask_cell, sweep, source, cell, str(Path(work_dir).resolve()), quick,
                                resources=resources or None, pure=False, key=f"ccp-{cell.cell_id}-{os.getpid()}")
            futures[fut] = cell
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                row, req, io = fut.result()
            except Exception as exc:  # a worker that died or raised: that cell failed, the sweep goes on
                from ccp.engine import failed_row
                row, req, io = failed_row(cell, f"{type(exc).__name__}: {exc}"), None, None
            yield cell, row, req, io
