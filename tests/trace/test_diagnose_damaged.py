"""Damaged trace folders: `ccp diagnose` gives one line naming the file and field (exit 2), never a traceback,
(whichever check finds it first, the loader's or diagnose's: the expectations name the file and field only)
an internal error or a diagnosis of garbage; and a data file changed since the trace is said, and --verify refused."""

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from traced_program import trace_program

PROGRAM = textwrap.dedent("""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        f.create_dataset("cube", data=np.arange(16 * 8 * 4, dtype="f4").reshape(16, 8, 4), chunks=(1, 8, 4),
                         compression="gzip")
    for j in range(16):                        # a series per call, reopening: every chunk loaded again
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            f["cube"][:, j % 8, 0]
""")


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("good")
    return trace_program(tmp, PROGRAM)


def _header(fn):
    def damage(folder: Path):
        path = folder / "trace.json"
        h = json.loads(path.read_text())
        fn(h)
        path.write_text(json.dumps(h))
    return damage


def _table(fn):
    def damage(folder: Path):
        path = folder / "calls.parquet"
        t = pd.read_parquet(path)
        t = fn(t)
        t.to_parquet(path, index=False)
    return damage


def _raw(name, data):
    def damage(folder: Path):
        (folder / name).write_bytes(data(folder / name) if callable(data) else data)
    return damage


def _first_box(t, column, value):
    i = t.index[(t["sel"] == "box")][0]
    t.at[i, column] = value
    return t


def _first_call(t, column, value):
    i = t.index[t["kind"] == "call"][0]
    t[column] = t[column].astype(object)
    t.at[i, column] = value
    return t


def _set(key, value):
    def fn(h):
        h[key] = value
    return fn


def _layout(key, value):
    def fn(h):
        h["datasets"][0][key] = value
    return fn


CASES = [
    ("json-list", _raw("trace.json", b"[]"), ["trace.json", "JSON object"]),
    ("json-truncated", _raw("trace.json", lambda p: p.read_bytes()[:40]), ["trace.json", "not valid JSON"]),
    ("json-binary", _raw("trace.json", b"\xff\xfe\x00garbage"), ["trace.json", "not UTF-8"]),
    ("json-empty", _raw("trace.json", b""), ["trace.json", "not valid JSON"]),
    ("parquet-truncated", _raw("calls.parquet", lambda p: p.read_bytes()[: len(p.read_bytes()) // 2]),
     ["calls.parquet"]),
    ("parquet-empty", _raw("calls.parquet", b""), ["calls.parquet"]),
    ("parquet-random", _raw("calls.parquet", bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8))),
     ["calls.parquet"]),
    ("schema-missing", _header(lambda h: h.pop("schema_version")), ["schema_version"]),
    ("shape-huge", _header(_layout("shape", [10 ** 30, 8, 4])), ["datasets[0].shape"]),
    ("shape-negative", _header(_layout("shape", [-16, 8, 4])), ["datasets[0].shape"]),
    ("shape-text", _header(_layout("shape", "16x8x4")), ["datasets[0].shape"]),
    ("chunks-zero", _header(_layout("chunks", [0, 4, 4])), ["datasets[0].chunks"]),
    ("chunks-rank", _header(_layout("chunks", [4, 4])), ["datasets[0].chunks"]),
    ("itemsize-zero", _header(_layout("itemsize", 0)), ["datasets[0].itemsize"]),
    ("itemsize-huge", _header(_layout("itemsize", 10 ** 30)), ["datasets[0].itemsize"]),
    ("dtype-missing", _header(lambda h: h["datasets"][0].pop("dtype")), ["datasets[0].dtype"]),
    ("filters-text", _header(_layout("filters", "gzip")), ["datasets[0].filters"]),
    ("datasets-object", _header(_set("datasets", {"a": 1})), ["datasets"]),
    ("datasets-empty", _header(_set("datasets", [])), ["no layout"]),
    ("wall-nan", _raw("trace.json", lambda p: p.read_text().replace('"wall_s": ', '"wall_s": NaN, "x": ', 1).encode()),
     ["wall_s"]),
    ("wall-negative", _header(_set("wall_s", -3.0)), ["wall_s"]),
    ("pids-text", _header(_set("pids", "123")), ["pids"]),
    ("files-list-of-text", _header(_set("files", ["a.h5"])), ["files"]),
    ("call-wall-nan", _table(lambda t: _first_call(t, "wall_s", float("nan"))), ["calls.parquet", "wall_s"]),
    ("call-wall-negative", _table(lambda t: _first_call(t, "wall_s", -1.0)), ["calls.parquet", "wall_s"]),
    ("call-hdf5-inf", _table(lambda t: _first_call(t, "hdf5_s", float("inf"))), ["calls.parquet", "hdf5_s"]),
    ("kind-unknown", _table(lambda t: t.assign(kind=t["kind"].where(t["kind"] != "event", "zzz"))), ["calls.parquet", "kind"]),
    ("sel-unknown", _table(lambda t: t.assign(sel=t["sel"].where(t["sel"] != "box", "weird"))), ["calls.parquet", "sel"]),
    ("bytes-negative", _table(lambda t: _first_call(t, "bytes", -5)), ["calls.parquet", "bytes"]),
    ("cache-w0", _table(lambda t: t.assign(cache_w0=t["cache_w0"].where(t["cache_w0"].isna(), 5.0))), ["cache_w0"]),
    ("cache-negative", _table(lambda t: t.assign(cache_nbytes=t["cache_nbytes"].where(t["cache_nbytes"].isna(), -1))),
     ["cache_nbytes"]),
    ("column-missing", _table(lambda t: t.drop(columns=["sel"])), ["calls.parquet", "sel"]),
    ("start-negative", _table(lambda t: _first_box(t, "start", [-3, 0, 0])), ["start"]),
    ("count-huge", _table(lambda t: _first_box(t, "count", [2 ** 62, 1, 1])), ["count"]),
    ("start-rank", _table(lambda t: _first_box(t, "start", [1, 2])), ["rank"]),
    ("seq-missing", _table(lambda t: t.assign(seq=t["seq"].astype("Int64").mask(t.index == 3))), ["calls.parquet", "seq"]),
]


