"""The sweep engine: config -> matrix -> workload -> measurement -> store, one cell at a time.

Checks come first (:mod:`ccp.run.checks`), then an :class:`~ccp.run.executors.Executor` measures the cells
not yet done (forked workers by default, inline, or a Dask cluster); each finished cell is committed as
it arrives, and a rerun with the same ``--out`` skips it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ccp.config.sweep import sweep_as_dict
from ccp.errors import CcpError, ConfigError
from ccp.measurement import env as envmod
from ccp.predict import calibration_for, traps
from ccp.run.checks import check_run_options, disk_needed, out_needed, prepare, run_settings, scale_warnings
from ccp.run.executors import Executor, ForkedExecutor, InlineExecutor, SweepContext
from ccp.run.phases import PhaseLine
from ccp.store.disk import check_free
from ccp.store.results import RunStore, new_run_dir
from ccp.store.row import CellRow
from ccp.store.schema import FINISHED
from ccp.store.workdir import WorkDir
from ccp.units import format_count, format_seconds, format_share


@dataclass
class RunSummary:
    run_dir: Path
    cells: int
    ran: int
    skipped: int
    failed: int
    report: Path | None = None


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


def _after_clearing(phases: PhaseLine, write):
    """``write``, after erasing the terminal's phase line (a line of output is not appended to it)."""
    def call(*args, **kw):
        phases.clear()
        return write(*args, **kw)
    return call


def choose_executor(executor: str | Executor = "local", *, isolate: bool = True, cell_timeout: float | None = None,
                    scheduler=None, resources: dict | None = None) -> Executor:
    """The executor `ccp run --executor` names: local (forked workers, or inline without ``isolate``) or dask."""
    if isinstance(executor, Executor):
        return executor
    if executor == "local":
        return ForkedExecutor(cell_timeout) if isolate else InlineExecutor()
    if executor == "dask":
        from ccp.run.dask import DaskExecutor
        return DaskExecutor(scheduler, resources)
    raise CcpError(f"--executor: unknown executor {executor!r}; use local or dask")


def run_sweep(sweep_path, *, out: Path | None = None, quick: bool = False, results_root: Path = Path("results"),
              work_dir: Path | None = None, isolate: bool = True, cell_timeout: float | None = None,
              report: Callable[[Path], Path] | None = None, echo=print, stream=None, executor: str | Executor = "local", scheduler=None,
              resources: dict | None = None, time_budget: float | None = None, scale: float | None = None,
              warn=None, phases: PhaseLine | None = None) -> RunSummary:
    stream = stream or sys.stderr
    phases = phases if phases is not None else PhaseLine(stream, quiet=True)
    echo = _Echo(_after_clearing(phases, echo.echo if isinstance(echo, _Echo) else echo))
    warn = _after_clearing(phases, warn) if warn is not None else echo
    phases.say("checking the sweep, its dataset and --out", plain=False, tick=True)   # one line only if bad
    if not isinstance(executor, Executor):
        check_run_options(cell_timeout=cell_timeout, time_budget=time_budget, out=out, work_dir=work_dir,
                          executor=executor, scheduler=scheduler)
    else:
        check_run_options(cell_timeout=cell_timeout, time_budget=time_budget, out=out, work_dir=work_dir)
    runner = choose_executor(executor, isolate=isolate, cell_timeout=cell_timeout, scheduler=scheduler, resources=resources)
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
    check_free(work_dir, disk_needed(sweep, source, cells, work_dir), f"sweep {sweep.name!r} (its work files and I/O logs)")
    check_free(run_dir, out_needed(sweep, source, cells, quick), f"sweep {sweep.name!r} (its results)")
    s3 = sweep.storage.s3 if any(c.storage.remote for c in cells) else None
    if s3 is not None and s3.local and runner.name == "dask":
        raise ConfigError("s3", "'local' is a loopback server on this machine: Dask workers cannot reach it; "
                                "give {endpoint: URL, bucket: NAME}")
    from ccp.remote.sweep_cell import remote_session

    # the preflight: an unreachable endpoint, a missing bucket or rejected credentials is one line before any cell
    # runs and before the run folder is locked; `s3: local` starts the loopback server for the run
    with remote_session(s3) as session:
        store.lock()
        try:
            return _run_locked(sweep, source, cells, store, doc, settings, work_dir, runner, quick=quick, report=report,
                               echo=echo, stream=stream, s3=session, phases=phases)
        finally:
            store.unlock()


