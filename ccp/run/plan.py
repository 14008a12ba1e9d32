"""`ccp plan`: the engine's dry run. Every cell `ccp run` would run, with the model's predictions and a
calibrated time, from the same checks and the same work files; nothing is measured."""

from __future__ import annotations

from pathlib import Path

from ccp.predict import calibrate, predict_cell, stored_chunk_sizes, traps
from ccp.run.checks import prepare
from ccp.store.row import cell_columns
from ccp.workload.files import layout_path


def plan_sweep(sweep_path, work_dir: Path | None = None) -> list[dict]:
    """Every cell that `ccp run` would run, with the model's predictions and a calibrated time. No measurement."""
    sweep, source, cells = prepare(sweep_path)
    s3 = sweep.storage.s3 if any(c.storage.remote for c in cells) else None
    if s3 is not None and not s3.local:      # an endpoint that cannot be used: the run's one line, before any work
        from ccp.storage.remote import preflight

        preflight(s3)
    cal = calibrate([c.filters for c in cells], source.dtype, sweep.dataset.generate.data if sweep.dataset.generate else "normal",
                    work_dir)
    rows = []
    for cell in cells:
        stored = None
        if cell.access.op == "read":
            if cell.from_source:
                stored = stored_chunk_sizes(sweep.dataset.file, sweep.dataset.path)
            elif work_dir is not None:
                f = layout_path(work_dir, sweep, source, cell.chunks, cell.filters)
                stored = stored_chunk_sizes(f, sweep.dataset.path) if f.exists() else None
        p = predict_cell(cell, source, cal, stored)
        rows.append({
            **{k: v for k, v in cell_columns(cell).items() if k != "schema_version"},   # named as in cells.csv
            "requests": p["predicted_requests"], "raw_reads": p["predicted_raw_reads"],
            "raw_read_bytes": p["predicted_raw_read_bytes"], "raw_writes": p["predicted_raw_writes"],
            "raw_write_bytes": p["predicted_raw_write_bytes"], "chunk_loads": p["predicted_chunk_loads"],
            "time_s": p["predicted_time_s"] * sweep.repeats, "traps": traps(cell, source),
            "bytes_exact": stored is not None or cell.filters.is_none,
            "storage_label": cell.storage.label(),     # what differs from a local cell (S3 GETs are predicted by ccp run)
        })
    return rows
