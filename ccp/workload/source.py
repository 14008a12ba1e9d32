"""What the sweep's dataset is: shape, dtype and stored layout, from `generate:` or the user's file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ccp.config.filters import FilterPipeline, pipeline_from_dcpl
from ccp.errors import ConfigError


@dataclass(frozen=True)
class SourceInfo:
    shape: tuple[int, ...]
    dtype: np.dtype
    maxshape: tuple[int | None, ...]
    fillvalue: float | int | None
    chunks: tuple[int, ...] | None        # stored layout (None = contiguous); for generate: None
    filters: FilterPipeline               # stored filters; for generate: none
    identity: str                         # what the data is: changes when the data would


def open_readonly(path: Path, where: str = "file"):
    """h5py.File opened read-only, or a one-line CcpError saying why not."""
    import h5py

    from ccp.errors import CcpError

    path = Path(path)
    if not path.exists():
        raise ConfigError(where, f"file not found: {path}")
    if not os.access(path, os.R_OK):
        raise ConfigError(where, f"cannot read {path}: permission denied")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise CcpError(f"{where}: {path} is not an HDF5 file h5py can open ({str(exc).splitlines()[0]})") from None


def describe_source(dataset) -> SourceInfo:
    """Resolve a :class:`~ccp.config.sweep.DatasetSpec`; the user's file is opened read-only."""
    if dataset.generate is not None:
        g = dataset.generate
        maxshape = g.maxshape if g.maxshape is not None else g.shape
        ident = f"generate:{list(g.shape)}:{g.dtype.str}:{g.data}:{g.seed}"
        if g.written_by:
            ident += f":written_by={list(g.written_by)}"
        return SourceInfo(g.shape, g.dtype, tuple(maxshape), g.fillvalue, g.chunks, g.filters, ident)
    import h5py

    path = dataset.file
    with open_readonly(path, "dataset.file") as f:
        obj = f.get(dataset.path)
        if obj is None:
            names = []
            f.visititems(lambda n, o: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
            hint = f"; datasets in the file: {', '.join(names[:8])}" + (" ..." if len(names) > 8 else "") if names else ""
            raise ConfigError("dataset.path", f"no dataset {dataset.path!r} in {path}{hint}")
        if not isinstance(obj, h5py.Dataset):
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} is a group, not a dataset")
        if obj.dtype.kind not in "iuf" or obj.shape is None or len(obj.shape) == 0:
            raise ConfigError("dataset.path", f"{dataset.path!r} has dtype {obj.dtype} and shape {obj.shape}: ccp measures numeric arrays of rank >= 1")
        dcpl = obj.id.get_create_plist()
        st = path.stat()
        ident = f"file:{path}:{st.st_size}:{st.st_mtime_ns}:{dataset.path}"
        fill = obj.fillvalue
        fill = fill.item() if hasattr(fill, "item") else fill
        return SourceInfo(tuple(obj.shape), obj.dtype, tuple(obj.maxshape), fill,
                          tuple(obj.chunks) if obj.chunks else None, pipeline_from_dcpl(dcpl), ident)
