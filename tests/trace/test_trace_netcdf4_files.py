"""What netCDF4-python opened: datasets in memory are not the file of their name, netCDF-3 files are named (not HDF5)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from ccp.trace.after_run import check_layout
from ccp.trace.netcdf import in_memory

netCDF4 = pytest.importorskip("netCDF4")

ROOT = Path(__file__).resolve().parents[2]


def ccp(*args, cwd=None):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=600, cwd=cwd)


def older_file(path: Path) -> None:
    """A 3-d /tas in 1x40x50 chunks: the file on disk the in-memory dataset is named like."""
    with netCDF4.Dataset(path, "w") as nc:
        for name, n in (("time", 6), ("y", 40), ("x", 50)):
            nc.createDimension(name, n)
        v = nc.createVariable("tas", "f4", ("time", "y", "x"), chunksizes=(1, 40, 50))
        v[:] = np.zeros((6, 40, 50), "f4")


@pytest.mark.parametrize("open_args", [
    'diskless=True, persist=False',
    pytest.param('memory=1 << 20', marks=pytest.mark.slow),
], ids=["diskless", "memory"])
def test_an_in_memory_dataset_is_not_the_file_of_its_name(tmp_path, open_args):
    older_file(tmp_path / "data.nc")
    before = (tmp_path / "data.nc").read_bytes()
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(f"""
        import netCDF4, numpy as np
        nc = netCDF4.Dataset("data.nc", "w", {open_args})
        nc.createDimension("t", 50); nc.createDimension("x", 8)
        v = nc.createVariable("tas", "f8", ("t", "x"), chunksizes=(50, 1))
        v[:] = np.arange(400.).reshape(50, 8)
        print(sum(float(v[i, :].sum()) for i in range(50)))
        nc.close()
    """))
    r = ccp("trace", "-o", tmp_path / "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    head = json.loads((tmp_path / "T" / "trace.json").read_text())
    (entry,) = head["datasets"]
    assert entry["file"] == "<in memory: data.nc>"
    assert entry["chunks"] == [50, 1] and entry["shape"] == [50, 8]
    assert entry["hdf5_path"].startswith("not checked: a dataset in memory")
    assert not any(f.get("sha256") for f in head.get("files", []) if "data.nc" in str(f.get("path")))
    d = ccp("diagnose", tmp_path / "T")
    assert d.returncode == 0, d.stderr
    assert "damaged" not in d.stdout + d.stderr
    assert "ccp repack" not in d.stdout and "copy it locally" not in d.stdout
    assert (tmp_path / "data.nc").read_bytes() == before


@pytest.mark.parametrize("args, kwargs, memory", [
    (("a.nc", "w"), {"diskless": True}, True),
    (("a.nc", "w", True, "NETCDF4", True, True), {}, False),     # persisted: the file on disk at the end
    (("a.nc",), {"diskless": True}, False),                       # a diskless read loads the file on disk
    (("a.nc",), {"memory": b"x"}, True),
    (("a.nc", "r"), {}, False),
], ids=["diskless-w", "diskless-persist", "diskless-read", "memory-bytes", "plain"])
def test_in_memory_is_told_from_the_dataset_arguments(args, kwargs, memory):
    assert in_memory(args, kwargs) is memory


def test_a_file_dataset_of_another_rank_leaves_the_recorded_layout(tmp_path):
    with h5py.File(tmp_path / "data.nc", "w") as f:
        f.create_dataset("tas", (6, 40, 50), "f4", chunks=(1, 40, 50))
    entry = {"file": str(tmp_path / "data.nc"), "dataset": "/tas", "shape": [50, 8], "chunks": [50, 1],
             "library": "netCDF4", "mode": "w", "layout": "chunked", "filters": []}
    out = check_layout(entry)
    assert out["chunks"] == [50, 1] and out["shape"] == [50, 8]
    assert out["hdf5_path"].startswith("not checked:") and "[6, 40, 50]" in out["hdf5_path"]


@pytest.mark.parametrize("with_netcdf4_file", [pytest.param(False, marks=pytest.mark.slow), True],
                         ids=["netcdf3-only", "netcdf3-and-netcdf4"])
def test_a_netcdf3_file_is_named_as_not_hdf5(tmp_path, with_netcdf4_file):
    with netCDF4.Dataset(tmp_path / "c3.nc", "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("t", 10)
        nc.createDimension("x", 20)
        nc.createVariable("v", "f4", ("t", "x"))[:] = np.zeros((10, 20), "f4")
    older_file(tmp_path / "data.nc")
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(f"""
        import netCDF4
        with netCDF4.Dataset("c3.nc") as nc:
            for i in range(10): nc["v"][i, :]
        if {with_netcdf4_file}:
            with netCDF4.Dataset("data.nc") as nc:
                nc["tas"][0, 0, :]
    """))
    r = ccp("trace", "-o", tmp_path / "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    named = f"not HDF5: {tmp_path / 'c3.nc'} (NETCDF3_CLASSIC)"
    assert named in r.stderr and "no h5py dataset calls" not in r.stderr
    d = ccp("diagnose", tmp_path / "T")
    assert d.returncode == 0, d.stderr
    assert named in d.stdout and "no h5py dataset calls" not in d.stdout
    assert ("/tas in" in d.stdout) is with_netcdf4_file


def test_a_call_that_raised_is_recorded_as_failed_and_left_out_of_the_model(tmp_path):
    older_file(tmp_path / "data.nc")          # /tas 6x40x50
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import netCDF4
        with netCDF4.Dataset("data.nc") as nc:
            v = nc["tas"]
            for j in range(20):
                v[:, j, 0]
            try:
                v[6, 0, 0]                     # one past the end: IndexError
            except IndexError as exc:
                print("raised", type(exc).__name__)
    """))
    r = ccp("trace", "-o", tmp_path / "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "raised IndexError" in r.stdout
    import pandas as pd

    t = pd.read_parquet(tmp_path / "T" / "calls.parquet")
    calls = t[(t["kind"] == "call").fillna(False)]
    assert len(calls[(calls["depth"] == 0).fillna(False)]) == 20
    assert not any(list(s)[:1] == [6] for s in calls["start"].dropna())
    failed = t[(t["op"] == "call_failed").fillna(False)]
    assert list(failed["reason"]) == ["Variable.__getitem__ (read) raised IndexError"]
    d = ccp("diagnose", tmp_path / "T")
    assert d.returncode == 0, d.stderr
    # no box past the end (a speed-up such as "13.7x faster" is not a box)
    assert "0:7" not in d.stdout and "7x20x1" not in d.stdout
    assert "reads: 20 call(s)" in d.stdout


def test_the_wrapped_methods_keep_netcdf4s_names_and_docs(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import netCDF4
        for owner, name in ((netCDF4.Variable, "__getitem__"), (netCDF4.Variable, "__setitem__"),
                            (netCDF4.Variable, "_get"), (netCDF4.Variable, "set_var_chunk_cache"),
                            (netCDF4.Dataset, "__init__"), (netCDF4.Dataset, "close")):
            f = getattr(owner, name)
            print(name, f.__name__, f.__qualname__, getattr(f, "__module__", None), repr(f.__doc__)[:60])
    """))
    plain = subprocess.run([sys.executable, prog], capture_output=True, text=True, check=True, timeout=300)
    r = ccp("trace", "-o", tmp_path / "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout


def test_an_mfdataset_masters_variable_has_its_files_own_shape(tmp_path):
    """netCDF4.MFDataset gives its master file's variable the aggregated length; the trace keeps each file's own
    (breaker5 F16: the master's /v was recorded 30x20 in a file holding 10x20)."""
    for k in range(3):
        with netCDF4.Dataset(tmp_path / f"mf{k}.nc", "w", format="NETCDF4_CLASSIC") as nc:
            nc.createDimension("time", None)
            nc.createDimension("x", 20)
            nc.createVariable("v", "f4", ("time", "x"), chunksizes=(5, 20))[0:10] = np.zeros((10, 20), "f4")
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import netCDF4
        with netCDF4.MFDataset("mf*.nc") as nc:
            for i in range(0, 30, 3):
                nc["v"][i, :]
    """))
    r = ccp("trace", "-o", tmp_path / "T", "--", sys.executable, prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    head = json.loads((tmp_path / "T" / "trace.json").read_text())
    shapes = {Path(d["file"]).name: d["shape"] for d in head["datasets"] if d["dataset"] == "/v"}
    assert shapes and all(s == [10, 20] for s in shapes.values()), shapes
