"""HDF5 datatypes beyond numpy's: described, sized on disk, and read with the file type as memory type.

h5py maps most HDF5 types to numpy dtypes, but not all (128-bit floats and integers, H5T_TIME, some
array and vlen types), and a numpy round trip can change what is read (vlen conversion, string
padding). A sweep on a non-numeric dataset therefore reads with the dataset's own type as memory type:
HDF5 does no conversion, as a reader that knows the type would, and the chunking and filters are what
is measured. Everything here uses h5py's low-level API (and, for the one call h5py does not wrap,
``H5Treclaim`` on h5py's own libhdf5, which shares its ids).
"""

from __future__ import annotations

import ctypes
import math
import os

import numpy as np

_LIB: ctypes.CDLL | bool | None = None   # h5py's own libhdf5; False when it cannot be found


def _class_names() -> dict:
    from h5py import h5t

    return {h5t.INTEGER: "integer", h5t.FLOAT: "float", h5t.TIME: "time", h5t.STRING: "string",
            h5t.BITFIELD: "bitfield", h5t.OPAQUE: "opaque", h5t.COMPOUND: "compound", h5t.REFERENCE: "reference",
            h5t.ENUM: "enum", h5t.VLEN: "vlen", h5t.ARRAY: "array"}


def class_name(tid) -> str:
    return _class_names().get(tid.get_class(), f"class {tid.get_class()}")


def numpy_dtype(tid) -> np.dtype | None:
    """The numpy dtype h5py maps this type to, or None when it has none."""
    try:
        return tid.dtype
    except (TypeError, ValueError, KeyError, NotImplementedError):
        return None


def is_numeric(tid) -> bool:
    """An integer or float type numpy holds exactly (what ccp's numeric path reads and writes)."""
    from h5py import h5t

    if tid.get_class() not in (h5t.INTEGER, h5t.FLOAT):
        return False
    dt = numpy_dtype(tid)
    return dt is not None and dt.kind in "iuf" and dt.itemsize == tid.get_size()


def _order(tid) -> str:
    from h5py import h5t

    try:
        order = tid.get_order()
    except (AttributeError, ValueError, RuntimeError):
        return ""
    return {h5t.ORDER_LE: " little-endian", h5t.ORDER_BE: " big-endian"}.get(order, "")


def describe_type(tid, depth: int = 0) -> str:
    """A one-line description from the HDF5 type itself (works when numpy has no equivalent)."""
    from h5py import h5t

    cls = tid.get_class()
    size = tid.get_size()
    if depth > 3:
        return "..."
    if cls in (h5t.INTEGER, h5t.BITFIELD):
        sign = "" if cls == h5t.BITFIELD else ("signed " if tid.get_sign() == h5t.SGN_2 else "unsigned ")
        return f"{sign}{8 * size}-bit {class_name(tid)}{_order(tid)}"
    if cls in (h5t.FLOAT, h5t.TIME):
        return f"{8 * size}-bit {class_name(tid)}{_order(tid)}"
    if cls == h5t.STRING:
        cset = {h5t.CSET_ASCII: "ascii", h5t.CSET_UTF8: "utf-8"}.get(tid.get_cset(), "charset?")
        if tid.is_variable_str():
            return f"variable-length string ({cset})"
        pad = {h5t.STR_NULLTERM: "null-terminated", h5t.STR_NULLPAD: "null-padded",
               h5t.STR_SPACEPAD: "space-padded"}.get(tid.get_strpad(), "padded?")
        return f"{size}-byte string ({cset}, {pad})"
    if cls == h5t.OPAQUE:
        tag = tid.get_tag().decode(errors="replace") if tid.get_tag() else ""
        return f"{size}-byte opaque" + (f" {tag!r}" if tag else "")
    if cls == h5t.ENUM:
        names = [tid.get_member_name(i).decode(errors="replace") for i in range(min(tid.get_nmembers(), 6))]
        more = ", ..." if tid.get_nmembers() > 6 else ""
        return f"enum of {describe_type(tid.get_super(), depth + 1)} {{{', '.join(names)}{more}}}"
    if cls == h5t.COMPOUND:
        n = tid.get_nmembers()
        members = [f"{tid.get_member_name(i).decode(errors='replace')}: {describe_type(tid.get_member_type(i), depth + 1)}"
                   for i in range(min(n, 8))]
        return f"compound of {n} member(s) {{{'; '.join(members)}{'; ...' if n > 8 else ''}}}, {size} bytes"
    if cls == h5t.ARRAY:
        dims = "x".join(str(d) for d in tid.get_array_dims())
        return f"array {dims} of {describe_type(tid.get_super(), depth + 1)}"
    if cls == h5t.VLEN:
        return f"variable-length sequence of {describe_type(tid.get_super(), depth + 1)}"
    if cls == h5t.REFERENCE:
        return f"reference ({size} bytes)"
    return f"{class_name(tid)} ({size} bytes)"


