"""Property-list builders: what each sets is what HDF5 reads back."""

import h5py
import numpy as np
import pytest
from h5py import h5d, h5f, h5s, h5t

from ccp.hdf5 import plists
from ccp.hdf5.dataset import DatasetInfo
from ccp.hdf5.filters import parse_filters, pipeline_from_dcpl


def _info(dtype="<f4", fill=None, filetype=None):
    return DatasetInfo((10, 20), np.dtype(dtype), (None, 20), fill, None, parse_filters("none"), "t", filetype=filetype)


@pytest.mark.parametrize(("chunks", "spec", "fill"), [
    (None, "none", None), ((5, 20), "shuffle+gzip:3", -2.5), ((10, 10), "zstd:4", 7.0),
], ids=["contiguous", "chunked-filtered", "plugin-filter"])
def test_dcpl_sets_layout_filters_and_fill(chunks, spec, fill):
    plist = plists.dcpl(_info(fill=fill), chunks, parse_filters(spec))
    assert plist.get_layout() == (h5d.CHUNKED if chunks else h5d.CONTIGUOUS)
    if chunks:
        assert tuple(plist.get_chunk()) == chunks
        assert pipeline_from_dcpl(plist).spec == spec
    if fill is None:
        assert plist.fill_value_defined() == h5d.FILL_VALUE_DEFAULT
    else:
        buf = np.zeros(1, "<f4")
        plist.get_fill_value(buf)
        assert buf[0] == fill


def test_dcpl_of_non_numeric_data_keeps_hdf5s_fill():
    info = _info("V4", fill=None, filetype=h5t.C_S1.copy().encode())
    assert plists.dcpl(info, (5, 20), parse_filters("none")).fill_value_defined() == h5d.FILL_VALUE_DEFAULT


@pytest.mark.parametrize(("build", "expected"), [
    (lambda: plists.dapl(1009, 3 << 20, 0.5), (1009, 3 << 20, 0.5)),
    (lambda: plists.cache_dapl(type("C", (), {"nslots": 521, "nbytes": 4096, "w0": 1.0})()), (521, 4096, 1.0)),
    (plists.no_cache_dapl, (521, 0, 0.75)),
], ids=["dapl", "cache_dapl", "no_cache"])
def test_dapl_sets_the_chunk_cache(build, expected):
    assert tuple(build().get_chunk_cache()) == expected


def test_log_fapl_logs_raw_reads(tmp_path):
    path, log = tmp_path / "l.h5", tmp_path / "l.log"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(1000, dtype="<f8"))
    fid = h5f.open(str(path).encode(), h5f.ACC_RDONLY, plists.log_fapl(log))
    ds = h5d.open(fid, b"d")
    ds.read(h5s.ALL, h5s.ALL, np.empty(1000, "<f8"))
    ds.close()
    fid.close()
    text = log.read_text()
    assert any("8000 bytes" in line and "(H5FD_MEM_DRAW) Read" in line for line in text.splitlines())


def test_relaid_dcpl_keeps_fill_and_changes_layout_and_filters(tmp_path):
    with h5py.File(tmp_path / "r.h5", "w") as f:
        ds = f.create_dataset("d", data=np.arange(200, dtype="<i2").reshape(10, 20), chunks=(5, 5), fillvalue=-3,
                              compression="gzip")
        plist = plists.relaid_dcpl(ds.id, "chunked", (10, 10), parse_filters("shuffle"))
        assert tuple(plist.get_chunk()) == (10, 10) and pipeline_from_dcpl(plist).spec == "shuffle"
        buf = np.zeros(1, "<i2")
        plist.get_fill_value(buf)
        assert buf[0] == -3
        kept = plists.relaid_dcpl(ds.id, "chunked", (2, 20), None)     # None: keep the dataset's filters
        assert pipeline_from_dcpl(kept).spec == "gzip:4"
        assert plists.relaid_dcpl(ds.id, "contiguous", None, parse_filters("none")).get_layout() == h5d.CONTIGUOUS
