"""What a dataset is: shape, dtype, stored layout, filters, fill value and storage, from a file or a
sweep's ``generate:``; and opening a user's file read-only, with links resolved.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ccp.errors import ConfigError
from ccp.hdf5 import h5types
from ccp.hdf5.filters import FilterPipeline, check_decodable, pipeline_from_dcpl


@dataclass(frozen=True)
class DatasetInfo:
    shape: tuple[int, ...]
    dtype: np.dtype                       # numeric: the stored dtype; otherwise raw records of the disk size (V<n>)
    maxshape: tuple[int | None, ...]
    fillvalue: float | int | None
    chunks: tuple[int, ...] | None        # stored layout (None = contiguous); for generate: None
    filters: FilterPipeline               # stored filters; for generate: none
    identity: str                         # what the data is: changes when the data would
    file: Path | None = None              # the file that holds the object (an external link's target)
    path: str | None = None               # the object's path there, by hard links only (links resolved)
    filetype: bytes | None = None         # non-numeric: the HDF5 file type (H5Tencode), read as memory type
    layout: str = ""                      # stored: contiguous, chunked, compact or virtual; "" for data not stored yet (generate:)
    storage_bytes: int | None = None      # bytes allocated in the file (None: not stored)
    chunks_allocated: int | None = None   # chunked: chunks with storage (None otherwise)
    extent: str = "simple"                # dataspace: "simple", "scalar" (shape ()) or "null" (shape (), no elements)
    page_size: int | None = None          # the file's page when its file-space strategy is PAGE (paged aggregation)

    @property
    def numeric(self) -> bool:
        return self.filetype is None

    @property
    def stored_layout(self) -> str:
        """The layout as stored, or the one a generated dataset is written in."""
        return self.layout or ("chunked" if self.chunks is not None else "contiguous")

    def file_type(self):
        """The HDF5 type a work or pass file stores: the source's own type for non-numeric data."""
        from h5py import h5t

        return h5t.decode(self.filetype) if self.filetype is not None else h5t.py_create(np.dtype(self.dtype), logical=True)

    def memory_type(self):
        """The memory type of reads and writes: the file type itself for non-numeric data (no conversion)."""
        from h5py import h5t

        return h5t.decode(self.filetype) if self.filetype is not None else h5t.py_create(np.dtype(self.dtype))


