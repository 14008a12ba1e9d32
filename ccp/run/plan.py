"""`ccp plan`: the engine's dry run. Every cell `ccp run` would run, with the model's predictions and a
calibrated time, from the same checks and the same work files; nothing is measured."""

from __future__ import annotations

from pathlib import Path

from ccp.predict import calibrate, predict_cell, stored_chunk_sizes, traps
from ccp.run.checks import prepare
from ccp.units import shape_str
from ccp.workload.files import layout_path


def plan_sweep(sweep_path, work_dir: Path | None = None) -> list[dict]:
    """Every cell that `ccp run` would run, with the model's predictions and a calibrated time. No measurement."""
    sweep, source, cells = prepare(sweep_path)
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
            "cell_id": cell.cell_id, "chunks": shape_str(cell.chunks), "filters": cell.filters.spec,
            "cache_nbytes": cell.cache.nbytes, "cache_nslots": cell.cache.nslots, "cache_w0": cell.cache.w0,
            "op": cell.access.op, "block": shape_str(cell.access.block), "order": cell.access.order_str,
            "random": cell.access.random, "client": cell.client, "requests": p["predicted_requests"], "raw_reads": p["predicted_raw_reads"],
            "raw_read_bytes": p["predicted_raw_read_bytes"], "raw_writes": p["predicted_raw_writes"],
            "raw_write_bytes": p["predicted_raw_write_bytes"], "chunk_loads": p["predicted_chunk_loads"],
            "time_s": p["predicted_time_s"] * sweep.repeats, "traps": traps(cell, source),
            "bytes_exact": stored is not None or cell.filters.is_none,
        })
    return rows
