"""Named (committed) datatypes survive a repack (issue 21): a rewritten dataset keeps its link to the named
datatype, and shares the output's copy of it, whatever the options and whichever comes first in the file."""

import h5py
import numpy as np
import pytest
from h5py import h5o

from ccp.repack.compare import differences
from ccp.repack.copy import repack


def make_named_types_file(path):
    with h5py.File(path, "w", track_order=True) as f:
        # the dataset's link comes before its type's (creation order tracked): the type is not copied yet
        f.create_group("data")
        f["types/real"] = np.dtype("<f8")
        f["types/real"].attrs["units"] = "m"
        f["types/rec"] = np.dtype([("i", "<i4"), ("x", "<f4")])
        f["types/text"] = h5py.string_dtype()
        f["data"].create_dataset("a", data=np.arange(40.0).reshape(8, 5), dtype=f["types/real"], chunks=(4, 5),
                                 compression="gzip")
        f["data"].create_dataset("b", data=np.arange(12.0), dtype=f["types/real"])          # contiguous
        f["data"].create_dataset("rec", data=np.array([(i, i / 2) for i in range(10)], dtype=f["types/rec"].dtype),
                                 dtype=f["types/rec"], chunks=(5,))
        f["data"].create_dataset("text", data=np.array(["x", "yy", "zzz"], dtype=object), dtype=f["types/text"],
                                 chunks=(2,))
        f.create_dataset("plain", data=np.arange(10), chunks=(5,))
        f["z_late"] = np.dtype("<i2")            # a named type whose link comes after a dataset using it
        f.create_dataset("uses_late", data=np.arange(6, dtype="<i2"), dtype=f["z_late"], chunks=(3,))
    return path


OPTION_SETS = [
    ("gzip-all", {}, {None: "gzip:4"}),
    ("shuffle-fletcher-all", {}, {None: "shuffle+fletcher32"}),
    ("h5repack-gzip-one", {}, {"/data/a": "GZIP=6"}),
    ("rechunk-one", {"/data/a": "CHUNK=2x5"}, {}),
    ("contiguous-all", {None: "CONTI"}, {None: "NONE"}),
    ("compact-small", {"/data/b": "COMPA"}, {}),
    ("chunk-contiguous", {"/data/b": "CHUNK=4"}, {}),
    ("filters-removed", {}, {"/data/a": "NONE"}),
    ("library-path-lzf", {}, {None: "lzf"}),
    ("vlen-named", {}, {"/data/text": "gzip:1"}),
    ("late-type", {}, {"/uses_late": "gzip:2"}),
    ("nothing", {}, {}),
]


@pytest.mark.parametrize(("layouts", "filters"), [o[1:] for o in OPTION_SETS], ids=[o[0] for o in OPTION_SETS])
def test_rewritten_datasets_keep_their_named_datatype(tmp_path, layouts, filters):
    src = make_named_types_file(tmp_path / "in.h5")
    out = tmp_path / "out.h5"
    res = repack(src, out, layouts, filters, threads=1)
    assert res.repacked or not (layouts or filters)
    assert differences(src, out, layouts_may_differ=True) == []
    with h5py.File(src, "r") as fi, h5py.File(out, "r") as fo:
        named = {h5o.get_info(fo[p].id).addr: p for p in ("types/real", "types/rec", "types/text", "z_late")}
        for path, type_path in (("data/a", "types/real"), ("data/b", "types/real"), ("data/rec", "types/rec"),
                                ("data/text", "types/text"), ("uses_late", "z_late")):
            assert fi[path].id.get_type().committed()
            tid = fo[path].id.get_type()
            assert tid.committed(), f"{path} lost its named datatype"
            if res.dataset("/" + path).changed:    # rewritten: shares the output's named datatype itself
                assert named.get(h5o.get_info(tid).addr) == type_path, path
        assert dict(fo["types/real"].attrs) == {"units": "m"}
