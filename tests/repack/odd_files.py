"""Files with the types and properties that broke repack (issue 10), made with h5py's low-level API."""

import h5py
import numpy as np
from h5py import h5a, h5d, h5p, h5s, h5t

from ccp.hdf5 import lowlevel as low


def raw_dataset(loc, name, tid, shape, data: bytes | None = None, chunks=None, maxshape=None, dcpl=None,
                gzip=False):
    space = h5s.create_simple(shape, tuple(h5s.UNLIMITED if m is None else m for m in (maxshape or shape)))
    if dcpl is None:
        dcpl = h5p.create(h5p.DATASET_CREATE)
    if chunks:
        dcpl.set_chunk(chunks)
        if gzip:
            dcpl.set_deflate(4)
    dsid = h5d.create(loc.id, name.encode(), tid, space, dcpl=dcpl)
    if data is not None:
        buf = np.frombuffer(data, dtype=f"V{tid.get_size()}").reshape(shape).copy()
        dsid.write(h5s.ALL, h5s.ALL, buf, mtype=tid)
    return dsid


def raw_attr(obj, name, tid, shape, data: bytes):
    aid = h5a.create(obj.id, name.encode(), tid, h5s.create_simple(shape) if shape else h5s.create(h5s.SCALAR))
    aid.write(np.frombuffer(data, dtype=f"V{tid.get_size()}").reshape(shape).copy(), mtype=tid)


def string_type(size, pad, cset=h5t.CSET_ASCII):
    t = h5t.C_S1.copy()
    t.set_size(size)
    t.set_strpad(pad)
    t.set_cset(cset)
    return t


def make_strings_file(path):
    """Fixed-length strings filling their size in every padding, alone and as compound members."""
    with h5py.File(path, "w") as f:
        for pad, label in ((h5t.STR_NULLTERM, "nullterm"), (h5t.STR_NULLPAD, "nullpad"), (h5t.STR_SPACEPAD, "spacepad")):
            st = string_type(6, pad)
            raw_dataset(f, f"s_{label}", st, (4,), b"Hello!" * 4, chunks=(3,))
            ct = h5t.create(h5t.COMPOUND, 10)
            ct.insert(b"i", 0, h5t.STD_I32LE)
            ct.insert(b"s", 4, st)
            raw_dataset(f, f"c_{label}", ct, (5,), b"".join(i.to_bytes(4, "little") + b"Hello!" for i in range(5)),
                        chunks=(2,), gzip=True)
            raw_attr(f, f"a_{label}", ct, (2,), (b"\1\0\0\0Hello!") * 2)
        utf = string_type(7, h5t.STR_NULLTERM, h5t.CSET_UTF8)
        raw_dataset(f, "s_utf8", utf, (2,), "héllo!".encode() * 2, chunks=(2,))
    return path


def make_vlen_file(path):
    with h5py.File(path, "w") as f:
        vl = h5py.vlen_dtype(np.dtype("<i4"))
        v = f.create_dataset("vlen_gzip", (7,), dtype=vl, chunks=(3,), compression="gzip")
        for i in range(7):
            v[i] = np.arange(i, dtype="<i4") * 3
        v2 = f.create_dataset("vlen_plain", (5,), dtype=h5py.vlen_dtype(np.dtype(">f8")))
        for i in range(5):
            v2[i] = np.linspace(0, 1, i + 1)
        f.create_dataset("vstr", data=np.array(["a", "", "héé", "long string " * 5], dtype=object),
                         dtype=h5py.string_dtype(), chunks=(2,), compression="gzip")
        f.create_dataset("vbytes", data=np.array([b"x", b"yz"], dtype=object), dtype=h5py.string_dtype("ascii"))
        f.attrs["vattr"] = np.array(["one", "two"], dtype=h5py.string_dtype())
        f.attrs.create("vlen_attr", [np.arange(2, dtype="u2"), np.arange(3, dtype="u2")], dtype=h5py.vlen_dtype("u2"))
        # a compound with a vlen member
        ct = np.dtype([("n", "<i2"), ("v", h5py.vlen_dtype(np.dtype("<f4")))])
        data = np.empty(3, dtype=ct)
        for i in range(3):
            data[i] = (i, np.arange(i + 1, dtype="<f4"))
        f.create_dataset("comp_vlen", data=data, chunks=(2,))
    return path


def make_table_file(path):
    """PyTables-like rows: nested compounds and array members, chunked and compressed."""
    with h5py.File(path, "w") as f:
        nd = np.dtype([("x", "<f4"), ("arr", ">i2", (3,)), ("n", [("p", "u1"), ("q", "S4"), ("m", "<f8", (2, 2))]),
                       ("flag", "?")])
        t = np.zeros(11, nd)
        t["x"] = np.arange(11) / 3
        t["arr"] = np.arange(33).reshape(11, 3)
        t["n"]["p"] = 9
        t["n"]["q"] = b"abcd"
        t["n"]["m"] = np.arange(44).reshape(11, 2, 2) / 7
        t["flag"] = np.arange(11) % 2 == 0
        f.create_dataset("table", data=t, chunks=(4,), maxshape=(None,), compression="gzip", shuffle=True)
        arrt = h5t.array_create(h5t.STD_U16BE, (3,))
        ct = h5t.create(h5t.COMPOUND, 8)
        ct.insert(b"a", 0, h5t.STD_U16LE)
        ct.insert(b"arr", 2, arrt)
        raw_dataset(f, "be_array_member", ct, (5,), bytes(range(40)), chunks=(2,))
        raw_attr(f["table"], "be_u16_array", arrt, (2,), bytes(range(12)))
    return path


