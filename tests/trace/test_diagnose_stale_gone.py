"""Cures that would be wrong for what the program did to its data (issue 23, tester breaker3 F-stale-block and
F-gone-file): no read-once cure for reads between writes to the same dataset; no repack or tune cure for a file
the program deleted."""

import h5py
import numpy as np
import pytest

from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace
from tests.trace.traced_program import trace_program

GROWER = """
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    g = f.create_dataset("g", shape=(0, 8), maxshape=(None, 8), chunks=(4, 8), dtype="f8")
    for i in range(300):                  # appends, reading back rows written so far
        g.resize(g.shape[0] + 1, axis=0)
        g[-1] = np.arange(8) + i
        _ = g[i // 2, 3], g[-1]
    h = f.create_dataset("h", data=np.arange(300 * 8, dtype="f8").reshape(300, 8), chunks=(4, 8))
    for i in range(600):                  # written once, then only read: reading it once is right
        _ = h[i % 300, 3]
"""

DELETER = """
import os, shutil, sys, h5py
copy = os.path.join(os.path.dirname(sys.argv[1]), "gone.h5")
shutil.copy(sys.argv[1], copy)
f = h5py.File(copy, "r")
a = f["a"]
for i in range(200):
    a[i]
f.close()
os.unlink(copy)
"""


@pytest.fixture(scope="module")
def grower(tmp_path_factory):
    return load_trace(trace_program(tmp_path_factory.mktemp("grow"), GROWER))


@pytest.fixture(scope="module")
def deleter(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gone")
    with h5py.File(tmp / "data.h5", "w") as f:
        f.create_dataset("a", data=np.arange(60000, dtype="f4").reshape(200, 300), chunks=(20, 30), compression="gzip")
    return load_trace(trace_program(tmp, DELETER))


def _cures(diag, name):
    return next(d for d in diag["datasets"] if d["dataset"] == name)


@pytest.mark.parametrize("dataset, offered", [("/g", False), ("/h", True)], ids=["written-between-reads", "written-before"])
def test_read_once_only_when_no_write_comes_between_the_reads(grower, dataset, offered):
    d = _cures(diagnose(grower), dataset)
    once = [c for c in d["cures"] if c["cure"].startswith(("read the block once", "read whole"))]
    assert bool(once) == offered, d["cures"]
    assert any("writes this dataset between its reads" in n for n in d["notes"]) == (not offered)


def test_a_deleted_file_gets_no_repack_and_no_tune_workload(deleter, tmp_path):
    diag = diagnose(deleter, tune_dir=tmp_path)
    d = _cures(diag, "/a")
    assert d["file"].endswith("gone.h5")
    assert not [c for c in d["cures"] if "repack" in c or c.get("apply", {}).get("kind") == "repack"], d["cures"]
    assert not list(tmp_path.glob("tune-*.yaml"))
    assert "no longer exists" in format_diagnosis(diag)
    assert list(diag["file_states"].values()).count("gone") == 1