# First bytes of formats people mistake for HDF5, and what to do about them.
_MAGICS = (
    (b"CDF\x01", "a netCDF-3 classic file"),
    (b"CDF\x02", "a netCDF-3 64-bit offset file"),
    (b"CDF\x05", "a netCDF-3 64-bit data (CDF-5) file"),
    (b"\x0e\x03\x13\x01", "an HDF4 file"),
    (b"PK\x03\x04", "a zip archive (a zipped Zarr store?)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"\x89PNG", "a PNG image"),
    (b"GRIB", "a GRIB file"),
    (b"\x93NUMPY", "a numpy .npy file"),
    (b"PAR1", "a Parquet file"),
)


def _what_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    if not head:
        return "an empty file"
    for magic, what in _MAGICS:
        if head.startswith(magic):
            return what
    return None


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
        what = _what_file(path)
        if what is not None and what.startswith("a netCDF-3"):
            raise CcpError(f"{where}: {path} is {what}, not HDF5: ccp needs HDF5 or netCDF-4; convert it with "
                           f"`nccopy -k nc4 {path.name} {path.stem}.nc4` (or `-k nc7` for netCDF-4 classic)") from None
        if what is not None:
            raise CcpError(f"{where}: {path} is {what}, not HDF5: ccp needs an HDF5 (or netCDF-4) file") from None
        raise CcpError(f"{where}: {path} is not an HDF5 file h5py can open ({str(exc).splitlines()[0]}); "
                       f"ccp needs HDF5 or netCDF-4") from None


def resolve(f, path: str):
    """The object at ``path`` (soft and external links followed), its file's name and a hard-link path to it.

    Cells open the dataset many times, in the user's file and in work files copied from it; a link
    resolved once here means every one of them opens the same object.
    """
    import h5py

    obj = f.get(path)
    if obj is None:
        return None, None, None
    target = obj.file
    name = obj.name or path
    try:
        hard = _hard_path(target, name)
    except (KeyError, ValueError, RuntimeError, OSError):
        hard = None
    if hard is None:
        found: list[str] = []

        def visit(n, o) -> bool | None:      # True stops the visit at the first hard path to the object
            if isinstance(o, h5py.Dataset) and o == obj:
                found.append("/" + n)
                return True
            return None

        target.visititems(visit)
        hard = found[0] if found else name
    return obj, Path(os.path.abspath(target.filename)), hard


def dangling_link(f, path: str) -> str | None:
    """'a soft link to /x, which does not exist' when ``path`` names a link that leads nowhere, else None."""
    import h5py

    try:
        link = f.get(path, getlink=True)
    except (KeyError, OSError, RuntimeError, ValueError):
        return None
    if isinstance(link, h5py.SoftLink):
        return f"a soft link to {link.path!r}, which does not exist"
    if isinstance(link, h5py.ExternalLink):
        return f"an external link to {link.path!r} in {link.filename!r}, which cannot be opened"
    return None


def _hard_path(f, name: str) -> str | None:
    """``name`` if every component of it is a hard link in ``f``, else None."""
    import h5py

    parts = [p for p in name.split("/") if p]
    for i in range(len(parts)):
        link = f.get("/" + "/".join(parts[:i + 1]), getlink=True)
        if not isinstance(link, h5py.HardLink):
            return None
    return "/" + "/".join(parts)


def describe_source(dataset) -> DatasetInfo:
    """Resolve a sweep's dataset (``generate``, ``file``, ``path``: a :class:`~ccp.config.sweep.DatasetSpec`);
    the user's file is opened read-only."""
    if dataset.generate is not None:
        g = dataset.generate
        maxshape = g.maxshape if g.maxshape is not None else g.shape
        ident = f"generate:{list(g.shape)}:{g.dtype.str}:{g.data}:{g.seed}"
        if g.written_by:
            ident += f":written_by={list(g.written_by)}"
        return DatasetInfo(g.shape, g.dtype, tuple(maxshape), g.fillvalue, g.chunks, g.filters, ident)
    import h5py

    path = Path(dataset.file)
    with open_readonly(path, "dataset.file") as f:
        try:
            obj, real_file, real_path = resolve(f, dataset.path)
        except (KeyError, OSError, RuntimeError) as exc:     # a dangling soft or external link
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} cannot be opened: {str(exc).splitlines()[0]}") from None
        if obj is None and dangling_link(f, dataset.path):
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} is {dangling_link(f, dataset.path)}")
        if obj is None:
            names = []
            f.visititems(lambda n, o: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
            hint = f"; datasets in the file: {', '.join(names[:8])}" + (" ..." if len(names) > 8 else "") if names else ""
            raise ConfigError("dataset.path", f"no dataset {dataset.path!r} in {path}{hint}")
        if not isinstance(obj, h5py.Dataset):
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} is a {type(obj).__name__.lower()}, not a dataset")
        info = dataset_info(obj.id)
        if not info.shape:
            kind = "a scalar dataspace" if info.extent == "scalar" else "a null dataspace (no elements)"
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} has {kind}: ccp measures arrays of rank >= 1")
        dimension_only = netcdf_dimension_only(obj)
        if dimension_only:
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} {dimension_only}")
        check_decodable(info.filters, f"{dataset.path!r} in {path}", "dataset.path")
        dcpl = obj.id.get_create_plist()
        _check_external(obj, dcpl, f"{dataset.path!r} in {path}")
        if dcpl.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED and not _fully_written(obj.id, info.shape, info.chunks):
            raise ConfigError("dataset.path", f"{dataset.path!r} in {path} has parts never written and no fill value "
                                              "(H5D_FILL_VALUE_UNDEFINED): HDF5 refuses to read them")
        st = path.stat()
        ident = f"file:{path}:{st.st_size}:{st.st_mtime_ns}:{dataset.path}"
        if real_file is not None and real_file.resolve() != path.resolve():
            rst = real_file.stat()
            ident += f"->{real_file}:{rst.st_size}:{rst.st_mtime_ns}"
        if info.filetype is not None:
            ident += f":type={info.filetype.hex()[:32]}"
        fcpl = obj.file.id.get_create_plist()     # the file that holds it (an external link's target)
        paged = fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
        return replace(info, identity=ident, file=real_file, path=real_path,
                       page_size=int(fcpl.get_file_space_page_size()) if paged else None)


def dataset_info(dsid, identity: str = "") -> DatasetInfo:
    """What HDF5 says about a dataset (an ``h5py.h5d.DatasetID``), whatever it holds: nothing is refused
    here (scalar and null dataspaces, undefined fill values, filters this HDF5 lacks are all described)."""
    from h5py import h5i

    extent, shape, maxshape = dataspace(dsid)
    dcpl = dsid.get_create_plist()
    layout = stored_layout(dcpl)
    chunks = tuple(int(c) for c in dcpl.get_chunk()) if layout == "chunked" else None
    tid = dsid.get_type()
    if h5types.is_numeric(tid):
        dtype, filetype, fill = tid.dtype, None, _fill_value(dcpl, tid.dtype)
    else:   # compound, string, vlen, enum, opaque, time, 128-bit...: raw records of the file type
        try:
            sizeof_addr = h5i.get_file_id(dsid).get_create_plist().get_sizes()[0]
        except (RuntimeError, ValueError, OSError):
            sizeof_addr = 8
        dtype, filetype, fill = np.dtype(f"V{h5types.disk_size(tid, sizeof_addr)}"), tid.encode(), None
    return DatasetInfo(shape if shape is not None else (), dtype, maxshape, fill, chunks, pipeline_from_dcpl(dcpl),
                       identity, filetype=filetype, layout=layout, storage_bytes=dsid.get_storage_size(),
                       chunks_allocated=dsid.get_num_chunks() if chunks is not None else None, extent=extent)




