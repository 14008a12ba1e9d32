"""``ccp diagnose --verify`` of a netCDF4-python program measures through netCDF4-python: the baseline with the
cache netCDF-C gave, the cache cure with ``set_var_chunk_cache``, the repack cure on a copy of the variable
created with the cure's ``chunksizes=`` (holding exactly the input's values)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ccp.trace import verify
from ccp.trace.check import load_checked
from ccp.trace.diagnose import diagnose
from ccp.trace.stream import diagnose_folder

netCDF4 = pytest.importorskip("netCDF4")

ROOT = Path(__file__).resolve().parents[2]

# a variable stored as maps, read as series at points, the file opened for each point (the cache lost each time)
READER = textwrap.dedent("""
    import sys, netCDF4, numpy as np
    path = sys.argv[1]
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None); nc.createDimension("lat", 12); nc.createDimension("lon", 16)
        v = nc.createGroup("obs").createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, chunksizes=(1, 12, 16))
        v[0:40] = np.arange(40 * 12 * 16, dtype="f4").reshape(40, 12, 16)
    for j, i in [(1, 2), (5, 7), (1, 2), (9, 3), (5, 7), (1, 2)]:
        with netCDF4.Dataset(path) as nc:
            nc["obs/tas"][:, j, i]
    print("dataset calls: 6")
""")


@pytest.fixture(scope="module")
def nc_trace(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ncverify")
    prog = tmp / "reader.py"
    prog.write_text(READER)
    out = tmp / "trace"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp / "data.nc")], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def _h5py_forbidden(*args, **kwargs):
    raise AssertionError("a netCDF4 program's cure was replayed through h5py")


def test_verify_of_a_netcdf4_trace_replays_through_netcdf4(nc_trace, monkeypatch):
    monkeypatch.setattr(verify, "replay_reads", _h5py_forbidden)
    calls = []
    real = verify.replay_netcdf4
    monkeypatch.setattr(verify, "replay_netcdf4", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    (d,) = diagnose_folder(nc_trace, verify=True)["datasets"]
    assert d["library"] == "netCDF4" and d["dataset"] == "/obs/tas" and d["cures"]
    v = d["verified"]
    assert v["cure"] == d["cures"][0]["cure"] and v["library"] == "netCDF4-python"
    assert v["before_s"] > 0 and v["after_s"] > 0 and "through netCDF4-python, median of 3" in v["note"]
    assert len(calls) == 6 and calls[0] == d["file"]        # before and after, three times each


def _with_top(d: dict, kind: str) -> dict:
    picked = [c for c in d["cures"] if (c.get("apply") or {}).get("kind") == kind]
    assert picked, [c["cure"] for c in d["cures"]]
    return {**d, "cures": picked}


def test_a_repack_cure_is_measured_on_a_chunksizes_copy_read_through_netcdf4(nc_trace, monkeypatch):
    trace = load_checked(nc_trace)
    (d,) = diagnose(trace, tune_dir=None)["datasets"]
    d = _with_top(d, "repack")
    chunks = d["cures"][0]["apply"]["chunks"]
    monkeypatch.setattr(verify, "replay_reads", _h5py_forbidden)
    seen = []
    real = verify.replay_netcdf4

    with netCDF4.Dataset(d["file"]) as nc:
        values = nc["obs/tas"][:]

    def replay(path, dataset, seq, merge=False, cache=None):
        with netCDF4.Dataset(path) as nc:
            v = nc["obs/tas"]
            assert (v[:] == values).all() and v.dimensions == ("time", "lat", "lon") and v.filters()["zlib"]
            seen.append((path == d["file"], v.chunking(), nc.dimensions["time"].isunlimited()))
        return real(path, dataset, seq, merge=merge, cache=cache)

    monkeypatch.setattr(verify, "replay_netcdf4", replay)
    v = verify.verify_top(trace, d, repeats=1)
    assert v["before_s"] > 0 and v["after_s"] > 0 and "copy made by netCDF4 with chunksizes=" in v["note"]
    assert seen == [(True, [1, 12, 16], True), (False, chunks, True)]      # the user's file, then the copy with the cure's chunks


def test_a_cache_cure_sets_the_variables_cache_through_netcdf4(nc_trace, monkeypatch):
    trace = load_checked(nc_trace)
    (d,) = diagnose(trace, tune_dir=None)["datasets"]
    want = {"kind": "cache", "nbytes": 256 * 1024, "nslots": 1009, "merge": False}    # one the diagnosis could name
    d = {**d, "cures": [{"cure": "a chunk cache of 256 KiB", "apply": want}]}
    caches = []
    real_set = netCDF4.Variable.set_var_chunk_cache

    class Spy:
        def __init__(self, v):
            self.v = v

        def set_var_chunk_cache(self, **kw):
            caches.append(kw)
            return real_set(self.v, **kw)

        def __getattr__(self, name):
            return getattr(self.v, name)

        def __getitem__(self, key):
            return self.v[key]

    real_dataset = netCDF4.Dataset

    class Dataset:
        def __init__(self, *a, **k):
            self.nc = real_dataset(*a, **k)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.nc.close()

        def __getitem__(self, name):
            return Spy(self.nc[name])

    monkeypatch.setattr(netCDF4, "Dataset", Dataset)
    v = verify.verify_top(trace, d, repeats=1)
    assert v["before_s"] > 0 and v["after_s"] > 0
    # the baseline keeps netCDF-C's cache (never set); the cure sets its own at each of the program's six opens
    assert caches == [{"size": 256 * 1024, "nelems": 1009, "preemption": 0.75}] * 6
