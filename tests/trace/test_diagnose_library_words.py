"""A cure in the words of the library that made the calls, not of whatever was imported (issue 23, tester
breaker3 F-dask-xarray): xarray reads HDF5 only through h5netcdf or netCDF4; nccopy only for netCDF-4 files."""

import h5py
import numpy as np
import pytest

from ccp.trace.diagnose import diagnose
from ccp.trace.libraries import is_netcdf4_file, repack_code
from ccp.workload.tracefile import load_trace
from tests.trace.traced_program import trace_program

IMPORTS_XARRAY_READS_H5PY = """
import sys, h5py
import xarray  # noqa: F401  imported (as dask's helpers do) but never used to read
with h5py.File(sys.argv[1], "r") as f:
    a = f["a"]
    for i in range(2000):                  # all in one chunk: reading it once is the cure
        a[i % 20, i % 30]
"""


@pytest.mark.parametrize("mark, netcdf", [("_NCProperties", True), ("scale", True), (None, False)],
                         ids=["ncproperties", "dimension-scale", "plain-h5py"])
def test_nccopy_only_for_a_netcdf4_file(tmp_path, mark, netcdf):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.zeros((4, 6), "f4"), chunks=(2, 3))
        if mark == "_NCProperties":
            f.attrs["_NCProperties"] = "version=2,netcdf=4.9.2,hdf5=1.14.0"
        elif mark == "scale":
            f.create_dataset("x", data=np.arange(4)).make_scale("x")
    assert is_netcdf4_file(str(path)) is netcdf
    code = repack_code(str(path), "/a", (4, 6), str(tmp_path / "o.h5"), ("xarray",))
    assert ("\nnccopy -k nc4" in code) is netcdf


def test_xarray_imported_but_h5py_reading_gets_h5py_words(tmp_path):
    pytest.importorskip("xarray")
    with h5py.File(tmp_path / "data.h5", "w") as f:
        f.create_dataset("a", data=np.arange(60000, dtype="f4").reshape(200, 300), chunks=(20, 30), compression="gzip")
    diag = diagnose(load_trace(trace_program(tmp_path, IMPORTS_XARRAY_READS_H5PY)))
    assert "xarray" not in diag["libraries"]
    code = "\n".join(c["code"] for d in diag["datasets"] for c in d["cures"])
    assert ".load()" not in code and "xr.open_dataset" not in code and "nccopy -k" not in code
    assert "block = dset[" in code
