"""``ccp diagnose --verify`` replays a traced strided call as the one call the program made (issue 23): ``d[10:20:2,
5]``, ``d[::3, 100:200]`` and a block selection (``h5py.MultiBlockSlice``, blocks of 3 rows) are one h5py key each,
not a key per block. Checked under the log VFD: the verified replay's raw reads and bytes are the program's own
(run untraced under the log driver), and the model's chunk loads before and after the cure (a gzip chunk is one
read a load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from ccp.measurement import iolog

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
import h5py
from h5py import MultiBlockSlice

path, log = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
if log:            # untraced, under the log VFD: the program's own counts
    from h5py import h5f
    from ccp.measurement import iolog
    fapl = iolog.log_fapl(log)
    fapl.set_cache(0, 521, 4096, 0.75)
    f = h5py.File(h5f.open(path.encode(), h5f.ACC_RDONLY, fapl))
else:
    f = h5py.File(path, "r", rdcc_nbytes=4096, rdcc_nslots=521, rdcc_w0=0.75)
d = f["d"]
for i in range(20):
    d[10:20:2, 5]
    d[MultiBlockSlice(start=1, stride=7, count=5, block=3), 0:400]
    d[::3, 100:200]
f.close()
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(trace folder, the program's raw reads and bytes untraced under the log VFD)."""
    tmp = tmp_path_factory.mktemp("verify-strided")
    path, program = tmp / "s.h5", tmp / "program.py"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(200 * 400, dtype="<f4").reshape(200, 400), chunks=(20, 40),
                         compression="gzip")
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, str(program), str(path), str(tmp / "io.log")], capture_output=True, text=True,
                       env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    return tmp / "trace", iolog.totals(iolog.parse_log(tmp / "io.log"))


def test_verify_replays_each_strided_call_as_the_program_made_it(traced, cli):
    trace, program = traced
    r = cli("diagnose", trace, "--verify", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)["datasets"][0]
    v, cure = d["verified"], d["cures"][0]
    assert d["reads"] == 60 and cure["apply"]["kind"] == "cache", (d["reads"], cure)
    # before: the program's own reads (a key per block of the MultiBlockSlice read 1600 chunks here, not 1000)
    assert v["before_io"] == {"raw_reads": program["raw_reads"], "raw_read_bytes": program["raw_read_bytes"]}
    assert v["before_io"]["raw_reads"] == d["chunk_loads"] == 1000
    assert v["after_io"]["raw_reads"] == cure["chunk_loads"] == 44        # the cure's cache: each chunk once
    assert "HDF5 read 1000 -> 44 raw-data piece(s)" in v["note"]



FANCY = """
import sys
import h5py

path, log = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
if log:
    from h5py import h5f
    from ccp.measurement import iolog
    fapl = iolog.log_fapl(log)
    fapl.set_cache(0, 521, 1024, 0.75)
    f = h5py.File(h5f.open(path.encode(), h5f.ACC_RDONLY, fapl))
else:
    f = h5py.File(path, "r", rdcc_nbytes=1024, rdcc_nslots=521, rdcc_w0=0.75)
d = f["d"]
for i in range(10):
    d[[1, 5, 7, 12], :]
f.close()
"""


def test_verify_replays_a_list_index_as_one_read(tmp_path, cli):
    """``d[[1, 5, 7, 12], :]`` is one call (a union of four hyperslabs) on gzip chunks bigger than the cache: HDF5
    reads each chunk once a call. The replay reads it so (the model, which takes the four boxes one by one, counts
    a read per box: the gap ``ccp.workload.replay``'s docstring names)."""
    path, program = tmp_path / "f.h5", tmp_path / "program.py"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(40 * 60, dtype="<f4").reshape(40, 60), chunks=(20, 30),
                         compression="gzip")
    program.write_text(FANCY)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, str(program), str(path), str(tmp_path / "io.log")], capture_output=True,
                       text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    own = iolog.totals(iolog.parse_log(tmp_path / "io.log"))
    r = cli("diagnose", tmp_path / "trace", "--verify", "--json")
    assert r.exit_code == 0, r.output
    v = json.loads(r.output)["datasets"][0]["verified"]
    assert own["raw_reads"] == 10 * 2                                 # two chunks a call, each read once
    assert v["before_io"] == {"raw_reads": own["raw_reads"], "raw_read_bytes": own["raw_read_bytes"]}, v