def make_odd_types_file(path):
    """Types h5py cannot map, fill values undefined or never written, and one ordinary dataset."""
    with h5py.File(path, "w") as f:
        f.create_dataset("normal", data=np.arange(20.0), chunks=(5,))
        quad = h5t.IEEE_F64LE.copy()
        quad.set_size(16)
        quad.set_precision(128)
        quad.set_fields(127, 112, 15, 0, 112)
        quad.set_ebias(16383)
        raw_dataset(f, "float128", quad, (4,), bytes(range(64)), chunks=(3,))
        raw_dataset(f, "time", h5t.UNIX_D32BE.copy(), (3,), bytes(range(12)))
        i128 = h5t.STD_I64LE.copy()
        i128.set_size(16)
        i128.set_precision(128)
        raw_attr(f["normal"], "int128", i128, (2,), bytes(range(32)))
        raw_attr(f, "time_attr", h5t.UNIX_D32BE.copy(), (), bytes(range(4)))
        vs = h5t.C_S1.copy()
        vs.set_size(h5t.VARIABLE)
        vs.set_cset(h5t.CSET_UTF8)
        h5a.create(f.id, b"vlen_utf8_never_written", vs, h5s.create_simple((2,)))
        f.attrs["vlen_utf8_h5py"] = np.array(["aé", "b"], dtype=h5py.string_dtype())
        dcpl = h5p.create(h5p.DATASET_CREATE)
        low.set_fill_undefined(dcpl, h5t.STD_I32LE)
        d = raw_dataset(f, "fill_undefined", h5t.STD_I32LE, (10,), chunks=(3,), maxshape=(None,), dcpl=dcpl)
        space = d.get_space()
        space.select_hyperslab((0,), (3,))
        d.write(h5s.create_simple((3,)), space, np.array([1, 2, 3], dtype="<i4"))
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_fill_time(h5d.FILL_TIME_NEVER)
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
        raw_dataset(f, "fill_never_early", h5t.STD_I16BE, (6,), bytes(range(12)), chunks=(4,), dcpl=dcpl)
        e = f.create_dataset("enum", data=np.array([0, 1, 1, 0], dtype="u1"),
                             dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1}, basetype="u1"), chunks=(2,))
        e.attrs["opaque"] = np.void(b"\x01\x02\x03")
        f.create_dataset("f16", data=np.arange(6, dtype="<f2"), chunks=(4,))
        f.create_dataset("compact", data=np.arange(4, dtype=">u2"), maxshape=(4,))
    return path


def make_references_file(path):
    """Object and region references at the top level, in compounds, in vlen sequences and in attributes."""
    with h5py.File(path, "w") as f:
        a = f.create_dataset("a", data=np.arange(12).reshape(3, 4), chunks=(2, 2))
        b = f.create_group("g").create_dataset("b", data=np.arange(5.0))
        f.create_dataset("objrefs", data=np.array([a.ref, b.ref, f["g"].ref, h5py.Reference()], dtype=h5py.ref_dtype))
        f.create_dataset("regrefs", data=np.array([a.regionref[0:2, 1:3], b.regionref[[0, 3]]],
                                                   dtype=h5py.regionref_dtype))
        ct = np.dtype([("dataset", h5py.ref_dtype), ("dimension", "<i4")])
        b.attrs.create("REFERENCE_LIST", np.array([(a.ref, 0), (a.ref, 1)], dtype=ct), dtype=ct)
        vl = h5py.vlen_dtype(h5py.ref_dtype)
        dl = np.empty(2, dtype=object)
        dl[0] = np.array([b.ref], dtype=h5py.ref_dtype)
        dl[1] = np.array([b.ref, f["g"].ref], dtype=h5py.ref_dtype)
        a.attrs.create("DIMENSION_LIST", dl, dtype=vl)
        f.attrs["root_ref"] = a.ref
        f.create_dataset("comp_refs", data=np.array([(b.ref, 7)], dtype=ct), chunks=(1,))
    return path


def make_times_file(path):
    """Objects with and without tracked times."""
    with h5py.File(path, "w") as f:
        f.create_dataset("timed", data=np.arange(8.0), chunks=(4,), track_times=True)
        f.create_dataset("untimed", data=np.arange(8.0), chunks=(4,), track_times=False)
        gcpl = h5p.create(h5p.GROUP_CREATE)
        gcpl.set_obj_track_times(True)
        g = h5py.Group(h5py.h5g.create(f.id, b"timed_group", gcpl=gcpl))
        g.create_dataset("inner", data=np.arange(3), track_times=False)
        f.create_group("untimed_group").create_dataset("inner", data=np.arange(3), track_times=True)
    return path


MAKERS = {"strings": make_strings_file, "vlen": make_vlen_file, "table": make_table_file,
          "odd_types": make_odd_types_file, "references": make_references_file, "times": make_times_file}
