"""What `h5ls -v` and `h5dump -H` say about chunked data, and the traps in it. Read-only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ccp.config.filters import pipeline_from_dcpl
from ccp.errors import CcpError
from ccp.units import format_bytes, format_count, shape_str

HDF5_1X_DEFAULT_CACHE = 1024 * 1024
HDF5_2X_DEFAULT_CACHE = 8 * 1024 * 1024


def describe_dataset(dset) -> dict:
    from h5py import h5d

    dcpl = dset.id.get_create_plist()
    layout = {h5d.CONTIGUOUS: "contiguous", h5d.CHUNKED: "chunked", h5d.COMPACT: "compact"}.get(dcpl.get_layout(), "other")
    dtype = dset.dtype
    logical = int(np.prod(dset.shape, dtype=np.int64)) * dtype.itemsize if dset.shape else dtype.itemsize
    storage = dset.id.get_storage_size()
    chunk_bytes = int(np.prod(dset.chunks)) * dtype.itemsize if dset.chunks else 0
    nchunks_grid = int(np.prod([-(-s // c) for s, c in zip(dset.shape, dset.chunks)])) if dset.chunks else 0
    allocated = dset.id.get_num_chunks() if dset.chunks else None
    order = {"<": "little-endian", ">": "big-endian", "|": "not applicable", "=": "native"}.get(dtype.byteorder, dtype.byteorder)
    fill = dset.fillvalue
    info = {
        "path": dset.name, "shape": list(dset.shape or ()), "maxshape": [m for m in (dset.maxshape or ())],
        "dtype": dtype.str, "byte_order": order, "layout": layout, "chunks": shape_str(dset.chunks) if dset.chunks else None,
        "chunk_bytes": chunk_bytes, "nchunks": nchunks_grid, "chunks_allocated": allocated,
        "filters": pipeline_from_dcpl(dcpl).spec, "logical_bytes": logical, "storage_bytes": storage,
        "compression_ratio": logical / storage if storage else None,
        "fillvalue": fill.item() if hasattr(fill, "item") else fill,
        "warnings": traps(chunk_bytes, pipeline_from_dcpl(dcpl)),
    }
    return info


def traps(chunk_bytes: int, filters, cache_nbytes: int | None = None) -> list[str]:
    out = []
    if not chunk_bytes:
        return out
    if cache_nbytes is not None and chunk_bytes > cache_nbytes:
        out.append(f"a chunk ({format_bytes(chunk_bytes)}) is larger than the chunk cache ({format_bytes(cache_nbytes)}): "
                   + ("every partial read decompresses the whole chunk again" if not filters.is_none else
                      "partial reads bypass the cache and go to the file"))
    elif cache_nbytes is None:
        if chunk_bytes > HDF5_2X_DEFAULT_CACHE:
            out.append(f"a chunk ({format_bytes(chunk_bytes)}) is larger than HDF5's default chunk cache in every version "
                       f"(1 MiB in 1.x, 8 MiB in 2.0): readers that read less than a chunk at a time pay for the whole chunk each time")
        elif chunk_bytes > HDF5_1X_DEFAULT_CACHE:
            out.append(f"a chunk ({format_bytes(chunk_bytes)}) is larger than HDF5 1.x's default chunk cache (1 MiB) "
                       f"though it fits HDF5 2.0's (8 MiB): the same reader can be fast or very slow depending on the library version")
    return out


def inspect_file(path, dataset: str | None = None) -> list[dict]:
    import h5py

    from ccp.workload.source import open_readonly

    with open_readonly(Path(path)) as f:
        if dataset is not None:
            obj = f.get(dataset)
            if obj is None or not isinstance(obj, h5py.Dataset):
                raise CcpError(f"{path}: no dataset {dataset!r}")
            return [describe_dataset(obj)]
        found = []
        f.visititems(lambda name, o: found.append(describe_dataset(o)) if isinstance(o, h5py.Dataset) else None)
        return found


def format_info(info: dict) -> str:
    lines = [f"{info['path']}",
             f"  shape       {shape_str(info['shape']) if info['shape'] else 'scalar'}   maxshape "
             + "x".join("Inf" if m is None else str(m) for m in info["maxshape"]),
             f"  dtype       {info['dtype']} ({info['byte_order']})",
             f"  layout      {info['layout']}" + (f", chunks {info['chunks']} = {format_bytes(info['chunk_bytes'])} each, "
                                                    f"{format_count(info['chunks_allocated'])} of {format_count(info['nchunks'])} allocated"
                                                    if info["chunks"] else ""),
             f"  filters     {info['filters']}",
             f"  storage     {format_bytes(info['storage_bytes'])} for {format_bytes(info['logical_bytes'])} logical"
             + (f" (ratio {info['compression_ratio']:.4g})" if info["compression_ratio"] else ""),
             f"  fill value  {info['fillvalue']}"]
    lines += [f"  WARNING     {w}" for w in info["warnings"]]
    return "\n".join(lines)
