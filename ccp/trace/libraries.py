"""Which libraries a traced program read HDF5 through, and cure code in their words.

A cure is code the user pastes: an xarray reader wants ``.load()`` or ``chunks=``, a netCDF4 reader
``set_var_chunk_cache``, an h5py reader ``rdcc_nbytes=``; a file opened through fsspec is a file object
(never print its repr as a path). What the trace says is used first (``trace.json``'s ``libraries`` or
``environment`` when the recorder writes them, netCDF4 ``Variable`` calls, file names that are not local
paths); then the program's own source (the ``.py`` file its command ran), for imports.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ccp.hdf5.dataset import NETCDF_NON_COORD as NON_COORD
from ccp.units import format_bytes, shape_str
from ccp.workload.tracefile import Trace

KNOWN = ("xarray", "netCDF4", "h5netcdf", "fsspec", "s3fs", "tables", "pandas")
_IMPORT = re.compile(r"^\s*(?:from\s+(" + "|".join(KNOWN) + r")\b|import\s+(.+))", re.M)
SOURCE_BYTES = 1 << 20


def is_local_path(file: str) -> bool:
    return os.path.isabs(file) and "://" not in file and not file.startswith("<")


def program_libraries(trace: Trace) -> tuple[str, ...]:
    """The libraries (of :data:`KNOWN`) the program used to reach HDF5, sorted."""
    libs: set[str] = set()
    h = trace.header
    for key in ("libraries", "modules"):
        v = h.get(key)
        if isinstance(v, (dict, list)):
            libs |= {str(x) for x in v} & set(KNOWN)
    env = h.get("environment")
    if isinstance(env, dict):
        libs |= {k for k in KNOWN if env.get(k)}
    apis = [str(a) for a in trace.table["api"].dropna().unique()]
    if any(a.startswith("Variable") or "netCDF4" in a for a in apis):
        libs.add("netCDF4")
    if any("://" in str(f) for f in trace.table["file"].dropna().unique()):     # a URL: an fsspec file object
        libs.add("fsspec")
    for arg in h.get("command") or []:
        if isinstance(arg, str) and arg.endswith(".py") and os.path.isfile(arg):
            try:
                with open(arg, encoding="utf-8", errors="replace") as f:
                    for frm, names in _IMPORT.findall(f.read(SOURCE_BYTES)):   # import a, b as c / from a import
                        libs |= {frm} if frm else {n.split()[0].split(".")[0] for n in names.split(",") if n.strip()}
            except OSError:
                pass
    if isinstance(h.get("libraries"), list) and not {"h5netcdf", "netCDF4"} & libs:
        # the recorder's list is what was imported, not what read: xarray reads HDF5 only through h5netcdf or
        # netCDF4, so with neither loaded its calls were not xarray's (dask.array.from_array on an h5py dataset
        # pulls xarray in, tester breaker3 F-dask-xarray, and got .isel().load() cures for h5py calls)
        libs.discard("xarray")
    return tuple(sorted(libs & set(KNOWN)))


def program_source_calls(trace: Trace, name: str) -> bool:
    """Whether the program's own source (the ``.py`` files of its command) calls ``name`` (e.g. ``open_mfdataset``)."""
    return program_source_matches(trace, rf"\b{re.escape(name)}\s*\(")


def program_source_matches(trace: Trace, pattern: str) -> bool:
    """Whether the program's own source (the ``.py`` files of its command) matches the regular expression ``pattern``.
    The trace does not record the folder it ran in: a relative ``.py`` is looked for here and beside its files."""
    folders = {""} | {os.path.dirname(str(f.get("path"))) for f in trace.header.get("files") or []
                      if isinstance(f, dict) and os.path.isabs(str(f.get("path")))}
    args = [os.path.join(d, a) for a in trace.header.get("command") or [] if isinstance(a, str) and a.endswith(".py")
            for d in sorted(folders) if d == "" or not os.path.isabs(a)]
    for arg in dict.fromkeys(args):
        if os.path.isfile(arg):
            try:
                with open(arg, encoding="utf-8", errors="replace") as f:
                    if re.search(pattern, f.read(SOURCE_BYTES)):
                        return True
            except OSError:
                pass
    return False


