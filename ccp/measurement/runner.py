"""Measure one cell: timed passes with the default (sec2) driver, then one counted pass (log driver).

The hot loop uses h5py's low-level API with a selection and memory buffers prepared in advance,
so the tool adds well under a microsecond per request to what HDF5 itself costs.
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.hdf5 import plists
from ccp.measurement import iolog
from ccp.measurement.extrapolate import extrapolate, model_of
from ccp.measurement.pagecache import drop_file
from ccp.measurement.passes import (
    CellJob,
    MachineClock,
    PassMachine,
    PassTiming,
    Progress,
    buffers,
    create_timed,
    open_timed,
    part_end,
    selections,
    spin_to_next_us,
    target,
    timed_close,
    types_of,
)
from ccp.measurement.remote import file_fcpl, open_for_read, remote_read_pass
from ccp.remote.sweep_cell import request_columns
from ccp.store.row import CellRow
from ccp.store.schema import COUNTED_PASS, REQUEST_COLUMNS, SCHEMA_VERSION, WARMUP_PASS, contended, stability_flags
from ccp.units import shape_str
from ccp.workload.requestplan import Hyperslabs

IO_ROWS_MAX = 2_000_000    # file-level operations kept per cell in io.parquet (counts are always exact)


def _log_fapl(log_path: Path | None):
    """The log driver's access list for a counted pass, which its caller always gives a log file."""
    if log_path is None:
        raise ValueError("a counted pass needs a log file")
    return iolog.log_fapl(log_path)


# The per-request bookkeeping below is written out in each loop rather than called: it runs on the
# hot path, between timed calls.
def read_pass(job: CellJob, starts, counts, *, counted: bool, log_path: Path | None, progress: Progress,
              deadline_ns: int | None = None, reopen_before=(), hyperslabs: Hyperslabs | None = None) -> PassTiming:
    """One pass of read requests. ``reopen_before`` (a replay): close and reopen the dataset before those
    requests, inside their timed call, as the traced program lost its chunk cache there. ``hyperslabs``: the
    requests' strides and blocks (a replay's strided calls, each one ``H5Dread`` as the program made it)."""
    from h5py import h5d

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    cache = job.cell.cache
    fapl = _log_fapl(log_path) if counted else None
    mtype, dtype, reclaim = types_of(job.source)
    args, shapes = selections(starts, counts, hyperslabs)
    bufs = buffers(shapes, dtype, None if dtype is not None else mtype)
    n = len(starts)
    req = np.zeros(n, dtype=np.int64)
    windows = []
    file, dataset_path = target(job)
    fid = open_for_read(job, file, fapl)         # with the cell's page buffer, if any
    try:
        ds, dapl, t0, t1, part0 = open_timed(fid, dataset_path, cache, clock)
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.get_access_plist().get_chunk_cache()
        fspace = ds.get_space()
        reopen = frozenset(int(r) for r in reopen_before)
        for i in range(n):
            mspace, arr = bufs[shapes[i]]
            fspace.select_hyperslab(*((starts[i], counts[i]) if args is None else args[i]))
            if counted:
                spin_to_next_us(t1)
            again = i in reopen          # decided outside the timed call
            t0 = clock()
            if again:
                ds.close()
                ds = h5d.open(fid, dataset_path.encode(), dapl)
            ds.read(mspace, fspace, arr, mtype)
            t1 = clock()
            req[i] = t1 - t0
            if counted:
                windows.append((t0, t1))
            if reclaim is not None:      # vlen data: free what the read allocated, outside the timed call
                reclaim(mspace, arr)
            if not i & 1023:
                progress("counted pass" if counted else "timed pass", i, n)
            if deadline_ns is not None and t1 > deadline_ns:   # time budget: stop here, a measured prefix
                req = req[:i + 1]
                break
        close_ns = timed_close(ds, clock, counted, t1, windows)
        part = part_end(part0)
    finally:
        fid.close()
    return PassTiming(open_ns, req, close_ns, windows, effective, **part)


