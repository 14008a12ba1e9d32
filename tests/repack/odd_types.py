"""One file holding a small chunked dataset of each odd HDF5 datatype, and every registered filter's
spec: the table that issue 21's "every filter x odd types" checks (tests and the fault benchmark)."""

from __future__ import annotations

import h5py
import numpy as np
from h5py import h5t

from ccp.hdf5.filters import registered

N = 24


def _odd_datasets(f: h5py.File) -> None:
    ids = np.arange(N)
    f.create_dataset("vlen_str", data=np.array([f"s{i}" * (i % 4) for i in ids], dtype=object),
                     dtype=h5py.string_dtype(), chunks=(8,))
    vseq = f.create_dataset("vlen_seq", (N,), dtype=h5py.vlen_dtype(np.dtype("<i4")), chunks=(8,))
    for i in ids:
        vseq[i] = np.arange(i % 5, dtype="<i4")
    enum = h5py.enum_dtype({"red": 0, "green": 1, "blue": 2}, basetype="i1")
    f.create_dataset("enum", data=(ids % 3).astype("i1"), dtype=enum, chunks=(8,))
    comp = np.dtype([("a", "<i4"), ("b", "<f8")])
    f.create_dataset("compound", data=np.array([(i, i / 3) for i in ids], dtype=comp), chunks=(8,))
    vcomp = np.dtype([("a", "<i4"), ("s", h5py.string_dtype())])
    f.create_dataset("compound_vlen", data=np.array([(i, f"x{i}") for i in ids], dtype=vcomp), chunks=(8,))
    arr = f.create_dataset("array", (N,), dtype=np.dtype(("<f4", (3,))), chunks=(8,))
    arr[:] = np.arange(N * 3, dtype="<f4").reshape(N, 3)
    f.create_dataset("opaque", data=np.frombuffer(bytes(range(N * 4)), dtype="V4"), chunks=(8,))
    f.create_dataset("bool", data=ids % 2 == 0, chunks=(8,))
    f.create_dataset("fixed_str", data=np.array([b"abc%d" % (i % 10) for i in ids], dtype="S4"), chunks=(8,))
    f.create_dataset("int_be", data=(ids * 1000 - 5000).astype(">i4"), chunks=(8,))
    f.create_dataset("float_be", data=(ids / 7).astype(">f8"), chunks=(8,))
    f.create_dataset("f2", data=(ids / 4).astype("<f2"), chunks=(8,))
    if np.dtype(np.longdouble).itemsize == 16:
        f.create_dataset("f16", data=(ids / 3).astype(np.longdouble), chunks=(8,))
    f.create_dataset("float_nan_fill", data=np.where(ids % 5 == 0, np.nan, ids / 7), chunks=(8,),
                     fillvalue=np.nan, maxshape=(2 * N,))
    f["float_nan_fill"].resize((N + 5,))            # unwritten tail: the NaN fill value
    f.create_dataset("int_u8", data=ids.astype("u1"), chunks=(8,))
    refs = f.create_dataset("obj_ref", (N,), dtype=h5py.ref_dtype, chunks=(8,))
    refs[:] = [f["int_u8"].ref] * N
    regs = f.create_dataset("region_ref", (N,), dtype=h5py.regionref_dtype, chunks=(8,))
    regs[:] = [f["int_u8"].regionref[2:5]] * N
    f.create_dataset("scalar", data=1.5)                                   # no chunks: refused or kept
    f.create_dataset("scalar_str", data="hello", dtype=h5py.string_dtype())
    f.create_dataset("null", data=h5py.Empty("<f4"))                       # a null dataspace
    f.create_dataset("empty", shape=(0, 3), dtype="<i2", chunks=(8, 3), maxshape=(None, 3))
    f.create_dataset("empty_fixed", shape=(0, 5), dtype="<f4")             # contiguous, cannot be chunked
    f["named_t"] = np.dtype("<f8")
    f.create_dataset("named", data=ids / 9, dtype=f["named_t"], chunks=(8,))
    tt = h5t.STD_B16LE.copy()        # a bitfield
    f.create_dataset("bitfield", (N,), dtype="<u2", chunks=(8,))
    del f["bitfield"]
    from h5py import h5d, h5p, h5s
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((8,))
    dsid = h5d.create(f.id, b"bitfield", tt, h5s.create_simple((N,)), dcpl=dcpl)
    dsid.write(h5s.ALL, h5s.ALL, (ids * 37).astype("<u2"), mtype=tt)


DEPENDS = {"/obj_ref": "/int_u8", "/region_ref": "/int_u8"}   # what the references point at


def make_odd_types_file(path, keep: str | None = None) -> list[str]:
    """Write the file (with ``keep``, only that dataset and what it refers to: a small file per case);
    return its datasets' paths."""
    with h5py.File(path, "w") as f:
        _odd_datasets(f)
        names = sorted("/" + name for name, obj in f.items() if isinstance(obj, h5py.Dataset))
        if keep is not None:
            for name in names:
                if name not in (keep, DEPENDS.get(keep)):
                    del f[name]
        return names


def filter_specs() -> list[str]:
    """One spec per registered filter (its defaults), and scaleoffset with a fixed scale."""
    specs = sorted(registered())
    return specs + ["scaleoffset:2", "shuffle+gzip:4"]
