"""Copy an HDF5 file, changing the layout and filters of some datasets: ``ccp repack``.

The whole file is copied: groups (with their creation properties and time tracking),
attributes, soft and external links, hard links to one object (kept as links), named
datatypes, and every dataset. Objects that do not change are copied by ``H5Ocopy`` (the
library's own copy: raw chunks, any datatype). Datasets that change keep their shape,
maximum shape, file datatype, fill value and other creation properties; only the layout
and the filter pipeline are replaced. Every value moves in its file datatype, never through
a numpy dtype (:mod:`ccp.hdf5.lowlevel`), so the output holds exactly the input's values.

Changed datasets are written in hyperslabs of whole destination chunks within a bounded
buffer (:mod:`ccp.repack.plan`, seed 003), by one of two paths (:mod:`ccp.repack.chunks`):

* fast path, for fixed-size datatypes without references (numbers, fixed strings,
  compounds, arrays, enums, opaque...): source chunks are read raw and decoded in Python,
  each destination chunk one task in a thread pool that decodes its source chunks, places
  them, pads with the fill value's bytes and encodes it (:mod:`ccp.repack.pipeline`), then
  written raw; sources whose filters have no Python decoder are read through the library
  in the file datatype, a hyperslab at a time.
* library path: hyperslabs read and written by HDF5 with the file datatype as memory type.
  Used for variable-length data and references (they live outside the chunks), filters
  without an exact Python encoder, contiguous and compact destinations, chunks larger than
  the buffer, scalars, and unfiltered partial edge chunks. The summary says which and why.

Object and region references, anywhere in a datatype, are rewritten at the end to point at
the copied objects (:mod:`ccp.repack.references`). One dataset that cannot be repacked is
copied as it is, with a note; an explicit option on it that HDF5 cannot honour is refused.

The output is written as ``OUT.ccp-tmp-<pid>`` beside OUT and renamed to OUT only when
complete; on any error or interrupt the temporary file is removed, and a temporary file
left by a killed repack (its pid dead) is removed by the next repack to that OUT. Free
space is checked first; a full disk is one line. The input is opened read-only.
"""

from __future__ import annotations

import concurrent.futures as cf
import glob
import math
import os
import re
import stat
import time

import h5py
from h5py import h5f, h5p

from ccp.errors import CcpError, ConfigError
from ccp.hdf5 import lowlevel as low
from ccp.hdf5.filters import FilterPipeline, check_available, codecs, parse_filters
from ccp.hdf5.filters.plugins import register_plugins
from ccp.outfile import output_target
from ccp.repack.compare import verify_written
from ccp.repack.decide import _h5_message, _Planner
from ccp.repack.library import library_copy_floor
from ccp.repack.library import planned as library_planned
from ccp.repack.options import CONTIGUOUS, as_layout, normalise_path
from ccp.repack.plan import DEFAULT_BUFFER_BYTES
from ccp.repack.rechunk import MemoryBudget, check_memory, copy_floor, pass_room, peak_rss
from ccp.repack.results import DatasetResult, RepackResult, page_size_notes
from ccp.repack.stages import choose_stages
from ccp.repack.tree import _Repacker, describe
from ccp.units import format_bytes

_TEMP_TAG = ".ccp-tmp-"
_METADATA_SLACK = 1024 * 1024


# ------------------------------------------------------------------ the output file

def _check_paths(src, dst, dry_run: bool) -> tuple[str, str]:
    src = os.fspath(src)
    dst = os.fspath(dst)
    if not os.path.exists(src):
        raise CcpError(f"input file {src} does not exist")
    if os.path.isdir(src):
        raise CcpError(f"input {src} is a folder, not an HDF5 file; to repack the HDF5 files in it, give -o OUTDIR")
    if not h5py.is_hdf5(src):
        raise CcpError(f"input file {src} is not an HDF5 file")
    if os.path.abspath(src) == os.path.abspath(dst) or (os.path.exists(dst) and os.path.samefile(src, dst)):
        raise ConfigError("OUT", f"output {dst} is the input file; write to another file")
    if os.path.isdir(dst):
        raise ConfigError("OUT", f"output {dst} is a folder; to write {os.path.basename(src)} into it, give -o {dst}")
    target, why = output_target(dst)        # the copy is renamed onto OUT: never over a device, through a link
    if why is not None:
        raise ConfigError("OUT", why)
    dst = os.fspath(target)
    parent = os.path.dirname(os.path.abspath(dst))
    if not dry_run and not os.path.isdir(parent):
        raise ConfigError("OUT", f"folder {parent} does not exist")
    if not dry_run and os.path.exists(dst) and _write_protected(dst):
        raise ConfigError("OUT", f"{dst} exists and is write-protected; remove it or write to another file")
    return src, dst


