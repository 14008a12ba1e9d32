"""A small file with everything h5repack has to carry over, and a file comparer (shared by the repack tests)."""

import h5py
import numpy as np

CRIS = "/All_Data/CrIS-SDR_All/ES_ImaginaryLW"


def make_rich_file(path, other=None):
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "rich test file"
        f.attrs["version"] = np.array([1, 2, 3], dtype="<i4")
        f.attrs.create("big", np.float64(2.5), dtype=">f8")
        f.attrs["fixed"] = np.bytes_(b"abc")
        g = f.create_group("All_Data/CrIS-SDR_All")
        g.attrs["instrument"] = "CrIS"
        d = f.create_dataset(CRIS, data=rng.standard_normal((12, 6, 3, 17)).astype(">f4"), maxshape=(None,) * 4,
                             chunks=(4, 6, 3, 17), compression="gzip", compression_opts=6,
                             fillvalue=np.float32(-999.3))
        d.attrs["units"] = np.bytes_(b"mW/(m2 sr cm-1)")
        d.attrs.create("scale", np.float64(0.5), dtype=">f8")
        ints = f.create_dataset("All_Data/CrIS-SDR_All/ints", shape=(50, 40), maxshape=(None, 40), dtype="<i2",
                                chunks=(7, 9), shuffle=True, fletcher32=True, compression="gzip", fillvalue=-1)
        ints[:20] = rng.integers(-3000, 3000, (20, 40))  # later chunks stay unallocated
        ints[45, 39] = 7
        f.create_dataset("contig", data=rng.integers(0, 255, (33, 21)).astype("u1"))
        f.create_dataset("strings", data=np.array(["a", "bb", "ccc", "dddd", "é"] * 2, dtype=object),
                         dtype=h5py.string_dtype(), chunks=(4,))
        f.create_dataset("fixed_strings", data=np.array([b"x%d" % i for i in range(20)], dtype="S8"), chunks=(6,),
                         compression="gzip")
        cdt = np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "S3")])
        comp = np.zeros(15, dtype=cdt)
        comp["a"] = np.arange(15)
        comp["b"] = np.linspace(0, 1, 15)
        comp["c"] = b"xyz"
        f.create_dataset("compound", data=comp, chunks=(4,), compression="gzip")
        s = f.create_dataset("scalar", data=np.float64(3.25))
        s.attrs["note"] = "scalar"
        f.create_dataset("empty", shape=(0, 5), maxshape=(None, 5), chunks=(2, 5), dtype="f4")
        f.create_dataset("null", data=h5py.Empty("f4"))
        o = f.create_group("ordered", track_order=True)
        for name in ("zeta", "alpha", "mid"):
            o.create_dataset(name, data=np.arange(10, dtype="<f8") * len(name))
        o.attrs["z"] = 1
        o.attrs["a"] = 2
        f.create_dataset("floats", data=rng.standard_normal((64, 48)).astype("<f4"), chunks=(16, 16))
        f.create_dataset("counts", data=rng.integers(0, 1000, (64, 48)).astype("<i4"), chunks=(16, 16))
        f["soft"] = h5py.SoftLink("/contig")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        f["hard_alias"] = f[CRIS]
        f["mytype"] = np.dtype("<i8")
        f.create_dataset("typed", data=np.arange(6), dtype=f["mytype"])
    return path


def _values_equal(a, b):
    if a.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


def _filters(ds):
    from ccp.hdf5.filters import pipeline_from_dcpl

    return pipeline_from_dcpl(ds.id.get_create_plist()).spec


def _attrs(obj):
    out = {}
    for k in obj.attrs:
        v = obj.attrs[k]
        out[k] = (obj.attrs.get_id(k).dtype, v.tolist() if isinstance(v, np.ndarray) else v)
    return out


def assert_same_file(src, dst, changed=None, only=None):
    """Everything equal; datasets in ``changed`` have the given (chunks, filter spec) instead."""
    changed = changed or {}
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        if only is None:
            assert _attrs(a) == _attrs(b)
        names_a, names_b = [], []
        a.visit_links(names_a.append)
        b.visit_links(names_b.append)
        if only is None:
            assert names_a == names_b
        for name in names_b:
            la, lb = a.get(name, getlink=True), b.get(name, getlink=True)
            assert type(la) is type(lb), name
            if isinstance(la, h5py.SoftLink):
                assert la.path == lb.path
                continue
            if isinstance(la, h5py.ExternalLink):
                assert (la.filename, la.path) == (lb.filename, lb.path)
                continue
            oa, ob = a[name], b[name]
            assert type(oa) is type(ob), name
            if isinstance(oa, h5py.Group) and only is None:
                assert list(oa) == list(ob), name  # same order, creation order included
                assert _attrs(oa) == _attrs(ob), name
                cpa, cpb = oa.id.get_create_plist(), ob.id.get_create_plist()
                assert cpa.get_link_creation_order() == cpb.get_link_creation_order()
            if not isinstance(oa, h5py.Dataset):
                continue
            assert _attrs(oa) == _attrs(ob), name
            assert oa.dtype == ob.dtype, name
            assert oa.id.get_type().get_order() == ob.id.get_type().get_order() if oa.dtype.kind in "iuf" else True
            assert oa.id.get_type().get_size() == ob.id.get_type().get_size()
            assert oa.shape == ob.shape and oa.maxshape == ob.maxshape, name
            if oa.shape is None:
                continue
            fa, fb = oa.fillvalue, ob.fillvalue
            assert (fa == fb) if not isinstance(fa, np.ndarray) else np.array_equal(fa, fb), name
            pa, pb = oa.id.get_create_plist(), ob.id.get_create_plist()
            assert pa.get_fill_time() == pb.get_fill_time()
            assert pa.fill_value_defined() == pb.fill_value_defined()
            key = "/" + name.lstrip("/")
            alias = [k for k in changed if k in b and b[k].id == ob.id]  # another hard link to a changed dataset
            key = alias[0] if alias else key
            if key in changed:
                chunks, spec = changed[key]
                assert ob.chunks == chunks, (name, ob.chunks)
                assert _filters(ob) == spec, (name, _filters(ob))
            else:
                assert oa.chunks == ob.chunks, name
                assert _filters(oa) == _filters(ob), name
            if oa.shape == () or oa.size:
                assert _values_equal(oa[()], ob[()]), name