def is_netcdf4_file(file: str) -> bool | None:
    """Whether a local HDF5 file is a netCDF-4 file (netCDF-C's _NCProperties, or dimension scales at its root,
    as netCDF-C and h5netcdf write them); None when it cannot be opened. Opened read-only."""
    try:
        import h5py

        with h5py.File(file, "r") as f:
            if "_NCProperties" in f.attrs:
                return True
            for name in list(f.keys())[:1000]:
                cls = f[name].attrs.get("CLASS") if isinstance(f.get(name, getlink=True), h5py.HardLink) else None
                if cls in (b"DIMENSION_SCALE", "DIMENSION_SCALE"):
                    return True
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return None


def untraced_note(header: dict) -> str | None:
    """One line when the program imported a library whose HDF5 reads ccp does not trace (PyTables, which pandas'
    HDFStore reads through: it calls HDF5 from its own C extension), from ``trace.json``'s ``libraries``."""
    libs = header.get("libraries")
    if not isinstance(libs, list) or "tables" not in libs:
        return None
    return ("the program imported PyTables (tables; pandas' HDFStore reads through it): its HDF5 reads are not "
            "traced (PyTables calls HDF5 from its own C extension), so this trace leaves them out")


def not_hdf5_note(trace_dir) -> str | None:
    """One line naming the files the program opened through netCDF4-python that are not HDF5 (netCDF-3, CDF5: their
    opens are recorded with the reason, their calls are not), from ``calls.parquet``'s ``file_open`` events."""
    import pandas as pd

    try:
        t = pd.read_parquet(Path(trace_dir) / "calls.parquet", columns=["op", "file", "reason"],
                            filters=[("op", "==", "file_open")])
    except (OSError, ValueError, KeyError):
        return None
    reasons = t["reason"].astype("string").fillna("")
    other = reasons.str.contains("not an HDF5 file").fillna(False).to_numpy(bool)
    files = dict(zip(t["file"][other], reasons[other]))
    if not files:
        return None
    named = ", ".join(f"{f} ({str(r).split(' ', 1)[0]})" for f, r in sorted(files.items()))
    return (f"the program opened {len(files)} netCDF file(s) that are not HDF5: {named}; their calls are not in the "
            "trace (netCDF-3 and CDF5 have no chunks or chunk cache: nothing for ccp to diagnose there)")


def dataset_libraries(trace: Trace, libs, file: str, dataset: str) -> tuple[str, ...]:
    """The libraries whose words fit one dataset's cures: in a trace whose recorder said which library reached
    each dataset (``libraries`` in the header), netCDF4's only for a variable netCDF4 read or wrote."""
    if "libraries" not in trace.header:       # an older trace: the program's libraries, as before
        return tuple(libs)
    via_netcdf = (trace.layout(file, dataset) or {}).get("library") == "netCDF4"
    return tuple(sorted((set(libs) - {"netCDF4"}) | ({"netCDF4"} if via_netcdf else set())))


def open_expr(file: str) -> str:
    """The first argument of ``h5py.File(...)`` in cure code: the quoted path, the fsspec open, or ``fileobj`` (a file
    object with no path, such as a BytesIO: :func:`with_comment` says what it stands for)."""
    if is_local_path(file):
        return f'"{file}"'
    if re.match(r"[a-z][a-z0-9+.-]*::[a-z][a-z0-9+.-]*://\S+$", file):     # a chained URL: simplecache::s3://...
        return f'fsspec.open("{file}", "rb").open()'
    url = re.search(r"[a-z][a-z0-9+.-]*://[^\s'\">,]+", file)
    return f'fs.open("{url.group(0)}")' if url else "fileobj"


