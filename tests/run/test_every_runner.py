"""One suite every way of measuring a cell passes, as zarr's ``StoreTests`` is one suite every store passes.

A cell is measured alike whoever runs it (the executors: inline in this process, forked workers, Dask) and however
its requests reach HDF5 (the clients: ccp's native loop, h5py's low-level API, h5py's Dataset). Each combination
runs the same small sweep (a read and a write cell) and must finish every cell, write the whole row, count the
raw-data reads and writes the chunk-cache model predicts (exact for these layouts) and keep each cell's requests. A new
executor or client is one more line in RUNNERS.
"""

from __future__ import annotations

import pandas as pd
import pytest

from ccp.predict import PREDICTED
from ccp.run import run_sweep
from ccp.store.schema import CELL_COLUMNS

SWEEP = """
name: every-runner
dataset:
  generate: {{shape: [8, 10, 200], dtype: ">f4", data: normal}}
matrix:
  chunks: [[4, 10, 200]]
  filters: ["gzip:1"]
  cache: ["16KiB"]
  access: [{{op: read, block: [1, 1, 200]}}, {{op: write, block: [1, 10, 200]}}]
  client: [{client}]
repeats: 1
"""

# (executor, client): every executor with the default client, every other client inline
RUNNERS = [
    pytest.param("inline", "native", id="inline-native"),
    pytest.param("forked", "native", id="forked-native"),
    pytest.param("dask", "native", id="dask-in-process-native"),
    pytest.param("inline", "h5py-lowlevel", id="inline-h5py-lowlevel"),
    pytest.param("inline", "h5py", id="inline-h5py"),
]

COUNTED = ["raw_reads", "raw_writes"]      # the bytes of gzip chunks are their compressed sizes, not modelled


def _run(executor: str, client: str, write_sweep, tmp_path) -> pd.DataFrame:
    sweep = write_sweep(SWEEP.format(client=client))
    quiet = dict(report=False, echo=lambda *a: None, out=tmp_path / "run", work_dir=tmp_path / "work")
    if executor == "dask":
        distributed = pytest.importorskip("distributed")
        # dask's in-process scheduler: one worker thread in this process, no sockets beyond loopback
        with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as c:
            summary = run_sweep(sweep, executor="dask", scheduler=c, **quiet)
    else:
        summary = run_sweep(sweep, isolate=executor == "forked", **quiet)
    assert summary.failed == 0 and summary.ran == 2, summary
    return pd.read_csv(tmp_path / "run" / "cells.csv")


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
@pytest.mark.parametrize(("executor", "client"), RUNNERS)
def test_every_runner_measures_the_cells_the_model_predicts(executor, client, write_sweep, tmp_path):
    cells = _run(executor, client, write_sweep, tmp_path)
    assert list(cells.columns) == CELL_COLUMNS
    assert (cells["status"] == "ok").all(), cells[["cell_id", "status"]]
    assert set(cells["client"]) == {client}
    assert sorted(cells["op"]) == ["read", "write"]
    for col in COUNTED:
        assert cells[col].notna().all(), (col, cells[col])
        assert (cells[col] == cells[f"predicted_{col}"]).all(), cells[[col, f"predicted_{col}"]]
    read, write = (cells[cells["op"] == op].iloc[0] for op in ("read", "write"))
    assert read["raw_reads"] > 0 and read["raw_writes"] == 0 and write["raw_writes"] > 0
    assert cells["time_s"].gt(0).all()
    assert cells[list(PREDICTED) + ["predicted_requests"]].notna().all().all(), cells[list(PREDICTED)]
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert set(req["cell_id"]) == set(cells["cell_id"])


# A traced program's strided reads (issue 23), replayed by every runner: each call one HDF5 read, as made
STRIDED_PROGRAM = """
import sys
import h5py
from h5py import MultiBlockSlice

path, log = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
if log:            # untraced, under the log VFD: the program's own counts
    from h5py import h5f
    from ccp.measurement import iolog
    fapl = iolog.log_fapl(log)
    fapl.set_cache(0, 521, 1024, 0.75)
    f = h5py.File(h5f.open(path.encode(), h5f.ACC_RDONLY, fapl))
else:
    f = h5py.File(path, "r", rdcc_nbytes=1024, rdcc_nslots=521, rdcc_w0=0.75)
d = f["d"]
d[::3]
d[2:50:5, 1:40:4]
d[10:20:2, 5]
d[MultiBlockSlice(start=1, stride=7, count=5, block=3), 0:40]
d[7]
d[::3]
f.close()
"""

STRIDED_SWEEP = """
name: every-runner-strided
dataset: {{file: {file}, path: d}}
matrix:
  chunks: [source, [5, 40]]
  filters: [source]
  cache: [{{nbytes: 1024, nslots: 521, w0: 0.75}}]
  access: [{{trace: {trace}, dataset: /d}}]
  client: [{client}]
repeats: 1
cold: false
"""


@pytest.fixture(scope="module")
def strided_trace(tmp_path_factory):
    """(file, trace folder, the program's raw reads and bytes run untraced under the log VFD)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import h5py
    import numpy as np

    from ccp.measurement import iolog

    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("strided")
    path, program = tmp / "s.h5", tmp / "program.py"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(60 * 40, dtype="<f4").reshape(60, 40), chunks=(6, 8), compression="gzip")
    program.write_text(STRIDED_PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(root)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, str(program), str(path), str(tmp / "io.log")], capture_output=True, text=True,
                       env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    return path, tmp / "trace", iolog.totals(iolog.parse_log(tmp / "io.log"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
@pytest.mark.parametrize(("executor", "client"), RUNNERS)
def test_every_runner_replays_strided_calls_as_the_program_made_them(executor, client, strided_trace, write_sweep,
                                                                      tmp_path):
    """Six calls (``d[::3]``, ``d[2:50:5, 1:40:4]``, ``d[10:20:2, 5]``, a MultiBlockSlice, a box): six requests,
    the raw reads the model predicts on both layouts, and on the program's own layout and cache the reads and
    bytes the program made untraced."""
    path, trace, program = strided_trace
    sweep = write_sweep(STRIDED_SWEEP.format(file=path, trace=trace, client=client))
    quiet = dict(report=False, echo=lambda *a: None, out=tmp_path / "run", work_dir=tmp_path / "work")
    if executor == "dask":
        distributed = pytest.importorskip("distributed")
        with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as c:
            summary = run_sweep(sweep, executor="dask", scheduler=c, **quiet)
    else:
        summary = run_sweep(sweep, isolate=executor == "forked", **quiet)
    assert summary.failed == 0 and summary.ran == 2, summary
    cells = pd.read_csv(tmp_path / "run" / "cells.csv")
    assert (cells["status"] == "ok").all() and (cells["requests"] == 6).all(), cells[["status", "requests"]]
    for col in ("raw_reads", "raw_read_bytes"):
        assert (cells[col] == cells[f"predicted_{col}"]).all(), cells[[col, f"predicted_{col}"]]
    own = cells[cells["chunks"] == "6x8"].iloc[0]
    assert (own["raw_reads"], own["raw_read_bytes"]) == (program["raw_reads"], program["raw_read_bytes"])
