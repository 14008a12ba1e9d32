"""`ccp trace`, `ccp diagnose` and `ccp from-darshan`: thin click commands over ccp.trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command(name="trace", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--out", "out", required=True, type=str,      # a str: click.Path turns '' into '.'
              help="The trace folder to write (calls.parquet, trace.json).")
@click.option("--force", is_flag=True, help="Replace a trace already in the folder.")
@click.option("--no-checksum", is_flag=True, help="Do not compute sha256 of the files the program touched.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def trace_command(out, force, no_checksum, cmd):
    """Run a Python program and record every h5py dataset call it and its child processes make.

    The program's output and exit status pass through unchanged; ccp's own lines go to stderr.
    Multiprocessing workers (fork and spawn) and Python subprocesses are recorded too.

    \b
    Example:
      ccp trace -o results/trace-bands -- python examples/band_reader.py
      ccp trace -o t1 -- python -m mypkg.train --epochs 1
      ccp trace -o t2 -- jupyter nbconvert --to notebook --execute analysis.ipynb
    """
    from ccp.errors import CcpError
    from ccp.trace.run import run_traced

    if not out.strip():
        raise CcpError(f"-o/--out: is empty ({out!r}): give a folder for the trace")
    out = Path(out)
    status, header = run_traced(list(cmd), out, force=force, checksum=not no_checksum)
    done = header.get("completeness", {})
    from ccp.trace.libraries import not_hdf5_note

    other = not_hdf5_note(out) if out.is_dir() else None
    if header["calls"] == 0:
        made = "no calls on HDF5 datasets" if other else "no h5py dataset calls"
        if done.get("complete") is False:       # calls may have been made and lost: the reasons below say which
            click.echo(f"ccp trace: {out} holds an empty trace ({made} recorded; calls may have been lost)", err=True)
        else:
            click.echo(f"ccp trace: the program made {made}; {out} holds an empty trace", err=True)
    else:
        click.echo(f"ccp trace: {header['calls']} dataset calls on {len(header['datasets'])} dataset(s) in "
                   f"{len(header['pids'])} process(es) -> {out} (exit status {status})", err=True)
    if other:
        click.echo(f"ccp trace: {other}", err=True)
    if done.get("complete") is False:
        click.echo(f"ccp trace: the trace is INCOMPLETE ({len(done['reasons'])} reason(s)); it keeps the "
                   f"{header['calls']} call(s) recorded:", err=True)
        for reason in done["reasons"]:
            click.echo(f"ccp trace:   {reason}", err=True)
    for err in done.get("recorder_errors", []):
        if any(err.split(": ", 1)[-1] in reason for reason in done.get("reasons", [])):
            continue        # already said as a reason
        click.echo(f"ccp trace: recorder problem in {err}", err=True)
    sys.exit(status)


@click.command(name="diagnose")
@click.argument("trace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--memory", default="1GiB", show_default=True, help="The most memory a cure may give the chunk cache.")
@click.option("--verify", is_flag=True, help="Replay the sequence with the top cure applied and measure it "
                                             "(a repack cure on a temporary copy).")
@click.option("--pattern", "patterns", multiple=True, metavar="BLOCK",
              help="Another read pattern of the data (e.g. 1x96x144) a repack cure must not slow; repeatable.")
def diagnose_command(trace, as_json, memory, verify, patterns):
    """Explain where a traced program's HDF5 time went, and rank the cures with predicted times.

    Chunk loads come from ccp's chunk-cache model run over the program's real selections, with the
    cache it had and the reopens it made; times from the trace's own per-call and per-load costs.
    A repack cure is priced against the dataset's other natural patterns (series along each axis,
    planes) and each --pattern; one slowing any by more than 2x says so and writes a `ccp tune`
    workload (tune-<dataset>.yaml) into the trace folder.

    \b
    Example:
      ccp trace -o results/trace-bands -- python examples/band_reader.py
      ccp diagnose results/trace-bands
      ccp diagnose results/trace-bands --pattern 1x96x144
      ccp diagnose results/trace-bands --json | jq '.datasets[0].cures[0]'
    """
    from ccp.errors import CcpError
    from ccp.trace.check import parse_patterns
    from ccp.trace.diagnose import format_diagnosis
    from ccp.trace.stream import diagnose_folder
    from ccp.units import parse_size

    size = parse_size(memory, "--memory")
    if not 0 < size <= 1 << 40:
        raise CcpError(f"--memory: expected a size from 1 byte to 1TiB for a chunk cache, got {memory!r}")
    blocks = parse_patterns(patterns)
    diag = diagnose_folder(trace, memory=size, verify=verify, patterns=blocks, tune_dir=trace)
    if as_json:
        click.echo(json.dumps(diag, indent=2, default=str))
    else:
        click.echo(format_diagnosis(diag))


@click.command(name="from-darshan")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The sweep file to write (never over an existing file without --force, never over the log).")
@click.option("--file", "h5file", help="The HDF5 file the sweep replays against (default: the file the log names).")
@click.option("--dataset", help="The dataset to sweep, by its path in the file or its full Darshan name "
                                "(default: the one with the most recorded accesses).")
@click.option("--force", is_flag=True, help="Replace the file -o names if it exists.")
def from_darshan_command(log, out, h5file, dataset, force):
    """Turn a Darshan log's H5D records into a sweep that replays their access patterns.

    The log is parsed in a child process and checked against its own counters: a damaged or
    truncated log is one line and exit status 2, never a sweep with wrong counts.

    \b
    Example:
      ccp from-darshan job.darshan -o sweep.yaml --file /data/run42.h5
      ccp from-darshan job.darshan -o sweep.yaml --dataset /fields/temperature --force
    """
    from ccp.errors import say_on_interrupt
    from ccp.trace.darshan import darshan_to_sweep

    say_on_interrupt(f"the sweep file is written whole or not at all; {log} is unchanged")
    for line in darshan_to_sweep(log, out, h5file, dataset=dataset, force=force):
        click.echo(line)
