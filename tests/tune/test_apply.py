"""How to apply the pick: unlimited dimensions kept, nccopy for netCDF files, and what the console
says about extrapolated numbers and slot counts."""

import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.hdf5.filters import parse_filters
from ccp.tune.apply import commands, maxshape_text, netcdf_dims
from ccp.tune.prove import Contender, Measured


@pytest.mark.parametrize("maxshape, text", [
    (None, ""), ((10, 4), ""), ((None, 4), ", maxshape=(None, 4)"), ((None, None), ", maxshape=(None, None)"),
], ids=["unknown", "fixed", "unlimited-time", "all-unlimited"])
def test_maxshape_text(maxshape, text):
    assert maxshape_text(maxshape) == text


def test_a_netcdf_file_gets_an_nccopy_line_and_keeps_its_unlimited_dimension(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    path = tmp_path / "t.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 6)
        ds.createDimension("lon", 8)
        v = ds.createVariable("sst", "f4", ("time", "lat", "lon"))
        v[:] = np.zeros((5, 6, 8), "f4")
    assert netcdf_dims(str(path), "/sst") == ["time", "lat", "lon"]
    cmds = commands("/sst", (5, 3, 8), parse_filters("none"), ChunkCache(1 << 20, 521, 0.75), str(path),
                    maxshape=(None, 6, 8), nc_dims=netcdf_dims(str(path), "/sst"))
    assert cmds["nccopy"].startswith(f"nccopy -k nc4 -c sst:5,3,8 {path} OUT.nc")
    assert "time/5,lat/3,lon/8" in cmds["nccopy"]
    assert "maxshape=(None, 6, 8)" in cmds["h5py create"]


def test_an_hdf5_file_gets_no_nccopy_line(tmp_path):
    import h5py

    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.zeros((4, 4)))
    assert netcdf_dims(str(path), "/d") is None
    assert netcdf_dims(None, "/d") is None
    assert "nccopy" not in commands("/d", (2, 2), parse_filters("none"), ChunkCache(0, 521, 0.75), str(path))


def _result(extrapolated):
    row = {"label": "tuned", "kind": "candidate", "chunks": [4, 4], "filters": "none", "cache_nbytes": 1024,
           "cache_nslots": 521, "cache_w0": 0.75, "predicted_s": 1.0, "measured_s": 2.0, "statuses": ["ok"],
           "runoff": False, "extrapolated": extrapolated, "speedup_of_pick": 1.0}
    rec = {"chunks": [4, 4], "filters": "none", "cache_nbytes": 1024, "cache_nslots": 521, "cache_w0": 0.75,
           "measured_s": 2.0, "predicted_s": 1.0, "repack_needed": True, "why": "w"}
    return {"contenders": [row], "recommended": rec, "commands": {}, "prices": {"how": "fitted to 6 measured cells"},
            "slots": None}


@pytest.mark.parametrize("extrapolated", [True, False], ids=["extrapolated", "whole"])
def test_the_console_marks_extrapolated_times(extrapolated):
    from ccp.tune.answer import console_table, summary_lines

    table = "\n".join(console_table(_result(extrapolated)))
    summary = "\n".join(summary_lines(_result(extrapolated)))
    assert ("~2 s" in table) is extrapolated
    assert ("~ extrapolated" in summary) is extrapolated
    assert "fitted to 6 measured cells" in summary


@pytest.mark.parametrize("custom, default, keeps", [
    (1.0, 1.01, False),     # tied: the default count stands
    (1.0, 0.9, False),      # the default is faster
    (1.0, 2.0, True),       # the custom count measured clearly faster: offered
], ids=["tied", "default-faster", "custom-faster"])
def test_a_custom_slot_count_only_when_measured_better(monkeypatch, tmp_path, custom, default, keeps):
    from ccp.tune import settle as tune_mod

    pick = Contender("tuned", (4, 4), parse_filters("none"), ChunkCache(1 << 20, 6007, 0.75), 1.0, "candidate")

    def fake(wl, source, contenders, out, work, rounds, cell_budget, echo, **_):
        times = {6007: custom, 521: default}
        return [Measured(c, times[c.cache.nslots], (), out, times[c.cache.nslots] * 0.99, times[c.cache.nslots] * 1.01)
                for c in contenders]

    monkeypatch.setattr(tune_mod, "measure_interleaved", fake)
    chosen, note, _ = tune_mod.check_slots(None, None, pick, tmp_path, tmp_path, 3, None, lambda *_: None)
    assert (chosen.cache.nslots == 6007) is keeps
    assert note and ("faster than HDF5's default" in note) is keeps
    already = Contender("t", (4, 4), parse_filters("none"), ChunkCache(1 << 20, 521, 0.75), 1.0, "candidate")
    unchanged, none, _ = tune_mod.check_slots(None, None, already, tmp_path, tmp_path, 3, None, lambda *_: None)
    assert none is None and unchanged is already          # already HDF5's default: nothing to measure


