"""How the cells of a sweep are measured: an Executor turns jobs into rows, whatever runs them.

Every executor yields ``(cell, row)`` in the order cells finish, with the row's ``predicted_*`` columns
filled the same way (the model with the work file's chunk index) and the cell's request and I/O parts
already written to the run folder. :class:`InlineExecutor` measures in this process; :class:`ForkedExecutor`
in a forked worker per cell, so a crash in a filter plugin, a MemoryError, a kill or a per-cell timeout
costs that cell only (recorded ``failed: reason``); :class:`ccp.run.dask.DaskExecutor` on a Dask cluster.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import os
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ccp.config.sweep import Sweep
from ccp.errors import CcpError
from ccp.hdf5.dataset import DatasetInfo
from ccp.matrix.cells import Cell
from ccp.measurement.passes import CellJob, Progress
from ccp.measurement.runner import measure, warms_up
from ccp.predict import Calibration, predict_job
from ccp.run.checks import one_line
from ccp.run.eta import EtaClock, ProgressLine, Ticker, events_path, predicted_seconds
from ccp.run.job import failed_row, job_for, logical_bytes, work_file_to_make
from ccp.run.phases import PhaseLine
from ccp.store.results import RunStore
from ccp.store.row import CellRow
from ccp.units import format_bytes, format_seconds

if TYPE_CHECKING:
    from ccp.remote.sweep_cell import RemoteSession

FAULT_ENV = "CCP_FAULT_INJECT"   # tests: "CELL_ID:segv|memory|hang|fill-disk" makes that cell's worker misbehave


@dataclass
class SweepContext:
    """What every executor needs besides the cells: the sweep, its dataset, where to write, how to talk."""

    sweep: Sweep
    source: DatasetInfo
    work_dir: Path
    quick: bool
    store: RunStore
    calibration: Calibration | None
    echo: Callable[..., None] = print
    stream: TextIO = sys.stderr
    s3: RemoteSession | None = None   # the sweep's S3 session when it has S3 cells
    phases: PhaseLine | None = None   # says what is done before a cell measures (a work file made, the cells priced)

    @property
    def passes(self) -> int:
        return self.sweep.repeats + (not self.quick)


def predicted_columns(job: CellJob, calibration: Calibration | None, warn=None) -> tuple[dict, CellJob]:
    """The cell's ``predicted_*`` columns and its job with request classes and model (for a time budget's extrapolation).

    A prediction is an aside: one that fails is a warning, never a stopped measurement.
    """
    try:
        predicted, classes, model = predict_job(job, calibration, classes=job.time_budget is not None)
    except Exception as exc:  # a prediction is an aside: it never stops a measurement
        if warn is not None:
            warn(f"  ccp: warning: no prediction for {job.cell.label()}: {one_line(exc)}")
        return {}, job
    return predicted, replace(job, request_class=classes, request_model=model)


class Executor:
    """Runs the cells of a sweep; yields (cell, row) as each finishes, its parts already in the run folder."""

    name = "executor"

    def run(self, todo: list[Cell], ctx: SweepContext) -> Iterator[tuple[Cell, CellRow]]:
        raise NotImplementedError


class LocalExecutor(Executor):
    """One cell after another on this machine, with a progress line and the model's ETA."""

    name = "local"

    def measure(self, job: CellJob, ctx: SweepContext, on_progress) -> CellRow:
        raise NotImplementedError

    def run(self, todo: list[Cell], ctx: SweepContext) -> Iterator[tuple[Cell, CellRow]]:
        tty = ctx.stream.isatty()
        phases = ctx.phases if ctx.phases is not None else PhaseLine(ctx.stream, tty, quiet=True)
        phases.say(f"pricing {len(todo)} cell(s) with the model")
        eta_clock = EtaClock(predicted_seconds(todo, ctx.source, ctx.calibration, ctx.passes), ctx.passes,
                             events=events_path())
        line = ProgressLine(eta_clock, len(todo), lambda text: status_line(text, tty, ctx.stream))
        ticker = Ticker(line.render) if tty else contextlib.nullcontext()   # redrawn between the worker's reports
        self.fork_guard = line.lock       # no fork while the ticker thread writes the line (see run_isolated)
        to_make = work_files_to_make(todo, ctx)
        with ticker:
            for k, cell in enumerate(todo):
                line.begin(k, cell.label())
                making = work_file_to_make(cell, ctx.sweep, ctx.source, ctx.work_dir)
                if making is not None and making in to_make:
                    # generating or repacking the data takes seconds to minutes before the cell's first report
                    stage = (f"making work file {to_make.index(making) + 1} of {len(to_make)}, "
                             f"{format_bytes(logical_bytes(ctx.source))}")
                    if tty:
                        line.set_stage(stage)
                        line.render()
                    else:
                        phases.say(f"{stage}, for {cell.label()}")
                try:
                    job = job_for(cell, ctx.sweep, ctx.source, ctx.work_dir, ctx.quick, ctx.s3)
                except Exception as exc:  # a work file that cannot be made (a filter or layout
                    # HDF5 refuses, a full disk) fails the cells that need it, not the sweep
                    line.done()
                    yield cell, failed_row(cell, f"work file: {one_line(exc)}")
                    continue
                predicted, job = predicted_columns(job, ctx.calibration, ctx.echo)
                # every pass reports (request 0 starts one): a warm local cell's warm-up too, a counted pass only where
                # the job has one (not --quick, not S3)
                eta_clock.start_cell(predicted.get("predicted_time_s"), job.repeats + job.counted_pass + warms_up(job),
                                     job.counted_pass)
                row = self.measure(job, ctx, line.progress)
                line.done()
                if tty:
                    with line.lock:
                        status_line("", tty, ctx.stream)
                        ctx.stream.write("\r")
                eta_clock.cell_done(k, row.elapsed_s)
                yield cell, row.with_columns(**predicted)


