"""The `ccp` command: a thin click layer over the library. Every command's help shows an example."""

from __future__ import annotations

import signal
import sys


def _interrupted_while_starting(_signum, _frame):
    sys.stderr.write("\nccp: interrupted while starting; nothing was done\n")
    raise SystemExit(130)


# Ctrl-C while ccp imports (a second or more on a loaded machine) is one line, not a traceback of an import;
# only when ccp is the program (`ccp ...`, `python -m ccp.cli`), never when a test or notebook imports this module.
if (__name__ == "__main__" or sys.argv[0].endswith(("/ccp", "ccp"))) and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import json  # noqa: E402 -- after the handler above, on purpose
import os  # noqa: E402
from pathlib import Path  # noqa: E402

import click  # noqa: E402

from ccp.errors import CcpError, kept_on_interrupt, say_on_interrupt  # noqa: E402

_CTRL_C: list[int] = []         # Ctrl-Cs that reached ccp's handler while the command ran


def _on_ctrl_c(signum, _frame):
    _CTRL_C.append(signum)
    raise KeyboardInterrupt


def _resend_lost_ctrl_c(hook):
    """Python drops an exception raised in a __del__ or a weakref callback ("Exception ignored in"): a Ctrl-C
    landing there (h5py frees handles through them) was lost and the command ran on to exit 0. Send it again."""
    def unraisable(u):
        if u.exc_type is not None and issubclass(u.exc_type, KeyboardInterrupt) and \
                signal.getsignal(signal.SIGINT) is _on_ctrl_c:
            import threading  # sent from here it would land in this hook again: a moment later, from aside

            again = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
            again.daemon = True
            again.start()
            return
        hook(u)
    return unraisable


