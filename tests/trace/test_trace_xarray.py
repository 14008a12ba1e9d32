"""An xarray program that selects one step at a time gets xarray's cures in its own dimension names, never a chunk
cache that cannot take effect while xarray reaches the variable afresh for each selection (issue 23, F3)."""

import ast
import json
import subprocess
import sys
import textwrap

import pytest
from traced_program import ROOT, trace_program

pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

PROGRAM = textwrap.dedent("""
    import sys, numpy as np, xarray as xr
    path = sys.argv[1]
    t2m = xr.DataArray(np.zeros((48, 60, 90), "f4"), dims=("time", "lat", "lon"), name="t2m")
    t2m.to_dataset().to_netcdf(path, engine="h5netcdf",
                               encoding={"t2m": {"chunksizes": (48, 30, 30), "zlib": True}})
    ds = xr.open_dataset(path, engine="h5netcdf")
    for t in range(48):                      # one time step at a time, each a new selection
        ds["t2m"].isel(time=t).values
""")


@pytest.fixture(scope="module")
def diagnosis(tmp_path_factory):
    out = trace_program(tmp_path_factory.mktemp("xarray"), PROGRAM)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", "--json", str(out)], capture_output=True,
                       text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    return next(d for d in json.loads(r.stdout)["datasets"] if d["dataset"] == "/t2m" and d["reads"])


def test_no_cache_cure_for_an_xarray_reader(diagnosis):
    assert diagnosis["cures"], diagnosis["findings"]
    assert not [c for c in diagnosis["cures"] if "chunk cache" in c["cure"]], [c["cure"] for c in diagnosis["cures"]]


def test_xarray_cures_use_the_variables_dimension_names(diagnosis):
    code = "\n".join(c["code"] for c in diagnosis["cures"] if not c["code"].startswith(("ccp ", "nccopy ")))
    assert "time=" in code and "dim0" not in code, code
    for c in diagnosis["cures"]:
        if not c["code"].startswith(("ccp ", "nccopy ")):
            ast.parse(c["code"])


def test_a_coordinate_variable_is_named_by_its_own_dimension(tmp_path):
    """A coordinate variable is a dimension scale, with no scale attached to it: its dimension is its own name
    (xarray's isel(time=...)), not dim0 (breaker4's F4)."""
    import numpy as np
    import xarray as xr

    from ccp.trace.after_run import dimension_names

    path = tmp_path / "c.nc"
    xr.Dataset({"tas": (("time", "y"), np.zeros((4, 3), "f4"))},
               coords={"time": np.arange(4.0)}).to_netcdf(path, engine="h5netcdf")
    assert dimension_names({"file": str(path), "dataset": "/time"}) == ["time"]
    assert dimension_names({"file": str(path), "dataset": "/tas"}) == ["time", "y"]
