"""After a traced run: what the recorders said about the libraries, and netCDF4 variables checked with h5py.

``trace.json``'s ``libraries`` lists the libraries of interest (h5py, netCDF4, xarray, h5netcdf, fsspec,
s3fs, tables, pandas) the traced processes had imported when they ended, as their recorders told
``ccp trace`` (a status line each; no disk space needed).

The recorder names a netCDF4 ``Variable`` by the HDF5 path netCDF-C gives it and describes its layout
from netCDF4's own API (:mod:`ccp.trace.netcdf`). Once the program has ended, each such entry of
``trace.json``'s ``datasets`` is checked with h5py, read-only: the path exists (``hdf5_path``: "found",
or why not), and the chunks, filters (as stored, with their ``cd_values``) and fill value are taken
from the file; not when the file's dataset has another rank than the program's variable (then it is not
that dataset: a file of that name made since, or an in-memory dataset named like it), where the
recorder's layout stays, with the reason in ``hdf5_path``. The stored size and shape are taken only for
a file the program opened read-only (a writer's variable started empty, as the recorder wrote it;
netCDF4.MFDataset gives its master file's variable the aggregated length). When the program imported
xarray, each dataset of a local file gets ``dims``, its dimension names (its dimension scales'), for
cure code in xarray's words.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py

from ccp.errors import CcpError
from ccp.hdf5.dataset import open_readonly
from ccp.trace.hdf5_types import vlen_info
from ccp.trace.selections import _layout

STATIC = ("chunks", "filters", "fill_value", "layout")


def check_layout(entry: dict) -> dict:
    """The entry checked with h5py: a new dict with ``hdf5_path`` set and the stored layout taken."""
    out = dict(entry)
    file, path = entry.get("file"), entry.get("dataset")
    if isinstance(file, str) and file.startswith("<in memory"):
        out["hdf5_path"] = "not checked: a dataset in memory (diskless or memory=), not a file"
        return out
    if not isinstance(file, str) or not os.path.isfile(file):
        out["hdf5_path"] = "not checked: the file is not there after the run"
        return out
    try:
        with open_readonly(Path(file)) as f:
            obj = f.get(path)
            if obj is None or not hasattr(obj, "id") or obj.__class__.__name__ != "Dataset":
                out["hdf5_path"] = f"not found: {file} holds no dataset {path}"
                return out
            stored = _layout(obj.id)
            shape = entry.get("shape")
            if isinstance(shape, list) and len(stored["shape"]) != len(shape):
                # not the dataset the program used (a file of that name made since, or not the one it read):
                # its layout would contradict the recorded shape; the recorder's own stays
                out["hdf5_path"] = (f"not checked: {file}'s {path} has shape {stored['shape']}, the program's "
                                    f"variable {shape}: not the dataset the program used; its layout left out")
                return out
            vlen, type_size = vlen_info(obj.id.get_type())
    except (CcpError, OSError) as exc:
        out["hdf5_path"] = f"not checked: {exc}"
        return out
    out["hdf5_path"] = "found"
    if vlen:                # the stored type's size: netCDF4 calls a ragged array by its element type
        out.update(vlen=True, itemsize=type_size)
    for key in STATIC:
        out[key] = stored[key]
    if entry.get("mode", "r") == "r":
        if out.get("storage_size") is None:
            out["storage_size"] = stored["storage_size"]
        out["shape"] = stored["shape"]
    return out


def dimension_names(entry: dict) -> list[str] | None:
    """The dataset's dimension names as xarray calls them (the basenames of its attached dimension scales, as
    netCDF-C and h5netcdf write them), read-only; None when the file is gone or a dimension has no scale."""
    file, path = entry.get("file"), entry.get("dataset")
    if not isinstance(file, str) or not os.path.isfile(file):
        return None
    try:
        with open_readonly(Path(file)) as f:
            obj = f.get(path)
            if obj is None or obj.__class__.__name__ != "Dataset":
                return None
            if obj.ndim == 1 and h5py.h5ds.is_scale(obj.id):   # a coordinate variable: its dimension is its name
                return [obj.name.rsplit("/", 1)[-1].removeprefix("_nc4_non_coord_")]
            names = []
            for dim in obj.dims:
                if not len(dim):
                    return None
                names.append(dim[0].name.rsplit("/", 1)[-1].removeprefix("_nc4_non_coord_"))
            return names
    except (CcpError, OSError, RuntimeError, ValueError):
        return None


def imported_libraries(status_lines) -> list[str]:
    """The libraries the recorders reported (``pid<TAB>modules<TAB>a,b,...`` lines), sorted."""
    libs: set[str] = set()
    for line in status_lines or []:
        if len(line) > 2 and line[1] == "modules":
            libs |= {x for x in line[2].split(",") if x}
    return sorted(libs)


def annotate(trace_dir, libraries=()) -> dict:
    """Add ``libraries`` and check every netCDF4-recorded dataset of ``trace_dir/trace.json``, rewriting it
    atomically; returns the header. What could not be checked says why in the entry (``hdf5_path``)."""
    head = Path(trace_dir) / "trace.json"
    header = json.loads(head.read_text())
    datasets = header.get("datasets") or []
    todo = [i for i, d in enumerate(datasets) if isinstance(d, dict) and d.get("library") == "netCDF4"]
    if not todo and not libraries:
        return header
    for i in todo:
        datasets[i] = check_layout(datasets[i])
    if "xarray" in libraries:       # xarray cures name dimensions (isel(time=...)): the file's own names
        for d in datasets:
            if isinstance(d, dict) and d.get("shape") and (dims := dimension_names(d)):
                d["dims"] = dims
    if libraries:
        header["libraries"] = sorted(set(libraries) | set(header.get("libraries") or []))
    tmp = head.with_name(f"trace.json.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(header, indent=2, default=str))
    os.replace(tmp, head)
    return header
