"""Cures that do no harm, in the program's own library, the same every run (synthetic traces in the exact format)."""

import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
import yaml

from ccp.trace.check import load_checked
from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.replay import NETCDF_C_CACHE, library_cache
from ccp.workload.tracefile import COLUMNS, SCHEMA_VERSION


def make_trace(folder: Path, file: str, datasets: dict, reads: list, api="Dataset.__getitem__", cache=(8 << 20, 8191),
               command=("python", "prog.py"), reopen_each=False):
    """A trace folder of ``reads`` [(dataset, start, count)], one user and one low-level row each."""
    folder.mkdir(parents=True, exist_ok=True)
    pid, seq, rows = 77, 1, []

    def ev(op, dataset=None, **kw):
        nonlocal seq
        rows.append({"kind": "event", "pid": pid, "seq": seq, "op": op, "file": file, "dataset": dataset, **kw})
        seq += 1

    opened = set()
    for k, (dset, start, count) in enumerate(reads):
        if dset not in opened or reopen_each:
            ev("dataset_open", dset, cache_nbytes=cache[0], cache_nslots=cache[1], cache_w0=0.75)
            opened.add(dset)
        nbytes = int(np.prod(count)) * 4
        wall = 1e-4 + 1e-5 * (k % 7)
        rows.append({"kind": "call", "pid": pid, "seq": seq, "depth": 0, "parent": 0, "api": api, "op": "read",
                     "file": file, "dataset": dset, "bytes": nbytes, "wall_s": wall, "hdf5_s": wall / 2})
        rows.append({"kind": "call", "pid": pid, "seq": seq + 1, "depth": 1, "parent": seq, "api": "DatasetID.read",
                     "op": "read", "file": file, "dataset": dset, "sel": "box", "start": list(start), "count": list(count),
                     "bytes": nbytes, "wall_s": wall / 2, "hdf5_s": wall / 2})
        seq += 2
        if reopen_each:
            ev("dataset_close", dset)
    t = pd.DataFrame.from_records(rows)
    for c in COLUMNS:
        if c not in t.columns:
            t[c] = None
    t = t[list(COLUMNS)]
    for c in ("depth", "parent", "nblocks", "nelems", "bytes", "nlow", "rdcc_nbytes", "rdcc_nslots", "cache_nbytes",
              "cache_nslots"):
        t[c] = pd.array(t[c], dtype="Int64")
    for c in ("rdcc_w0", "cache_w0", "t0_ns", "wall_s", "hdf5_s"):
        t[c] = pd.to_numeric(t[c])
    for c in ("kind", "api", "op", "file", "dataset", "sel", "mode", "reason"):
        t[c] = t[c].astype("string")
    t.to_parquet(folder / "calls.parquet", index=False)
    header = {"schema_version": SCHEMA_VERSION, "tool": "ccp trace", "command": list(command), "exit_status": 0,
              "wall_s": 1.0, "environment": {"hdf5": "2.0.0"}, "pids": [pid], "calls": len(reads),
              "files": [{"path": file, "exists": True}],
              "datasets": [{"file": file, "dataset": name, "shape": list(shape), "dtype": "<f4", "itemsize": 4,
                            "chunks": list(chunks), "filters": [{"id": 1, "name": "deflate", "values": [1]}],
                            "layout": "chunked", "storage_size": 1} for name, (shape, chunks) in datasets.items()]}
    (folder / "trace.json").write_text(json.dumps(header))
    return folder


SHAPE, MAPS = (96, 24, 36), (1, 24, 36)        # daily maps as chunks


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """Two datasets in one file, each read as 40 time series through map-shaped chunks, the dataset reopened."""
    tmp = tmp_path_factory.mktemp("series")
    data = str(tmp / "data.h5")
    with h5py.File(data, "w") as f:
        for name in ("tas", "pr"):
            f.create_dataset(name, data=np.random.default_rng(0).normal(size=SHAPE).astype("f4"), chunks=MAPS,
                             compression="gzip")
    reads = [(d, (0, k % 24, (7 * k) % 36), (SHAPE[0], 1, 1)) for d in ("/tas", "/pr") for k in range(40)]
    return make_trace(tmp / "trace", data, {"/tas": (SHAPE, MAPS), "/pr": (SHAPE, MAPS)}, reads, reopen_each=True)


def test_the_same_trace_gives_the_same_output(series, cli):
    runs = [cli("diagnose", "--json", str(series)) for _ in range(2)]
    assert all(r.exit_code == 0 for r in runs), runs[0].output
    assert runs[0].output == runs[1].output
    text = [cli("diagnose", str(series)).output for _ in range(2)]
    assert text[0] == text[1]


def test_two_repack_cures_never_share_an_output_name(series):
    diag = diagnose(load_checked(series), tune_dir=None)
    outs = [c["code"].split()[-1] for d in diag["datasets"] for c in d["cures"] if c["cure"].startswith("repack")]
    assert len(outs) == 2 and len(set(outs)) == 2, outs
    assert all("-tas-" in o or "-pr-" in o for o in outs)


