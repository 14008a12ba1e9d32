"""``ccp repack IN... -o OUTDIR``: many files in one invocation, in parallel processes.

Users repack folders of thousands of small granules; one interpreter start per file costs more
than the copy. Here the interpreter and h5py start once, and files are repacked by a pool of
forked processes (one per CPU by default), each with one encoder thread. A file that fails is
one line naming it; the others go on; the exit status is 2 if any failed.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
from dataclasses import dataclass

from ccp.errors import CcpError, ConfigError


@dataclass(frozen=True)
class FileOutcome:
    src: str
    dst: str
    ok: bool
    message: str          # the error when not ok
    repacked: int = 0
    copied: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    seconds: float = 0.0


def expand_inputs(paths) -> list[str]:
    """Files as given; a folder stands for its HDF5 files (not recursive), sorted by name."""
    import h5py

    out: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if os.path.isfile(os.path.join(p, n)) and ".ccp-tmp-" not in n)
            found = [os.path.join(p, n) for n in names if h5py.is_hdf5(os.path.join(p, n))]
            if not found:
                raise ConfigError("IN", f"folder {p} holds no HDF5 file")
            out.extend(found)
        elif not os.path.exists(p):
            raise ConfigError("IN", f"input file {p} does not exist")
        else:
            out.append(p)
    return out


def plan_outputs(inputs: list[str], out_dir: str) -> list[tuple[str, str]]:
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ConfigError("-o", f"{out_dir} exists and is not a folder")
    pairs: list = []
    seen: dict = {}
    for src in inputs:
        name = os.path.basename(src)
        if name in seen:
            raise ConfigError("IN", f"{seen[name]} and {src} would both be written to {os.path.join(out_dir, name)}")
        seen[name] = src
        dst = os.path.join(out_dir, name)
        if os.path.abspath(dst) == os.path.abspath(src):
            raise ConfigError("-o", f"{out_dir} is the folder of {src}: the output would replace the input")
        pairs.append((src, dst))
    return pairs


def _one(job) -> FileOutcome:
    src, dst, layouts, filters, buffer_bytes, threads, deflate, dry_run = job
    from ccp.repack.copy import repack

    try:
        _WORKER["busy"] = True
        res = repack(src, dst, layouts, filters, buffer_bytes=buffer_bytes, threads=threads, deflate=deflate,
                     dry_run=dry_run)
    except SystemExit as exc:
        if _WORKER.get("worker"):   # SIGTERM (its parent gone): the temp is removed; no result to send to anyone
            os._exit(exc.code if isinstance(exc.code, int) else 1)
        raise
    except CcpError as exc:
        return FileOutcome(src, dst, False, str(exc))
    except Exception as exc:  # one file's failure is that file's line, the others go on
        return FileOutcome(src, dst, False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    finally:
        _WORKER["busy"] = False
    return FileOutcome(src, dst, True, "", len(res.repacked), len(res.datasets) - len(res.repacked), res.in_bytes,
                       res.out_bytes or 0, res.seconds)


_WORKER = {"busy": False}    # in a pool worker: whether a file is being repacked now


def _die_with_parent(parent: int) -> None:
    """A worker of a killed ``ccp repack -o`` (even kill -9) gets SIGTERM (prctl PR_SET_PDEATHSIG): a busy one
    unwinds its repack (the temporary file removed), then exits at once; an idle one exits. Never an orphan."""
    import ctypes
    import signal

    def stop(signum, frame):
        if not _WORKER["busy"]:
            os._exit(128 + signum)
        if _WORKER.get("stopping"):     # already unwinding (a Ctrl-C reached it too): let the unwinding finish
            return
        _WORKER["stopping"] = True
        raise SystemExit(128 + signum)

    def interrupt(signum, frame):       # Python's own Ctrl-C, remembered: a SIGTERM after it must not cut its unwinding
        _WORKER["stopping"] = True
        raise KeyboardInterrupt

    _WORKER["worker"] = True
    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)   # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):   # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:          # the parent died before the call
        os._exit(1)


def repack_many(paths, out_dir, opts, *, buffer_bytes: int, jobs: int | None = None, threads: int = 1,
                deflate: str = "auto", dry_run: bool = False, quiet: bool = False, echo=None) -> list[FileOutcome]:
    """Repack every input into ``out_dir``; raises CcpError (exit 2) after the run if any file failed."""
    from ccp.hdf5.filters.codecs import resolve_deflate_engine
    from ccp.units import format_bytes, format_seconds

    if echo is None:
        import click

        echo = click.echo
    out_dir = os.fspath(out_dir)
    pairs = plan_outputs(expand_inputs(paths), out_dir)
    resolve_deflate_engine(deflate)  # a bad engine is one error, not one per file
    if not dry_run:
        os.makedirs(out_dir, exist_ok=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(pairs)))
    work = [(src, dst, opts.layouts, opts.filters, buffer_bytes, threads, deflate, dry_run) for src, dst in pairs]
    t0 = time.perf_counter()
    outcomes: list[FileOutcome] = []

    def report(o: FileOutcome):
        outcomes.append(o)
        if not o.ok:
            echo(f"ccp: error: {o.src}: {o.message}", err=True)
        elif not quiet:
            echo(f"{o.src} -> {o.dst}: {o.repacked} dataset(s) repacked, {o.copied} copied, "
                 f"{format_bytes(o.in_bytes)} -> {format_bytes(o.out_bytes)} in {format_seconds(o.seconds)}")

    if jobs == 1:
        for job in work:
            report(_one(job))
    else:
        # fork: the workers start with ccp, h5py and numpy already imported
        ctx = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_die_with_parent,
                                    initargs=(os.getpid(),)) as pool:
            try:
                for o in pool.map(_one, work, chunksize=max(1, len(work) // (jobs * 8))):
                    report(o)
            except BaseException:
                # SIGTERM: each busy worker unwinds its file (temp removed) and exits, an idle one exits. Also on
                # Ctrl-C: a terminal's reached the workers already (they let it finish), but one sent to this
                # process alone did not, and the pool's shutdown would wait for every file in progress.
                for proc in list(pool._processes.values()):
                    proc.terminate()
                raise
    seconds = time.perf_counter() - t0
    failed = [o for o in outcomes if not o.ok]
    if not quiet:
        echo(f"{len(outcomes) - len(failed)} of {len(outcomes)} file(s) {'checked' if dry_run else 'repacked into ' + out_dir} "
             f"in {format_seconds(seconds)} ({len(outcomes) / seconds if seconds else 0:.1f} files/s, "
             f"{jobs} process{'es' if jobs != 1 else ''})")
    if failed:
        raise CcpError(f"{len(failed)} of {len(outcomes)} file(s) failed (each named above); the others are in {out_dir}")
    return outcomes
