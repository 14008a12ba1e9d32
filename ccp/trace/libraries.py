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

from ccp.units import format_bytes
from ccp.workload.tracefile import Trace

KNOWN = ("xarray", "netCDF4", "h5netcdf", "fsspec", "s3fs", "tables", "pandas")
_IMPORT = re.compile(r"^\s*(?:import|from)\s+(" + "|".join(KNOWN) + r")\b", re.M)
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
    if any(not is_local_path(str(f)) for f in trace.table["file"].dropna().unique()):
        libs.add("fsspec")
    for arg in h.get("command") or []:
        if isinstance(arg, str) and arg.endswith(".py") and os.path.isfile(arg):
            try:
                with open(arg, encoding="utf-8", errors="replace") as f:
                    libs |= set(_IMPORT.findall(f.read(SOURCE_BYTES)))
            except OSError:
                pass
    return tuple(sorted(libs))


def open_expr(file: str) -> str:
    """The first argument of ``h5py.File(...)`` in cure code: the quoted path, or the file object."""
    if is_local_path(file):
        return f'"{file}"'
    url = re.search(r"[a-z][a-z0-9+.-]*://[^\s'\">,]+", file)
    return f'fs.open("{url.group(0)}")' if url else "fileobj   # the file object your program opened"


def cache_code(file: str, dataset: str, nbytes: int, nslots: int, libs, keep_open: bool) -> str:
    """A chunk cache of ``nbytes`` in the words of the library the program used."""
    tail = "   # once, before the loop" if keep_open else ""
    if "netCDF4" in libs:
        var = dataset.strip("/").split("/")[-1]
        return (f'v = nc.variables["{var}"]{tail}\n'
                f"v.set_var_chunk_cache(size={nbytes}, nelems={nslots}, preemption=0.75)")
    if "xarray" in libs:
        return (f'xr.open_dataset(path, engine="h5netcdf", driver_kwds={{"rdcc_nbytes": {nbytes}, "rdcc_nslots": {nslots}}})'
                f"{tail}\n# or read the cells once: da = ds[...].load()")
    code = f'f = h5py.File({open_expr(file)}, "r", rdcc_nbytes={nbytes}, rdcc_nslots={nslots})'
    return code + tail if "#" not in code else code


def keep_open_code(file: str, dataset: str, libs) -> str:
    if "netCDF4" in libs:
        var = dataset.strip("/").split("/")[-1]
        return (f'nc = netCDF4.Dataset("{file}")       # once, before the loop\n'
                f'v = nc.variables["{var}"]               # once; use v[...] inside the loop')
    if "xarray" in libs:
        return ('ds = xr.open_dataset(path)   # once, before the loop; select from ds inside it\n'
                f'da = ds["{dataset.strip("/").split("/")[-1]}"].load()   # or keep the cells in memory')
    return (f'f = h5py.File({open_expr(file)}, "r")      # once, before the loop\n'
            f'dset = f["{dataset}"]             # once; use dset[...] inside the loop')


def batched_code(dataset: str, lo, hi, nbytes: int, libs) -> str:
    """Read the box the reads fall in once, then index it in memory."""
    sl = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
    var = dataset.strip("/").split("/")[-1]
    if "xarray" in libs:
        dims = ", ".join(f"dim{d}=slice({a}, {b})" for d, (a, b) in enumerate(zip(lo, hi)))
        return (f'da = ds["{var}"].isel({dims}).load()   # {format_bytes(nbytes)} in memory, once; index da after\n'
                f'# or xr.open_dataset(path, chunks={{...}}) with the file\'s chunk shape, then .load() what you use\n'
                "# (dim0.. are the variable's dimensions in order)")
    if "netCDF4" in libs:
        return f'block = nc.variables["{var}"][{sl}]   # {format_bytes(nbytes)} in memory, once; index block after'
    return f'block = dset[{sl}]   # {format_bytes(nbytes)} in memory, once; index block after'
