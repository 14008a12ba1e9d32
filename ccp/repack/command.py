"""``ccp repack IN OUT``: the click command (imports h5py only when it runs)."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

import click

EPILOG = """\b
Examples:
  ccp repack -l /All_Data/CrIS-SDR_All/ES_ImaginaryLW:CHUNK=1x30x9x717 in.h5 out.h5
  ccp repack -l /d:CHUNK=1x30x9x717 -f /d:SHUF -f /d:GZIP=6 in.h5 out.h5
  ccp repack -f zstd:3 --dry-run in.h5 out.h5
  ccp repack -l data:CHUNK=20000x10 --memory 512MiB --plan --json in.h5     (predict a rechunk, write nothing)
  ccp repack -f GZIP=6 granules/*.h5 -o repacked/     (many files, in parallel)
  ccp repack -S PAGE -G 4MiB in.h5 out.h5     (a cloud-optimized copy: paged aggregation, 4 MiB pages)

\b
Layouts (-l [DSET[,DSET...]:]LAYOUT, h5repack syntax):
  CHUNK=DIMxDIM...   chunked          CONTI   contiguous     COMPA   compact
\b
Filters (-f [DSET[,DSET...]:]FILTER, repeat to chain in order):
  GZIP=1-9  SZIP=PIXELS,NN|EC  SHUF  FLET  NBIT  SOFF=N,IN|DS  NONE
  or a ccp spec: gzip:6, shuffle+gzip:6, zstd:3, blosc:lz4:5:shuffle, lz4, bzip2:9 ...
Without DSET: an option applies to every dataset; a dataset's own options win.

\b
gzip, shuffle, fletcher32 and bzip2 (zstd with the zstandard package) are encoded
in parallel threads and written as raw chunks; other filters, contiguous/compact
layouts and non-numeric datatypes go through the HDF5 library (one thread).
Values move in their file datatypes (compound, variable-length, references...: exactly);
references are remapped to the copies. The output appears under OUT only when complete."""


def _format_change(d) -> list[str]:
    from ccp.units import format_bytes

    lines = [f"{d.path}  {'x'.join(map(str, d.shape)) if d.shape else 'scalar'} {d.dtype}"]
    lines.append(f"    layout   {d.old_layout} -> {d.new_layout}")
    lines.append(f"    filters  {d.old_filters} -> {d.new_filters}")
    if d.estimated_bytes is not None or d.new_stored_bytes is not None:
        after = d.new_stored_bytes if d.new_stored_bytes is not None else d.estimated_bytes
        approx = "~" if d.new_stored_bytes is None else ""
        ratio = f" ({d.raw_bytes / after:.3g}:1)" if after else ""
        lines.append(f"    storage  {format_bytes(d.old_stored_bytes)} -> {approx}{format_bytes(after)}{ratio}")
    how = "fast path" if d.method == "fast" else f"library path ({d.reason})"
    if d.method == "fast" and d.deflate:
        how += f", deflate by {d.deflate}"
    lines.append(f"    path     {how}")
    for note in d.notes:
        lines.append(f"    note     {note}")
    return lines


@click.command("repack", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True, metavar="IN... [OUT]")
@click.option("-o", "--out-dir", "out_dir", metavar="OUTDIR",
              help="Repack every IN (files, or folders of HDF5 files) into OUTDIR under its own name, in parallel.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="With -o: files repacked at once (default: the number of CPUs).")
@click.option("-l", "--layout", "layouts", multiple=True, metavar="[DSET:]LAYOUT",
              help="New layout, h5repack syntax: DSET:CHUNK=1x30x9x717, DSET:CONTI, CHUNK=... for all datasets.")
@click.option("-f", "--filter", "filters", multiple=True, metavar="[DSET:]FILTER",
              help="New filters: DSET:GZIP=6, DSET:SHUF, DSET:NONE, GZIP=6 for all, or a ccp spec DSET:shuffle+gzip:6. "
                   "Repeat to chain.")
@click.option("--buffer", "buffer", default="32MiB", show_default=True, metavar="SIZE",
              help="Hyperslab buffer: each read/write step holds at most this much data.")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="Encoder threads (default: the number of CPUs; 1 per file with -o).")
@click.option("--deflate", type=click.Choice(["auto", "zlib", "libdeflate", "isal"]), default="auto", show_default=True,
              help="gzip encoder of the fast path: zlib writes the very bytes HDF5 would; libdeflate (pip install "
                   "deflate) is ~3x faster with equally valid, usually smaller streams; isal (pip install isal) encodes "
                   "gzip level 1 in ~0.65x libdeflate's CPU, a few % larger (other levels: libdeflate); "
                   "auto = isal, else libdeflate, whichever is installed.")
@click.option("-S", "--fs-strategy", metavar="STRATEGY",
              help="File-space strategy of the copy: PAGE, FSM_AGGR, AGGR or NONE (h5repack -S). Default: the source's.")
@click.option("-G", "--fs-page-size", metavar="SIZE",
              help="File-space page size of the copy, e.g. 4MiB (h5repack -G; implies -S PAGE).")
@click.option("--memory", "memory", default=None, show_default="512MiB", metavar="SIZE",
              help="Peak memory of the copy: a rechunk picks its hyperslab buffer and source chunk cache within it "
                   "so that each source chunk is read once where it can. A budget you set that the copy cannot "
                   "meet is refused before anything is written.")
@click.option("--plan", "plan", is_flag=True,
              help="Predict the repack (seconds, peak memory, bytes read and written, read order, cache); write nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --plan: the prediction as JSON on stdout.")
@click.option("--dry-run", is_flag=True, help="Show what would change per dataset, with a storage estimate; write nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def repack_command(paths, out_dir, jobs, layouts, filters, fs_strategy, fs_page_size, buffer, threads, deflate, memory,
                   plan, as_json, dry_run, quiet):
    """Copy IN to OUT with new chunking and/or filters for some datasets (like h5repack, faster).

    Everything else in the file (groups, attributes, links, other datasets) is copied as it is;
    changed datasets keep their shape, maximum shape, datatype and fill value; every value is
    copied exactly. IN is never modified. With -o OUTDIR, any number of IN files (or folders of
    them) are repacked in parallel, each to OUTDIR/its name.
    """
    from ccp.errors import ConfigError
    from ccp.repack.options import parse_options
    from ccp.units import parse_size

    opts = parse_options(layouts, filters)
    file_space = None
    if fs_strategy is not None or fs_page_size is not None:   # ccp.config.storage only when asked (start-up)
        from ccp.config.storage import parse_repack_file_space

        file_space = parse_repack_file_space(fs_strategy, fs_page_size)     # one line naming -S or -G
    buffer_bytes = parse_size(buffer, "--buffer")
    if buffer_bytes <= 0:
        raise ConfigError("--buffer", "must be > 0")
    from ccp.repack.rechunk import DEFAULT_MEMORY_BYTES

    memory_strict = memory is not None          # the default budget sizes the copy; only the user's is enforced
    memory_bytes = parse_size(memory, "--memory") if memory_strict else DEFAULT_MEMORY_BYTES
    if memory_bytes < 64 * 1024 * 1024:
        raise ConfigError("--memory", f"{memory} is below 64MiB, about what Python, h5py and numpy take alone")
    if as_json and not plan:
        raise ConfigError("--json", "goes with --plan")
    if plan:
        if out_dir is not None or len(paths) not in (1, 2):
            raise ConfigError("--plan", "plans one file: give IN (and OUT, optional)")
        _plan_one(paths[0], opts, buffer_bytes, memory_bytes, threads, deflate, as_json, memory_strict)
        return
    if out_dir is not None:
        from ccp.repack.many import repack_many

        if file_space is not None:
            raise ConfigError("-S/-G", "not supported with -o OUTDIR yet; repack one file at a time (IN OUT)")

        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            repack_many(paths, out_dir, opts, buffer_bytes=buffer_bytes, jobs=jobs, threads=threads or 1,
                        deflate=deflate, dry_run=dry_run, quiet=quiet, echo=click.echo)
        except (KeyboardInterrupt, _Terminated) as exc:
            _stopped("interrupted" if isinstance(exc, KeyboardInterrupt) else "terminated",
                     130 if isinstance(exc, KeyboardInterrupt) else exc.code,
                     f"the files reported done are complete in {out_dir}; those in progress were not written "
                     "(no temporary file left); every input is untouched")
        finally:
            signal.signal(signal.SIGTERM, previous)
        return
    if len(paths) != 2:
        raise ConfigError("IN OUT", f"expected one IN and one OUT, got {len(paths)} path(s); "
                          "for several inputs give -o OUTDIR")
    before = _stat(paths[1])
    _SIGTERMS.clear()           # this command's own (a test may run several in one process)
    try:
        try:
            _repack_one(paths[0], paths[1], opts, buffer_bytes, threads, deflate, dry_run, quiet, file_space, memory_bytes,
                        memory_strict)
        except Exception:
            if _SIGTERMS:   # raised inside a lock or a thread's wait, SIGTERM comes out as another error: it was SIGTERM
                raise _Terminated(128 + _SIGTERMS[0]) from None
            raise
    except (KeyboardInterrupt, _Terminated) as exc:
        after = _stat(paths[1])
        if after is not None and after != before:
            kept = f"{paths[1]} was complete (read back and checked) before the {'interrupt' if isinstance(exc, KeyboardInterrupt) else 'signal'} and is kept"
        elif before is not None:
            kept = f"nothing written: {paths[1]} is left as it was (the temporary copy removed)"
        else:
            kept = f"nothing written: no {paths[1]} (the temporary copy removed)"
        if isinstance(exc, KeyboardInterrupt):
            _stopped("interrupted", 130, f"{kept}; {paths[0]} untouched")
        _stopped("terminated", exc.code, f"{kept}; {paths[0]} untouched")


def _stat(path):
    import os

    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _stopped(how: str, code: int | str | None, kept: str) -> NoReturn:
    """Ctrl-C or SIGTERM: one line saying what was kept (a repack's, not a sweep's message)."""
    click.echo(f"\nccp: {how}: {kept}", err=True)
    sys.exit(code)


def _plan_one(infile, opts, buffer_bytes, memory_bytes, threads, deflate, as_json, memory_strict=True):
    from ccp.repack.forecast import forecast_repack
    from ccp.repack.plan import DEFAULT_BUFFER_BYTES
    from ccp.units import format_bytes, format_seconds

    fc = forecast_repack(infile, opts.layouts, opts.filters, memory_bytes=memory_bytes,
                         buffer_bytes=None if buffer_bytes == DEFAULT_BUFFER_BYTES else buffer_bytes,
                         threads=threads, deflate=deflate, memory_strict=memory_strict)
    if as_json:
        import json

        click.echo(json.dumps(fc.as_dict(), indent=2))
        return
    for d in fc.datasets:
        if d.method == "copy":
            continue
        shapes = f"{_shape(d.source_chunks)} -> {_shape(d.target_chunks)}"
        click.echo(f"{d.path}: {shapes} ({d.method} path)")
        click.echo(f"    read order  {d.read_order}")
        band = "bands of" if d.method == "fast" else "hyperslab buffer"
        click.echo(f"    cache       {format_bytes(d.cache_bytes)} for decoded source chunks kept for a later band, "
                   f"{band} {format_bytes(d.buffer_bytes)}")
        click.echo(f"    reads       {d.source_chunk_reads} source chunk reads of {d.source_chunks_stored} stored, "
                   f"{format_bytes(d.bytes_read)}; writes ~{format_bytes(d.bytes_written)}")
        click.echo(f"    codecs      decode {_rate(d.decode_mb_per_s)}, encode {_rate(d.encode_mb_per_s)} per thread (sampled)")
        click.echo(f"    predicted   {format_seconds(d.predicted_seconds)}, peak memory {format_bytes(d.peak_memory_bytes)}")
        if d.note:
            click.echo(f"    note        {d.note}")
    copied = sum(1 for d in fc.datasets if d.method == "copy")
    click.echo(f"plan: {format_seconds(fc.predicted_seconds)} in all (start-up {format_seconds(fc.startup_seconds)} "
               f"included), peak memory {format_bytes(fc.peak_memory_bytes)} of {format_bytes(fc.memory_bytes)}, "
               f"{format_bytes(fc.bytes_read)} read, ~{format_bytes(fc.bytes_written)} written, {copied} dataset(s) "
               f"copied as they are; {fc.threads} thread(s) (~{fc.effective_threads} at the present load); nothing written")


def _rate(mb_per_s: float | None) -> str:
    """A sampled codec rate; "n/a" where ccp samples none (no Python codec: HDF5 does that side)."""
    return "n/a" if mb_per_s is None else f"{mb_per_s} MB/s"


def _shape(chunks) -> str:
    return "x".join(map(str, chunks)) if chunks else "contiguous"


def _repack_one(infile, outfile, opts, buffer_bytes, threads, deflate, dry_run, quiet, file_space=None,
                memory_bytes=None, memory_strict=True):
    import os

    from ccp.repack.copy import repack
    from ccp.units import format_bytes, format_seconds

    bar = None
    state = {"total": 0}

    def progress(event, value):
        nonlocal bar
        if quiet:
            return
        if event == "start":
            state["total"] = value
            if value and sys.stderr.isatty():
                bar = click.progressbar(length=value, label="repacking", file=sys.stderr, show_eta=True,
                                        show_percent=True, width=30)
                bar.__enter__()
        elif event == "dataset":
            if bar is not None:
                click.echo("", err=True)
            click.echo(f"  {value}", err=True)
        elif event == "advance" and bar is not None:
            bar.update(value)

    previous = None
    try:
        try:
            previous = signal.signal(signal.SIGTERM, _terminate)
        except ValueError:  # not the main thread
            previous = None
        result = repack(infile, outfile, opts.layouts, opts.filters, buffer_bytes=buffer_bytes, threads=threads,
                        progress=progress, dry_run=dry_run, deflate=deflate, file_space=file_space,
                        memory_bytes=memory_bytes, memory_strict=memory_strict)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if quiet:
        return
    if opts.is_empty and file_space is None:
        click.echo("no -l or -f given: the file was copied as it is", err=True)
    if file_space is not None and not dry_run:
        click.echo(f"file space of the copy: {file_space.label}", err=True)
    changed = result.repacked
    kept = [d for d in result.datasets if not d.changed]
    if dry_run:
        for d in changed:
            click.echo("\n".join(_format_change(d)))
        for d in kept:
            for note in d.notes:
                click.echo(f"{d.path}: {note}")
        click.echo(f"dry run: {len(changed)} dataset(s) would change, {len(kept)} would be copied as they are; "
                   f"nothing written ({format_seconds(result.seconds)})")
        return
    for d in changed:
        how = "fast" if d.method == "fast" else f"library: {d.reason}"
        if d.method == "fast" and d.deflate:
            how += f", deflate by {d.deflate}"
        click.echo(f"{d.path}: {d.old_layout} {d.old_filters} -> {d.new_layout} {d.new_filters}, "
                   f"{format_bytes(d.old_stored_bytes)} -> {format_bytes(d.new_stored_bytes)} "
                   f"in {format_seconds(d.seconds)} ({how})")
        for note in d.notes:    # what was not done as asked (a layout kept, a chunk clipped)
            click.echo(f"{d.path}: {note}")
    for d in kept:
        for note in d.notes:
            click.echo(f"{d.path}: {note}")
    for note in result.notes:
        click.echo(note)
    click.echo(f"{os.path.basename(result.src)} ({format_bytes(result.in_bytes)}) -> {result.dst} "
               f"({format_bytes(result.out_bytes)}) in {format_seconds(result.seconds)}: "
               f"{len(changed)} dataset(s) repacked, {len(kept)} copied, {result.threads} thread(s)"
               + _memory_used(result))


def _memory_used(result) -> str:
    """What the copy really held: the largest hyperslab buffer it allocated (none: the fast path goes chunk by
    chunk) and the process's peak resident memory against --memory."""
    from ccp.units import format_bytes

    used = max([d.buffer_bytes for d in result.repacked] + [0])
    text = f", {format_bytes(used)} hyperslab buffer" if used else \
        (", no hyperslab buffer (chunk by chunk)" if result.repacked else "")
    if result.peak_rss_bytes:
        text += f", peak memory {format_bytes(result.peak_rss_bytes)}"
        if result.memory_bytes is not None:
            text += f" of --memory {format_bytes(result.memory_bytes)}"
    return text


class _Terminated(SystemExit):
    """SIGTERM while repacking: unwinds like Ctrl-C (the temporary file is removed on the way out)."""


_SIGTERMS: list[int] = []


def _terminate(signum, frame):
    _SIGTERMS.append(signum)
    raise _Terminated(128 + signum)
