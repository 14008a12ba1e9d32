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