def test_a_repack_that_slows_the_maps_says_so_and_writes_a_tune_workload(series, tmp_path):
    diag = diagnose(load_checked(series), tune_dir=tmp_path)
    tas = next(d for d in diag["datasets"] if d["dataset"] == "/tas")
    repack = next(c for c in tas["cures"] if c["cure"].startswith("repack"))
    maps = next(p for p in repack["patterns"] if p["block"] == [1, 24, 36])
    assert maps["slowdown"] > 2
    assert "BUT it slows" in repack["why"] and "ccp tune" in repack["code"]
    work = yaml.safe_load(Path(repack["tune_workload_file"]).read_text())
    blocks = [w["access"].get("block") for w in work["workload"]]
    assert [1, 24, 36] in blocks and work["workload"][0]["access"]["dataset"] == "/tas"
    from ccp.tune.workload import load_workload  # the tuner reads what diagnose wrote

    loaded = load_workload(repack["tune_workload_file"])
    assert loaded.name == "diagnose-tas"
    # tune's current reader is the cache the program read with (breaker5 F25: HDF5's default was measured instead)
    assert loaded.constraints.current_cache.nbytes == 8 << 20 and loaded.constraints.current_cache.nslots == 8191


def test_a_pattern_the_user_names_is_priced(series, tmp_path, cli):
    r = cli("diagnose", "--json", "--pattern", "4x24x36", str(series))
    assert r.exit_code == 0, r.output
    pats = [p["pattern"] for d in json.loads(r.output)["datasets"] for c in d["cures"] for p in c.get("patterns", [])]
    assert any("your pattern 4x24x36" in p for p in pats)


@pytest.mark.parametrize("value", ["1xAx3", "0x1x1", "", "1x-2"], ids=["text", "zero", "empty", "negative"])
def test_a_bad_pattern_is_one_line(series, value, cli):
    r = cli("diagnose", "--pattern", value, str(series))
    assert r.exit_code == 2 and r.output.startswith("ccp: error: --pattern"), r.output


def test_netcdf4_readers_get_netcdf_c_default_cache(tmp_path):
    data = str(tmp_path / "d.nc")
    trace = make_trace(tmp_path / "t", data, {"/tas": (SHAPE, MAPS)}, [("/tas", (0, 0, 0), (1, 24, 36))],
                       api="Variable.__getitem__", cache=(None, None))
    t = load_checked(trace)
    assert (library_cache(t).nbytes, library_cache(t).nslots) == NETCDF_C_CACHE[:2] == (64 << 20, 1000)


def test_xarray_programs_get_xarray_cures(tmp_path):
    data = str(tmp_path / "era.nc")
    with h5py.File(data, "w") as f:
        f.create_dataset("t2m", data=np.zeros((48, 90, 180), "f4"), chunks=(48, 30, 30), compression="gzip")
    prog = tmp_path / "reader.py"
    prog.write_text("import xarray as xr\nds = xr.open_dataset('era.nc')\n")
    reads = [("/t2m", (t, 0, 0), (1, 90, 180)) for t in range(48)]      # one time step at a time, reopened
    trace = make_trace(tmp_path / "t", data, {"/t2m": ((48, 90, 180), (48, 30, 30))}, reads, reopen_each=True,
                       cache=(1 << 20, 521), command=("python", str(prog)))
    diag = diagnose(load_checked(trace))
    d = diag["datasets"][0]
    assert "xarray" in diag["libraries"]
    assert any(f.startswith("xarray: the cells") for f in d["findings"])
    codes = "\n".join(c["code"] for c in d["cures"])
    assert ".load()" in codes and "h5py.File" not in codes


def test_a_file_object_is_never_printed_as_a_path(tmp_path):
    repr_name = "<File-like object S3FileSystem, bucket/data.h5>"
    reads = [("/x", (0, i, 0), (100, 1, 1)) for i in range(30)]
    trace = make_trace(tmp_path / "t", repr_name, {"/x": ((100, 30, 30), (1, 30, 30))}, reads, reopen_each=True)
    diag = diagnose(load_checked(trace))
    text = format_diagnosis(diag)
    codes = [c["code"] for d in diag["datasets"] for c in d["cures"]]
    assert codes and all(repr_name not in code for code in codes)
    assert "ccp repack" not in text and "not a local file" in text
    assert "is not there any more" not in text


def test_repack_cures_of_two_datasets_can_both_be_followed(series):
    diag = diagnose(load_checked(series), tune_dir=None)
    (cmd,) = diag["combined_repacks"]
    assert "-l /pr:CHUNK=" in cmd and "-l /tas:CHUNK=" in cmd and cmd.endswith("data-all-repack-cures.h5")
    assert "every repack cure of a file in one copy" in format_diagnosis(diag)


def test_verify_measures_the_top_cure_it_names(series):
    diag = diagnose(load_checked(series), tune_dir=None, verify=True)
    for d in diag["datasets"]:
        v = d["verified"]
        assert v["cure"] == d["cures"][0]["cure"]
        assert v["before_s"] > 0 and v["after_s"] > 0, v


