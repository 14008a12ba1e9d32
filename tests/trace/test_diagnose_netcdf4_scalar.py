"""A netCDF4 scalar variable: recorded at rank 0, and a trace written before that fix (start [0], count [1] on a
shape-[] dataset) still diagnosed, the scalar read as the scalar; any other rank-1 box on it stays a damaged trace."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ccp.trace.netcdf import selection

netCDF4 = pytest.importorskip("netCDF4")

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = textwrap.dedent("""
    import sys, netCDF4
    with netCDF4.Dataset(sys.argv[1], "w") as ds:
        ds.createDimension("x", 10)
        ds.createVariable("v", "f8", ("x",))[:] = range(10)
        ds.createVariable("scal", "f8", ()).assignValue(2.5)
    with netCDF4.Dataset(sys.argv[1]) as ds:
        print(ds["v"][3], ds["scal"][...], ds["scal"][...])
""")


@pytest.fixture(scope="module")
def scalar_trace(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ncscalar")
    prog = tmp / "prog.py"
    prog.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp / "t"), "--", sys.executable, str(prog),
                        str(tmp / "s.nc")], check=False, capture_output=True, text=True,
                       env={**env, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert r.returncode == 0, r.stderr
    return tmp / "t"


def _scalar_reads(t: pd.DataFrame) -> pd.Series:
    return (t["dataset"] == "/scal") & (t["api"] == "Variable._get")


@pytest.mark.parametrize("start, count, stride", [([0], [1], [1]), ([], [], [])], ids=["netcdf4-python", "empty"])
def test_a_scalar_request_is_recorded_at_rank_0(start, count, stride):
    assert selection(start, count, stride, rank=0) == {"sel": "box", "start": [], "count": [], "nelems": 1}


def test_a_scalar_variable_read_is_recorded_at_rank_0_and_diagnosed(scalar_trace, cli):
    t = pd.read_parquet(scalar_trace / "calls.parquet")
    rows = t[_scalar_reads(t)]
    assert len(rows) == 2 and all(len(s) == 0 and len(c) == 0 for s, c in zip(rows["start"], rows["count"]))
    r = cli("diagnose", str(scalar_trace))
    assert r.exit_code == 0, r.output
    assert "scalar dataset: 2 read(s)" in r.output and "/v in " in r.output


@pytest.mark.parametrize("start, count, ok", [
    ([0], [1], True),            # what the recorder wrote before the fix: the scalar
    ([3], [1], False),           # a box no scalar has: damaged
    ([0], [2], False),
    ([0, 0], [1, 1], False),
], ids=["legacy-scalar", "start-3", "count-2", "rank-2"])
def test_a_rank_1_box_on_a_scalar(scalar_trace, tmp_path, cli, start, count, ok):
    import shutil

    folder = tmp_path / "t"
    shutil.copytree(scalar_trace, folder)
    t = pd.read_parquet(folder / "calls.parquet")
    t["start"], t["count"] = t["start"].astype(object), t["count"].astype(object)
    for i in t.index[_scalar_reads(t)]:
        t.at[i, "start"], t.at[i, "count"] = start, count
    t.to_parquet(folder / "calls.parquet", index=False)
    r = cli("diagnose", str(folder))
    if ok:
        assert r.exit_code == 0 and "scalar dataset: 2 read(s)" in r.output, r.output
    else:
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and "/scal" in lines[0] and "rank 0" in lines[0], r.output