def one_line(result, expected):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("ccp: error:"), lines[0]
    for e in expected:
        assert e in lines[0], lines[0]


@pytest.mark.parametrize("damage, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_damaged_trace_is_one_line(good, tmp_path, damage, expected, cli):
    folder = tmp_path / "trace"
    shutil.copytree(good, folder)
    damage(folder)
    one_line(cli("diagnose", str(folder)), expected)


def test_the_good_trace_diagnoses(good, cli):
    r = cli("diagnose", str(good))
    assert r.exit_code == 0, r.output
    assert "17 dataset call(s) (16 read(s), 1 write(s))" in r.output.splitlines()[0]


def test_a_data_file_changed_since_the_trace_is_said_and_verify_refused(good, tmp_path, cli):
    folder = tmp_path / "trace"
    shutil.copytree(good, folder)
    data = tmp_path / "data.h5"
    shutil.copy(good.parent / "data.h5", data)
    h = json.loads((folder / "trace.json").read_text())
    old = h["files"][0]["path"]
    for d in h["datasets"]:
        d["file"] = str(data)
    h["files"][0]["path"] = str(data)
    (folder / "trace.json").write_text(json.dumps(h))
    t = pd.read_parquet(folder / "calls.parquet")
    t["file"] = t["file"].where(t["file"] != old, str(data))
    t.to_parquet(folder / "calls.parquet", index=False)
    r = cli("diagnose", str(folder))
    assert r.exit_code == 0 and "ccp repack" in r.output, r.output                  # unchanged: a repack cure
    import h5py

    with h5py.File(data, "r+") as f:                                                 # the data changes
        f["cube"][0, 0, 0] = -1
    r = cli("diagnose", str(folder))
    assert r.exit_code == 0, r.output
    assert f"{data} CHANGED since the trace" in r.output and "changed since the trace: no repack cure" in r.output
    assert "ccp repack" not in r.output
    one_line(cli("diagnose", "--verify", str(folder)), [str(data), "changed since the trace", "--verify"])


@pytest.mark.parametrize("args, expected", [
    (["--memory", "0"], ["--memory", "1TiB"]),
    (["--memory", "99999999999999999999GiB"], ["--memory"]),
    (["--memory", "abc"], ["--memory"]),
    (["--pattern", "1x2"], ["--pattern 1x2", "rank 2", "16x8x4"]),
    (["--pattern", "99999999999x1x1"], ["--pattern 99999999999x1x1", "room"]),
], ids=["memory-zero", "memory-huge", "memory-text", "pattern-rank", "pattern-too-big"])
def test_bad_options_are_one_line(good, args, expected, cli):
    one_line(cli("diagnose", *args, str(good)), expected)
