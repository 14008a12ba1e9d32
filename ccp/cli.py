"""The `ccp` command: a thin click layer over the library. Every command's help shows an example."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from ccp.errors import CcpError


class CcpGroup(click.Group):
    """Turns every error into one line and an exit status; tracebacks only with CCP_DEBUG=1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CcpError as exc:
            click.echo(f"ccp: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:              # `ccp check x.yaml | head`: the reader left; not an error
            sys.stderr.close()
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("\nccp: interrupted; finished cells are saved: rerun with the same --out to resume", err=True)
            sys.exit(130)
        except OSError as exc:
            if os.environ.get("CCP_DEBUG"):
                raise
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            click.echo(f"ccp: error: {exc.strerror or exc}{where}", err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the CLI's promise: one line, never a traceback
            if os.environ.get("CCP_DEBUG"):
                raise
            click.echo(f"ccp: internal error: {type(exc).__name__}: {exc} (set CCP_DEBUG=1 for a traceback)", err=True)
            sys.exit(1)


@click.group(cls=CcpGroup)
@click.version_option(package_name="ccp")
def main():
    """ccp: measure, explain and tune HDF5 chunking, compression and the chunk cache.

    \b
    Example:
      ccp run configs/quickstart.yaml
    """


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Run folder (default results/<name>/<time>/). Rerunning with the same --out resumes.")
@click.option("--quick", is_flag=True, help="One warm pass per cell, no traced pass: a first look.")
@click.option("--work", "work_dir", type=click.Path(file_okay=False, path_type=Path),
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
@click.option("--time-budget", help="Per-cell time for its passes (e.g. 60s, 5min); a cell that would overrun measures "
                                    "a prefix of its requests and reports an extrapolated time (status extrapolated).")
@click.option("--scale", type=float, help="Shrink the sweep by this factor (0-1): every dimension, chunk and block, and "
                                         "cache sizes by its volume. A quick look at a big sweep's shape.")
def run(sweep, out, quick, work_dir, cell_timeout, no_isolate, no_report, executor, scheduler, resources, time_budget, scale):
    """Run a sweep: every cell of its matrix, timed and traced.

    \b
    Example:
      ccp run configs/quickstart.yaml
      ccp run configs/cris.yaml --out results/cris/full   # rerun the same line to resume
      ccp run sweep.yaml --executor dask --scheduler tcp://head:8786
      ccp run configs/cris.yaml --scale 0.25 --quick        # a small, fast look
    """
    from ccp.cluster import parse_resources
    from ccp.engine import run_sweep
    from ccp.units import parse_duration

    summary = run_sweep(sweep, out=out, quick=quick, work_dir=work_dir, isolate=not no_isolate,
                        cell_timeout=cell_timeout, report=not no_report, echo=click.echo, executor=executor,
                        scheduler=scheduler, resources=parse_resources(resources) if executor == "dask" else None,
                        time_budget=parse_duration(time_budget, "--time-budget") if time_budget else None, scale=scale)
    click.echo(f"{summary.ran} cell(s) run, {summary.skipped} already done, {summary.failed} failed")
    click.echo(f"results: {summary.run_dir}")
    if summary.report:
        click.echo(f"report:  {summary.report}")
    if summary.failed:
        sys.exit(3)


@main.command()
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, exists=True, path_type=Path))
def report(run_dir):
    """Write report.html (and its PNG plots) into a run folder.

    \b
    Example:
      ccp report results/quickstart/20261122-120000
    """
    from ccp.report import write_report

    if not (run_dir / "cells.csv").exists():
        raise CcpError(f"{run_dir}: not a ccp run folder (no cells.csv)")
    click.echo(f"report: {write_report(run_dir)}")


@main.command()
@click.argument("run_a", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("run_b", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="Also write an HTML page here.")
def compare(run_a, run_b, html_out):
    """Compare the cells two runs share, side by side with ratios (B / A).

    \b
    Example:
      ccp compare results/cris/laptop results/cris/server --html compare.html
    """
    from ccp.report import write_compare

    for r in (run_a, run_b):
        if not (r / "cells.csv").exists():
            raise CcpError(f"{r}: not a ccp run folder (no cells.csv)")
    click.echo(write_compare(run_a, run_b, html_out))


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
def check(sweep):
    """Validate a sweep file and list its cells, without measuring anything.

    \b
    Example:
      ccp check configs/quickstart.yaml
    """
    from ccp.engine import prepare

    sw, source, cells = prepare(sweep)
    click.echo(f"{sweep}: valid; dataset {sw.dataset.path} {source.shape} {source.dtype.str}; {len(cells)} cells")
    for c in cells:
        click.echo(f"  {c.cell_id}  {c.label()}")


@main.command()
@click.option("--work", "work_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results/work"),
              show_default=True, help="The work folder to empty.")
@click.option("--dry-run", is_flag=True, help="List what would be removed.")
def clean(work_dir, dry_run):
    """Remove generated and repacked work files (run folders are kept).

    \b
    Example:
      ccp clean --dry-run
    """
    from ccp.units import format_bytes

    if not work_dir.exists():
        click.echo(f"{work_dir}: nothing to clean")
        return
    files = [p for p in work_dir.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    if dry_run:
        for p in files:
            click.echo(str(p))
        click.echo(f"would remove {len(files)} file(s), {format_bytes(total)}")
        return
    import shutil

    shutil.rmtree(work_dir)
    click.echo(f"removed {len(files)} file(s), {format_bytes(total)} from {work_dir}")


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per cell, keys named as in cells.csv.")
@click.option("--work", "work_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results/work"),
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
    from ccp.plan import plan_sweep
    from ccp.units import format_bytes, format_count, format_seconds

    rows = plan_sweep(sweep, work_dir)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    total = 0.0
    for r in rows:
        total += r["time_s"]
        click.echo(f"{r['cell_id']}  {r['op']} {r['block']} | chunks {r['chunks']} | {r['filters']} | cache "
                   f"{format_bytes(r['cache_nbytes'])}/{r['cache_nslots']}/{r['cache_w0']:g}: {format_count(r['requests'])} requests, "
                   f"{format_count(r['raw_reads'])} raw reads ({format_bytes(r['raw_read_bytes'])}), "
                   f"{format_count(r['raw_writes'])} raw writes, {format_count(r['chunk_loads'])} chunk loads, "
                   f"~{format_seconds(r['time_s'])}")
        for t in r["traps"]:
            click.echo(f"    TRAP {t}")
    click.echo(f"{len(rows)} cells; predicted measuring time ~{format_seconds(total)} (timed passes; the traced pass adds about one more)")


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
    from ccp.config.sweep import CacheSpec, parse_cache
    from ccp.units import parse_duration, parse_shape_str, parse_size

    if cache is None:
        from h5py import h5p
        nslots, nbytes, w0 = h5p.create(h5p.DATASET_ACCESS).get_chunk_cache()
        spec = CacheSpec(nbytes, nslots, w0)
        click.echo(f"(no --cache given: assuming this HDF5's default chunk cache, {spec.label})")
    elif "/" in cache:
        parts = cache.split("/")
        spec = parse_cache({"nbytes": parts[0], "nslots": int(parts[1]), "w0": float(parts[2]) if len(parts) > 2 else 0.75}, "--cache")
    else:
        spec = parse_cache(cache, "--cache")
    run_advise(file, dataset, parse_shape_str(block, "--access"), spec, parse_size(memory, "--memory"),
               parse_duration(budget, "--budget"), echo=click.echo, measure_top=not no_measure)


def _register_optional_commands() -> None:
    """Commands that live beside their library code (repack, plan, advise)."""
    import importlib

    for module, attr in (("ccp.repack.command", "repack_command"), ("ccp.model.command", "plan_command"),
                         ("ccp.model.command", "advise_command"), ("ccp.tune.command", "tune_command")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module and not module.startswith(str(exc.name)):
                raise
            continue
        if hasattr(mod, attr):
            main.add_command(getattr(mod, attr))


_register_optional_commands()
if __name__ == "__main__":
    main()