@pytest.mark.parametrize("chunks, slots, keeps", [
    ((4, 32, 64), 25601, True),        # MUR SST's series: 368 chunk loads at 521 slots against 352
    ((2048, 2048), 100003, False),     # one chunk: no slot collides, the same I/O
], ids=["collisions-predicted", "same-io"])
def test_a_slot_tie_goes_to_the_fewer_predicted_chunk_loads(monkeypatch, tmp_path, costs, chunks, slots, keeps):
    """Measured as fast, HDF5's default 521 slots stand only when the model predicts them the same I/O; where
    their hash collisions are predicted more chunk loads the custom count stays (counts, not a busy machine's tie)."""
    from types import SimpleNamespace

    import numpy as np

    from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
    from ccp.hdf5.dataset import describe_source
    from ccp.tune import settle as tune_mod
    from ccp.tune.workload import WorkItem

    shape = (64, 256, 512) if len(chunks) == 3 else (2048, 2048)
    blocks = [((1, 256, 512), 12), ((64, 32, 32), 30)] if len(chunks) == 3 else [((256, 256), 60), ((2048, 2048), 1)]
    src = describe_source(DatasetSpec("/d", generate=GenerateSpec(shape, np.dtype("<i2"))))
    wl = SimpleNamespace(items=tuple(WorkItem(AccessSpec("read", b, random=r), 1.0) for b, r in blocks))
    gz = parse_filters("gzip:1")
    pick = Contender("tuned", chunks, gz, ChunkCache(8 << 20, slots, 0.75), 1.0, "candidate")

    def fake(wl, source, contenders, out, work, rounds, cell_budget, echo, **_):      # 1% apart, passes spread 10%: tied
        return [Measured(c, t, (), out, t * 0.9, t * 1.1) for c, t in zip(contenders, [1.0, 1.01])]

    monkeypatch.setattr(tune_mod, "measure_interleaved", fake)
    chosen, note, _ = tune_mod.check_slots(wl, src, pick, tmp_path, tmp_path, 3, None, lambda *_: None, costs=costs)
    assert (chosen.cache.nslots == slots) is keeps
    assert ("chunk loads against" in note) is keeps and ("the same I/O predicted" in note) is not keeps


def test_contiguous_is_applied_as_conti():
    from ccp.tune.apply import commands

    out = commands("/d", None, parse_filters("none"), ChunkCache(0, 521, 0.75), "in.h5", nc_dims=["t", "x"])
    assert out["ccp"] == "ccp repack -l /d:CONTI -f /d:none in.h5 OUT.h5"
    assert out["h5repack"].startswith("h5repack -l /d:CONTI") and "chunks=None" in out["h5py create"]
    assert "nccopy" not in out


@pytest.mark.parametrize("maxshape, filters, has_contiguous", [
    (None, ["none"], True),
    ((None, 8), ["none"], False),                 # a dimension can grow: HDF5 needs chunks
    (None, ["gzip:1"], False),                    # filters need chunks
    (None, ["gzip:1", "none"], True),
], ids=["unfiltered", "unlimited", "filtered", "either"])
def test_contiguous_is_a_structural_extreme(maxshape, filters, has_contiguous):
    from types import SimpleNamespace

    from ccp.config.sweep import AccessSpec
    from ccp.tune.tune import lattice_extremes
    from ccp.tune.workload import WorkItem

    src = SimpleNamespace(shape=(64, 8), maxshape=maxshape)
    k = SimpleNamespace(max_chunk_bytes=1 << 20, max_storage_overhead=0.25)
    its = (WorkItem(AccessSpec("read", (1, 8)), 1.0),)
    got = lattice_extremes(src, 4, k, its, [parse_filters(f) for f in filters])
    assert (None in got) is has_contiguous and (1, 8) in got and (64, 8) in got


@pytest.mark.parametrize("group", ["", "grp", "grp/sub"], ids=["root", "group", "nested-group"])
def test_the_nccopy_line_runs_as_printed_for_a_variable_in_a_group(tmp_path, group):
    import shlex
    import shutil
    import subprocess

    import h5py

    netCDF4 = pytest.importorskip("netCDF4")
    if shutil.which("nccopy") is None:
        pytest.skip("nccopy is not installed")
    path = tmp_path / "g.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        g = ds.createGroup(group) if group else ds
        g.createDimension("z", 30)
        v = g.createVariable("w", "f8", ("time", "z"), chunksizes=(1, 30))
        v[:] = np.arange(1800.0).reshape(60, 30)
    dset = f"/{group}/w" if group else "/w"
    line = commands(dset, (60, 5), parse_filters("none"), ChunkCache(1 << 20, 521, 0.75), str(path),
                    nc_dims=netcdf_dims(str(path), dset))["nccopy"]
    assert ("# or -c" in line) is (not group)         # the dimension form: root dimensions only
    run, _, other = line.partition("    # or ")
    outputs = [shlex.split(run.replace("OUT.nc", str(tmp_path / "a.nc")))]
    if other:
        outputs.append(["nccopy", "-k", "nc4", other.split()[0], other.split()[1], str(path), str(tmp_path / "b.nc")])
    for argv in outputs:
        r = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert r.returncode == 0, (argv, r.stderr)
        with h5py.File(argv[-1], "r") as f:
            assert f[dset].chunks == (60, 5)
            assert f[dset].maxshape[0] is None
    cmds = commands(dset, (60, 5), parse_filters("none"), ChunkCache(1 << 20, 521, 0.75), str(path),
                    nc_dims=netcdf_dims(str(path), dset))
    with netCDF4.Dataset(tmp_path / "a.nc") as nc:      # the netCDF4-python reader's line runs as printed
        exec(cmds["netCDF4 open"].split("   #")[0], {"nc": nc})
        var = nc[dset.strip("/")]
        assert tuple(var.get_var_chunk_cache()[:2]) == (1 << 20, 521)
