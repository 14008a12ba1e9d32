"""DatasetInfo from files ccp did not write the way it writes them: chunked, contiguous, compact,
filtered, netCDF-4 (netCDF-C), PyTables; and the one-line refusals of describe_source."""

from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from ccp.errors import CcpError, ConfigError
from ccp.hdf5.dataset import dataset_info, open_readonly, source_of, stored_chunk_sizes

DATA = np.arange(20 * 30, dtype="<f4").reshape(20, 30)


def _info(path, name):
    with h5py.File(path, "r") as f:
        info = dataset_info(f[name].id)
        sizes = stored_chunk_sizes(f[name].id)
    return info, sizes


@pytest.mark.parametrize(("case", "kwargs", "layout", "chunks", "filters"), [
    ("chunked", {"chunks": (10, 15)}, "chunked", (10, 15), "none"),
    ("contiguous", {}, "contiguous", None, "none"),
    ("filtered", {"chunks": (5, 30), "compression": "gzip", "compression_opts": 3, "shuffle": True}, "chunked",
     (5, 30), "shuffle+gzip:3"),
], ids=["chunked", "contiguous", "filtered"])
def test_h5py_files(tmp_path, case, kwargs, layout, chunks, filters):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("g/d", data=DATA, fillvalue=-1.5, **kwargs)
    info, sizes = _info(path, "g/d")
    assert (info.layout, info.chunks, info.filters.spec) == (layout, chunks, filters)
    assert (info.shape, info.maxshape, info.dtype, info.fillvalue) == ((20, 30), (20, 30), np.dtype("<f4"), -1.5)
    assert info.numeric and info.extent == "simple" and info.storage_bytes > 0
    if chunks is None:
        assert info.chunks_allocated is None and sizes.size == 0
    else:
        assert info.chunks_allocated == len(sizes) and int(sizes.sum()) == info.storage_bytes
    src = source_of(path, "/g/d")                   # the sweep's view: same facts plus where it lives
    assert (src.layout, src.chunks, src.filters, src.path) == (layout, chunks, info.filters, "/g/d")
    assert src.identity.startswith(f"file:{path}")


def test_compact_scalar_and_null(tmp_path):
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT16, h5py.h5s.create_simple((4, 5)), dcpl=dcpl)
        f.create_dataset("scalar", data=3.0)
        f.create_dataset("null", data=h5py.Empty("f8"))
    info, _ = _info(path, "compact")
    assert (info.layout, info.shape, info.chunks, info.dtype) == ("compact", (4, 5), None, np.dtype("<i2"))
    scalar, _ = _info(path, "scalar")
    null, _ = _info(path, "null")
    assert (scalar.extent, scalar.shape) == ("scalar", ())
    assert (null.extent, null.shape) == ("null", ())
    for name, words in (("scalar", "a scalar dataspace"), ("null", "a null dataspace")):
        with pytest.raises(ConfigError, match=words):
            source_of(path, f"/{name}")


def test_non_numeric_is_raw_records_of_its_file_size(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=np.array([b"ab", b"cdef"] * 5, dtype="S4"), chunks=(5,))
    info, _ = _info(path, "s")
    assert not info.numeric and info.dtype == np.dtype("V4") and info.filetype is not None
    assert info.fillvalue is None


def test_netcdf4_file_written_by_netcdf_c(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    path = tmp_path / "n.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 30)
        v = nc.createVariable("t", "f4", ("time", "x"), zlib=True, complevel=2, shuffle=True, chunksizes=(4, 30),
                              fill_value=-999.0)
        v[0:20, :] = DATA
    info, sizes = _info(path, "t")
    assert (info.layout, info.chunks, info.filters.spec) == ("chunked", (4, 30), "shuffle+gzip:2")
    assert (info.shape, info.maxshape, info.fillvalue) == ((20, 30), (None, 30), -999.0)
    assert info.chunks_allocated == 5 == len(sizes)
    src = source_of(path, "/t")
    assert src.filters == info.filters and src.numeric


def test_pytables_file(tmp_path):
    tables = pytest.importorskip("tables")
    path = tmp_path / "p.h5"
    with tables.open_file(path, "w") as f:
        f.create_carray("/", "a", obj=DATA, chunkshape=(10, 30), filters=tables.Filters(complevel=4, complib="zlib"))
    info, _ = _info(path, "a")
    assert (info.chunks, info.filters.spec, info.dtype) == ((10, 30), "shuffle+gzip:4", np.dtype("<f4"))  # PyTables shuffles by default


def test_open_readonly_names_what_the_file_is(tmp_path):
    cdf = tmp_path / "classic.nc"
    cdf.write_bytes(b"CDF\x01" + b"\x00" * 60)
    with pytest.raises(CcpError, match="netCDF-3 classic.*nccopy"):
        open_readonly(cdf)
    with pytest.raises(ConfigError, match="file not found"):
        open_readonly(tmp_path / "missing.h5")


def test_describe_source_of_generate_needs_no_file():
    from ccp.hdf5.dataset import describe_source
    from ccp.hdf5.filters import parse_filters

    g = SimpleNamespace(shape=(8, 8), maxshape=None, dtype=np.dtype("<f4"), data="random", seed=1, written_by=None,
                        fillvalue=0.0, chunks=(4, 4), filters=parse_filters("gzip:1"))
    info = describe_source(SimpleNamespace(generate=g, file=Path("unused"), path="/d"))
    assert (info.stored_layout, info.layout, info.filters.spec) == ("chunked", "", "gzip:1")