def write_pass(job: CellJob, data, starts, counts, out_file: Path, *, counted: bool, log_path: Path | None,
               progress: Progress, src_log: Path | None = None, deadline_ns: int | None = None,
               hyperslabs: Hyperslabs | None = None) -> tuple[PassTiming, int]:
    """Create the dataset empty in the cell's layout, write every block, close it. Returns (timing, storage).

    A copy cell (``data`` is None) reads each block from the stored dataset (``job.file``) inside the
    timed request, as h5repack does; its counted pass logs the source file to ``src_log``. ``hyperslabs``: a
    replay's strided writes, each one ``H5Dwrite`` of the elements it selects.
    """
    from h5py import h5d, h5f, h5p, h5s

    from ccp.hdf5.h5types import memory_buffer

    clock = time.monotonic_ns if counted else time.perf_counter_ns
    cell, source = job.cell, job.source
    fapl = _log_fapl(log_path) if counted else h5p.create(h5p.FILE_ACCESS)
    mtype, dtype, reclaim = types_of(source)
    release = getattr(data, "release", None)
    args, shapes = selections(starts, counts, hyperslabs)
    spaces = {c: h5s.create_simple(c) for c in {tuple(int(x) for x in row) for row in shapes}}
    n = len(starts)
    req = np.zeros(n, dtype=np.int64)
    windows = []
    copying = data is None
    if copying:
        src_file, src_path = target(job)
        src_fid = h5f.open(src_file.encode(), h5f.ACC_RDONLY, _log_fapl(src_log) if counted else None)
        src_dapl = plists.cache_dapl(cell.cache)
        src = h5d.open(src_fid, src_path.encode(), src_dapl)
        src_space = src.get_space()
        bufs = {c: np.empty(c, dtype=dtype) if dtype is not None else memory_buffer(c, mtype) for c in spaces}
    fid = h5f.create(str(out_file).encode(), h5f.ACC_TRUNC, fapl=fapl, fcpl=file_fcpl(job))   # the cell's file_space
    try:
        ds, t0, t1, part0 = create_timed(fid, job, clock)
        open_ns = t1 - t0
        windows.append((t0, t1))
        effective = ds.get_access_plist().get_chunk_cache()
        fspace = ds.get_space()
        for i in range(n):
            start, count, shape = starts[i], counts[i], shapes[i]
            sel = (start, count) if args is None else args[i]
            fspace.select_hyperslab(*sel)
            if copying:
                block = bufs[shape]
                src_space.select_hyperslab(*sel)
                if counted:
                    spin_to_next_us(t1)
                t0 = clock()
                src.read(spaces[shape], src_space, block, mtype)
                ds.write(spaces[shape], fspace, block, mtype)
                t1 = clock()
                if reclaim is not None:
                    reclaim(spaces[shape], block)
            else:
                box = data.read(start, count)            # generated outside the timed call
                # strided: the elements it selects (vlen records share the box's data, freed with it)
                block = box if hyperslabs is None or shape == count else hyperslabs.pick(i, box)
                if counted:
                    spin_to_next_us(t1)
                t0 = clock()
                ds.write(spaces[shape], fspace, block, mtype)
                t1 = clock()
                if release is not None:
                    release(spaces[count] if count in spaces else h5s.create_simple(count), box)
            req[i] = t1 - t0
            if counted:
                windows.append((t0, t1))
            if not i & 1023:
                progress("counted pass" if counted else "timed pass", i, n)
            if deadline_ns is not None and t1 > deadline_ns:   # time budget: stop here, a measured prefix
                req = req[:i + 1]
                break
        storage = ds.get_storage_size()
        close_ns = timed_close(ds, clock, counted, t1, windows)   # flushes the chunk cache: the last request
        part = part_end(part0)
    finally:
        fid.close()
        if copying:
            src.close()
            src_fid.close()
    return PassTiming(open_ns, req, close_ns, windows, effective, **part), storage