def _fully_written(dsid, shape, chunks) -> bool:
    """Whether every element has storage (contiguous: allocated; chunked: every chunk of the grid)."""
    if chunks is None:
        return dsid.get_storage_size() > 0 or 0 in shape
    grid = int(np.prod([-(-s // c) for s, c in zip(shape, chunks)], dtype=np.int64))
    return dsid.get_num_chunks() >= grid


def _fill_value(dcpl, dtype):
    """The dataset's fill value as a Python number; None when undefined (H5D_FILL_VALUE_UNDEFINED)."""
    from h5py import h5d

    if dcpl.fill_value_defined() == h5d.FILL_VALUE_UNDEFINED:
        return None
    buf = np.zeros((1,), dtype=dtype)
    dcpl.get_fill_value(buf)
    return buf[0].item()


def _check_external(obj, dcpl, what: str) -> None:
    """One line when a dataset kept in external files (``H5Pset_external``) cannot be read: HDF5 finds them from
    the working folder (or ``HDF5_EXTFILE_PREFIX``), and a missing one fails every cell of a sweep otherwise."""
    import os

    n = dcpl.get_external_count()
    if not n or obj.size == 0:
        return
    try:
        obj[(0,) * obj.ndim]           # one element, through HDF5's own lookup of the files
    except (OSError, RuntimeError) as exc:
        names = ", ".join(os.fsdecode(dcpl.get_external(i)[0]) for i in range(n))
        raise ConfigError("dataset.path", f"{what} keeps its data in external file{'s' if n > 1 else ''} {names}, which "
                          f"HDF5 cannot read from here ({str(exc).splitlines()[0]}): run from the folder that holds "
                          "them, or set HDF5_EXTFILE_PREFIX") from None


NETCDF_DIMENSION_ONLY = "This is a netCDF dimension but not a netCDF variable"
NETCDF_NON_COORD = "_nc4_non_coord_"     # netCDF-C's HDF5 name for a variable named like a dimension it does not index


def netcdf_dimension_only(obj) -> str | None:
    """What to tell a user who named a netCDF-4 dimension that has no variable: netCDF-C writes such a dimension as
    an empty dataset (its NAME attribute says so) that holds no data, so there is nothing to measure or tune; the
    variable of that name, if any, is stored as ``_nc4_non_coord_<name>`` beside it. None for any other dataset."""
    try:
        name = obj.attrs.get("NAME")
    except Exception:       # an attribute h5py cannot read: not netCDF-C's
        return None
    if isinstance(name, np.ndarray) and name.size == 1:
        name = name.item()
    if isinstance(name, bytes):
        name = name.decode("latin-1")
    if not (isinstance(name, str) and name.startswith(NETCDF_DIMENSION_ONLY)):
        return None
    said = "is a netCDF dimension without a variable: netCDF-4 keeps it as a dataset that stores no data (nothing to measure)"
    base = obj.name.rsplit("/", 1)[-1]
    twin = f"{obj.name.rsplit('/', 1)[0]}/{NETCDF_NON_COORD}{base}"
    try:
        if twin in obj.file:
            said += f"; the netCDF variable {base!r} is the dataset {twin!r}"
    except Exception:
        pass
    return said


def source_of(file, dataset_path: str) -> DatasetInfo:
    """:func:`describe_source` for a file and a dataset path (``ccp advise`` and other commands without a sweep)."""
    from types import SimpleNamespace

    return describe_source(SimpleNamespace(generate=None, file=Path(file), path=dataset_path))


def stored_layout(dcpl) -> str:
    """'contiguous', 'chunked', 'compact' or 'virtual' ('other' for a layout this HDF5 does not name)."""
    from h5py import h5d

    return {h5d.CONTIGUOUS: "contiguous", h5d.CHUNKED: "chunked", h5d.COMPACT: "compact",
            getattr(h5d, "VIRTUAL", -1): "virtual"}.get(dcpl.get_layout(), "other")


def dataspace(dsid) -> tuple[str, tuple[int, ...] | None, tuple[int | None, ...]]:
    """(extent, shape, maxshape): extent 'simple', 'scalar' (shape ()) or 'null' (shape None)."""
    from h5py import h5s

    space = dsid.get_space()
    extent = space.get_simple_extent_type()
    if extent == h5s.SIMPLE:
        maxshape = tuple(None if m == h5s.UNLIMITED else int(m) for m in space.get_simple_extent_dims(True))
        return "simple", tuple(int(s) for s in space.shape), maxshape
    return ("scalar", (), ()) if extent == h5s.SCALAR else ("null", None, ())


def stored_chunk_sizes(dsid) -> np.ndarray:
    """The stored (filtered) size in bytes of every allocated chunk, in the chunk index's order."""
    from h5py import h5d

    sizes: list[int] = []
    if dsid.get_create_plist().get_layout() == h5d.CHUNKED and dsid.get_storage_size():
        dsid.chunk_iter(lambda info: sizes.append(int(info.size)))
    return np.asarray(sizes, dtype=np.int64)
