"""netCDF4-python programs traced end to end: Variable reads and writes, HDF5 paths, netCDF-C's cache, cures."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from ccp.trace.hooks import patch_library
from ccp.trace.netcdf import selection

netCDF4 = pytest.importorskip("netCDF4")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def ccp(*args):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=600)


def traced(tmp_path, *program, name="t"):
    out = tmp_path / name
    r = ccp("trace", "-o", out, "--", sys.executable, *program)
    assert r.returncode == 0, r.stderr
    return r, out


def table(out: Path) -> pd.DataFrame:
    t = pd.read_parquet(out / "calls.parquet")
    for c in ("kind", "api", "op", "file", "dataset", "sel", "mode", "reason"):
        t[c] = t[c].fillna("").astype(str)           # plain strings: comparisons give plain booleans
    return t


def own_count(stdout: str) -> int:
    return int(stdout.rsplit("dataset calls: ", 1)[1].split()[0])


def test_a_netcdf4_reader_is_traced_and_diagnosed_with_netcdf4_cures(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("netcdf4_reader", EXAMPLES / "netcdf4_reader.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    data = tmp_path / "tas.nc"
    example.make_file(str(data))        # untraced: the trace holds the reads only
    r, out = traced(tmp_path, EXAMPLES / "netcdf4_reader.py", "--file", data, "--points", "3")
    t = table(out)
    user = t[(t["kind"] == "call") & (t["depth"] == 0)]
    assert len(user) == own_count(r.stdout) == 3
    assert set(user["api"]) == {"Variable.__getitem__"}
    low = t[t["api"] == "Variable._get"]
    assert len(low) == 3 and (low["count"].map(list) == pd.Series([[365, 1, 1]] * 3, index=low.index)).all()
    opens = t[(t["kind"] == "event") & (t["op"] == "dataset_open")]
    assert len(opens) == 3 and set(opens["cache_nbytes"]) == {64 << 20} and set(opens["cache_nslots"]) == {1000}
    assert len(t[(t["kind"] == "event") & (t["op"] == "dataset_close")]) == 3      # each `with` closes the file
    (lay,) = json.loads((out / "trace.json").read_text())["datasets"]
    assert lay["dataset"] == "/tas" and lay["library"] == "netCDF4" and lay["hdf5_path"] == "found"
    with h5py.File(data, "r") as f:
        assert lay["chunks"] == list(f["tas"].chunks) and lay["storage_size"] == f["tas"].id.get_storage_size()
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert "the chunk cache was lost 2 time(s)" in d.stdout
    assert 'v = nc["tas"]' in d.stdout and f'netCDF4.Dataset("{data}")' in d.stdout
    assert f"nccopy -k nc4 -c tas:365,1,1 {data} " in d.stdout
    assert "h5py.File" not in d.stdout


READER_SMALL_CACHE = """
import sys, netCDF4, numpy as np
nc = netCDF4.Dataset(sys.argv[1], "w")
nc.createDimension("t", None); nc.createDimension("y", 30); nc.createDimension("x", 40)
v = nc.createGroup("obs").createVariable("tas", "f4", ("t", "y", "x"), zlib=True, chunksizes=(1, 30, 40))
v[0:50] = np.ones((50, 30, 40), "f4")
nc.close()
nc = netCDF4.Dataset(sys.argv[1])
v = nc["obs/tas"]
v.set_var_chunk_cache(size=64 * 1024)
for j in range(0, 30, 3):
    for i in range(0, 40, 10):
        v[:, j, i]
