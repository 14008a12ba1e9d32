"""Variable-length (string) variables are recorded with their HDF5 type's size and left out of the chunk model,
with a line saying so: one such variable never makes ``ccp diagnose`` refuse the whole trace (issue 23, F1)."""

import json
import subprocess
import sys
import textwrap

import pytest
from traced_program import ROOT, trace_program

pytest.importorskip("netCDF4")

PROGRAM = textwrap.dedent("""
    import sys, netCDF4, numpy as np
    path = sys.argv[1]
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 40)
        v = ds.createVariable("names", str, ("n",))
        for i in range(40):
            v[i] = "station-%d" % i
        ragged = ds.createVLType(np.int32, "ragged")
        r = ds.createVariable("counts", ragged, ("n",))
        for i in range(40):
            r[i] = np.arange(i % 5 + 1, dtype="i4")
        t = ds.createVariable("temp", "f4", ("n",), chunksizes=(8,))
        t[:] = np.arange(40.0)
    with netCDF4.Dataset(path) as ds:
        ds["names"][:]
        ds["counts"][:]
        for i in range(40):
            ds["temp"][i]
""")


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("vlen"), PROGRAM)


def test_vlen_variables_are_recorded_with_the_hdf5_type_size(traced):
    layouts = {d["dataset"]: d for d in json.loads((traced / "trace.json").read_text())["datasets"]}
    assert layouts["/names"]["itemsize"] == 8 and layouts["/names"]["vlen"] is True     # a char* per element
    assert layouts["/counts"]["itemsize"] == 16 and layouts["/counts"]["vlen"] is True  # an hvl_t per element
    assert layouts["/temp"]["itemsize"] == 4 and not layouts["/temp"].get("vlen")


def test_diagnose_keeps_the_trace_and_says_vlen_is_not_modelled(traced):
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", str(traced)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "/temp in " in r.stdout                           # the fixed-size variable is diagnosed as ever
    for name in ("/names", "/counts"):
        block = r.stdout.split(f"{name} in ", 1)[1].split("\n\n", 1)[0]
        assert "variable-length" in block and "not modelled" in block, block
