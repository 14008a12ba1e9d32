"""A sweep replays a traced program's selections, its reopens included, in every cell's layout and cache."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ccp.run import run_sweep

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

SWEEP = """\
name: band-replay
dataset: {{file: {file}, path: Reflectance/Reflectance_Data}}
matrix:
  chunks: [source, [192, 192, 1]]
  cache: [1MiB, 16MiB]
  client: [native, h5py-lowlevel]
  access:
    - {{trace: {trace}, dataset: /Reflectance/Reflectance_Data}}
repeats: 1
cold: false
"""


def trace_run(tmp, *program):
    out = tmp / "trace"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, *program],
                       check=False, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=600)
    return r, out


@pytest.fixture(scope="module")
def band_trace(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("band")
    cube = tmp / "cube.h5"
    r, out = trace_run(tmp, str(EXAMPLES / "band_reader.py"), "--bands", "6", "--file", str(cube))
    assert r.returncode == 0, r.stderr
    return cube, out


def test_replay_counts_equal_the_model_and_keep_the_reopens(band_trace, tmp_path):
    cube, trace = band_trace
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.format(file=cube, trace=trace))
    run_sweep(sweep, out=tmp_path / "run", work_dir=tmp_path / "work", report=False, echo=lambda *a: None)
    cells = pd.read_csv(tmp_path / "run" / "cells.csv")
    assert (cells["status"] == "ok").all(), cells["status"].tolist()
    assert (cells["raw_reads"] == cells["predicted_raw_reads"]).all()
    assert (cells["requests"] == 6).all()
    src = cells[cells["chunks"] == "64x64x32"]
    # the program reopened its file for every band: a bigger cache cannot help, every band reloads its chunks
    assert src["raw_reads"].nunique() == 1 and src["raw_reads"].iloc[0] == 6 * 9
    assert cells["order"].str.startswith("trace:").all()
    native = cells[cells["client"] == "native"]
    assert native["flags"].fillna("").str.contains("reopens-lowlevel").all()


def test_check_lists_the_replay_cells(band_trace, tmp_path, cli):
    cube, trace = band_trace
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.format(file=cube, trace=trace))
    r = cli("check", str(sweep))
    assert r.exit_code == 0, r.output
    assert "trace:" in r.output


@pytest.mark.parametrize("entry, key", [
    ("{trace: NOPE, dataset: /d}", "matrix.access[0].trace"),
    ("{trace: TRACE}", "matrix.access[0].dataset"),
    ("{trace: TRACE, dataset: /Reflectance/Reflectance_Data, block: [1, 1, 1]}", "matrix.access[0].block"),
    ("{trace: TRACE, dataset: /nope}", "matrix.access[0].trace"),
    ("{op: read, block: [1, 1, 1], pid: 3}", "matrix.access[0].pid"),
], ids=["not-a-trace", "no-dataset", "block-with-trace", "dataset-not-traced", "pid-without-trace"])
def test_bad_replay_entries_are_one_line(band_trace, tmp_path, entry, key, cli):
    cube, trace = band_trace
    text = SWEEP.format(file=cube, trace=trace).replace(
        f"    - {{trace: {trace}, dataset: /Reflectance/Reflectance_Data}}",
        "    - " + entry.replace("TRACE", str(trace)).replace("NOPE", str(tmp_path / "nope")))
    sweep = tmp_path / "s.yaml"
    sweep.write_text(textwrap.dedent(text))
    r = cli("check", str(sweep))
    assert r.exit_code == 2, r.output
    assert key in r.output and len(r.output.strip().splitlines()) == 1