def _run_locked(sweep, source, cells, store: RunStore, doc, settings, work_dir: Path, runner: Executor, *, quick,
                report, echo, stream, s3=None, phases: PhaseLine | None = None) -> RunSummary:
    run_dir = store.dir
    store.open(doc, source.identity, settings)
    wd = WorkDir(work_dir)
    wd.scratch_root()
    wd.remove(wd.stale())           # scratch folders and partial files of killed workers
    store.write_env(envmod.collect(work_dir))
    done = store.done_ids()
    todo = [c for c in cells if c.cell_id not in done]
    echo(f"ccp run {sweep.name}: {len(cells)} cells ({len(cells) - len(todo)} already done), "
         f"{sweep.repeats} timed pass(es) each{', cold' if sweep.cold else ''}"
         f"{'' if quick else ' + 1 counted pass (a warm local cell: 1 warm-up pass first)'}; "
         f"results in {run_dir}")
    failed = 0
    phases = phases if phases is not None else PhaseLine(stream, quiet=True)
    phases.say("calibrating the model's prices on this machine (cached in the work folder)", tick=True)
    calibration = calibration_for([c.filters for c in cells], source, sweep, wd)
    ctx = SweepContext(sweep, source, work_dir, quick, store, calibration, echo, stream, s3, phases)

    def finished(cell, row):
        nonlocal failed
        row = without_prefix_counts(row.with_columns(traps=" | ".join(traps(cell, source))))
        store.commit_row(row)
        ok = row.status in FINISHED
        failed += not ok
        extrap = row.status == "extrapolated"
        tags = []
        if extrap:
            tags.append(f"extrapolated from {format_share(row.fraction_measured)} of the requests")
        if quick:
            tags.append("quick: 1 warm pass")
        if doc.get("scale") not in (None, 1):
            tags.append(f"scaled x{doc['scale']:g}")
        if "unstable" in str(row.flags or ""):
            tags.append("unstable")
        detail = (f"{format_seconds(row.time_s)}" + (f" ({'; '.join(tags)})" if tags else "")
                  + (f", raw reads {format_count(row.raw_reads)}" if row.raw_reads is not None else "")
                  + (f" on {row.host}" if runner.name == "dask" else "")
                  if ok else row.status)
        echo(f"  {'extrap' if extrap else 'ok    ' if ok else 'FAILED'} {cell.label()}: {detail}")
        gone = s3.store.server_gone() if s3 is not None and not ok else None
        if gone:      # every cell after it would fail the same way, 5 s each: stop, as an interruption does
            raise CcpError(f"{gone}; the cells finished before it are saved: rerun the same command to resume")

    try:
        for cell, row in runner.run(todo, ctx):
            finished(cell, row)
    finally:
        store.finalize()     # also when interrupted: cells.parquet matches cells.csv
    summary = RunSummary(run_dir, len(cells), len(todo), len(cells) - len(todo), failed)
    if report:            # the caller's report writer (the CLI's is ccp.report.write_report): the report reads runs
        if phases is not None:
            phases.say("writing the report", tick=True)
        summary.report = report(run_dir)
    return summary


IO_COUNT_COLUMNS = ("raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes",
                    "meta_reads", "meta_read_bytes", "meta_writes", "meta_write_bytes")


def without_prefix_counts(row: CellRow) -> CellRow:
    """An extrapolated write or copy cell's I/O counts are blanked (flag ``io-prefix-only``).

    The runner extrapolates per-request counts, but a write pass does most of its raw writes when the
    dataset closes and the chunk cache is flushed; that flush is the measured prefix's (issue 17:
    raw_writes 1 instead of 10), so the counts would be smaller than the truth. Until the runner
    extrapolates the flush too, no count is better than a smaller one.
    """
    if row.status != "extrapolated" or row.op not in ("write", "copy"):
        return row
    flags = [f for f in str(row.flags or "").split(",") if f] + ["io-prefix-only"]
    return row.with_columns(**dict.fromkeys(IO_COUNT_COLUMNS), flags=",".join(flags))
