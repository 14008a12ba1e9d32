"""The sweep engine: config -> matrix -> workload -> measurement -> store, one cell at a time.

Each cell runs in a forked worker process: a crash in a filter plugin, a MemoryError or a kill costs
that cell only (recorded ``failed: reason``); a per-cell timeout does the same. Finished cells are
committed as they finish, and a rerun with the same ``--out`` skips them.
"""

from __future__ import annotations

import faulthandler
import math
import multiprocessing
import os
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ccp.config.sweep import Sweep, sweep_as_dict
from ccp.errors import CcpError
from ccp.eta import EtaClock, predicted_seconds, progress_bar
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import Cell, expand
from ccp.measurement import env as envmod
from ccp.measurement.runner import CellJob, Progress, measure
from ccp.store.disk import check_free
from ccp.store.results import RunStore, new_run_dir
from ccp.store.schema import FINISHED, SCHEMA_VERSION
from ccp.store.workdir import WorkDir
from ccp.units import format_count, format_seconds, shape_str
from ccp.workload.files import ensure_layout_file, layout_path
from ccp.workload.sweep import load_sweep

FAULT_ENV = "CCP_FAULT_INJECT"   # tests: "CELL_ID:segv|memory|hang|fill-disk" makes that cell's worker misbehave


@dataclass
class RunSummary:
    run_dir: Path
    cells: int
    ran: int
    skipped: int
    failed: int
    report: Path | None = None


def prepare(sweep_path, scale: float | None = None):
    """Load, validate and expand a sweep: everything checked before anything is measured."""
    sweep = load_sweep(sweep_path, scale)
    try:
        source = describe_source(sweep.dataset)
    except CcpError:
        raise
    except Exception as exc:  # noqa: BLE001 -- a dataset h5py opens but cannot describe (a time type, no fill value)
        raise CcpError(f"dataset.path: {sweep.dataset.path!r} in {sweep.dataset.file}: ccp cannot measure it "
                       f"({_one_line(exc)})") from None
    if any(d == 0 for d in source.shape):
        raise CcpError(f"dataset.path: {sweep.dataset.path!r} has shape {tuple(source.shape)}: an empty dataset has nothing to read or write")
    cells = expand(sweep, source)
    check_layouts(cells, source)
    check_request_counts(sweep, cells, source)
    return sweep, source, cells


MAX_REQUESTS = 10**8     # a pass's plan is held in memory: 16 bytes per request and dimension


def check_request_counts(sweep, cells, source) -> None:
    for cell in cells:
        n = request_count(cell.access, source.shape)
        if n > MAX_REQUESTS:
            i = sweep.access.index(cell.access) if cell.access in sweep.access else 0
            raise CcpError(f"matrix.access[{i}].block: {shape_str(cell.access.block)} tiles {list(source.shape)} in {n:,} requests; "
                           f"ccp plans at most {MAX_REQUESTS:,} a pass (use a larger block, or random: N)")


def check_layouts(cells, source) -> None:
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
        except Exception as exc:  # noqa: BLE001 -- whatever HDF5 or a filter raises, named by layout
            raise CcpError(f"matrix: chunks {shape_str(cell.chunks)} with filters {cell.filters.spec!r} cannot be laid out: "
                           f"{_one_line(exc)}") from None


def _status_line(text: str, tty: bool, stream) -> None:
    if tty:
        width = shutil.get_terminal_size((100, 20)).columns
        stream.write("\r" + text[: width - 1].ljust(width - 1))
        stream.flush()


def check_run_options(*, cell_timeout=None, time_budget=None, out=None, work_dir=None, executor="local", scheduler=None) -> None:
    """The options `ccp run` takes beside the sweep file, checked before anything is written."""
    if executor not in ("local", "dask"):
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


class _Echo:
    """``echo`` that survives its reader leaving (`ccp run ... | head -2`): output ends, the sweep goes on."""

    def __init__(self, echo):
        self.echo = echo
        self.broken = False

    def __call__(self, *args, **kw):
        if self.broken:
            return
        try:
            self.echo(*args, **kw)
        except BrokenPipeError:
            self.broken = True
            try:        # later writes (and the interpreter's final flush) go nowhere instead of failing
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            except (OSError, ValueError, AttributeError):
                pass