class InlineExecutor(LocalExecutor):
    """In this process (``isolate=False``): a crash in a filter takes the sweep with it."""

    def measure(self, job: CellJob, ctx: SweepContext, on_progress) -> CellRow:
        try:
            return measure_and_store(job, ctx.store, ctx.work_dir, Progress(on_progress))
        except CcpError as exc:
            return failed_row(job.cell, str(exc))
        except MemoryError:
            return failed_row(job.cell, "MemoryError")


class ForkedExecutor(LocalExecutor):
    """A forked worker per cell, killed with the parent, and after ``cell_timeout`` seconds."""

    def __init__(self, cell_timeout: float | None = None):
        self.cell_timeout = cell_timeout

    def measure(self, job: CellJob, ctx: SweepContext, on_progress) -> CellRow:
        return run_isolated(job, ctx.store, ctx.work_dir, on_progress, self.cell_timeout,
                            getattr(self, "fork_guard", None))


def work_files_to_make(todo: list[Cell], ctx: SweepContext) -> list[Path]:
    """The distinct work files the cells will make, in the order they will be made."""
    out: list[Path] = []
    for cell in todo:
        path = work_file_to_make(cell, ctx.sweep, ctx.source, ctx.work_dir)
        if path is not None and path not in out:
            out.append(path)
    return out


def status_line(text: str, tty: bool, stream) -> None:
    if tty:
        width = shutil.get_terminal_size((100, 20)).columns
        stream.write("\r" + text[: width - 1].ljust(width - 1))
        stream.flush()


def inject_fault(cell_id: str, scratch: Path | None = None) -> None:
    """Tests only (``CCP_FAULT_INJECT``): make this cell's worker crash, run out of memory, hang or fill the disk."""
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


def measure_and_store(job: CellJob, store: RunStore, work_dir: Path, progress: Progress) -> CellRow:
    scratch = Path(work_dir) / "tmp" / f"{job.cell.cell_id}-{os.getpid()}"
    try:
        inject_fault(job.cell.cell_id, scratch)
        row, req_df, io_df = measure(job, scratch, progress)
        store.write_parts(job.cell.cell_id, req_df, io_df)
        return row
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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
        if i == 0 or now - last[0] > 0.2:        # request 0 starts a pass: the ETA counts passes by it
            last[0] = now
            conn.send(("progress", stage, i, n))

    try:
        row = measure_and_store(job, store, work_dir, Progress(send_progress))
        conn.send(("row", row))
    except MemoryError:
        conn.send(("failed", "MemoryError"))
    except CcpError as exc:
        conn.send(("failed", str(exc)))
    except Exception as exc:  # a worker reports every error as the cell's failure reason
        last_line = traceback.format_exception_only(type(exc), exc)[-1].strip()
        conn.send(("failed", last_line))
    finally:
        conn.close()


def run_isolated(job: CellJob, store: RunStore, work_dir: Path, on_progress, timeout: float | None,
                 fork_guard=None) -> CellRow:
    """Measure one cell in a forked worker. ``fork_guard`` (the progress line's lock) is held across the fork: a
    fork while the ticker thread is inside a write to stderr copies stderr's lock held into the worker, whose exit
    flushes stderr and then waits for that lock forever -- and the parent, joining it, with it (issue 22)."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(job, store, work_dir, child, os.getpid()), daemon=True)
    with fork_guard if fork_guard is not None else contextlib.nullcontext():
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
