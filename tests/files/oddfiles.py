"""HDF5 files with the objects other software writes and h5py's high level cannot always handle.

Made with h5py's low-level API and, for what h5py does not wrap (H5T_TIME, an undefined fill value),
ctypes on h5py's own libhdf5 (same ids).
"""

from __future__ import annotations

import ctypes
import glob
import os
from pathlib import Path

import h5py
import numpy as np
from h5py import h5a, h5d, h5p, h5s, h5t

HID = ctypes.c_int64


def libhdf5():
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__) + ".libs", "libhdf5-*"))
    assert libs, "h5py's bundled libhdf5 not found"
    lib = ctypes.CDLL(libs[0])
    lib.H5Tcopy.restype = HID
    lib.H5Tcopy.argtypes = [HID]
    lib.H5Dcreate2.restype = HID
    lib.H5Dcreate2.argtypes = [HID, ctypes.c_char_p, HID, HID, HID, HID, HID]
    lib.H5Dclose.argtypes = [HID]
    lib.H5Tclose.argtypes = [HID]
    lib.H5Pset_fill_value.argtypes = [HID, HID, ctypes.c_void_p]
    lib.H5Pset_nbit.argtypes = [HID]
    return lib


def quad_type():
    """IEEE binary128: numpy has no equivalent (np.longdouble is x87 80-bit on x86)."""
    q = h5t.IEEE_F64LE.copy()
    q.set_size(16)
    q.set_precision(128)
    q.set_fields(127, 112, 15, 0, 112)
    q.set_ebias(16383)
    return q


def int128_type():
    t = h5t.STD_I64LE.copy()
    t.set_size(16)
    t.set_precision(128)
    return t


PLAIN = np.arange(8 * 100, dtype="<f4").reshape(8, 100)
COMPOUND = np.dtype([("name", "S6"), ("arr", ">u2", (3,)), ("x", "<f8"), ("nested", [("a", "i1"), ("b", ">i4")])])


def make_odd_file(path: Path) -> Path:
    """Ordinary datasets next to every odd object issue 10 lists; returns ``path``."""
    lib = libhdf5()
    with h5py.File(path, "w") as f:
        plain = f.create_dataset("plain", data=PLAIN, chunks=(2, 100), compression="gzip")
        f.create_dataset("contig", data=PLAIN)
        # attributes numpy cannot hold, on the ordinary dataset and the root
        for obj in (plain, f):
            a = h5a.create(obj.id, b"int128", int128_type(), h5s.create_simple((2,)))
            a.write(np.zeros(32, "u1"), mtype=int128_type())
            at = h5t.array_create(h5t.STD_U16BE, (3,))
            a = h5a.create(obj.id, b"u16be_array", at, h5s.create_simple((2,)))
            a.write(np.arange(6, dtype=">u2").reshape(2, 3), mtype=at)
        # a 128-bit float dataset, chunked and compressed
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_deflate(1)
        d = h5d.create(f.id, b"quad", quad_type(), h5s.create_simple((12,)), dcpl=dcpl)
        d.write(h5s.ALL, h5s.ALL, np.arange(12 * 16, dtype="u1"), mtype=quad_type())
        # H5T_TIME (h5py maps it to nothing)
        tt = lib.H5Tcopy(HID.in_dll(lib, "H5T_UNIX_D32LE_g").value)
        sp = h5s.create_simple((6,))
        lib.H5Dclose(lib.H5Dcreate2(f.id.id, b"time", tt, sp.id, 0, 0, 0))
        lib.H5Tclose(tt)
        # undefined fill value, never written
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        assert lib.H5Pset_fill_value(dcpl.id, h5t.STD_I32LE.id, None) >= 0
        h5d.create(f.id, b"nofill", h5t.STD_I32LE, h5s.create_simple((16,)), dcpl=dcpl)
        # compound with a 6-byte string filling its field, array and nested members
        comp = np.zeros(40, COMPOUND)
        comp["name"] = b"Hello!"
        comp["arr"] = np.arange(120).reshape(40, 3)
        comp["x"] = np.linspace(0, 1, 40)
        f.create_dataset("compound", data=comp, chunks=(10,), compression="gzip")
        f.create_dataset("vlen_str", data=np.array(["a", "bb", "ccc", "dddd"] * 10, dtype=h5py.string_dtype()), chunks=(8,))
        # vlen of big-endian uint32 (how PyTables stored unicode), written with h5py's vlen conversion
        vt = h5py.vlen_dtype(np.dtype(">u4"))
        vl = np.empty(12, dtype=object)
        for i in range(12):
            vl[i] = np.arange(i % 4 + 1, dtype=">u4")
        f.create_dataset("vlen_u4be", data=vl, dtype=vt, chunks=(4,))
        f.create_dataset("enum", data=np.arange(20, dtype="i1") % 2, dtype=h5py.enum_dtype({"A": 0, "B": 1}, basetype="i1"),
                         chunks=(5,))
        f.create_dataset("opaque", data=np.frombuffer(bytes(range(140)), dtype="V7"), chunks=(5,))
        f.create_dataset("scalar", data=1.0)
        f.create_dataset("null", data=h5py.Empty("f4"))
        f["soft"] = h5py.SoftLink("/plain")
        f["dangling"] = h5py.SoftLink("/nowhere")
    return path


def make_allocation_file(path: Path) -> Path:
    """Datasets with only part of their storage ever written."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset("partial", shape=(8, 100), dtype="<f4", chunks=(1, 100))
        d[2] = 1
        d[5] = 2                                            # 2 of 8 chunks
        f.create_dataset("never", shape=(40, 10), dtype="<i4", chunks=(5, 10))
        f.create_dataset("never_contiguous", shape=(40, 10), dtype="<i4")
        d = f.create_dataset("partial_gzip", shape=(8, 100), dtype="<f4", chunks=(2, 50), compression="gzip")
        d[0:2, 0:50] = 3                                    # 1 of 8 chunks
    return path
