"""The few HDF5 calls h5py does not wrap, and moving values in their file datatype.

Values are moved with the dataset's (or attribute's) own file datatype as the memory type:
HDF5 then converts nothing for fixed-size types (compound, strings in any padding, arrays,
enum, opaque, odd floats and integers: the bytes are copied as they are), and turns
variable-length data into memory sequences of the very same base type, which the write
turns back. No numpy dtype stands between the files, so nothing is lost in a mapping.
Buffers holding variable-length data are released with ``H5Treclaim``.

The ctypes handle is to the very libhdf5 h5py loaded, so ids are shared with h5py.
"""

from __future__ import annotations

import ctypes

import numpy as np
from h5py import h5d, h5s, h5t

H5P_DEFAULT = 0
H5R_DATASET_REGION1 = 1                  # H5R_type_t (H5R_OBJECT1 is 0)
H5O_INFO_TIME = 0x0002

_LIB: ctypes.CDLL | bool | None = None   # h5py's own libhdf5; False when it cannot be loaded


class _ObjInfo(ctypes.Structure):
    """H5O_info2_t (HDF5 >= 1.12)."""

    _fields_ = [("fileno", ctypes.c_ulong), ("token", ctypes.c_ubyte * 16), ("type", ctypes.c_int),
                ("rc", ctypes.c_uint), ("atime", ctypes.c_long), ("mtime", ctypes.c_long),
                ("ctime", ctypes.c_long), ("btime", ctypes.c_long), ("num_attrs", ctypes.c_uint64)]


def library():
    """The libhdf5 that h5py itself loaded, or None (then callers fall back or refuse)."""
    global _LIB
    if _LIB is None:
        _LIB = False
        try:
            # dlsym on h5py's own extension module searches its dependencies: h5py's libhdf5, even when
            # another libhdf5 (PyTables', netCDF4's) is loaded in the same process
            from h5py import h5 as _h5

            lib = ctypes.CDLL(_h5.__file__)
            i64, vp = ctypes.c_int64, ctypes.c_void_p
            lib.H5Pget_chunk_opts.argtypes = (i64, ctypes.POINTER(ctypes.c_uint))
            lib.H5Pset_chunk_opts.argtypes = (i64, ctypes.c_uint)
            lib.H5Treclaim.argtypes = (i64, i64, i64, vp)
            lib.H5Pget_fill_value.argtypes = (i64, i64, vp)
            lib.H5Pset_fill_value.argtypes = (i64, i64, vp)
            lib.H5Oget_info3.argtypes = (i64, ctypes.POINTER(_ObjInfo), ctypes.c_uint)
            lib.H5Rdereference2.argtypes = (i64, i64, ctypes.c_int, vp)
            lib.H5Rdereference2.restype = i64
            lib.H5Rget_region.argtypes = (i64, ctypes.c_int, vp)
            lib.H5Rget_region.restype = i64
            lib.H5Rcreate.argtypes = (vp, i64, ctypes.c_char_p, ctypes.c_int, i64)
            lib.H5Sclose.argtypes = (i64,)
            lib.H5Oclose.argtypes = (i64,)
            lib.H5Eset_auto2.argtypes = (i64, vp, vp)
            lib.H5Padd_merge_committed_dtype_path.argtypes = (i64, ctypes.c_char_p)
            _LIB = lib
        except (OSError, AttributeError):  # pragma: no cover - a static build
            _LIB = False
    return _LIB or None