def run_sweep(sweep_path, *, out: Path | None = None, quick: bool = False, results_root: Path = Path("results"),
              work_dir: Path | None = None, isolate: bool = True, cell_timeout: float | None = None,
              report: bool = True, echo=print, stream=None, executor: str = "local", scheduler: str | None = None,
              resources: dict | None = None, time_budget: float | None = None, scale: float | None = None,
              warn=None) -> RunSummary:
    stream = stream or sys.stderr
    tty = stream.isatty()
    echo = echo if isinstance(echo, _Echo) else _Echo(echo)
    warn = warn or echo
    check_run_options(cell_timeout=cell_timeout, time_budget=time_budget, out=out, work_dir=work_dir,
                      executor=executor, scheduler=scheduler)
    sweep, source, cells = prepare(sweep_path, scale)
    if quick:
        sweep = replace(sweep, repeats=1, cold=False)
    if time_budget is not None:
        sweep = replace(sweep, time_budget=time_budget)
    for line in scale_warnings(sweep_path, scale):
        warn(f"ccp: warning: {line}")
    run_dir = Path(out) if out else new_run_dir(results_root, sweep.name)
    work_dir = Path(work_dir) if work_dir else Path(results_root) / "work"
    store = RunStore(run_dir)
    doc = sweep_as_dict(sweep)
    doc["quick"] = quick
    doc["scale"] = scale
    settings = run_settings(sweep, quick=quick, scale=scale)
    store.check(sweep.name, source.identity, settings)          # before anything is written
    check_free(work_dir, _disk_needed(sweep, source, cells, work_dir), f"sweep {sweep.name!r} (its work files and traces)")
    check_free(run_dir, _out_needed(sweep, source, cells, quick), f"sweep {sweep.name!r} (its results)")
    store.lock()
    try:
        return _run_locked(sweep, source, cells, store, doc, settings, work_dir, quick=quick, isolate=isolate,
                           cell_timeout=cell_timeout, report=report, echo=echo, stream=stream, tty=tty,
                           executor=executor, scheduler=scheduler, resources=resources)
    finally:
        store.unlock()


