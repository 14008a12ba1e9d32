"""A counted pass whose I/O log is cut short (a full disk) fails the cell: never an `ok` row with smaller counts."""

import textwrap

import h5py
import numpy as np
import pandas as pd
import pytest

from ccp.config.sweep import parse_sweep_file
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.measurement import iolog
from ccp.run import run_sweep


@pytest.fixture
def complete_log(tmp_path):
    """A real log of the driver: 100 chunks read one by one."""
    f = tmp_path / "d.h5"
    with h5py.File(f, "w") as h:
        h.create_dataset("d", data=np.arange(10_000.0), chunks=(100,))
    log = tmp_path / "io.log"
    fid = h5py.h5f.open(str(f).encode(), h5py.h5f.ACC_RDONLY, iolog.log_fapl(log))
    with h5py.File(fid) as h:
        for i in range(100):
            h["d"][i * 100:(i + 1) * 100]
    return log


def test_complete_log_parses(complete_log):
    ops = iolog.parse_log(complete_log)
    assert int((ops.is_raw & ~ops.is_write).sum()) == 100


@pytest.mark.parametrize("cut", ["half", "no-summary", "last-line-partial", "lines-dropped-inside", "empty"],
                         ids=str)
def test_cut_log_is_refused(complete_log, cut):
    lines = complete_log.read_bytes().split(b"\n")
    summary = next(i for i, ln in enumerate(lines) if ln.startswith(b"Total number of read"))
    if cut == "half":
        data = complete_log.read_bytes()[: len(complete_log.read_bytes()) // 2]
    elif cut == "no-summary":
        data = b"\n".join(lines[:summary]) + b"\n"
    elif cut == "last-line-partial":
        data = complete_log.read_bytes()[:-15]
    elif cut == "lines-dropped-inside":        # a stdio buffer lost on ENOSPC, later writes succeeded
        data = b"\n".join(lines[:20] + lines[45:])
    else:
        data = b""
    complete_log.write_bytes(data)
    with pytest.raises(iolog.IoLogError, match="cut short|lines lost"):
        iolog.parse_log(complete_log)


def test_missing_log_is_refused(tmp_path):
    with pytest.raises(iolog.IoLogError, match="missing"):
        iolog.parse_log(tmp_path / "nothing.log")


SWEEP = """
name: fills
dataset:
  generate: {shape: [200, 50], dtype: "<f4"}
matrix:
  chunks: [[1, 50]]
  cache: [0]                      # no chunk cache: each request reads its chunk from the file
  access: [{op: read, block: [1, 1]}]
repeats: 1
cold: false
"""


def test_full_work_disk_during_the_counted_pass_fails_the_cell(tmpfs, tmp_path, monkeypatch):
    """Issue 17's case: the work folder's disk fills while HDF5 writes its log (10,000 raw reads)."""
    work = tmpfs(72)     # room for the work file and a complete log, until the fault fills it
    sweep = tmp_path / "s.yaml"
    sweep.write_text(textwrap.dedent(SWEEP))
    sw = parse_sweep_file(sweep)
    cell = expand(sw, describe_source(sw.dataset))[0]
    monkeypatch.setenv("CCP_FAULT_INJECT", f"{cell.cell_id}:fill-disk")
    summary = run_sweep(sweep, out=tmp_path / "run", work_dir=work, report=False, echo=lambda *a: None)
    row = pd.read_csv(tmp_path / "run" / "cells.csv").iloc[0]
    assert summary.failed == 1
    assert row["status"].startswith("failed: counted pass: HDF5's I/O log"), row["status"]
    assert not (tmp_path / "run" / "requests.parquet" / f"{cell.cell_id}.parquet").exists()
    assert not any((work / "tmp").iterdir())          # the scratch folder (and its ballast) is gone
    # the same cell without a full disk: every one of its 10,000 reads counted
    monkeypatch.delenv("CCP_FAULT_INJECT")
    run_sweep(sweep, out=tmp_path / "run", work_dir=work, report=False, echo=lambda *a: None)
    row = pd.read_csv(tmp_path / "run" / "cells.csv").iloc[0]
    assert row["status"] == "ok" and row["raw_reads"] == 10_000