def is_enospc(exc: BaseException) -> bool:
    """A full disk (or quota), as an OSError or inside an HDF5 error message."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "disk quota" in text


# ------------------------------------------------------------------ creation properties

def chunk_opts(dcpl) -> int:
    """H5Pget_chunk_opts; 0 when unknown or not chunked."""
    if dcpl.get_layout() != h5d.CHUNKED:
        return 0
    lib = library()
    if lib is None:  # pragma: no cover
        return 0
    opts = ctypes.c_uint(0)
    if lib.H5Pget_chunk_opts(dcpl.id, ctypes.byref(opts)) < 0:  # pragma: no cover
        return 0
    return int(opts.value)


def set_chunk_opts(dcpl, opts: int) -> None:
    lib = library()
    if lib is not None and opts:
        lib.H5Pset_chunk_opts(dcpl.id, opts)


def unfiltered_edges(dcpl) -> bool:
    """H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS: partial edge chunks are stored without filters."""
    return bool(dcpl.get_nfilters()) and bool(chunk_opts(dcpl) & 0x0002)


def fill_bytes(dcpl, tid) -> np.ndarray:
    """The fill value as one element of raw bytes in the file datatype (zeros when undefined)."""
    size = tid.get_size()
    buf = np.zeros(1, dtype=f"V{size}")
    if dcpl.fill_value_defined() in (h5d.FILL_VALUE_DEFAULT, h5d.FILL_VALUE_USER_DEFINED) and not has_vlen(tid):
        lib = library()
        if lib is not None and lib.H5Pget_fill_value(dcpl.id, tid.id, buf.ctypes.data) < 0:  # pragma: no cover
            buf[...] = np.zeros(1, dtype=f"V{size}")
    return buf


def set_fill_undefined(dcpl, tid) -> None:
    """H5Pset_fill_value(dcpl, type, NULL): no fill value at all (H5D_FILL_VALUE_UNDEFINED)."""
    library().H5Pset_fill_value(dcpl.id, tid.id, None)


def tracks_times(obj_id) -> bool:
    """Whether an object's header holds times (H5Pget_obj_track_times on a re-opened object's plist
    always says yes, so the header is asked)."""
    lib = library()
    if lib is None:  # pragma: no cover
        return True
    info = _ObjInfo()
    if lib.H5Oget_info3(obj_id.id, ctypes.byref(info), H5O_INFO_TIME) < 0:  # pragma: no cover
        return True
    return bool(info.ctime or info.mtime)


# ------------------------------------------------------------------ datatypes

def has_class(tid, classes) -> bool:
    cls = tid.get_class()
    if cls in classes:
        return True
    if cls == h5t.COMPOUND:
        return any(has_class(tid.get_member_type(i), classes) for i in range(tid.get_nmembers()))
    if cls in (h5t.ARRAY, h5t.VLEN):
        return has_class(tid.get_super(), classes)
    return False


def has_vlen(tid) -> bool:
    """Variable-length data anywhere in the type (sequences or strings): values live in a heap."""
    cls = tid.get_class()
    if cls == h5t.VLEN:
        return True
    if cls == h5t.STRING:
        return tid.is_variable_str()
    if cls == h5t.COMPOUND:
        return any(has_vlen(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    if cls == h5t.ARRAY:
        return has_vlen(tid.get_super())
    return False


def has_reference(tid) -> bool:
    return has_class(tid, (h5t.REFERENCE,))


def file_type(tid):
    """A transient copy when the type is a named (committed) one, so it can be used anywhere."""
    return tid.copy() if tid.committed() else tid


# ------------------------------------------------------------------ moving values

def raw_buffer(shape, tid) -> np.ndarray:
    return np.empty(tuple(shape), dtype=f"V{tid.get_size()}")


def reclaim(tid, buf: np.ndarray) -> None:
    """Free the memory HDF5 allocated for variable-length data read into ``buf``."""
    if not has_vlen(tid) or buf.size == 0:
        return
    space = h5s.create_simple((buf.size,)) if buf.ndim else h5s.create(h5s.SCALAR)
    library().H5Treclaim(tid.id, space.id, H5P_DEFAULT, buf.ctypes.data)


def read_attr(aid, tid) -> np.ndarray | None:
    """An attribute's values in its file type; None for an empty (null) dataspace."""
    space = aid.get_space()
    if space.get_simple_extent_type() == h5s.NULL:
        return None
    buf = raw_buffer(aid.shape, tid)
    aid.read(buf, mtype=tid)
    return buf


def read_slab(dsid, tid, slices) -> np.ndarray:
    """A hyperslab of a dataset in its file type (``slices``: start/stop per dimension)."""
    count = tuple(s.stop - s.start for s in slices)
    buf = raw_buffer(count, tid)
    if not count:
        dsid.read(h5s.ALL, h5s.ALL, buf, mtype=tid)
        return buf
    fspace = dsid.get_space()
    fspace.select_hyperslab(tuple(s.start for s in slices), count)
    mspace = h5s.create_simple(count)
    dsid.read(mspace, fspace, buf, mtype=tid)
    return buf


def write_slab(dsid, tid, slices, buf) -> None:
    count = tuple(s.stop - s.start for s in slices)
    if not count:
        dsid.write(h5s.ALL, h5s.ALL, buf, mtype=tid)
        return
    fspace = dsid.get_space()
    fspace.select_hyperslab(tuple(s.start for s in slices), count)
    mspace = h5s.create_simple(count)
    dsid.write(mspace, fspace, buf, mtype=tid)


# H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG (H5Opublic.h; h5py does not name it)
_MERGE_COMMITTED_DTYPE = 0x0040


def copy_plist_sharing(type_path: bytes):
    """An object-copy list under which H5Ocopy gives a copied dataset the output's committed datatype at
    ``type_path`` (when equal to its own) instead of an anonymous copy of it; None without the library."""
    from h5py import h5p

    lib = library()
    if lib is None:  # pragma: no cover - a static build
        return None
    copypl = h5p.create(h5p.OBJECT_COPY)
    copypl.set_copy_object(_MERGE_COMMITTED_DTYPE)
    if lib.H5Padd_merge_committed_dtype_path(copypl.id, type_path) < 0:  # pragma: no cover
        return None
    return copypl