nc.close()
print("dataset calls: 40")
"""


def test_a_small_set_var_chunk_cache_is_recorded_and_cured_in_netcdf4_terms(tmp_path):
    prog = tmp_path / "reader.py"
    prog.write_text(READER_SMALL_CACHE)
    r, out = traced(tmp_path, prog, tmp_path / "d.nc")
    t = table(out)
    reads = t[(t["api"] == "Variable.__getitem__")]
    assert len(reads) == 40 and set(reads["dataset"]) == {"/obs/tas"}
    ev = t[(t["kind"] == "event") & (t["dataset"] == "/obs/tas")]
    caches = ev.loc[ev["op"] == "dataset_open", "cache_nbytes"].tolist()
    assert caches[-1] == 64 * 1024       # set_var_chunk_cache: netCDF-C reopened the dataset with it
    assert "set_var_chunk_cache" in ev["reason"].tolist()
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert "netCDF-C chunk cache (get_var_chunk_cache) 64 KiB" in d.stdout
    assert 'v = nc["obs/tas"]\n' in d.stdout.replace("       ", "")
    assert "v.set_var_chunk_cache(size=" in d.stdout and "netCDF4.set_chunk_cache(size=" in d.stdout
    assert "nccopy -k nc4 -c obs/tas:" in d.stdout


def test_a_netcdf4_writer_is_traced_and_cured_in_netcdf4_terms(tmp_path):
    r, out = traced(tmp_path, EXAMPLES / "netcdf4_writer.py", "--file", tmp_path / "o.nc", "--days", "1")
    t = table(out)
    user = t[(t["kind"] == "call") & (t["depth"] == 0)]
    assert len(user) == own_count(r.stdout) == 96 and set(user["api"]) == {"Variable.__setitem__"}
    assert set(user["op"]) == {"write"} and len(t[t["api"] == "Variable._put"]) == 96
    (lay,) = json.loads((out / "trace.json").read_text())["datasets"]
    assert lay["storage_size"] == 0 and lay["hdf5_path"] == "found" and lay["chunks"] == [8, 96, 144]
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert "read-modify-write" in d.stdout
    assert 'nc["tas"].set_var_chunk_cache(size=' in d.stdout
    assert 'nc["tas"][i0:i0 + 8] = buf' in d.stdout and "h5py" not in d.stdout


INDEXING = """
import json, sys, netCDF4, numpy as np
path = sys.argv[1]
with netCDF4.Dataset(path, "w") as nc:
    for name, n in (("t", 6), ("y", 5), ("x", 7)):
        nc.createDimension(name, n)
    nc.createVariable("y", "f4", ("t", "y"))[:] = np.zeros((6, 5), "f4")   # named like a dimension, not its coordinate
    nc.createVariable("v", "i4", ("t", "y", "x"), chunksizes=(2, 5, 7))[:] = np.arange(210).reshape(6, 5, 7)
keys = %s
with netCDF4.Dataset(path) as nc:
    v = nc["v"]
    v.set_auto_mask(False)
    expected = []
    for key in keys:
        k = tuple(np.array(a) if isinstance(a, list) else a for a in key)
        expected.append(sorted(np.asarray(v[k]).ravel().tolist()))   # the values are the flat indices
    nc["y"][1:3, :]
