"""What `h5ls -v` and `h5dump -H` say about chunked data, and the traps in it. Read-only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ccp.errors import CcpError
from ccp.predict.explain import chunk_traps as traps
from ccp.units import format_bytes, format_count, shape_str


def describe_dataset(dset) -> dict:
    """What h5ls -v / h5dump -H say about one dataset, from HDF5's own type and property lists.

    Works for every type HDF5 stores, numpy equivalent or not (128-bit floats, H5T_TIME, ...): the
    type is described from ``H5Tget_class``/``H5Tget_size``, sizes come from the file's type on disk.
    """
    from h5py import h5i

    from ccp.hdf5 import h5types
    from ccp.hdf5.dataset import dataset_info, netcdf_dimension_only
    from ccp.hdf5.filters import describe_filters

    dsid = dset.id
    dcpl = dsid.get_create_plist()
    ds = dataset_info(dsid)
    layout = ds.layout
    tid = dsid.get_type()
    dtype = h5types.numpy_dtype(tid)
    try:
        sizeof_addr = h5i.get_file_id(dsid).get_create_plist().get_sizes()[0]
    except (RuntimeError, ValueError, OSError):
        sizeof_addr = 8
    itemsize = h5types.disk_size(tid, sizeof_addr)
    shape = None if ds.extent == "null" else ds.shape
    maxshape = ds.maxshape
    nelems = int(np.prod(shape, dtype=np.int64)) if shape is not None else 0
    logical = nelems * itemsize
    storage = ds.storage_bytes
    chunks = ds.chunks
    chunk_bytes = int(np.prod(chunks)) * itemsize if chunks else 0
    nchunks_grid = int(np.prod([-(-s // c) for s, c in zip(shape, chunks)])) if chunks and shape is not None else 0
    allocated = ds.chunks_allocated
    order = {"<": "little-endian", ">": "big-endian", "|": "not applicable", "=": "native"}.get(dtype.byteorder, dtype.byteorder) \
        if dtype is not None else _order_word(tid)
    pipeline = ds.filters
    filters = describe_filters(pipeline)
    warnings = traps(chunk_bytes, pipeline)
    warnings += [f"filter {f['name']} (id {f['id']}) cannot be decoded here: it is provided by {f['provider']}"
                 for f in filters if not f["available"]]
    if dtype is None:
        warnings.append(f"numpy has no equivalent of its type ({h5types.describe_type(tid)}): h5py cannot read it "
                        f"as an array; ccp sweeps read it with the file type as memory type")
    dimension_only = netcdf_dimension_only(dset)
    if dimension_only:
        warnings.append(f"it {dimension_only}")
    external = _external_files(dcpl, dset.file.filename)
    info = {
        "external": external,
        "path": dset.name, "shape": list(shape) if shape is not None else None, "maxshape": list(maxshape),
        "dtype": dtype.str if dtype is not None else None, "type": h5types.describe_type(tid),
        "type_class": h5types.class_name(tid), "itemsize": itemsize,
        "byte_order": order, "layout": layout, "chunks": shape_str(chunks) if chunks else None,
        "chunk_bytes": chunk_bytes, "nchunks": nchunks_grid, "chunks_allocated": allocated,
        "filters": pipeline.spec, "filter_details": filters, "logical_bytes": logical, "storage_bytes": storage,
        "compression_ratio": logical / storage if storage else None,
        "fillvalue": _fill_description(dcpl, dtype, tid),
        "attributes": _attributes(dset),
        "warnings": warnings,
    }
    return info


def _order_word(tid) -> str:
    from h5py import h5t

    try:
        return {h5t.ORDER_LE: "little-endian", h5t.ORDER_BE: "big-endian"}.get(tid.get_order(), "not applicable")
    except (AttributeError, ValueError, RuntimeError):
        return "not applicable"


def _fill_description(dcpl, dtype, tid):
    """The fill value as a number (or tuple) when numpy holds the type; otherwise what HDF5 says about it."""
    from h5py import h5d

    state = dcpl.fill_value_defined()
    if state == h5d.FILL_VALUE_UNDEFINED:
        return "undefined (H5D_FILL_VALUE_UNDEFINED: unwritten parts cannot be read)"
    if dtype is None:
        return "library default (zeros)" if state == h5d.FILL_VALUE_DEFAULT else \
            "user-defined (its type has no numpy equivalent)"
    if dtype.kind == "O" or dtype.hasobject:
        return "library default" if state == h5d.FILL_VALUE_DEFAULT else "user-defined"
    try:
        buf = np.zeros((1,), dtype=dtype)
        dcpl.get_fill_value(buf)
    except (TypeError, ValueError, RuntimeError, OSError) as exc:
        return f"not readable as {dtype} ({str(exc).splitlines()[0]})"
    value = buf[0]
    return value.item() if hasattr(value, "item") and dtype.kind in "biufc" else repr(value.tolist() if hasattr(value, "tolist") else value)


def _attributes(obj) -> list[dict]:
    """Each attribute's name and type, from HDF5 (reading no values: an odd type costs nothing)."""
    from h5py import h5a

    from ccp.hdf5 import h5types

    out: list[dict] = []
    try:
        n = h5a.get_num_attrs(obj.id)
    except (RuntimeError, ValueError, OSError):
        return out
    for i in range(n):
        try:
            aid = h5a.open(obj.id, index=i)
            name = aid.name.decode(errors="replace") if isinstance(aid.name, bytes) else str(aid.name)
            shape = aid.shape
            out.append({"name": name, "type": h5types.describe_type(aid.get_type()),
                        "shape": list(shape) if shape is not None else None,
                        "numpy": h5types.numpy_dtype(aid.get_type()) is not None})
        except (RuntimeError, ValueError, TypeError, KeyError, OSError) as exc:
            out.append({"name": f"#{i}", "type": f"unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                        "shape": None, "numpy": False})
    return out


def inspect_file(path, dataset: str | None = None) -> list[dict]:
    """Every dataset of a file described (one that cannot be is listed with its reason), or one dataset."""
    import h5py

    from ccp.hdf5.dataset import dangling_link, open_readonly

    with open_readonly(Path(path)) as f:
        if dataset is not None:
            try:
                obj = f.get(dataset)
            except (KeyError, OSError, RuntimeError, ValueError) as exc:   # a dangling soft or external link
                raise CcpError(f"{path}: {dataset!r} cannot be opened: {_reason(exc)}") from None
            if obj is None and dangling_link(f, dataset):
                raise CcpError(f"{path}: {dataset!r} cannot be opened: it is {dangling_link(f, dataset)}")
            if obj is None:
                raise CcpError(f"{path}: no dataset {dataset!r}")
            if not isinstance(obj, h5py.Dataset):
                raise CcpError(f"{path}: {dataset!r} is a {type(obj).__name__.lower()}, not a dataset")
            try:
                return [describe_dataset(obj)]
            except Exception as exc:   # one line naming the dataset, never an internal error
                raise CcpError(f"{path}: {dataset!r} cannot be described: {_reason(exc)}") from None
        found = []

        def visit(name, obj) -> None:     # returns None: visititems goes on to the next object
            if not isinstance(obj, h5py.Dataset):
                return
            try:
                found.append(describe_dataset(obj))
            except Exception as exc:   # one odd object costs that object only
                found.append({"path": "/" + name, "error": _reason(exc)})

        f.visititems(visit)
        return found


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def format_info(info: dict) -> str:
    if "error" in info:
        return f"{info['path']}\n  NOT DESCRIBED  {info['error']}"
    shape = info["shape"]
    shape_text = "null dataspace (no elements)" if shape is None else (shape_str(shape) if shape else "scalar")
    dtype = f"{info['dtype']} ({info['byte_order']})" if info["dtype"] else f"no numpy equivalent ({info['byte_order']})"
    lines = [f"{info['path']}",
             f"  shape       {shape_text}" + (("   maxshape " + "x".join("Inf" if m is None else str(m) for m in info["maxshape"]))
                                             if info["maxshape"] else ""),
             f"  dtype       {dtype}",
             f"  type        {info['type']}",
             f"  layout      {info['layout']}" + _external_text(info.get("external") or []) + (f", chunks {info['chunks']} = {format_bytes(info['chunk_bytes'])} each, "
                                                    f"{format_count(info['chunks_allocated'])} of {format_count(info['nchunks'])} allocated"
                                                    if info["chunks"] else "")]
    details = info.get("filter_details") or []
    if details:
        lines.append(f"  filters     {info['filters']}")
        for fd in details:
            lines.append(f"              {fd['name']} (id {fd['id']}{', optional' if fd['optional'] else ''}) "
                         f"cd_values {fd['cd_values']}" + ("" if fd["available"] else f"; NOT AVAILABLE: needs {fd['provider']}"))
    else:
        lines.append("  filters     none")
    lines += [f"  storage     {format_bytes(info['storage_bytes'])} for {format_bytes(info['logical_bytes'])} logical"
              + (f" (ratio {info['compression_ratio']:.4g})" if info["compression_ratio"] else ""),
              f"  fill value  {info['fillvalue']}"]
    attrs = info.get("attributes") or []
    if attrs:
        shown = ", ".join(f"{a['name']} ({a['type']})" for a in attrs[:6])
        lines.append(f"  attributes  {len(attrs)}: {shown}{', ...' if len(attrs) > 6 else ''}")
    lines += [f"  WARNING     {w}" for w in info["warnings"]]
    return "\n".join(lines)


def _external_files(dcpl, hdf5_file: str) -> list[dict]:
    """A dataset's external storage (``H5Pset_external``): each file, its offset and size, and whether it is found
    beside the HDF5 file or from here (HDF5 looks relative to the working folder unless a prefix is set)."""
    import os

    out = []
    for i in range(dcpl.get_external_count()):
        name, offset, size = dcpl.get_external(i)
        name = os.fsdecode(name)
        found = any(os.path.exists(p) for p in (name, os.path.join(os.path.dirname(hdf5_file), name)))
        out.append({"file": name, "offset": int(offset), "size": int(size), "found": found})
    return out


def _external_text(external: list[dict]) -> str:
    if not external:
        return ""
    names = ", ".join(e["file"] + ("" if e["found"] else " (not found)") for e in external)
    return f", stored in external file{'s' if len(external) > 1 else ''} {names}"