def _request_rows(cell_id: str, pass_no: int, timing: PassTiming, starts) -> dict:
    n = len(timing.request_ns)
    phases = ["open"] + ["request"] * n + ["close"]
    return {
        "cell_id": [cell_id] * (n + 2),
        "pass": [pass_no] * (n + 2),
        "phase": phases,
        "request": [-1] + list(range(n)) + [n],
        "start": [""] + [shape_str(s) if len(s) else "" for s in starts[:n]] + [""],
        "time_s": np.concatenate([[timing.open_ns], timing.request_ns, [timing.close_ns]]) / 1e9,
    }


def client_loops(job: CellJob):
    """(read_pass, write_pass, flags) of the cell's client; the native loop falls back, flagged, where it cannot run."""
    client = getattr(job.cell, "client", "h5py-lowlevel")
    if job.remote is not None:       # S3: the low-level loop marks the GETs between requests; the native loop cannot
        return remote_read_pass, write_pass, ([] if client == "h5py-lowlevel" else ["s3-lowlevel"])
    if client == "h5py":
        from ccp.measurement import highlevel
        return highlevel.read_pass, highlevel.write_pass, []
    if client == "native":
        from ccp.measurement import native
        if getattr(job.source, "filetype", None) is not None:      # raw records of a non-numeric type
            return read_pass, write_pass, ["native-unavailable"]
        if native.available() is None:
            return native.read_pass, native.write_pass, []
        return read_pass, write_pass, ["native-unavailable"]
    return read_pass, write_pass, []