@pytest.mark.parametrize("before,after,verdict,said", [
    ([2.0, 2.1, 2.2], [1.0, 1.1, 1.2], "confirmed", None),
    ([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], "refuted", "NOT CONFIRMED"),
    ([1.0, 2.0, 1.5], [1.5, 1.0, 1.4], "unclear", "not confirmed"),
], ids=["faster", "slower", "mixed"])
def test_a_cure_the_replays_contradict_is_said_so(before, after, verdict, said):
    """--verify's replays of a cure slower than the program's own reads: the cure's line must not stand alone."""
    v = {"cure": "repack with 1x1 chunks", "before_s": float(np.median(before)), "after_s": float(np.median(after)),
         "repeats": 3, "library": "h5py", "note": "replay", "verdict": verdict}
    d = {"dataset": "/log", "file": "f.h5", "shape": [50, 16], "dtype": "<f8", "chunks": [4, 16], "filters": [],
         "reads": 0, "findings": [], "verified": v}
    text = format_diagnosis({"trace": "T", "calls": 2, "reads": 2, "writes": 0, "pids": [1], "program_s": 1.0, "datasets": [d]})
    assert ("NOT CONFIRMED" in text, "not confirmed" in text) == (said == "NOT CONFIRMED", said == "not confirmed")


@pytest.mark.parametrize("wall_s,said", [(0.000618, True), (0.5, False)], ids=["0.02-percent", "a sixth"])
def test_cures_of_a_negligible_share_of_the_program_say_so(wall_s, said):
    """A 1x1-chunk repack '1.4x faster' for two reads that were 0.02% of a 2.85 s program: the cure is of the
    calls' time only, and the page must say how little that is."""
    cure = {"cure": "repack with 1x1 chunks", "predicted_s": wall_s / 1.4, "speedup": 1.4, "why": "w", "code": "c"}
    d = {"dataset": "/log", "file": "f.h5", "shape": [50, 16], "dtype": "<f8", "chunks": [4, 16], "filters": [],
         "reads": 2, "findings": [], "cures": [cure], "wall_s": wall_s}
    text = format_diagnosis({"trace": "T", "calls": 2, "reads": 2, "writes": 0, "pids": [1], "program_s": 2.85,
                             "datasets": [d]})
    assert ("a cure saves at most that" in text) == said
    if said:
        assert "0.022% of the program's time" in text


SLOT_SHAPE, SLOT_MAPS = (60, 40, 50), (1, 40, 50)     # 60 chunks of 7.8 KiB: they fit 1 MiB by bytes


@pytest.mark.parametrize("api, words", [
    ("Dataset.__getitem__", "rdcc_nslots="),
    ("Variable.__getitem__", "set_var_chunk_cache(size=1048576, nelems="),
], ids=["h5py", "netCDF4"])
def test_too_few_hash_slots_are_named_and_cured_by_slots(tmp_path, api, words):
    data = str(tmp_path / "data.h5")
    with h5py.File(data, "w") as f:
        f.create_dataset("tas", data=np.zeros(SLOT_SHAPE, "f4"), chunks=SLOT_MAPS)
    reads = [("/tas", (0, j, 0), (60, 1, 1)) for j in range(40)]
    trace = make_trace(tmp_path / "T", data, {"/tas": (SLOT_SHAPE, SLOT_MAPS)}, reads, api=api, cache=(1 << 20, 7))
    if api.startswith("Variable"):
        head = json.loads((trace / "trace.json").read_text())
        head["datasets"][0]["library"] = "netCDF4"
        (trace / "trace.json").write_text(json.dumps(head))
    (d,) = diagnose(load_checked(trace), tune_dir=None)["datasets"]
    assert any(f.startswith("7 hash slots for 60 chunks (they fit by bytes): chunks evict each other by hash")
               for f in d["findings"]), d["findings"]
    slot = next(c for c in d["cures"] if c["cure"].startswith("a chunk cache of") and "slots" in c["cure"])
    assert slot["chunk_loads"] == 60 < d["chunk_loads"]
    assert slot["apply"] == {"kind": "cache", "nbytes": 1 << 20, "nslots": slot["apply"]["nslots"], "merge": False}
    assert slot["apply"]["nslots"] > 60 and words in slot["code"]
    fastest = min(c["predicted_s"] for c in d["cures"])
    if slot["predicted_s"] <= 2 * fastest:            # the cheapest-change rule: a reader setting leads within 2x
        assert d["cures"][0] is slot


def test_enough_slots_give_no_slot_finding(tmp_path):
    data = str(tmp_path / "data.h5")
    with h5py.File(data, "w") as f:
        f.create_dataset("tas", data=np.zeros(SLOT_SHAPE, "f4"), chunks=SLOT_MAPS)
    reads = [("/tas", (0, j, 0), (60, 1, 1)) for j in range(40)]
    trace = make_trace(tmp_path / "T", data, {"/tas": (SLOT_SHAPE, SLOT_MAPS)}, reads, cache=(1 << 20, 12421))
    (d,) = diagnose(load_checked(trace), tune_dir=None)["datasets"]
    assert not any("hash slots" in f for f in d["findings"])
    assert not any("slots" in c["cure"] for c in d["cures"])