def _run_locked(sweep, source, cells, store: RunStore, doc, settings, work_dir: Path, *, quick, isolate, cell_timeout,
                report, echo, stream, tty, executor, scheduler, resources) -> RunSummary:
    run_dir = store.dir
    store.open(doc, source.identity, settings)
    wd = WorkDir(work_dir)
    wd.scratch_root()
    wd.remove(wd.stale())           # scratch folders and partial files of killed workers
    store.write_env(envmod.collect(work_dir))
    done = store.done_ids()
    todo = [c for c in cells if c.cell_id not in done]
    echo(f"ccp run {sweep.name}: {len(cells)} cells ({len(cells) - len(todo)} already done), "
         f"{sweep.repeats} timed pass(es) each{', cold' if sweep.cold else ''}{'' if quick else ' + 1 traced pass'}; "
         f"results in {run_dir}")
    failed = 0
    from ccp.plan import traps
    calibration = _calibration([c.filters for c in cells], source, sweep, wd)

    def finished(cell, row):
        nonlocal failed
        row = without_prefix_counts(row)
        store.commit_row(row)
        ok = row["status"] in FINISHED
        failed += not ok
        extrap = row["status"] == "extrapolated"
        tags = []
        if extrap:
            tags.append(f"extrapolated from {row['fraction_measured']:.1%} of the requests")
        if quick:
            tags.append("quick: 1 warm pass")
        if doc.get("scale") not in (None, 1):
            tags.append(f"scaled x{doc['scale']:g}")
        if "unstable" in str(row.get("flags") or ""):
            tags.append("unstable")
        detail = (f"{format_seconds(row['time_s'])}" + (f" ({'; '.join(tags)})" if tags else "")
                  + (f", raw reads {format_count(row['raw_reads'])}" if row.get("raw_reads") is not None else "")
                  + (f" on {row['host']}" if executor == "dask" else "")
                  if ok else row["status"])
        echo(f"  {'extrap' if extrap else 'ok    ' if ok else 'FAILED'} {cell.label()}: {detail}")

    try:
        if executor == "dask":
            if not scheduler:
                raise CcpError("--executor dask needs --scheduler tcp://HOST:PORT")
            from ccp.cluster import run_on_dask
            for cell, row, req, io in run_on_dask(todo, sweep, source, work_dir, quick, scheduler, resources or {}):
                if row["status"] in FINISHED:
                    store.write_parts(cell.cell_id, req, io)
                finished(cell, {**row, "traps": " | ".join(traps(cell, source))})   # predictions: local runs only
        elif executor != "local":
            raise CcpError(f"--executor: unknown executor {executor!r}; use local or dask")
        eta_clock = EtaClock(predicted_seconds(todo if executor == "local" else [], source, calibration,
                                                sweep.repeats + (not quick)))
        for k, cell in enumerate(todo if executor == "local" else []):
            head = f"[{k + 1}/{len(todo)}]"
            label = cell.label()

            def on_progress(stage, i, n, head=head, k=k, label=label):
                bar = progress_bar(i / n if n else 1.0)     # what matters first: a narrow terminal cuts the label
                tail = eta_clock.describe(k)
                _status_line(f"{head} {bar} {format_count(i)}/{format_count(n)} req{tail} | {stage}: {label}", tty, stream)

            try:
                job = _job_for(cell, sweep, source, work_dir, quick)
            except Exception as exc:  # noqa: BLE001 -- a work file that cannot be made (a filter or layout
                # HDF5 refuses, a full disk) fails the cells that need it, not the sweep
                finished(cell, {**failed_row(cell, f"work file: {_one_line(exc)}"), "traps": " | ".join(traps(cell, source))})
                continue
            try:
                predicted, classes = predict(job, calibration, classes=job.time_budget is not None)
            except Exception as exc:  # noqa: BLE001 -- a prediction is an aside: it never stops a measurement
                predicted, classes = {}, None
                echo(f"  ccp: warning: no prediction for {cell.label()}: {_one_line(exc)}")
            job = replace(job, request_class=classes)
            eta_clock.start_cell(predicted.get("predicted_time_s"), sweep.repeats + (not quick))
            if isolate:
                row = _run_isolated(job, store, work_dir, on_progress, cell_timeout)
            else:
                row = _run_inline(job, store, work_dir, on_progress)
            if tty:
                _status_line("", tty, stream)
                stream.write("\r")
            eta_clock.cell_done(k, row.get("elapsed_s"))
            finished(cell, {**row, **predicted, "traps": " | ".join(traps(cell, source))})
    finally:
        store.finalize()     # also when interrupted: cells.parquet matches cells.csv
    summary = RunSummary(run_dir, len(cells), len(todo), len(cells) - len(todo), failed)
    if report:
        from ccp.report import write_report
        summary.report = write_report(run_dir)
    return summary


IO_COUNT_COLUMNS = ("raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes",
                    "meta_reads", "meta_read_bytes", "meta_writes", "meta_write_bytes")


def without_prefix_counts(row: dict) -> dict:
    """An extrapolated write or copy cell's I/O counts are blanked (flag ``io-prefix-only``).

    The runner extrapolates per-request counts, but a write pass does most of its raw writes when the
    dataset closes and the chunk cache is flushed; that flush is the measured prefix's (issue 17:
    raw_writes 1 instead of 10), so the counts would be smaller than the truth. Until the runner
    extrapolates the flush too, no count is better than a smaller one.
    """
    if row.get("status") != "extrapolated" or row.get("op") not in ("write", "copy"):
        return row
    flags = [f for f in str(row.get("flags") or "").split(",") if f] + ["io-prefix-only"]
    return {**row, **dict.fromkeys(IO_COUNT_COLUMNS), "flags": ",".join(flags)}


