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


@pytest.mark.parametrize("dataset, group", [("/tas", ""), ("/grp/w", "grp")], ids=["root", "group"])
def test_xarray_cures_run_as_printed_for_a_group_and_keep_every_variables_chunks(tmp_path, dataset, group):
    """A group variable's cure opens its group; the chunks cure keeps each variable's stored chunks (chunks= would
    apply one shape to every variable, splitting the other's: breaker5 F11, F17)."""
    import re
    import warnings

    import numpy as np
    import xarray as xr

    from ccp.trace.libraries import batched_code, keep_open_code

    pytest.importorskip("dask")
    path = tmp_path / "g.nc"
    xr.Dataset({"tas": (("time", "y", "x"), np.zeros((20, 40, 50), "f4")),
                "packed": (("time", "y", "x"), np.zeros((20, 40, 50), "f4"))}).to_netcdf(
        path, engine="h5netcdf", encoding={"tas": {"chunksizes": (1, 40, 50)}, "packed": {"chunksizes": (10, 10, 10)}})
    xr.Dataset({"w": (("time", "z"), np.arange(600.0).reshape(20, 30))}).to_netcdf(
        path, mode="a", group="grp", engine="h5netcdf", encoding={"w": {"chunksizes": (7, 30)}})
    dims, chunks = (["time", "y", "x"], (1, 40, 50)) if not group else (["time", "z"], (7, 30))
    lo, hi = [0] * len(dims), [10] + ([40, 50] if not group else [30])
    code = batched_code(dataset, lo, hi, 1000, ("h5netcdf", "xarray"), dims, chunks)
    keep = keep_open_code(str(path), dataset, ("h5netcdf", "xarray"))
    assert (f'group="{group}"' in code and f'group="{group}"' in keep) is bool(group)
    first, other = code.split("\n")[:2]
    opened = re.search(r"ds = (xr\.open_dataset\(path[^)]*\))", first)
    scope = {"xr": xr, "path": str(path)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # xarray warns when chunks= splits stored chunks
        scope["ds"] = eval(opened.group(1), scope) if opened else xr.open_dataset(path)
        exec(first.split("   #")[0], scope)
        reopen = other.split("use: ", 1)[1]
        assert reopen.endswith("chunks={})")
        ds = eval(reopen, scope)
        name = dataset.rsplit("/", 1)[-1]
        assert tuple(c[0] for c in ds[name].chunks) == chunks
        if not group:
            assert tuple(c[0] for c in ds["packed"].chunks) == (10, 10, 10)
        ds.close()
        scope["ds"].close()


@pytest.mark.parametrize("source, calls", [("ds = xr.open_mfdataset(files)\n", True),
                                           ("ds = xr.open_dataset(path)\n", False)], ids=["mfdataset", "dataset"])
def test_a_program_opening_many_files_is_told_apart(tmp_path, source, calls):
    import pandas as pd

    from ccp.trace.libraries import program_source_calls
    from ccp.workload.tracefile import Trace

    prog = tmp_path / "p.py"
    prog.write_text("import xarray as xr\n" + source)
    trace = Trace(tmp_path, {"command": ["python", str(prog)]}, pd.DataFrame({"api": [], "file": []}))
    assert program_source_calls(trace, "open_mfdataset") is calls


LRU = textwrap.dedent("""
    import sys, numpy as np, xarray as xr
    path = sys.argv[1]
    for name in (path, path + "2"):
        xr.Dataset({"tas": (("time", "y", "x"), np.zeros((30, 20, 10), "f4"))}).to_netcdf(
            name, engine="h5netcdf", encoding={"tas": {"chunksizes": (1, 20, 10)}})
    xr.set_options(file_cache_maxsize=1)         # two files read in turn: each closed and reopened every read
    a = xr.open_dataset(path, engine="h5netcdf"); b = xr.open_dataset(path + "2", engine="h5netcdf")
    for j in range(20):
        a["tas"][:, j, 0].values; b["tas"][:, j, 0].values
""")


def test_an_xarray_file_cache_the_program_sized_is_named_and_cured(tmp_path):
    out = trace_program(tmp_path, LRU)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", "--json", str(out)], capture_output=True,
                       text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    d = next(d for d in json.loads(r.stdout)["datasets"] if d["dataset"] == "/tas" and d["reads"])
    assert any("xarray's file cache, which the program sized" in f for f in d["findings"]), d["findings"]
    cure = next(c for c in d["cures"] if c["cure"].startswith("xarray's file cache"))
    assert "xr.set_options(file_cache_maxsize=" in cure["code"] and cure["apply"] == {"kind": "xarray_file_cache"}


def test_without_dimension_names_the_xarray_cure_indexes_by_position(tmp_path):
    """A file read through a file object has no dimension names in the trace: positional indexing runs, a made-up
    isel(dim0=...) does not (breaker5 F27)."""
    import numpy as np
    import xarray as xr

    from ccp.trace.libraries import batched_code

    path = tmp_path / "p.nc"
    xr.Dataset({"packed": (("time", "y", "x"), np.arange(6000.0).reshape(60, 10, 10))}).to_netcdf(path, engine="h5netcdf")
    code = batched_code("/packed", [0, 0, 0], [60, 10, 10], 48000, ("h5netcdf", "xarray"), None, (10, 10, 10))
    assert "dim0" not in code and "10x10x10" in code
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        scope = {"ds": ds}
        exec(code.split("\n")[0].split("   #")[0], scope)
        assert scope["da"].shape == (60, 10, 10)