def with_comment(code: str, comment: str, file: str) -> str:
    """``code`` with ``comment`` after it, and after that what ``fileobj`` stands for when the line names it: the
    comment ends the line, so the code still parses."""
    notes = [comment.strip()] if comment.strip() else []
    if open_expr(file) == "fileobj":
        notes.append("fileobj: the file object your program opened")
    return code + ("   # " + "; ".join(notes) if notes else "")


def nc_var(dataset: str) -> str:
    """The netCDF4 expression for the variable stored at HDF5 path ``dataset`` (``nc["group/name"]``)."""
    parts = dataset.strip("/").split("/")
    parts[-1] = parts[-1].removeprefix(NON_COORD)
    return f'nc["{"/".join(parts)}"]'


def nc_name(dataset: str) -> str:
    return dataset.strip("/").split("/")[-1].removeprefix(NON_COORD)


def cache_code(file: str, dataset: str, nbytes: int, nslots: int, libs, keep_open: bool) -> str:
    """A chunk cache of ``nbytes`` in the words of the library the program used."""
    tail = "   # once, before the loop" if keep_open else ""
    if "netCDF4" in libs and "xarray" in libs:      # xarray's netcdf4 engine: netCDF-C's cache for every variable
        return (f"netCDF4.set_chunk_cache(size={nbytes}, nelems={nslots}, preemption=0.75)   # before "
                'xr.open_dataset(path, engine="netcdf4")\n# or read the cells once: da = ds[...].load()')
    if "netCDF4" in libs:
        return (f"v = {nc_var(dataset)}{tail}\n"
                f"v.set_var_chunk_cache(size={nbytes}, nelems={nslots}, preemption=0.75)\n"
                f"# or for every variable, before netCDF4.Dataset(...): "
                f"netCDF4.set_chunk_cache(size={nbytes}, nelems={nslots}, preemption=0.75)")
    if "xarray" in libs:
        return (f'xr.open_dataset(path{xr_group(dataset)}, engine="h5netcdf", '
                f'driver_kwds={{"rdcc_nbytes": {nbytes}, "rdcc_nslots": {nslots}}})'
                f"{tail}\n# or read the cells once: da = ds[...].load()")
    return with_comment(f'f = h5py.File({open_expr(file)}, "r", rdcc_nbytes={nbytes}, rdcc_nslots={nslots})',
                        "once, before the loop" if keep_open else "", file)


def write_cache_code(file: str, dataset: str, nbytes: int, nslots: int, libs) -> str:
    """A chunk cache for a writer, in its library's words."""
    if "netCDF4" in libs:
        return (f"{nc_var(dataset)}.set_var_chunk_cache(size={nbytes}, nelems={nslots}, preemption=0.75)   # before "
                f"the writes\n# or before netCDF4.Dataset(...): netCDF4.set_chunk_cache(size={nbytes}, nelems={nslots})")
    return with_comment(f'f = h5py.File({open_expr(file)}, "a", rdcc_nbytes={nbytes}, rdcc_nslots={nslots})', "", file)


def create_chunks_code(dataset: str, chunks, libs) -> str:
    """Create the dataset with ``chunks``, in the writer's library's words."""
    if "netCDF4" in libs:
        return (f'nc.createVariable("{nc_name(dataset)}", ..., chunksizes={tuple(int(c) for c in chunks)})'
                "   # with your other options")
    return f"f.create_dataset(..., chunks={tuple(int(c) for c in chunks)}, maxshape=...)   # with your other options"


def whole_chunks_write_code(dataset: str, chunks, libs, box=None, fill: int | None = None) -> str:
    """Buffer the program's writes (of ``box``, ``fill`` of them to a chunk) into whole chunks, then write each once."""
    target = nc_var(dataset) if "netCDF4" in libs else "dset"
    what = (f"the {fill} writes of {shape_str(tuple(box))} that fill one {shape_str(tuple(chunks))} block" if box and fill
            else f"one {shape_str(tuple(chunks))} block")
    return (f"buf[...] = piece   # collect {what} in memory\n"
            f"{target}[i0:i0 + {chunks[0]}] = buf   # then write the block at once")