def has_vlen(tid) -> bool:
    """Whether reading this type into memory allocates (vlen sequences and strings, anywhere inside)."""
    from h5py import h5t

    cls = tid.get_class()
    if cls == h5t.VLEN or (cls == h5t.STRING and tid.is_variable_str()):
        return True
    if cls == h5t.COMPOUND:
        return any(has_vlen(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    if cls == h5t.ARRAY:
        return has_vlen(tid.get_super())
    return False


def disk_size(tid, sizeof_addr: int = 8) -> int:
    """Bytes one element takes in a chunk on disk (what the chunk cache holds).

    ``H5Dget_type`` returns the type with its memory layout: a vlen is a pointer (string) or an
    ``hvl_t`` in memory, but a global heap id (4-byte length + address + 4-byte index) on disk;
    compounds and arrays grow or shrink by their members' differences (``H5T_set_loc``).
    """
    from h5py import h5t

    cls = tid.get_class()
    if cls == h5t.VLEN or (cls == h5t.STRING and tid.is_variable_str()):
        return 4 + sizeof_addr + 4
    if cls == h5t.COMPOUND:
        return tid.get_size() + sum(disk_size(m, sizeof_addr) - m.get_size()
                                    for m in (tid.get_member_type(i) for i in range(tid.get_nmembers())))
    if cls == h5t.ARRAY:
        return math.prod(tid.get_array_dims()) * disk_size(tid.get_super(), sizeof_addr)
    return tid.get_size()


def hdf5_library():
    """ctypes handle on the libhdf5 h5py loaded (same ids), or None."""
    global _LIB
    if _LIB is None:
        import h5py

        _LIB = False
        try:
            with open("/proc/self/maps") as maps:
                mapped = {line.split()[-1] for line in maps if "libhdf5" in line and ".so" in line}
            paths = [p for p in mapped if not os.path.basename(p).startswith("libhdf5_hl")]
            # PyTables and netCDF4 wheels bring their own libhdf5 into the process: only h5py's shares its ids
            own = [p for p in paths if os.path.dirname(p) == os.path.dirname(h5py.__file__) + ".libs"]
            paths = own or paths
            if len(paths) == 1:
                lib = ctypes.CDLL(paths[0])
                lib.H5Treclaim.argtypes = (ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
                _LIB = lib
        except (OSError, AttributeError):   # no /proc, or a static build: vlen reads leak instead
            _LIB = False
    return _LIB or None


def reclaimer(mtype):
    """For a type holding vlen data: a function freeing what a read put into a buffer (else None)."""
    if not has_vlen(mtype):
        return None
    lib = hdf5_library()
    if lib is None:
        return None

    def reclaim(mspace, buf: np.ndarray) -> None:
        lib.H5Treclaim(mtype.id, mspace.id, 0, buf.ctypes.data)     # 0: H5P_DEFAULT
    return reclaim


def memory_buffer(shape, mtype) -> np.ndarray:
    """A buffer for ``shape`` elements of ``mtype`` as it is in memory (raw bytes, C order)."""
    return np.zeros(tuple(shape), dtype=np.dtype(f"V{mtype.get_size()}"))


def commit_anonymous(file_id, tid):
    """A copy of datatype ``tid`` committed in file ``file_id`` without a name (H5Tcommit_anon, which h5py
    does not wrap): a named datatype a rewritten dataset can share before its link exists. Link it later
    with ``h5py.h5o.link``. Returns the committed ``TypeID``, or None when libhdf5 cannot be reached."""
    from ccp.hdf5.lowlevel import library, tracks_times

    lib = library()
    if lib is None:   # pragma: no cover - a static build
        return None
    new = tid.copy()
    tcpl = tid.get_create_plist()    # the source's creation properties: whether it tracks times
    tcpl.set_obj_track_times(tracks_times(tid))
    lib.H5Tcommit_anon.argtypes = (ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    if lib.H5Tcommit_anon(file_id.id, new.id, tcpl.id, 0) < 0:   # 0: H5P_DEFAULT
        return None
    return new