def _write_protected(path: str) -> bool:
    # the permission bits, not os.access: root may write anything, but a read-only file says "keep me"
    return not (os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(path, os.W_OK)


def _temp_path(dst: str) -> str:
    return f"{dst}{_TEMP_TAG}{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temps(dst: str, keep=()) -> list[str]:
    """Remove ``DST.ccp-tmp-PID`` files (and their stages, ``DST.ccp-tmp-PID.stageK``) whose repack process is gone
    (killed); returns their paths. Only names exactly of that form, and never a file in ``keep`` (the input: a copy
    may be made from a file so named, and must not delete it)."""
    removed = []
    name = re.compile(re.escape(os.path.basename(dst) + _TEMP_TAG) + r"(\d+)(\.stage\d+)?")
    for path in glob.glob(glob.escape(dst) + _TEMP_TAG + "*"):
        m = name.fullmatch(os.path.basename(path))
        if m is None or any(_same_file(path, k) for k in keep):
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and not _pid_alive(pid):
            try:
                os.unlink(path)
                removed.append(path)
            except FileNotFoundError:  # pragma: no cover - another repack took it first
                pass
    return removed


def _same_file(a: str, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _needed_bytes(in_bytes: int, targets, src: h5py.File | None = None, budget: MemoryBudget | None = None,
                  threads: int = 1) -> int:
    """About how much OUT takes: the input's size, plus what datasets losing compression gain, plus the
    largest dataset's unfiltered stage copies beside OUT (a multi-stage rechunk keeps its stages until
    its last pass is written; datasets are copied one after another)."""
    grow = 0
    for t in targets:
        if t.changed and t.new_pipeline is not None and t.new_pipeline.is_none and not t.old_pipeline.is_none:
            grow += max(0, int(t.raw_bytes * _written_share(src, t)) - t.stored_bytes)
    return in_bytes + grow + max([0] + [_stage_bytes(src[t.path], t, budget, threads) for t in targets
                                         if src is not None and budget is not None])


def _written_share(src: h5py.File | None, tgt) -> float:
    """The share of a chunked dataset's chunks ever written (1 when unknown): only they are stored in the copy."""
    if src is None:
        return 1.0
    ds = src[tgt.path]
    if ds.chunks is None:
        return 1.0
    total = math.prod(-(-d // c) for d, c in zip(ds.shape, ds.chunks))
    return min(1.0, ds.id.get_num_chunks() / total) if total else 1.0


def _stage_bytes(ds, tgt, budget: MemoryBudget, threads: int) -> int:
    """Disk the temporary stage copies of ``tgt``'s copy take (0: one pass), as ``DatasetWriter.run_fast``
    decides it."""
    if not tgt.changed or tgt.method != "fast" or ds.chunks is None or tgt.layout.kind != "chunked" or not tgt.stored_bytes:
        return 0        # (nothing stored: a dataset never written is copied as its new creation alone)
    chunks = tgt.layout.chunk_shape
    if len(ds.chunks) != len(chunks) or tuple(ds.chunks) == tuple(chunks):
        return 0
    from ccp.hdf5.filters import pipeline_from_dcpl

    room = pass_room(budget, chunks, tgt.itemsize, threads, tgt.dims, ds.chunks)
    filtered = bool(pipeline_from_dcpl(ds.id.get_create_plist()).steps)
    return len(choose_stages(tgt.dims, ds.chunks, chunks, tgt.itemsize, room, threads, budget.buffer_bytes,
                             filtered)) * tgt.raw_bytes


def memory_needs(fin: h5py.File, targets, threads: int,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> list[tuple[str, int, str]]:
    """``(path, least memory beyond the process, what it is)`` of each dataset the copy rewrites: what
    ``--memory`` must leave room for. The fast path from a chunked source onto a chunk grid:
    :func:`ccp.repack.rechunk.copy_floor`; the library path: its hyperslab and HDF5's copy of it."""
    out = []
    for t in targets:
        if not t.changed or not t.shape:
            continue
        if t.method != "fast":
            src_chunks = fin[t.path].chunks
            if library_planned(t, src_chunks, buffer_bytes):
                out.append((t.path, library_copy_floor(t.dims, src_chunks, t.layout.chunk_shape, t.itemsize, threads),
                            "the library path's hyperslab of one target chunk, HDF5's copies of a source chunk it "
                            "decodes and of a target chunk it encodes and reads back, the chunk indexes"))
                continue
            out.append((t.path, 2 * buffer_bytes, f"the library path's hyperslab buffer of {format_bytes(buffer_bytes)} "
                        "and HDF5's copy of it; a smaller --buffer lowers it"))
            continue
        if t.layout.kind != "chunked":
            continue
        src_chunks = fin[t.path].chunks
        if src_chunks is not None and len(src_chunks) == len(t.layout.chunk_shape):
            out.append((t.path, copy_floor(t.dims, src_chunks, t.layout.chunk_shape, t.itemsize, threads),
                        "a target chunk and a source chunk per thread in flight, the source chunks target chunks "
                        "share, the read-back's chunks and the chunk indexes"))
    return out


def _check_memory(fin: h5py.File, targets, memory_bytes: int, threads: int, buffer_bytes: int,
                  base: int | None = None) -> None:
    """Refuse a ``--memory`` the copy of ``targets`` cannot meet (:func:`ccp.repack.rechunk.check_memory`) in a
    process holding ``base`` bytes (what it holds now when None)."""
    from ccp.repack import rechunk  # its process_rss, looked up when called (a test stands in for it)

    check_memory(memory_bytes, rechunk.process_rss() if base is None else base,
                 memory_needs(fin, targets, threads, buffer_bytes))


def _check_free_space(dst: str, needed: int) -> None:
    folder = os.path.dirname(os.path.abspath(dst))
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    if free < needed:
        raise CcpError(f"OUT {dst}: needs about {format_bytes(needed)} but only {format_bytes(free)} is free "
                       f"in {folder}; nothing written")


def _create_output(tmp: str, src: h5py.File, file_space=None) -> h5py.File:
    """The output file, created like the source (creation orders, times, its file-space strategy); with
    ``file_space`` (a ``ccp.config.storage.FileSpace``: ``ccp repack -S/-G``) in that strategy instead."""
    from ccp.hdf5.plists import apply_file_space

    try:
        fcpl = src.id.get_create_plist()
        root = src["/"].id.get_create_plist()  # the file's plist does not report the root group's orders
        fcpl.set_link_creation_order(root.get_link_creation_order())
        fcpl.set_attr_creation_order(root.get_attr_creation_order())
        # the root group tracks times only if the source's did (h5repack keeps them as they were)
        fcpl.set_obj_track_times(low.tracks_times(src["/"].id))
        fid = h5f.create(tmp.encode(), h5f.ACC_TRUNC, fcpl=apply_file_space(fcpl, file_space), fapl=_format_bounds(src))
    except (ValueError, RuntimeError):  # pragma: no cover - a creation plist HDF5 will not reuse
        fid = h5f.create(tmp.encode(), h5f.ACC_TRUNC, fcpl=apply_file_space(None, file_space), fapl=_format_bounds(src))
    return h5py.File(fid)


def _format_bounds(src: h5py.File):
    """File access properties that keep the source's file format: its superblock version says the lowest
    format bound it was written with (0 or 1: the earliest, as h5py's default, PyTables and h5netcdf write;
    2: 1.8; 3: 1.10). HDF5 2.0's own default gave every copy superblock 2 (a reader linked with HDF5
    before 1.8 could open the input, not the copy). HDF5 still takes a newer format where the copy needs
    one (-S PAGE: superblock 2)."""
    version = src.id.get_create_plist().get_version()[0]
    low = h5f.LIBVER_EARLIEST if version < 2 else (h5f.LIBVER_V18 if version == 2 else h5f.LIBVER_V110)
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_libver_bounds(low, h5f.LIBVER_LATEST)
    return fapl


def _copy_userblock(src: str, tmp: str, size: int) -> None:
    if size <= 0:
        return
    with open(src, "rb") as fin, open(tmp, "r+b") as fout:
        fout.write(fin.read(size))


# ------------------------------------------------------------------ one file

def repack(src, dst, layouts=None, filters=None, *, buffer_bytes: int = DEFAULT_BUFFER_BYTES,
           threads: int | None = None, progress=None, dry_run: bool = False, only=None,
           deflate: str = "auto", file_space=None, memory_bytes: int | None = None,
           memory_strict: bool = True) -> RepackResult:
    """Copy ``src`` to ``dst`` with new layouts / filters for some datasets.

    ``layouts``: ``{dataset path or None (every dataset): Layout | chunk tuple | "CONTI" | None}``.
    ``filters``: ``{dataset path or None: FilterPipeline | spec string ("gzip:6", "GZIP=6", "none")}``.
    ``progress(event, value)`` is called with ``("start", total_bytes)``, ``("dataset", line)``
    for each dataset that changes, and ``("advance", nbytes)``.
    ``only``: dataset paths to copy (with their attributes); the rest of the file is left out.
    ``deflate``: gzip encoder of the fast path: "zlib" (the bytes HDF5 itself writes), "libdeflate"
    (the ``deflate`` package: ~3x faster, equally valid streams), "isal" (the ``isal`` package: gzip level 1
    only, in ~0.65x libdeflate's CPU, a few % larger; other levels go to libdeflate) or "auto" (isal, else
    libdeflate, whichever is installed).
    ``file_space``: the copy's file-space strategy (``ccp.config.storage.FileSpace``, e.g. paged aggregation
    with 4 MiB pages: a cloud-optimized copy, h5repack's ``-S PAGE -G 4194304``); None keeps the source's.
    ``memory_bytes``: peak memory of the process (``--memory``); chunked-to-chunked copies then take their
    bands (``buffer_bytes`` unless it is the default), chunks in flight and source chunk cache from the rechunk
    plan (:mod:`ccp.repack.rechunk`) so that each source chunk is read once where the budget allows; a budget
    below what the process holds plus the least a copy and its read-back need is refused (``ConfigError``
    naming ``--memory`` and that floor) before anything is written; with ``memory_strict`` False (the default
    budget, not the user's) it is not refused: the copy plans within a quarter of the budget at least.
    """
    register_plugins()
    t0 = time.perf_counter()
    src, dst = _check_paths(src, dst, dry_run)
    threads = max(1, int(threads or os.cpu_count() or 1))
    engine = codecs.resolve_deflate_engine(deflate)
    buffer_bytes = max(1, int(buffer_bytes))
    try:
        fin = h5py.File(src, "r")
    except Exception as exc:  # HDF5 says why in its message
        raise CcpError(f"cannot open {src}: {_h5_message(exc)}") from None
    planner = None
    tmp = _temp_path(dst)
    fout = None
    done = False
    try:
        planner = _Planner(fin, layouts, filters, buffer_bytes, engine)
        if memory_bytes is not None:
            planner.budget = MemoryBudget(int(memory_bytes),  # type: ignore[attr-defined]  # read by chunks.DatasetWriter
                                          None if buffer_bytes == DEFAULT_BUFFER_BYTES else buffer_bytes,
                                          memory_strict)
        only_keys = None
        if only is not None:
            only_keys = {planner._key_of(p, "dataset") for p in only}
            planner.copies_indexes = False      # PyTables' index groups are left out: no index to keep true
        with cf.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ccp-repack") as pool:
            rp = _Repacker(fin, None, planner, pool, buffer_bytes, progress, only_keys)
            rp.survey()
            in_bytes = os.path.getsize(src)
            if dry_run:
                results = []
                for tgt in rp.targets.values():
                    est = planner.estimate(fin[tgt.path], tgt) if tgt.changed else None
                    results.append(tgt.result(estimated_bytes=est))
                return RepackResult(src, dst, time.perf_counter() - t0, True, threads, buffer_bytes,
                                    in_bytes, None, tuple(sorted(results, key=lambda r: r.path)))
            if memory_bytes is not None and memory_strict:
                _check_memory(fin, rp.targets.values(), int(memory_bytes), threads, buffer_bytes)
            remove_stale_temps(dst, keep=(src,))
            _check_free_space(dst, _needed_bytes(in_bytes, rp.targets.values(), fin, getattr(planner, "budget", None),
                                                 threads) + _METADATA_SLACK)
            if progress is not None:
                progress("start", rp.total_bytes())
            fout = _create_output(tmp, fin, file_space)
            rp.dst = fout
            try:
                rp.run()
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        userblock = fin.id.get_create_plist().get_userblock()
        fout.close()
        fout = None
        _copy_userblock(src, tmp, userblock)
        read_back_notes = verify_written(fin, tmp, rp.targets.values(), partial=only is not None, threads=threads)  # raises on a difference
        os.replace(tmp, dst)
        done = True
        by_path = {r.path: r for r in rp.results}
        # datasets reached only through a link to an already copied object
        for tgt in rp.targets.values():
            by_path.setdefault(tgt.path, tgt.result(new_stored_bytes=None))
        counts = rp.ref_counts
        notes = list(read_back_notes) + list(page_size_notes(file_space, in_bytes, os.path.getsize(dst)))
        if counts.remapped or counts.nulled or counts.not_remapped:
            notes.append(f"references: {counts.remapped} pointed at the copied objects"
                         + (f", {counts.nulled} to objects not in the output made null" if counts.nulled else "")
                         + (f", {counts.not_remapped} of HDF5 1.12's new kind copied as HDF5 copies them"
                            if counts.not_remapped else ""))
        return RepackResult(src, dst, time.perf_counter() - t0, False, threads, buffer_bytes, in_bytes,
                            os.path.getsize(dst), tuple(sorted(by_path.values(), key=lambda r: r.path)),
                            tuple(notes), peak_rss(), memory_bytes)
    except Exception as exc:
        if low.is_enospc(exc):
            raise CcpError(f"OUT {dst}: no space left on the device while writing; nothing written") from None
        raise
    finally:
        if fout is not None:
            try:
                fout.close()
            except Exception:  # closing a half-written file on a full disk fails too: it goes anyway
                pass
        if planner is not None:
            planner.close()
        fin.close()
        if not done and os.path.exists(tmp):
            os.unlink(tmp)


def repack_dataset(src_path, dset_path: str, dst_path, chunks: tuple | None, filters: FilterPipeline | str | None,
                   deflate: str = "auto") -> float:
    """Write ``dst_path`` holding only ``dset_path`` (same path, with its attributes) laid out as
    ``chunks`` (None: contiguous) with ``filters`` (a ccp spec such as ``"shuffle+gzip:6"``;
    ``"none"``: no filters). Returns the seconds taken. For the sweep engine."""
    path = normalise_path(dset_path)
    layout = CONTIGUOUS if chunks is None else as_layout(tuple(int(c) for c in chunks), "chunks")
    if isinstance(filters, FilterPipeline):     # the sweep's own pipeline: no round trip through its spec
        check_available(filters, "filters")
        pipeline: FilterPipeline | None = filters
    else:
        pipeline = parse_filters(filters, "filters") if filters is not None else None
    flt = {path: pipeline} if pipeline is not None else {}
    t0 = time.perf_counter()
    res = repack(src_path, dst_path, {path: layout}, flt, only=[path], deflate=deflate)
    # an unchanged dataset is still copied (H5Ocopy): the file holds it either way
    return res.seconds if res.seconds else time.perf_counter() - t0


__all__ = ["DatasetResult", "RepackResult", "describe", "remove_stale_temps", "repack", "repack_dataset"]
