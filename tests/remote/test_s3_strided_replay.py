"""A traced program's strided calls replayed from S3 (issue 23): each call one read, as on a local file, so a cell makes
as many requests as the program made calls and the GETs its prediction gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from ccp.run import run_sweep
from tests.remote.conftest import NEEDS_S3

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
import h5py
from h5py import MultiBlockSlice

f = h5py.File(sys.argv[1], "r", rdcc_nbytes=1024, rdcc_nslots=521, rdcc_w0=0.75)
d = f["d"]
d[::3]
d[2:50:5, 1:40:4]
d[10:20:2, 5]
d[MultiBlockSlice(start=1, stride=7, count=5, block=3), 0:40]
d[7]
f.close()
"""

SWEEP = """
name: s3-strided
s3: local
dataset: {{file: {file}, path: d}}
matrix:
  chunks: [source]
  filters: [source]
  cache: [{{nbytes: 1024, nslots: 521, w0: 0.75}}]
  access: [{{trace: {trace}, dataset: /d}}]
  storage: [s3]
  fsspec: [{{cache_type: none}}, {{cache_type: readahead}}]
repeats: 1
"""


@NEEDS_S3
@pytest.mark.slow           # a trace and a loopback S3 server: 32 s at load 11 (make test-slow)
def test_s3_replay_reads_each_strided_call_once_with_the_predicted_gets(tmp_path):
    path, program = tmp_path / "s.h5", tmp_path / "program.py"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(60 * 40, dtype="<f4").reshape(60, 40), chunks=(6, 8), compression="gzip")
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", sys.executable,
                        str(program), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(file=path, trace=tmp_path / "trace"))
    summary = run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "run", work_dir=tmp_path / "work",
                        echo=lambda *a: None, report=None)
    assert summary.failed == 0
    cells = pd.read_csv(tmp_path / "run" / "cells.csv", keep_default_na=False, na_values=[""])
    assert len(cells) == 2 and (cells["status"] == "ok").all() and (cells["requests"] == 5).all()
    assert (cells["http_gets"] == cells["predicted_http_gets"]).all(), cells[["http_gets", "predicted_http_gets"]]
