"""A damaged trace folder is one `ccp: error:` line naming the file and the field, exit 2: never a traceback."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ccp.errors import CcpError
from ccp.workload.tracefile import load_trace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("good")
    prog = tmp / "p.py"
    prog.write_text(textwrap.dedent("""
        import sys, h5py, numpy as np
        with h5py.File(sys.argv[1], "w") as f:
            d = f.create_dataset("x", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5))
            for i in range(10):
                d[i, :]
    """))
    out = tmp / "t"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp / "d.h5")], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                        "PATH": "/usr/bin:/bin"}, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    return out


def _header(t):
    return json.loads((t / "trace.json").read_text())


def _set_header(t, h):
    (t / "trace.json").write_text(json.dumps(h) if not isinstance(h, str) else h)


def _table_edit(t, col, value):
    df = pd.read_parquet(t / "calls.parquet")
    rows = df.index[df["kind"] == "call"]
    df[col] = df[col].astype(object)
    df.at[rows[0], col] = value
    if col in ("wall_s", "hdf5_s"):
        df[col] = df[col].astype(float)
    df.to_parquet(t / "calls.parquet")


def _dataset_edit(key, value):
    def edit(t):
        h = _header(t)
        h["datasets"][0][key] = value
        _set_header(t, h)
    return edit


DAMAGE = {
    "truncated-parquet": (lambda t: (t / "calls.parquet").write_bytes((t / "calls.parquet").read_bytes()[:300]),
                          "calls.parquet: not a readable parquet"),
    "empty-parquet": (lambda t: (t / "calls.parquet").write_bytes(b""), "calls.parquet: not a readable parquet"),
    "json-list": (lambda t: _set_header(t, "[]"), "trace.json: top level"),
    "json-garbage": (lambda t: _set_header(t, "{\"schema"), "trace.json: not valid JSON"),
    "shape-10**30": (_dataset_edit("shape", [10**30, 10]), "datasets[0].shape"),
    "shape-negative": (_dataset_edit("shape", [-1, 10]), "datasets[0].shape"),
    "shape-string": (_dataset_edit("shape", "10x10"), "datasets[0].shape"),
    "chunks-zero": (_dataset_edit("chunks", [0, 5]), "datasets[0].chunks"),
    "chunks-rank": (_dataset_edit("chunks", [5]), "datasets[0].chunks"),
    "itemsize-zero": (_dataset_edit("itemsize", 0), "datasets[0].itemsize"),
    "datasets-not-list": (lambda t: _set_header(t, {**_header(t), "datasets": {"a": 1}}), "datasets"),
    "nan-time": (lambda t: _table_edit(t, "wall_s", float("nan")), "wall_s"),
    "negative-time": (lambda t: _table_edit(t, "hdf5_s", -1.0), "hdf5_s"),
    "inf-time": (lambda t: _table_edit(t, "wall_s", float("inf")), "wall_s"),
    "missing-parquet": (lambda t: (t / "calls.parquet").unlink(), "not a ccp trace folder"),
    "missing-json": (lambda t: (t / "trace.json").unlink(), "not a ccp trace folder"),
    "schema-version": (lambda t: _set_header(t, {**_header(t), "schema_version": 99}), "schema_version 99"),
    "column-dropped": (lambda t: pd.read_parquet(t / "calls.parquet").drop(columns=["seq"]).to_parquet(
        t / "calls.parquet"), "columns: missing seq"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE), ids=str)
def test_damaged_trace_is_one_error_naming_the_field(good, tmp_path, damage):
    import shutil

    t = tmp_path / "t"
    shutil.copytree(good, t)
    edit, message = DAMAGE[damage]
    edit(t)
    with pytest.raises(CcpError, match=message.replace("*", r"\*").replace("[", r"\[").replace("]", r"\]")):
        load_trace(t)


def test_damaged_trace_through_diagnose_is_one_line(good, tmp_path):
    import shutil

    t = tmp_path / "t"
    shutil.copytree(good, t)
    _dataset_edit("shape", [10**30, 10])(t)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", str(t)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300, check=False)
    assert r.returncode == 2 and r.stderr.startswith("ccp: error:") and len(r.stderr.splitlines()) == 1, r.stderr
    assert "datasets[0].shape" in r.stderr


def test_the_good_trace_loads(good):
    assert len(load_trace(good).calls) == 11