def _calibration(pipelines, source, sweep, wd: WorkDir):
    """The model's time calibration, or None: predictions are an aside and never stop a sweep.

    A filter read from the user's file that ccp cannot spell back (an unknown plugin's parameters,
    shown as ``id32001``) is left out: its predicted decode time is then 0.
    """
    from ccp.hdf5.filters import parse_filters
    from ccp.plan import calibrate

    usable = []
    for p in pipelines:
        try:
            parse_filters(p.spec)
        except CcpError:
            continue
        usable.append(p)
    data = sweep.dataset.generate.data if sweep.dataset.generate else "normal"
    try:
        return calibrate(usable, source.dtype, data, calibration_dir(wd))
    except CcpError:
        raise
    except (OSError, ValueError, RuntimeError) as exc:   # an HDF5 or filter error while calibrating
        print(f"ccp: warning: no time predictions (calibration failed: {_one_line(exc)})", file=sys.stderr)
        return None


def calibration_dir(wd: WorkDir) -> Path:
    """The work folder, with its calibration cache usable: one ccp left cut short (a full disk) is dropped.

    ccp.plan.calibrate writes calibration.json in place; a truncated one would fail every later run.
    A broken file that is not ccp's is the user's: refused with one line, never removed.
    """
    import json

    path = Path(wd.path) / "calibration.json"
    wd.register(path)
    if path.exists():
        try:
            json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            if "calibration.json" not in wd.entries():
                raise CcpError(f"{path}: not a calibration file ccp can read (and not one ccp wrote); move it or use another --work") from None
            path.unlink()
    return Path(wd.path)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, CcpError):
        return text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


LOG_LINE_BYTES = 100      # one line of HDF5's I/O log (offsets, size, memory type, timestamps)
PART_ROW_BYTES = 64       # one requests/io parquet row, uncompressed (an upper bound)


