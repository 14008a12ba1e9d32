"""`ccp plan`: the engine's dry run. Every cell `ccp run` would run, with the model's predictions and a
calibrated time, from the same checks and the same work files; nothing is measured."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ccp.predict import calibrate, predict_cell, stored_chunk_sizes, traps
from ccp.run.checks import prepare
from ccp.store.row import cell_columns
from ccp.workload.files import layout_path

# the model's pace through requests (ccp.model's compiled kernels, predictions included): 1.2 M requests in
# 0.58 s (tiled) and 0.69 s (random) of CPU time on the 2-core development machine; 1 M/s leaves room
PLAN_REQUESTS_PER_SECOND = 1_000_000
# below this many seconds `ccp plan` says nothing before it prints
PLAN_QUIET_SECONDS = 3.0


def long_plan_message(requests: int) -> str:
    """What `ccp plan` says before a long prediction ('' when it will be quick): its expected duration."""
    from ccp.units import format_count, format_seconds

    seconds = requests / PLAN_REQUESTS_PER_SECOND
    if seconds < PLAN_QUIET_SECONDS:
        return ""
    return f"ccp plan: predicting {format_count(requests)} requests one by one; about {format_seconds(seconds)}"


@dataclass(frozen=True)
class PlannedCell:
    """One cell of `ccp plan`: the cell's parameters named as in cells.csv, and what the model predicts for its
    timed passes (not a result row: nothing here was measured). ``as_dict`` is the ``--json`` record."""

    parameters: dict[str, Any]     # cells.csv's parameter columns (cell_id, chunks, filters, cache_*, op, ...)
    requests: int
    raw_reads: int
    raw_read_bytes: int
    raw_writes: int
    raw_write_bytes: int
    chunk_loads: int
    time_s: float                  # predicted seconds for the cell's timed passes (repeats x one pass)
    traps: tuple[str, ...]
    bytes_exact: bool              # byte counts from the stored chunk index (or unfiltered), not estimated
    storage_label: str             # what differs from a local cell ("" for one)

    def as_dict(self) -> dict[str, Any]:
        # shallow on purpose: every field is a plain value (dataclasses.asdict deep-copies: 1 s per 1,000 cells)
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "parameters"}
        return {**self.parameters, **out, "traps": list(self.traps)}


def plan_sweep(sweep_path, work_dir: Path | None = None, prepared=None) -> list[PlannedCell]:
    """Every cell that `ccp run` would run, with the model's predictions and a calibrated time. No measurement.

    ``prepared``: what ``prepare(sweep_path)`` returned, when the caller has it already (`ccp plan` counts the
    requests first); else the sweep is loaded and checked here."""
    sweep, source, cells = prepared if prepared is not None else prepare(sweep_path)
    s3 = sweep.storage.s3 if any(c.storage.remote for c in cells) else None
    if s3 is not None and not s3.local:      # an endpoint that cannot be used: the run's one line, before any work
        from ccp.remote.sweep_cell import preflight

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
        rows.append(PlannedCell(
            parameters={k: v for k, v in cell_columns(cell).items() if k != "schema_version"},
            requests=p["predicted_requests"], raw_reads=p["predicted_raw_reads"],
            raw_read_bytes=p["predicted_raw_read_bytes"], raw_writes=p["predicted_raw_writes"],
            raw_write_bytes=p["predicted_raw_write_bytes"], chunk_loads=p["predicted_chunk_loads"],
            time_s=p["predicted_time_s"] * sweep.repeats, traps=tuple(traps(cell, source)),
            bytes_exact=stored is not None or cell.filters.is_none,
            storage_label=cell.storage.label(),     # S3 GETs are predicted by ccp run, not here
        ))
    return rows
