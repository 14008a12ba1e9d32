"""netCDF4-python reads are worded by their library: netCDF-C's per-variable cache, netCDF4-python's overhead, and
no chunk cache for a contiguous variable (issue 23, F2)."""

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
        ds.createDimension("t", 400)
        ds.createDimension("x", 50)
        ds.createVariable("flat", "f4", ("t", "x"), contiguous=True)[:] = np.ones((400, 50))
        ds.createVariable("tiled", "f4", ("t", "x"), chunksizes=(40, 50))[:] = np.ones((400, 50))
    with netCDF4.Dataset(path) as ds:
        flat, tiled = ds["flat"], ds["tiled"]
        for i in range(400):          # many tiny reads: netCDF4-python's own time shows
            flat[i, 0]
            tiled[i, 0]
""")


@pytest.fixture(scope="module")
def diagnosis(tmp_path_factory):
    out = trace_program(tmp_path_factory.mktemp("ncwords"), PROGRAM)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", str(out)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    return {name: r.stdout.split(f"\n{name} in ", 1)[1].split("\n\n", 1)[0] for name in ("/flat", "/tiled")}


def test_a_contiguous_variable_gets_no_chunk_cache(diagnosis):
    head = diagnosis["/flat"].splitlines()[0]
    assert "contiguous" in head and "cache" not in head, head
    assert "chunk cache of" not in diagnosis["/flat"]


def test_netcdf_reads_are_worded_by_their_library(diagnosis):
    assert "netCDF-C chunk cache (get_var_chunk_cache)" in diagnosis["/tiled"].splitlines()[0]
    for block in diagnosis.values():
        assert "h5py" not in block, block
