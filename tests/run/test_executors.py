"""Every executor writes the same columns: the Dask path predicts too (it wrote no predicted_* columns)."""

import pandas as pd
import pytest

from ccp.predict import PREDICTED
from ccp.run import run_sweep
from ccp.run.executors import ForkedExecutor, InlineExecutor
from ccp.run.sweep import choose_executor
from ccp.store.schema import CELL_COLUMNS

SWEEP = """
name: executors
dataset:
  generate: {shape: [8, 10, 200], dtype: ">f4", data: normal}
matrix:
  chunks: [[4, 10, 200]]
  filters: ["gzip:1"]
  cache: ["16KiB"]
  access: [{op: read, block: [1, 1, 200]}, {op: write, block: [1, 10, 200]}]
repeats: 1
"""

COUNTS = [c for c in PREDICTED if c != "predicted_time_s"] + ["predicted_requests"]


def _cells(folder):
    return pd.read_csv(folder / "cells.csv").set_index("cell_id").sort_index()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
def test_dask_rows_carry_the_predictions_the_local_rows_do(write_sweep, tmp_path):
    distributed = pytest.importorskip("distributed")
    sweep = write_sweep(SWEEP)
    quiet = dict(report=False, echo=lambda *a: None, quick=True)
    run_sweep(sweep, out=tmp_path / "local", work_dir=tmp_path / "work", isolate=False, **quiet)
    # dask's in-process scheduler: one worker thread in this process, no sockets beyond loopback
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        summary = run_sweep(sweep, out=tmp_path / "dask", work_dir=tmp_path / "work", executor="dask", scheduler=client,
                            **quiet)
    assert summary.failed == 0 and summary.ran == 2
    local, dask = _cells(tmp_path / "local"), _cells(tmp_path / "dask")
    assert list(pd.read_csv(tmp_path / "dask" / "cells.csv").columns) == CELL_COLUMNS
    assert dask[COUNTS].notna().all().all(), dask[COUNTS]
    pd.testing.assert_frame_equal(local[COUNTS], dask[COUNTS])
    assert dask["predicted_time_s"].notna().all()


def test_the_executor_is_chosen_once():
    assert isinstance(choose_executor("local"), ForkedExecutor)
    assert choose_executor("local", cell_timeout=3).cell_timeout == 3
    assert isinstance(choose_executor("local", isolate=False), InlineExecutor)
    mine = InlineExecutor()
    assert choose_executor(mine) is mine
