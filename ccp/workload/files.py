"""Work files: one real HDF5 file per distinct layout, made once and reused across cells and runs."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from ccp.errors import CcpError
from ccp.units import shape_str

SLAB_BYTES = 32 * 1024 * 1024   # write whole-chunk slabs of about this size (seed 003's buffer)


def layout_key(source, dataset_path: str, chunks, filters) -> str:
    text = "|".join([source.identity, dataset_path, shape_str(chunks), filters.spec, str(source.maxshape),
                     str(source.fillvalue), np.dtype(source.dtype).str])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def layout_path(work_dir, sweep, source, chunks, filters) -> Path:
    """Where the work file of a layout lives (named by layout, so runs and workers reuse it)."""
    return Path(work_dir) / f"{sweep.name}-{layout_key(source, sweep.dataset.path, chunks, filters)}.h5"


def create_dataset(fid, path: str, source, chunks, filters, shape=None):
    """Create the dataset (and its parent groups) empty, in the given layout. Returns a DatasetID."""
    from h5py import h5d, h5p, h5s

    from ccp.hdf5 import plists

    shape = tuple(source.shape if shape is None else shape)
    maxshape = tuple(h5s.UNLIMITED if m is None else m for m in source.maxshape)
    space = h5s.create_simple(shape, maxshape)
    lcpl = h5p.create(h5p.LINK_CREATE)
    lcpl.set_create_intermediate_group(True)
    return h5d.create(fid, path.encode(), source.file_type(), space, dcpl=plists.dcpl(source, chunks, filters), lcpl=lcpl)


def slab_plan(shape, chunks, itemsize: int):
    """Slabs along dim 0 made of whole chunk rows, about SLAB_BYTES each: (start, count) pairs."""
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * itemsize
    step = chunks[0] if chunks is not None else 1
    rows = max(step, (SLAB_BYTES // max(1, row_bytes)) // step * step)
    for r in range(0, shape[0], rows):
        n = min(rows, shape[0] - r)
        yield (r, *([0] * (len(shape) - 1))), (n, *shape[1:])


def check_disk(folder: Path, needed: int, what: str) -> None:
    from ccp.store.disk import check_free  # one margin rule for every disk check (5% + 1 MiB)

    folder.mkdir(parents=True, exist_ok=True)
    check_free(folder, needed, what)


def write_layout_file(out: Path, source, data, dataset_path: str, chunks, filters, written_by=None) -> float:
    """Write ``data`` (a Generator or DatasetReader) to a new file in this layout; returns seconds."""
    import h5py
    from h5py import h5f, h5p, h5s

    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    t0 = time.perf_counter()
    try:
        fapl = h5p.create(h5p.FILE_ACCESS)
        fapl.set_libver_bounds(h5f.LIBVER_EARLIEST, h5f.LIBVER_LATEST)
        fid = h5f.create(str(tmp).encode(), h5f.ACC_TRUNC, fapl=fapl)
        try:
            ds = create_dataset(fid, dataset_path, source, chunks, filters)
            fspace = ds.get_space()
            mtype = source.memory_type()
            release = getattr(data, "release", None)
            if written_by is not None:      # the user's write pattern: chunks are allocated in this order
                from ccp.workload.requests import tile_requests
                plan = tile_requests(source.shape, written_by)
                pieces = [(tuple(map(int, s)), tuple(map(int, c))) for s, c in zip(plan.starts, plan.counts)]
            else:
                pieces = slab_plan(source.shape, chunks, np.dtype(source.dtype).itemsize)
            for start, count in pieces:
                block = data.read(start, count)
                fspace.select_hyperslab(start, count)
                mspace = h5s.create_simple(count)
                ds.write(mspace, fspace, block, mtype)
                if release is not None:
                    release(mspace, block)
            ds.close() if hasattr(ds, "close") else None
            del ds
        finally:
            fid.close()
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _ = h5py
    return time.perf_counter() - t0


def link_dataset_path(work_file: Path, dataset_path: str) -> None:
    """Make ``dataset_path`` open the work file's one dataset (a soft link) when the copy put it elsewhere."""
    import h5py

    with h5py.File(work_file, "r+") as f:
        if isinstance(f.get(dataset_path), h5py.Dataset):
            return
        found = []
        f.visititems(lambda n, o: found.append("/" + n) if isinstance(o, h5py.Dataset) else None)
        if len(found) != 1:
            raise CcpError(f"work file {work_file}: expected one dataset for {dataset_path}, found {len(found)}")
        if dataset_path.rstrip("/").rsplit("/", 1)[0]:
            f.require_group(dataset_path.rstrip("/").rsplit("/", 1)[0])
        f[dataset_path] = h5py.SoftLink(found[0])


def ensure_layout_file(work_dir: Path, sweep, source, chunks, filters) -> tuple[Path, float]:
    """The work file for a layout, made if missing. Returns (path, seconds spent making it; 0 if reused)."""
    from ccp.workload.datagen import Generator

    work_dir = Path(work_dir)
    out = layout_path(work_dir, sweep, source, chunks, filters)
    meta = out.with_name(out.name + ".json")
    if out.exists():
        seconds = json.loads(meta.read_text()).get("seconds", 0.0) if meta.exists() else 0.0
        return out, seconds
    logical = int(np.prod(source.shape, dtype=np.int64)) * np.dtype(source.dtype).itemsize
    check_disk(work_dir, logical, f"the work file for chunks {shape_str(chunks)} / {filters.spec}")
    if sweep.dataset.generate is not None:
        g = sweep.dataset.generate
        return out, write_layout_file(out, source, Generator(g), sweep.dataset.path, chunks, filters, g.written_by)
    # the user's data in this cell's layout, made by ccp repack (seed 003's chunk-aligned copy); its
    # time is the cell's repack_s (seed 000's Tables 4 and 8)
    from ccp.repack import repack_dataset

    # the object itself, links resolved (a soft or external link copies as nothing, or as its target's
    # name); the work file then links the sweep's path to it, so every cell opens the same path
    src_file = getattr(source, "file", None) or sweep.dataset.file
    src_path = getattr(source, "path", None) or sweep.dataset.path
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    by = "ccp repack"
    try:
        seconds = repack_dataset(src_file, src_path, tmp, chunks, filters)
        link_dataset_path(tmp, sweep.dataset.path)
        os.replace(tmp, out)
    except (CcpError, KeyboardInterrupt, MemoryError):
        tmp.unlink(missing_ok=True)
        raise
    except Exception as exc:   # one odd object elsewhere in the file must not cost this dataset
        # the copy of the whole object failed (e.g. on an attribute or another object numpy cannot
        # hold); this dataset's values alone, in the file's own type, are all a cell reads
        tmp.unlink(missing_ok=True)
        import h5py

        from ccp.workload.datagen import DatasetReader

        with h5py.File(src_file, "r") as f:
            seconds = write_layout_file(out, source, DatasetReader(f[src_path], source), sweep.dataset.path, chunks, filters)
        by = f"ccp sweep copy of the values (ccp repack failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    meta.write_text(json.dumps({"seconds": seconds, "from": str(sweep.dataset.file), "by": by}))
    return out, seconds
