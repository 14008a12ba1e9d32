"""A sweep on a Dask cluster (a scheduler and two workers on loopback) gives the local run's I/O counts."""

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from ccp.run import run_sweep  # noqa: E402

SWEEP = """
name: dask
dataset:
  generate: {shape: [8, 10, 200], dtype: ">f4", data: normal}
matrix:
  chunks: [[4, 10, 200], [2, 10, 200]]
  filters: ["gzip:1"]
  cache: ["16KiB", "64KiB"]
  access: [{op: read, block: [1, 1, 200]}, {op: write, block: [1, 10, 200]}]
repeats: 1
"""

IO = ["raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes", "meta_reads", "meta_writes"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
@pytest.mark.slow   # a Dask cluster: make test-slow (CI); tests/run/test_every_runner.py runs the in-process Dask executor fast
def test_dask_run_matches_local_run(write_sweep, tmp_path):
    sweep = write_sweep(SWEEP)
    quiet = dict(report=False, echo=lambda *a: None)
    run_sweep(sweep, out=tmp_path / "local", work_dir=tmp_path / "work", **quiet)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  resources={"benchmark": 1}, dashboard_address=None) as cluster:
        summary = run_sweep(sweep, out=tmp_path / "dask", work_dir=tmp_path / "work", executor="dask",
                            scheduler=cluster.scheduler_address, resources={"benchmark": 1}, **quiet)
    assert summary.failed == 0 and summary.ran == 8
    local = pd.read_csv(tmp_path / "local" / "cells.csv").set_index("cell_id").sort_index()
    dask = pd.read_csv(tmp_path / "dask" / "cells.csv").set_index("cell_id").sort_index()
    pd.testing.assert_frame_equal(local[IO], dask[IO])
    assert dask["host"].notna().all()
    req = pd.read_parquet(tmp_path / "dask" / "requests.parquet")
    assert set(req.cell_id) == set(dask.index)