def measure(job: CellJob, scratch: Path, progress: Progress | None = None) -> tuple[CellRow, pd.DataFrame, pd.DataFrame | None]:
    """Run a cell: its timed passes, its counted pass, then its row. Returns (row, requests table, io table or None)."""
    from ccp.measurement.allocator import steady
    from ccp.workload.requests import plan_for

    steady()             # the same allocator in every run, whatever this process's parent allocated (breaker14 E1)
    progress = progress or Progress()
    cell = job.cell
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t_cell = time.perf_counter()
    plan = plan_for(cell.access, job.source.shape, strided=True)    # a strided call is one request, as made
    loops = _loops(job, plan)
    starts = [tuple(int(x) for x in s) for s in plan.starts]
    counts = [tuple(int(x) for x in c) for c in plan.counts]
    if job.max_requests is not None:
        starts, counts = starts[:job.max_requests], counts[:job.max_requests]
    n_full = len(starts)
    data = _data_source(job) if cell.access.op == "write" else None
    scratch = Path(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    remote = job.remote.open() if job.remote is not None else None     # this process's S3 client
    try:
        if remote is not None:
            loops = replace(loops, read=partial(loops.read, remote=remote))
        passes = timed_passes(job, loops, data, starts, counts, scratch, progress)
    finally:
        if remote is not None:
            remote.store.close()
    all_starts = starts                        # each pass's rows name its own requests (a warm-up's may be more)
    starts = starts[:passes.measured]          # over budget: the counted pass measures the same prefix
    counts = counts[:passes.measured]
    counted = None
    if job.counted_pass and remote is None:
        counted = measure_counted_pass(job, loops, data, starts, counts, scratch, progress)
    req_df = request_table(cell.cell_id, passes.timings, counted, all_starts, passes.machine, passes.warmup)
    row = cell_row(job, passes, counted, n_full, loops.flags, started)
    if remote is not None:
        row = with_http(row, passes.timings, remote.page_buffer_effective)
    return row.with_columns(elapsed_s=time.perf_counter() - t_cell), req_df, counted.io if counted else None


@dataclass(frozen=True)
class Loops:
    """The cell's client's read and write loops, and the flags that say where they fell back."""

    read: Callable
    write: Callable
    flags: tuple[str, ...]


def _loops(job: CellJob, plan) -> Loops:
    client = job.cell.client
    read_loop, write_loop, flags = client_loops(job)
    reopen_before = tuple(int(r) for r in plan.reopen_before) if plan.reopen_before is not None else ()
    if reopen_before and job.cell.access.op == "read":   # a replay that lost its cache: the low-level loop reopens
        if client != "h5py-lowlevel":
            flags = [*flags, "reopens-lowlevel"]
        read_loop = partial(remote_read_pass if job.remote is not None else read_pass, reopen_before=reopen_before)
    elif reopen_before:
        flags = [*flags, "reopens-ignored"]
    if plan.strides is not None and plan.blocks is not None:    # every client reads a strided call as one call
        hyperslabs = Hyperslabs.of(plan.counts, plan.strides, plan.blocks)
        read_loop, write_loop = partial(read_loop, hyperslabs=hyperslabs), partial(write_loop, hyperslabs=hyperslabs)
    return Loops(read_loop, write_loop, tuple(flags))


@dataclass(frozen=True)
class TimedPasses:
    timings: list[PassTiming]
    measured: int                  # requests each pass measured (fewer than planned when over the time budget)
    storage: int | None            # write and copy cells: the last pass's dataset storage and file size
    file_bytes: int | None
    machine: tuple[PassMachine, ...] = ()   # per pass: wall, process CPU, load, CPUs
    warmup: tuple[PassTiming, PassMachine] | None = None   # the warm-up pass (warms_up): not one of the timings


def warms_up(job: CellJob) -> bool:
    """Whether the cell makes a warm-up pass before its timed ones: a full run's (``job.warmup``) warm local cell. A
    first warm pass also pays for first touches (buffers, code paths, the file's pages after the previous cell's
    counted pass): the slowest of five in 34 of 48 cells, 1.54x the others' median (breaker10 B11). A cold pass drops
    the page cache before it (a warm-up would undo nothing it measures); an S3 cell's passes each open a new fsspec
    file, after the one-off setup of ccp.measurement.remote."""
    cold = job.cold and job.cell.access.op != "write"     # a write pass creates its file: never cold
    return job.warmup and not cold and job.remote is None


def timed_passes(job: CellJob, loops: Loops, data, starts, counts, scratch: Path, progress: Progress) -> TimedPasses:
    """The warm-up pass (warms_up) and the timed passes whose times are the cell's. The first pass made stops at the
    time budget, which counts the warm-up as a pass; the later ones follow its prefix."""
    cell = job.cell
    is_write = cell.access.op in ("write", "copy")     # both create the dataset in the cell's layout
    timings: list[PassTiming] = []
    storage = file_bytes = None
    warm_up = warms_up(job)
    per_pass_s = job.time_budget / (job.repeats + job.counted_pass + warm_up) if job.time_budget else None
    machine: list[PassMachine] = []
    warmup = None
    clock = MachineClock()
    passes = ([WARMUP_PASS] if warm_up else []) + list(range(job.repeats))

    def deadline(p: int) -> int | None:
        # taken after the page-cache drop: its fsync of a freshly written work file is no part of the pass
        # (a first pass once ran one request of 150 inside the budget that fsync had spent)
        # the warm-up stops at the budget too, but the first timed pass sets the prefix the later ones measure: the
        # warm-up is the slow pass it is made to absorb (breaker12 D2: its 8.5 ms first request cut every timed pass
        # of a 2 ms cell to 1 request of 256)
        return time.perf_counter_ns() + int(per_pass_s * 1e9) if per_pass_s and p in (passes[0], 0) else None

    for p in passes:
        said = progress if p != WARMUP_PASS else Progress(lambda _stage, i, n: progress("warm-up pass", i, n))
        if is_write:
            if job.cold and cell.access.op == "copy":
                drop_file(target(job)[0])
            out = scratch / (f"pass{p}.h5" if p != WARMUP_PASS else "warmup.h5")
            deadline_ns = deadline(p)
            clock.start()
            t, pass_storage = loops.write(job, data, starts, counts, out, counted=False, log_path=None, progress=said,
                                          deadline_ns=deadline_ns)
            state = clock.stop()
            if p != WARMUP_PASS:
                storage, file_bytes = pass_storage, out.stat().st_size
            if p != job.repeats - 1:
                out.unlink()
        else:
            if job.cold and job.remote is None:      # an S3 pass is cold by its new fsspec file
                drop_file(target(job)[0])
            deadline_ns = deadline(p)
            clock.start()
            t = loops.read(job, starts, counts, counted=False, log_path=None, progress=said, deadline_ns=deadline_ns)
            state = clock.stop()
        if p == WARMUP_PASS:
            warmup = (t, state)
        else:
            timings.append(t)
            machine.append(state)
        if p != WARMUP_PASS and len(t.request_ns) < len(starts):   # over budget: every later pass measures this prefix
            starts, counts = starts[:len(t.request_ns)], counts[:len(t.request_ns)]
    return TimedPasses(timings, len(starts), storage, file_bytes, tuple(machine), warmup)


@dataclass(frozen=True)
class CountedPass:
    """The counted pass: its timing, the file operations of each window, and the stored I/O table."""

    timing: PassTiming
    counts: dict                   # column -> per-window counts (file, open, requests..., close)
    whole: dict                    # column -> the pass's totals
    io: pd.DataFrame
    truncated: bool                # the stored table holds the first IO_ROWS_MAX operations only


def measure_counted_pass(job: CellJob, loops: Loops, data, starts, counts, scratch: Path, progress: Progress) -> CountedPass:
    """One more pass with HDF5's log driver: every file operation, attributed to the request that made it."""
    cell = job.cell
    log_path = scratch / "io.log"
    log_path.unlink(missing_ok=True)
    src_log = scratch / "source.log"
    if cell.access.op in ("write", "copy"):
        timing, _ = loops.write(job, data, starts, counts, scratch / "counted.h5", counted=True, log_path=log_path,
                                progress=progress, src_log=src_log)
        (scratch / "counted.h5").unlink(missing_ok=True)
    else:
        if job.cold:
            drop_file(target(job)[0])
        timing = loops.read(job, starts, counts, counted=True, log_path=log_path, progress=progress)
    ops = iolog.parse_log(log_path)
    if src_log.exists():           # a copy: the source file's reads belong to the same requests
        ops = iolog.merge(ops, iolog.parse_log(src_log))
        src_log.unlink()
    log_path.unlink(missing_ok=True)
    ws = np.array([w[0] for w in timing.windows], dtype=np.int64)
    we = np.array([w[1] for w in timing.windows], dtype=np.int64)
    owner = iolog.attribute(ops, ws, we)
    io_counts = iolog.count_by_window(ops, owner, len(timing.windows))
    nreq = len(starts)
    phase_of = np.array(["file", "open"] + ["request"] * nreq + ["close"], dtype=object)
    req_of = np.concatenate([[-1, -1], np.arange(nreq), [nreq]])
    keep = slice(0, IO_ROWS_MAX)      # counts above are exact; the stored table is capped
    io_df = pd.DataFrame({
        "schema_version": SCHEMA_VERSION, "cell_id": cell.cell_id, "seq": np.arange(len(ops))[keep],
        "phase": phase_of[owner[keep] + 1], "request": req_of[owner[keep] + 1],
        "kind": np.where(ops.is_write[keep], "write", "read"), "mem_type": ops.mem_type[keep],
        "offset": ops.offset[keep], "size": ops.size[keep],
        "t_s": (ops.t_us[keep] - (ws[0] // 1000 if len(ws) else 0)) / 1e6,
    })
    return CountedPass(timing, io_counts, iolog.totals(ops), io_df, len(ops) > IO_ROWS_MAX)


def request_table(cell_id: str, timings: list[PassTiming], counted: CountedPass | None, starts,
                  machine: tuple[PassMachine, ...] = (),
                  warmup: tuple[PassTiming, PassMachine] | None = None) -> pd.DataFrame:
    """The requests table: the warm-up pass if any (pass WARMUP_PASS), the timed passes (each one's machine state
    and its timed part's CPU time on its "open" row), then the counted pass with its I/O counts."""
    numbered = list(enumerate(timings))
    if warmup is not None:
        numbered.insert(0, (WARMUP_PASS, warmup[0]))
        machine = (warmup[1], *machine)
    timings = [t for _, t in numbered]
    parts = [_request_rows(cell_id, p, t, starts) for p, t in numbered]
    for part, m in zip(parts, machine):
        rows = len(part["phase"])
        part["pass_wall_s"] = [m.wall_s] + [np.nan] * (rows - 1)
        part["pass_cpu_s"] = [m.cpu_s] + [np.nan] * (rows - 1)
        part["pass_load"] = [m.load] + [np.nan] * (rows - 1)
        part["pass_pace_s"] = [m.pace_s] + [np.nan] * (rows - 1)
    for part, t in zip(parts, timings):
        pad = [np.nan] * (len(part["phase"]) - 1)
        part["timed_cpu_s"] = [t.cpu_ns / 1e9 if t.cpu_ns is not None else np.nan] + pad
        part["timed_run_delay_s"] = [t.run_delay_ns / 1e9 if t.run_delay_ns is not None else np.nan] + pad
        part["timed_wall_s"] = [t.span_ns / 1e9 if t.span_ns is not None else np.nan] + pad
    for part, t in zip(parts, timings):
        if t.http is not None:         # an S3 pass: the open's GETs, each request's, none at the close
            for k, v in request_columns(t.http).items():
                part[k] = [*v[:len(t.request_ns) + 1], 0]
    req_df = pd.concat([pd.DataFrame(part) for part in parts], ignore_index=True)
    if counted is not None:
        tr = pd.DataFrame(_request_rows(cell_id, COUNTED_PASS, counted.timing, starts))
        for k, v in counted.counts.items():
            tr[k] = v
        req_df = pd.concat([req_df, tr], ignore_index=True)
    req_df.insert(0, "schema_version", SCHEMA_VERSION)
    for k in REQUEST_COLUMNS[7:]:       # I/O counts: only the counted pass has them; same dtype in every part
        kind = "Float64" if k == "http_wait_s" or k.startswith(("timed_", "pass_")) else "Int64"
        req_df[k] = req_df[k].astype(kind) if k in req_df else pd.array([pd.NA] * len(req_df), dtype=kind)
    return req_df[REQUEST_COLUMNS]


def cell_row(job: CellJob, passes: TimedPasses, counted: CountedPass | None, n_full: int, client_flags, started: str) -> CellRow:
    """The cell's row from its passes: median time and spread, flags, sizes; a measured prefix extrapolated."""
    cell, source = job.cell, job.source
    timings, k = passes.timings, passes.measured
    is_write = cell.access.op in ("write", "copy")
    extrapolated = k < n_full
    whole = dict(counted.whole) if counted is not None else None
    classes = np.asarray(job.request_class if job.request_class is not None else np.zeros(n_full, np.int64))
    model = model_of(job, n_full) if extrapolated or (passes.warmup is not None and
                                                      len(passes.warmup[0].request_ns) < n_full) else None

    def pass_s(t: PassTiming) -> float:
        """A pass's time, its unmeasured requests extrapolated from its own prefix (k, or a warm-up's stopped at
        the budget before a whole timed pass)."""
        n = len(t.request_ns)
        if n >= n_full:
            return t.total_s
        return (t.open_ns + t.close_ns + extrapolate(classes, n, t.request_ns, model, "time_s")) / 1e9
    if extrapolated and counted is not None and whole is not None:
        for name in list(whole):
            per_req = counted.counts[name][1:k + 1]
            whole[name] = round(whole[name] - per_req.sum() + extrapolate(classes, k, per_req, model, name))
    totals = [pass_s(t) for t in timings]      # the cell's time: the timed passes, never the warm-up
    all_req = np.concatenate([t.request_ns for t in timings]) / 1e9 if k else np.array([0.0])
    chunk_bytes = int(np.prod(cell.chunks, dtype=np.int64)) * np.dtype(source.dtype).itemsize if cell.chunks else 0
    nchunks = int(np.prod([-(-s // c) for s, c in zip(source.shape, cell.chunks)], dtype=np.int64)) if cell.chunks else 0
    logical = int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize
    storage, file_bytes = passes.storage, passes.file_bytes
    if not is_write:
        storage, file_bytes = _storage_of(*target(job)), os.path.getsize(target(job)[0])
    time_s = statistics.median(totals)
    spread = max(totals) / min(totals) if min(totals) > 0 else float("nan")
    req_median = float(np.median(all_req))
    flags = list(client_flags) + stability_flags(job.repeats, spread, req_median)
    if job.max_requests is not None or extrapolated:
        flags.append("partial")
    if extrapolated and k == 1:
        flags.append("first-request-only")     # the rest estimated: by the model where it has one, else by the first
    if counted is not None and counted.truncated:
        flags.append("io-trace-truncated")     # a stored flag value: old run folders hold it, so it keeps its name
    state = machine_state(passes.machine, waits_for_io=(job.cold and cell.access.op != "write") or job.remote is not None)
    if state.pop("contended"):
        flags.append("contended")
    nslots, nbytes, w0 = timings[0].cache
    return CellRow.for_cell(
        cell, "extrapolated" if extrapolated else "ok",
        cache_nbytes=int(nbytes), cache_nslots=int(nslots), cache_w0=float(w0),
        requests=n_full, repeats=job.repeats, cold=job.cold and cell.access.op != "write",
        time_s=time_s, time_s_min=min(totals), time_s_max=max(totals),
        first_request_s=float(np.median([t.request_ns[0] for t in timings])) / 1e9 if k else float("nan"),
        request_s_median=req_median,
        open_s=float(np.median([t.open_ns for t in timings])) / 1e9,
        close_s=float(np.median([t.close_ns for t in timings])) / 1e9,
        chunk_bytes=chunk_bytes, nchunks=nchunks, file_bytes=file_bytes, storage_bytes=storage,
        logical_bytes=logical, compression_ratio=logical / storage if storage else float("nan"),
        repack_s=job.repack_s, spread=spread, flags=",".join(flags),
        fraction_measured=k / n_full if n_full else 1.0,
        dataset_file=job.file, host=socket.gethostname(), started_at=started,
        warmup_s=pass_s(passes.warmup[0]) if passes.warmup is not None else None, **state, **(whole or {}))


def machine_state(machine: tuple[PassMachine, ...], waits_for_io: bool) -> dict:
    """The row's machine columns from its passes, and whether any pass ran under contention (``waits_for_io``: a
    cold or S3 pass, whose time off the CPU is the I/O it measures, is judged by the load alone)."""
    if not machine:
        return {"contended": False}
    ratios = [m.cpu_ratio for m in machine]
    loads = [m.load for m in machine if np.isfinite(m.load)]
    return {"cpus": machine[0].cpus, "load_max": max(loads) if loads else None,
            "cpu_ratio": float(np.median(ratios)),
            "contended": any(contended(m.load, m.cpus, m.cpu_ratio, waits_for_io) for m in machine)}


def with_http(row: CellRow, timings: list[PassTiming], page_buffer_effective) -> CellRow:
    """An S3 cell's row with its measured HTTP columns (the first pass's counts, the median wait) and the
    ``http-counts-vary`` flag when passes made different GETs."""
    from ccp.measurement.remote import http_row_columns

    cols, flags = http_row_columns(timings, page_buffer_effective)
    if flags:
        cols["flags"] = ",".join([f for f in str(row.flags or "").split(",") if f] + flags)
    return row.with_columns(**cols)


def _storage_of(path: str, dset: str) -> int:
    from h5py import h5d, h5f

    fid = h5f.open(path.encode(), h5f.ACC_RDONLY)
    try:
        return h5d.open(fid, dset.encode()).get_storage_size()
    finally:
        fid.close()


def _data_source(job: CellJob):
    from ccp.workload.datagen import DatasetReader, Generator

    if job.generate is not None:
        return Generator(job.generate)
    import h5py

    src = job.source
    if getattr(src, "file", None) is not None and getattr(src, "path", None):
        f = h5py.File(src.file, "r")      # the object itself, links resolved; read-only, closed with the worker
        return DatasetReader(f[src.path], src)
    f = h5py.File(job.user_file, "r")
    return DatasetReader(f[job.dataset_path], src)