class CcpGroup(click.Group):
    """Turns every error into one line and an exit status; tracebacks only with CCP_DEBUG=1."""

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS and name not in self.commands:
            self.add_command(_lazy_command(name), name)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        say_on_interrupt(KEPT_ON_INTERRUPT.get((cmd.name if cmd is not None else name) or ""))
        return name, cmd, rest

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's usage errors as one line (``ccp: error: run: ...``, exit 2), not its three-line usage block."""
        _CTRL_C.clear()
        saved = None
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _interrupted_while_starting):
            try:        # started: Ctrl-C is the commands' now (a KeyboardInterrupt, counted, never lost)
                saved = sys.unraisablehook
                signal.signal(signal.SIGINT, _on_ctrl_c)
                sys.unraisablehook = _resend_lost_ctrl_c(saved)
            except ValueError:      # not the main thread: leave Ctrl-C as it is
                saved = None
        try:
            return self._main(args, prog_name, complete_var, standalone_mode, **extra)
        finally:
            if saved is not None:
                signal.signal(signal.SIGINT, signal.default_int_handler)
                sys.unraisablehook = saved

    def _main(self, args, prog_name, complete_var, standalone_mode, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:     # bare `ccp`: the help, as click gives it
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
            sys.exit(0)
        except click.UsageError as exc:
            sub = exc.ctx.command.name if exc.ctx is not None and exc.ctx.parent is not None else None
            where = f"{sub}: " if sub else ""
            click.echo(f"ccp: error: {where}{' '.join(exc.format_message().split())} (see ccp {sub + ' ' if sub else ''}--help)",
                       err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"ccp: error: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(2)
        except click.exceptions.Abort:
            click.echo("ccp: aborted", err=True)
            sys.exit(130)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        # What Ctrl-C says the command kept: the commands here say it in KEPT_ON_INTERRUPT; a lazy command
        # (repack, trace, tune, ...) with ccp.errors.say_on_interrupt / Interrupted, as its work goes on.
        say_on_interrupt(None)          # resolve_command says the sub-command's own line
        try:
            return super().invoke(ctx)
        except CcpError as exc:
            if _CTRL_C:     # a Ctrl-C raised inside a lock or a library came out as another error: it was Ctrl-C
                self._interrupted(None)
            click.echo(f"ccp: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:              # `ccp check x.yaml | head`: the reader left; not an error
            sys.stderr.close()
            sys.exit(0)
        except KeyboardInterrupt as exc:
            self._interrupted(exc)
        except OSError as exc:
            if _CTRL_C:
                self._interrupted(None)
            if os.environ.get("CCP_DEBUG"):
                raise
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            click.echo(f"ccp: error: {exc.strerror or exc}{where}", err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the CLI's promise: one line, never a traceback
            if _CTRL_C:
                self._interrupted(None)
            if os.environ.get("CCP_DEBUG"):
                raise
            click.echo(f"ccp: internal error: {type(exc).__name__}: {exc} (set CCP_DEBUG=1 for a traceback)", err=True)
            sys.exit(1)


    @staticmethod
    def _interrupted(exc) -> None:
        kept = kept_on_interrupt(exc)
        click.echo(f"\nccp: interrupted; {kept}" if kept else "\nccp: interrupted", err=True)
        sys.exit(130)


# What each command here has kept when Ctrl-C stops it (said after "ccp: interrupted; "). Only a sweep
# resumes: the other commands say what they wrote, or that they wrote nothing.
KEPT_ON_INTERRUPT = {
    "run": "finished cells are saved: rerun with the same --out to resume",
    "check": "nothing was written (check only reads)",
    "inspect": "nothing was written (inspect only reads)",
    "plan": "nothing was written but the work folder's calibration cache (a cut-short one is redone)",
    "advise": "your file is unchanged (opened read-only); the temporary copy a repack cure is measured on is removed",
    "report": "report.html is replaced only when whole: rerun ccp report",
    "compare": "rerun ccp compare (an --html page may be cut short)",
    "clean": "files removed so far are gone, the rest are kept: rerun ccp clean",
    "repack": "nothing written; the inputs untouched",   # until repack's own handler says what it kept
}


@click.group(cls=CcpGroup)
@click.version_option(package_name="ccp")
def main():
    """ccp: measure, explain and tune HDF5 chunking, compression and the chunk cache.

    \b
    Example:
      ccp run configs/quickstart.yaml
    """


def _folder(ctx, param, value):
    """--out/--work: a folder name; "" is not "." (Path("") would be) and NUL never reaches the OS."""
    if value is None:
        return None
    if not value.strip() or "\0" in value:
        raise click.BadParameter(f"expected a folder name, got {value!r}")
    return Path(value)


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", callback=_folder,
              help="Run folder (default results/<name>/<time>/). Rerunning with the same --out resumes.")
@click.option("--quick", is_flag=True, help="One warm pass per cell, no warm-up pass, no counted pass: a first look "
                                            "(its one pass includes the first touches a warm-up absorbs).")
@click.option("--work", "work_dir", callback=_folder,
              help="Folder for generated and repacked files (default results/work); reused across runs.")
@click.option("--cell-timeout", type=float, default=None, help="Seconds after which a cell is stopped and recorded failed.")
@click.option("--no-isolate", is_flag=True, help="Run cells in this process instead of one worker process each.")
@click.option("--no-report", is_flag=True, help="Do not write report.html at the end.")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where cells run: here, one worker process each, or on a Dask distributed cluster.")
@click.option("--scheduler", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (with --executor dask).")
@click.option("--resources", default="benchmark=1", show_default=True,
              help="Dask worker resources each cell needs: start workers with the same (dask worker --resources benchmark=1) "
                   "so each runs one benchmark at a time.")
@click.option("--time-budget", help="Per-cell time for its passes, warm-up and counted pass included (e.g. 60s, 5min); a "
                                    "cell that would overrun measures a prefix of its requests and reports an "
                                    "extrapolated time (status extrapolated).")
@click.option("--scale", type=float, help="Shrink the sweep by this factor (0-1): every dimension, chunk and block, and "
                                         "cache sizes by its volume. A quick look at a big sweep's shape.")
def run(sweep, out, quick, work_dir, cell_timeout, no_isolate, no_report, executor, scheduler, resources, time_budget, scale):
    """Run a sweep: every cell of its matrix, timed, then counted (one pass under HDF5's log driver).

    A warm local cell first makes one warm-up pass (the same requests; recorded as warmup_s, never in its time): the
    first warm pass pays for first touches. Its `repeats` timed passes give the cell's time (the median) and spread.

    On a terminal a status line shows the cell, its requests done and the time left: the model's prediction of
    each cell, corrected by every pass measured so far, redrawn every 2 s. `ccp check SWEEP --scale F` says
    whether a --scale keeps every cell distinct.

    \b
    Example:
      ccp run configs/quickstart.yaml
      ccp run configs/cris.yaml --out results/cris/full   # rerun the same line to resume
      ccp run sweep.yaml --executor dask --scheduler tcp://head:8786
      ccp run configs/cris.yaml --scale 0.71 --quick        # a quarter of the data, every cell kept
    """
    from ccp.run.phases import PhaseLine
    phases = PhaseLine(sys.stderr)
    phases.say("loading", plain=False, tick=True)    # on a terminal: the sweep engine's imports take seconds on a busy machine
    try:
        from ccp.report import write_report
        from ccp.run import run_sweep
        from ccp.run.dask import parse_resources
        from ccp.units import parse_duration

        summary = run_sweep(sweep, out=out, quick=quick, work_dir=work_dir, isolate=not no_isolate,
                            cell_timeout=cell_timeout, report=None if no_report else write_report, echo=click.echo,
                            executor=executor, scheduler=scheduler,
                            resources=parse_resources(resources) if executor == "dask" else None,
                            time_budget=parse_duration(time_budget, "--time-budget") if time_budget is not None else None,
                            scale=scale, warn=lambda line: click.echo(line, err=True), phases=phases)
    finally:
        phases.clear()      # an error's one line is not appended to the phase line
    click.echo(f"{summary.ran} cell(s) run, {summary.skipped} already done, {summary.failed} failed")
    from ccp.report.data import run_contention

    busy = run_contention(summary.run_dir)
    if busy:
        click.echo(f"contended: {busy}")
    click.echo(f"results: {summary.run_dir}")
    if summary.report:
        click.echo(f"report:  {summary.report}")
    if summary.failed:
        sys.exit(3)


@main.command()
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--self-contained", is_flag=True, help="Embed the plots in report.html (base64): one file to attach or mail.")
def report(run_dir, self_contained):
    """Write report.html (and its PNG plots) into a run folder.

    \b
    Example:
      ccp report results/quickstart/20261122-120000
      ccp report results/quickstart/20261122-120000 --self-contained   # one file, images inside
    """
    from ccp.report import write_report
    from ccp.store.results import check_run_folder

    check_run_folder(run_dir)          # someone's own cells.csv is not a run: one line
    click.echo(f"report: {write_report(run_dir, self_contained=self_contained)}")


@main.command(name="inspect")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("dataset", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect_cmd(file, dataset, as_json):
    """Show a file's datasets as h5ls -v / h5dump -H would, and the chunk-cache traps in them.

    \b
    Example:
      ccp inspect cris.h5 /All_Data/CrIS-SDR_All/ES_ImaginaryLW
    """
    from ccp.inspect import format_info, inspect_file

    infos = inspect_file(file, dataset)
    if as_json:
        click.echo(json.dumps(infos, indent=2, default=str))
    else:
        click.echo("\n".join(format_info(i) for i in infos) if infos else f"{file}: no datasets")


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--scale", type=float, help="Check the sweep as `ccp run --scale` would run it.")
def check(sweep, scale):
    """Validate a sweep file and list its cells, without measuring anything.

    Every check `ccp run` makes before it writes is made here: what check accepts, run runs.
    A `ccp tune` workload file is checked as one (as tune checks it before measuring).

    \b
    Example:
      ccp check configs/quickstart.yaml
      ccp check configs/tune-series-maps.yaml
    """
    from ccp.config.sweep import same_layouts
    from ccp.run import prepare, scale_warnings
    from ccp.tune.workload import check_lines, is_workload_file

    if is_workload_file(sweep):
        if scale is not None:
            raise click.UsageError("--scale is for a sweep; this is a `ccp tune` workload file")
        for line in check_lines(sweep):
            click.echo(line)
        return
    sw, source, cells = prepare(sweep, scale)
    for line in scale_warnings(sweep, scale):
        click.echo(f"ccp: warning: {line}", err=True)
    click.echo(f"{sweep}: valid; dataset {sw.dataset.path} {source.shape} {source.dtype.str}; {len(cells)} cells")
    merged = same_layouts(sw, source)
    if merged:
        click.echo(f"  note: {merged}")
    for c in cells:
        click.echo(f"  {c.cell_id}  {c.label()}")


@main.command()
@click.option("--work", "work_dir", callback=_folder, default="results/work", show_default=True,
              help="The work folder ccp run and ccp plan used.")
@click.option("--dry-run", is_flag=True, help="List what would be removed.")
def clean(work_dir, dry_run):
    """Remove the work files ccp made (generated and repacked files, scratch folders): nothing else.

    Only files named as ccp names them *and* listed in the manifest ccp keeps beside them
    (.ccp-work-manifest) are removed: your own files, run folders and the folder itself stay.

    \b
    Example:
      ccp clean --dry-run
      ccp clean --work /scratch/ccp-work
    """
    from ccp.store.workdir import WorkDir
    from ccp.units import format_bytes

    if not work_dir.is_dir():
        click.echo(f"{work_dir}: nothing to clean")
        return
    wd = WorkDir(work_dir)
    owned = wd.removable()
    if dry_run:
        for p in owned:
            click.echo(str(p))
        click.echo(f"would remove {len(owned)} work file(s) and folder(s) ccp made in {work_dir}")
        return
    n, freed = wd.clean()
    click.echo(f"removed {n} work file(s) and folder(s) ccp made, {format_bytes(freed)}, from {work_dir}")




@main.command()
@click.argument("sweep", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per cell, keys named as in cells.csv.")
@click.option("--work", "work_dir", callback=_folder, default="results/work",
              show_default=True, help="Work folder: existing layout files give exact stored chunk sizes.")
def plan(sweep, as_json, work_dir):
    """Predict a sweep without running it: requests, raw reads and writes, chunk loads, time, traps.

    Counts come from ccp's model of HDF5's chunk cache; times from a short calibration of this
    machine (a few seconds, cached in the work folder), for all of a cell's timed passes.

    \b
    Example:
      ccp plan configs/cris.yaml
      ccp plan configs/cris.yaml --json | jq '.[] | {block, cache_nbytes, raw_reads}'
    """
    from ccp.predict import calibration_dir
    from ccp.run import prepare, request_count
    from ccp.run.plan import long_plan_message, plan_sweep
    from ccp.store.workdir import WorkDir
    from ccp.units import format_bytes, format_count, format_seconds

    prepared = prepare(sweep)
    _, source, cells = prepared
    n = sum(request_count(c.access, source.shape) for c in cells)
    if message := long_plan_message(n):
        click.echo(message, err=True)
    calibration_dir(WorkDir(work_dir))         # a cut-short calibration cache of ccp's is dropped, not fatal
    try:
        rows = [r.as_dict() for r in plan_sweep(sweep, work_dir, prepared)]
    except MemoryError:
        raise CcpError(f"{sweep}: predicting {format_count(n)} requests needs more memory than this machine has") from None
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    total = 0.0
    for r in rows:
        total += r["time_s"]
        click.echo(f"{r['cell_id']}  {r['op']} {r['block']} | chunks {r['chunks']} | {r['filters']} | cache "
                   f"{format_bytes(r['cache_nbytes'])}/{r['cache_nslots']}/{r['cache_w0']:g}"
                   f"{' | ' + r['storage_label'] if r.get('storage_label') else ''}: {format_count(r['requests'])} requests, "
                   f"{format_count(r['raw_reads'])} raw reads ({format_bytes(r['raw_read_bytes'])}), "
                   f"{format_count(r['raw_writes'])} raw writes, {format_count(r['chunk_loads'])} chunk loads, "
                   f"~{format_seconds(r['time_s'])}")
        for t in r["traps"]:
            click.echo(f"    TRAP {t}")
    click.echo(f"{len(rows)} cells; predicted measuring time ~{format_seconds(total)} (timed passes; the counted pass adds about one more)")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("dataset")
@click.option("--access", "block", required=True, help="The block one read request covers, e.g. 1x1x1x717.")
@click.option("--cache", default=None, help="The chunk cache the reader uses (size or NBYTES/NSLOTS/W0). "
                                            "Default: this HDF5's own default, stated in the output.")
@click.option("--memory", default="1GiB", show_default=True, help="The most memory a cure may give the chunk cache.")
@click.option("--budget", default="20s", show_default=True, help="Time for measuring each setting; longer ones are extrapolated.")
@click.option("--no-measure", is_flag=True, help="Explain and rank only; do not measure.")
def advise(file, dataset, block, cache, memory, budget, no_measure):
    """Explain why an access pattern is slow on a file's layout, rank the cures, measure the best one.

    The file is opened read-only; a repack cure is measured on a temporary copy.

    \b
    Example:
      ccp advise cris.h5 /All_Data/CrIS-SDR_All/ES_ImaginaryLW --access 1x1x1x717 --cache 1MiB
    """
    from ccp.advise import advise as run_advise
    from ccp.chunkcache import ChunkCache
    from ccp.config.sweep import parse_cache
    from ccp.units import parse_duration, parse_shape_str, parse_size

    access = parse_shape_str(block, "--access")
    memory_bytes = parse_size(memory, "--memory")
    budget_s = parse_duration(budget, "--budget")
    spec = parse_cache(parse_cache_option(cache), "--cache") if cache is not None else None
    _check_advise_dataset(file, dataset, access)
    if spec is None:
        from ccp.hdf5.defaults import library_cache
        lib = library_cache()
        spec = ChunkCache(lib.nbytes, lib.nslots, lib.w0)
        click.echo(f"(no --cache given: assuming this HDF5's default chunk cache, {spec.label})")
    run_advise(file, dataset, access, spec, memory_bytes, budget_s, echo=click.echo, measure_top=not no_measure)


def parse_cache_option(text: str):
    """--cache SIZE or NBYTES/NSLOTS[/W0] -> the value parse_cache takes (one line naming the part at fault)."""
    from ccp.hdf5.defaults import DEFAULT_W0

    parts = text.split("/")
    if len(parts) == 1:
        return text
    if len(parts) > 3 or not all(p.strip() for p in parts):
        raise CcpError(f"--cache: expected SIZE or NBYTES/NSLOTS/W0 like 1MiB/521/0.75, got {text!r}")
    try:
        nslots = int(parts[1])
    except ValueError:
        raise CcpError(f"--cache: NSLOTS must be a whole number, got {parts[1]!r} in {text!r}") from None
    try:
        w0 = float(parts[2]) if len(parts) > 2 else DEFAULT_W0
    except ValueError:
        raise CcpError(f"--cache: W0 must be a number from 0 to 1, got {parts[2]!r} in {text!r}") from None
    return {"nbytes": parts[0], "nslots": nslots, "w0": w0}


def _check_advise_dataset(file: Path, dataset: str, access) -> None:
    """The dataset advise explains: a numeric array of rank >= 1 (never a null or scalar dataspace)."""
    import h5py

    from ccp.hdf5.dataset import netcdf_dimension_only, open_readonly

    if "\0" in dataset:
        raise CcpError(f"DATASET: expected a dataset path, got {dataset!r}")
    with open_readonly(file, "FILE") as f:
        obj = f.get(dataset)
        if not isinstance(obj, h5py.Dataset):
            raise CcpError(f"{file}: {dataset!r} is {'not in the file' if obj is None else 'a group, not a dataset'}")
        dimension_only = netcdf_dimension_only(obj)
        if dimension_only:
            raise CcpError(f"{file}: {dataset!r} {dimension_only}")
        if obj.shape is None or len(obj.shape) == 0 or obj.dtype.kind not in "iuf":
            raise CcpError(f"{file}: {dataset!r} has shape {obj.shape} and dtype {obj.dtype}: advise explains numeric arrays of rank >= 1")
        if len(access) != len(obj.shape):
            raise CcpError(f"--access: {'x'.join(map(str, access))} has rank {len(access)} but {dataset!r} {list(obj.shape)} has rank {len(obj.shape)}")


# Commands that live beside their library code, imported only when used: `ccp repack --help` should not
# pay for numpy, pandas and numba (a directory of granules is repacked in one call, but a single small
# file still pays the start-up).
def one_blas_thread() -> None:
    """Before numpy is imported by a command that does no linear algebra (repack): OpenBLAS's thread pool, which
    numpy starts on import, cost 0.06 s CPU of its import and 0.1 s of a 1.7 s CPU rechunk on 2 busy cores
    (benchmarks/startup.py). A user's own OPENBLAS_NUM_THREADS is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


LAZY_COMMANDS = {
    "compare": ("ccp.report.command", "compare_command"),
    "repack": ("ccp.repack.command", "repack_command"),
    "trace": ("ccp.trace.command", "trace_command"),
    "diagnose": ("ccp.trace.command", "diagnose_command"),
    "from-darshan": ("ccp.trace.command", "from_darshan_command"),
    "s3": ("ccp.remote.command", "s3_command"),
    "tune": ("ccp.tune.command", "tune_command"),
}


def _lazy_command(name: str):
    import importlib

    module, attr = LAZY_COMMANDS[name]
    if name == "repack":
        one_blas_thread()
    return getattr(importlib.import_module(module), attr)


if __name__ == "__main__":
    main()