print(json.dumps(expected))
"""

KEYS = [
    ("(slice(None, None, -1), 2, 3)", "reversed"),
    ("(slice(1, 6, 2), slice(None), slice(6, 0, -3))", "strided-and-negative"),
    ("([0, 2, 5], 1, [1, 4])", "lists"),
    ("([True, False, True, False, False, True], slice(None), 0)", "mask"),
    ("(Ellipsis, -1)", "ellipsis-negative-index"),
    ("(4,)", "one-int"),
]


def test_every_index_form_records_the_elements_it_reads(tmp_path):
    keys = "[" + ", ".join(k for k, _ in KEYS) + "]"
    prog = tmp_path / "indexing.py"
    prog.write_text(INDEXING % keys)
    r, out = traced(tmp_path, prog, tmp_path / "i.nc")
    expected = json.loads(r.stdout.splitlines()[-1])
    t = table(out)
    reads = t[(t["api"] == "Variable.__getitem__") & (t["dataset"] == "/v")]
    assert len(reads) == len(KEYS)
    shape = (6, 5, 7)
    for (_key, kid), seq, want in zip(KEYS, reads["seq"], expected):
        got = set()
        for _, low in t[(t["parent"] == seq) & (t["api"] == "Variable._get")].iterrows():
            stride = list(low["stride"]) if low["sel"] == "regular" else [1, 1, 1]
            axes = [range(s, s + c * st, st) for s, c, st in zip(low["start"], low["count"], stride)]
            got |= {int(np.ravel_multi_index(ix, shape)) for ix in np.array(np.meshgrid(*axes, indexing="ij")).reshape(3, -1).T}
        assert sorted(got) == sorted(set(want)), kid
    non_coord = t[t["dataset"] == "/_nc4_non_coord_y"]
    assert len(non_coord[(non_coord["kind"] == "call") & (non_coord["depth"] == 0)]) == 2     # its HDF5 name
    lays = {d["dataset"]: d for d in json.loads((out / "trace.json").read_text())["datasets"]}
    assert lays["/_nc4_non_coord_y"]["hdf5_path"] == "found"


@pytest.mark.parametrize("start,count,stride,want", [
    ([0, 0], [3, 4], [1, 1], {"sel": "box", "start": [0, 0], "count": [3, 4], "nelems": 12}),
    ([5, 0], [6, 2], [-1, 3], {"sel": "regular", "start": [0, 0], "stride": [1, 3], "count": [6, 2], "block": [1, 1],
                               "nelems": 12}),
    ([2], [1], [-4], {"sel": "box", "start": [2], "count": [1], "nelems": 1}),
    ([0, 0], [0, 4], [1, 1], {"sel": "none", "nelems": 0}),
    ([], [], [], {"sel": "box", "start": [], "count": [], "nelems": 1}),
], ids=["box", "negative-stride", "single-negative", "empty", "scalar"])
def test_selection_of_an_nc_get_vars_request(start, count, stride, want):
    assert selection(start, count, stride) == want


def test_a_netcdf3_file_is_named_and_its_calls_not_recorded(tmp_path):
    prog = tmp_path / "nc3.py"
    prog.write_text(textwrap.dedent("""
        import sys, netCDF4, numpy as np
        with netCDF4.Dataset(sys.argv[1], "w", format="NETCDF3_CLASSIC") as nc:
            nc.createDimension("x", 10)
            nc.createVariable("v", "f4", ("x",))[:] = np.arange(10)
        with netCDF4.Dataset(sys.argv[1]) as nc:
            print(nc["v"][2:5])
    """))
    r, out = traced(tmp_path, prog, tmp_path / "c.nc")
    t = table(out)
    assert not (t["kind"] == "call").any()
    opens = t[t["op"] == "file_open"]
    assert len(opens) == 2 and opens["reason"].str.contains("NETCDF3_CLASSIC (NETCDF3 on disk): not an HDF5 file", regex=False).all()


class _Rec:
    def __init__(self):
        self.stopped = None

    def stop(self, reason):
        self.stopped = reason


def test_a_library_that_cannot_be_patched_stops_recording_and_says_why():
    rec = _Rec()

    def broken(_rec):
        raise AttributeError("no _get")

    patch_library(rec, "netCDF4", broken)
    assert rec.stopped.startswith("netCDF4 ") and "could not be patched: AttributeError: no _get" in rec.stopped


def test_xarray_netcdf4_engine_is_covered_through_variable(tmp_path):
    pytest.importorskip("xarray")
    data = tmp_path / "x.nc"
    with netCDF4.Dataset(data, "w") as nc:
        nc.createDimension("time", 12)
        nc.createDimension("lat", 10)
        v = nc.createVariable("t2m", "f4", ("time", "lat"), chunksizes=(12, 5))
        v[:] = np.arange(120, dtype="f4").reshape(12, 10)
    prog = tmp_path / "xr_reader.py"
    prog.write_text(textwrap.dedent("""
        import sys, xarray as xr
        with xr.open_dataset(sys.argv[1], engine="netcdf4", cache=False) as ds:
            total = sum(float(ds["t2m"].isel(time=i).sum()) for i in range(12))
        print(total)
    """))
    r, out = traced(tmp_path, prog, data)
    t = table(out)
    reads = t[(t["api"] == "Variable.__getitem__") & (t["dataset"] == "/t2m")]
    assert len(reads) >= 12
    d = ccp("diagnose", "--json", out)
    assert d.returncode == 0, d.stderr
    assert {"netCDF4", "xarray"} <= set(json.loads(d.stdout)["libraries"])