def _ops_per_request(cell, shape) -> int:
    """File operations one request may make when nothing is cached: chunks it touches, or contiguous runs."""
    block = cell.access.block
    if cell.chunks is not None:
        return int(np.prod([-(-b // c) + (1 if b % c else 0) for b, c in zip(block, cell.chunks)], dtype=np.float64))
    runs = 1
    for d in range(len(shape) - 1):            # a contiguous block is one run per row of its non-full tail
        if tuple(block[d + 1:]) != tuple(shape[d + 1:]):
            runs *= block[d]
    return runs


def request_count(access, shape) -> int:
    """Requests of one pass, without building the plan (a huge sweep is refused, not allocated)."""
    if access.random:
        return int(access.random)
    return math.prod(-(-s // b) for s, b in zip(shape, access.block))


def _requests(cell, source) -> int:
    return request_count(cell.access, source.shape)


def _disk_needed(sweep: Sweep, source, cells, work_dir: Path) -> int:
    """Bytes the work folder needs at most at once: missing work files, one cell's pass files and trace log.

    Work files are counted uncompressed (an upper bound); write and copy cells keep at most two pass
    files at once; the traced pass's log is about 100 bytes per file operation (one cell's log is
    deleted before the next cell starts).
    """
    from ccp.workload.files import layout_path

    logical = int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize
    layouts = {(c.chunks, c.filters) for c in cells if c.access.op == "read" and not c.from_source}
    if any(c.access.op == "copy" for c in cells) and sweep.dataset.file is None:
        layouts.add((source.chunks, source.filters))
    missing = sum(1 for ch, f in layouts if not layout_path(work_dir, sweep, source, ch, f).exists())
    writes = any(c.access.op in ("write", "copy") for c in cells)
    trace = max((LOG_LINE_BYTES * (_requests(c, source) * _ops_per_request(c, source.shape) + 1000) for c in cells), default=0)
    return missing * logical + (2 * logical if writes else 0) + trace


def _out_needed(sweep: Sweep, source, cells, quick: bool) -> int:
    """Bytes the run folder needs: per cell its request rows (every pass) and its I/O trace (capped)."""
    from ccp.measurement.runner import IO_TRACE_MAX

    passes = sweep.repeats + (0 if quick else 1)
    total = 0
    for c in cells:
        n = _requests(c, source)
        total += PART_ROW_BYTES * (passes * (n + 2) + (0 if quick else min(IO_TRACE_MAX, n * _ops_per_request(c, source.shape) + 100)))
    return total


def scale_warnings(sweep_path, scale) -> list[str]:
    """What ``--scale`` changes in the experiment's meaning (see :func:`ccp.config.scale.scale_effects`)."""
    if scale is None or scale == 1:
        return []
    from ccp.workload.scale import scale_effects

    return scale_effects(sweep_path, scale)


def _job_for(cell: Cell, sweep: Sweep, source, work_dir: Path, quick: bool) -> CellJob:
    repack_s = float("nan")
    if cell.access.op in ("write", "copy"):     # each pass writes a new file of about the dataset's size
        logical = int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize
        check_free(Path(work_dir) / "tmp", 2 * logical, f"a {cell.access.op} cell's pass files")
    if cell.access.op == "write":
        file = ""
    elif cell.access.op == "copy":         # copy from the dataset as stored into the cell's layout
        if sweep.dataset.file is not None:
            file = str(sweep.dataset.file)
        else:
            file = str(_work_file(work_dir, sweep, source, source.chunks, source.filters)[0])
    elif cell.from_source:
        file = str(sweep.dataset.file)
    else:
        path, seconds = _work_file(work_dir, sweep, source, cell.chunks, cell.filters)
        file = str(path)
        if sweep.dataset.file is not None:
            repack_s = seconds
    return CellJob(cell=cell, file=file, dataset_path=sweep.dataset.path, source=source,
                   generate=sweep.dataset.generate, user_file=str(sweep.dataset.file) if sweep.dataset.file else None,
                   repeats=sweep.repeats, cold=sweep.cold, trace=not quick, repack_s=repack_s,
                   time_budget=sweep.time_budget)


def _work_file(work_dir: Path, sweep, source, chunks, filters) -> tuple[Path, float]:
    """ensure_layout_file, with the file (and its .json) recorded as ccp's before it exists (for `ccp clean`)."""
    path = layout_path(work_dir, sweep, source, chunks, filters)
    wd = WorkDir(work_dir)
    wd.register(path)
    wd.register(path.with_name(path.name + ".json"))
    return ensure_layout_file(work_dir, sweep, source, chunks, filters)


def predict(job: CellJob, calibration, *, classes: bool = True) -> tuple[dict, object]:
    """The model's ``predicted_*`` columns for a cell and, with ``classes``, its per-request cost classes.

    The compiled model predicts every cell whole (10 M requests in about a second); per-request rows,
    56 bytes a request, are kept only when a time budget needs classes to extrapolate with.
    """
    from ccp.plan import predict_requests, stored_chunk_sizes, summarise_predictions

    cell = job.cell
    stored = None
    if job.file and cell.access.op == "read":
        stored = stored_chunk_sizes(job.file, job.dataset_path)
    preds = predict_requests(cell, job.source, stored, per_request=classes)
    return summarise_predictions(cell, job.source, preds, calibration), preds.classes() if classes else None


def failed_row(cell: Cell, reason: str) -> dict:
    return {"schema_version": SCHEMA_VERSION, "cell_id": cell.cell_id, "chunks": shape_str(cell.chunks),
            "filters": cell.filters.spec, "cache_nbytes": cell.cache.nbytes, "cache_nslots": cell.cache.nslots,
            "cache_w0": cell.cache.w0, "op": cell.access.op, "block": shape_str(cell.access.block),
            "order": cell.access.order_str, "random": cell.access.random, "client": cell.client,
            "status": f"failed: {reason}"}


def _inject_fault(cell_id: str, scratch: Path | None = None) -> None:
    spec = os.environ.get(FAULT_ENV, "")
    target, _, kind = spec.partition(":")
    if target != cell_id:
        return
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "memory":
        raise MemoryError("injected")
    elif kind == "hang":
        time.sleep(3600)
    elif kind == "fill-disk" and scratch is not None:   # the work folder's disk fills up during the cell
        scratch.mkdir(parents=True, exist_ok=True)
        with open(scratch / "ballast", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
            except OSError:
                pass


def _measure_and_store(job: CellJob, store: RunStore, work_dir: Path, progress: Progress) -> dict:
    scratch = Path(work_dir) / "tmp" / f"{job.cell.cell_id}-{os.getpid()}"
    try:
        _inject_fault(job.cell.cell_id, scratch)
        row, req_df, io_df = measure(job, scratch, progress)
        store.write_parts(job.cell.cell_id, req_df, io_df)
        return row
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_inline(job: CellJob, store: RunStore, work_dir: Path, on_progress) -> dict:
    try:
        return _measure_and_store(job, store, work_dir, Progress(on_progress))
    except CcpError as exc:
        return failed_row(job.cell, str(exc))
    except MemoryError:
        return failed_row(job.cell, "MemoryError")


PR_SET_PDEATHSIG = 1     # linux/prctl.h


def die_with_parent(parent_pid: int) -> None:
    """A worker whose `ccp run` is killed dies too, instead of writing into the run folder after it.

    Linux: prctl(PR_SET_PDEATHSIG, SIGKILL). The parent may have died before the call: then the
    worker's parent is no longer ``parent_pid`` and it exits at once. Elsewhere a thread polls.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        ok = False
    if os.getppid() != parent_pid:
        os._exit(1)
    if not ok:
        import threading

        def watch():
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)
        threading.Thread(target=watch, daemon=True).start()


def _worker(job: CellJob, store: RunStore, work_dir: Path, conn, parent_pid: int) -> None:
    """Child process: measure, write the parts, send the row (or the reason it failed)."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the parent decides what an interrupt means
    faulthandler.disable()                           # a crash is reported by the parent, in one line
    last = [0.0]

    def send_progress(stage, i, n):
        now = time.monotonic()
        if now - last[0] > 0.2:
            last[0] = now
            conn.send(("progress", stage, i, n))

    try:
        row = _measure_and_store(job, store, work_dir, Progress(send_progress))
        conn.send(("row", row))
    except MemoryError:
        conn.send(("failed", "MemoryError"))
    except CcpError as exc:
        conn.send(("failed", str(exc)))
    except Exception as exc:  # noqa: BLE001 -- a worker reports every error as the cell's failure reason
        last_line = traceback.format_exception_only(type(exc), exc)[-1].strip()
        conn.send(("failed", last_line))
    finally:
        conn.close()


def _run_isolated(job: CellJob, store: RunStore, work_dir: Path, on_progress, timeout: float | None) -> dict:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(job, store, work_dir, child, os.getpid()), daemon=True)
    proc.start()
    child.close()
    deadline = time.monotonic() + timeout if timeout else None
    result = None
    try:
        while result is None:
            if parent.poll(0.2):
                try:
                    msg = parent.recv()
                except EOFError:
                    break
                if msg[0] == "progress":
                    on_progress(*msg[1:])
                elif msg[0] == "row":
                    result = msg[1]
                else:
                    result = failed_row(job.cell, msg[1])
            elif not proc.is_alive() and not parent.poll(0):
                break
            if deadline and time.monotonic() > deadline:
                proc.kill()
                proc.join()
                store.write_parts(job.cell.cell_id, None, None)
                return failed_row(job.cell, f"timeout after {format_seconds(timeout)}")
    except BaseException:
        proc.kill()
        proc.join()
        raise
    proc.join()
    if result is None:
        code = proc.exitcode
        reason = f"worker killed by signal {signal.Signals(-code).name}" if code and code < 0 else f"worker exited with status {code}"
        store.write_parts(job.cell.cell_id, None, None)
        return failed_row(job.cell, reason)
    return result
