"""``ccp diagnose`` of a program reading by list index and by boolean mask (issue 23): each such call is one HDF5
call, which loads each chunk once, and the diagnosis' model takes it so. Its predicted chunk loads equal what the
``--verify`` replay measures under the log driver (gzip chunks bigger than the cache: one raw read a load); a model
fed the call's boxes one by one loads a chunk again for every listed row or point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r", rdcc_nbytes=1024, rdcc_nslots=521, rdcc_w0=0.75)
d = f["d"]
mask = np.zeros(d.shape, bool)
mask[0, 0] = mask[0, 1] = mask[39, 59] = True
for i in range(10):
    d[[1, 5, 7, 12], :]        # one call: the union of four rows, two chunks
    d[mask]                    # one call: three points, two chunks
f.close()
"""


def test_diagnosis_counts_a_list_index_as_one_call(tmp_path, cli):
    path, program = tmp_path / "f.h5", tmp_path / "program.py"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(40 * 60, dtype="<f4").reshape(40, 60), chunks=(20, 30),
                         compression="gzip")
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    r = cli("diagnose", tmp_path / "trace", "--verify", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)["datasets"][0]
    measured = d["verified"]["before_io"]["raw_reads"]
    assert d["chunk_loads"] == measured, (d["chunk_loads"], measured)
    # each list-index call loads its two chunks once: 20 in all, and the mask's calls the other 20: 40, the raw reads
    # the program itself makes untraced under the log driver (a mask read the fast reader refused was recorded too,
    # and replayed twice: 60)
    assert d["chunk_loads"] == 40


def test_the_model_of_the_traced_calls_on_other_layouts_equals_hdf5(tmp_path):
    """What tune and diagnose price: the traced calls on layouts other than the traced one. Each layout's model
    chunk loads (gzip: a load is a raw read) equal the raw reads of a replay of the same calls on a file with that
    layout, under the log driver (the program's trace here: 40, 50, 42, 120 and 171 loads)."""
    from ccp.trace.sequence_model import run_model
    from ccp.trace.verify import replay_counts
    from ccp.workload.replay_batches import replay_sequence
    from ccp.workload.tracefile import load_trace

    path, program = tmp_path / "f.h5", tmp_path / "program.py"
    data = np.arange(40 * 60, dtype="<f4").reshape(40, 60)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=(20, 30), compression="gzip")
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    seq = replay_sequence(load_trace(tmp_path / "trace"), "/d", op="read")
    for chunks in [(20, 30), (5, 60), (1, 60), (40, 6), (8, 8)]:
        other = tmp_path / f"c{chunks[0]}x{chunks[1]}.h5"
        with h5py.File(other, "w") as f:
            f.create_dataset("d", data=data, chunks=chunks, compression="gzip")
        measured = replay_counts(str(other), "/d", seq)["raw_reads"]
        assert run_model(seq, chunks=chunks)["chunk_loads"] == measured, chunks