def repack_code(file: str, dataset: str, chunks, output: str, libs) -> str:
    """``ccp repack`` to ``chunks``; for a netCDF file also netCDF-C's own copy (``nccopy -c``)."""
    spec = "x".join(str(int(c)) for c in chunks)
    code = f"ccp repack -l {dataset}:CHUNK={spec} {file} {output}"
    netcdf = is_netcdf4_file(file) if is_local_path(file) and os.path.isfile(file) else None
    if netcdf is None:      # gone or unreadable: the library or the name says
        netcdf = bool({"netCDF4", "h5netcdf", "xarray"} & set(libs) or file.endswith((".nc", ".nc4")))
    if is_local_path(file) and netcdf:      # nccopy copies netCDF-4 files only
        parts = dataset.strip("/").split("/")
        var = "/".join(parts[:-1] + [parts[-1].removeprefix(NON_COORD)])
        code += (f"\nnccopy -k nc4 -c {var}:{','.join(str(int(c)) for c in chunks)} {file} {output}"
                 "   # or netCDF-C's own copy (keeps unlimited dimensions)")
    return code


def xr_group(dataset: str) -> str:
    """``, group="grp"`` for an xarray open of a variable in a netCDF group ("" at the root): without it the
    dataset xarray opens has no such variable."""
    group = "/".join(dataset.strip("/").split("/")[:-1])
    return f', group="{group}"' if group else ""


def keep_open_code(file: str, dataset: str, libs) -> str:
    if "netCDF4" in libs and "xarray" not in libs:
        return (f'nc = netCDF4.Dataset("{file}")       # once, before the loop\n'
                f'v = {nc_var(dataset)}               # once; use v[...] inside the loop')
    if "xarray" in libs:        # xarray keeps the file open itself; its selections reach the variable afresh
        opened = f'; ds = xr.open_dataset(path{xr_group(dataset)})' if xr_group(dataset) else ""
        return (f'da = ds["{dataset.strip("/").split("/")[-1]}"].load()   # once, before the loop; select from da '
                f"inside it (da.isel(...)){opened}")
    return (with_comment(f'f = h5py.File({open_expr(file)}, "r")', "once, before the loop", file) + "\n"
            f'dset = f["{dataset}"]             # once; use dset[...] inside the loop')


def batched_code(dataset: str, lo, hi, nbytes: int, libs, dims=None, chunks=None) -> str:
    """Read the box the reads fall in once, then index it in memory; for xarray in the variable's dimension names
    (``dims``, from the file: :func:`ccp.trace.after_run.dimension_names`)."""
    sl = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
    var = dataset.strip("/").split("/")[-1]
    if "xarray" in libs:
        named = bool(dims) and len(dims) == len(lo)
        # without the file's dimension names (a file read through a file object), positional indexing: an
        # isel(dim0=...) made-up name is rejected by xarray
        box = (".isel(" + ", ".join(f"{n}=slice({a}, {b})" for n, a, b in zip(dims, lo, hi)) + ")" if named
               else f"[{sl}]")
        by_chunk = ("{" + ", ".join(f'"{n}": {int(c)}' for n, c in zip(dims, chunks)) + "}" if named and chunks and
                    len(chunks) == len(lo) else shape_str(tuple(chunks)) if chunks else "...")
        group = xr_group(dataset)
        opened = f"; ds = xr.open_dataset(path{group})" if group else ""
        # chunks={...} would apply to every variable of the file, splitting the stored chunks of any stored otherwise;
        # chunks={} gives each variable its own stored chunks
        return (f'da = ds["{var}"]{box}.load()   # {format_bytes(nbytes)} in memory, once; index da after{opened}\n'
                f"# or open once in each variable's stored chunks (for {var}: {by_chunk}), then .load() what you "
                f"use: xr.open_dataset(path{group}, chunks={{}})")
    if "netCDF4" in libs:
        return f'block = {nc_var(dataset)}[{sl}]   # {format_bytes(nbytes)} in memory, once; index block after'
    return f'block = dset[{sl}]   # {format_bytes(nbytes)} in memory, once; index block after'
