"""`ccp plan` predicts what `ccp run` measures: the model's raw reads equal the traced pass's."""

import json

import pandas as pd
from click.testing import CliRunner

from ccp.cli import main
from ccp.engine import run_sweep

SWEEP = """
name: plan
dataset:
  generate: {shape: [8, 10, 200], dtype: ">f4", data: normal}
matrix:
  chunks: [[4, 10, 200], [2, 5, 100], contiguous]
  filters: ["gzip:1", none]
  cache: ["16KiB", "64KiB", {nbytes: 64KiB, nslots: 1}]
  access: [{op: read, block: [1, 1, 200]}, {op: read, block: [8, 1, 1]}, {op: read, block: [2, 10, 200], random: 5}]
exclude: [{chunks: contiguous, filters: "gzip:1"}]
repeats: 1
cold: false
"""


def test_plan_json_matches_the_measured_run(write_sweep, tmp_path):
    sweep = write_sweep(SWEEP)
    result = CliRunner().invoke(main, ["plan", str(sweep), "--json", "--work", str(tmp_path / "work")])
    assert result.exit_code == 0, result.output
    planned = pd.DataFrame(json.loads(result.output)).set_index("cell_id")
    run_sweep(sweep, out=tmp_path / "run", work_dir=tmp_path / "work", report=False, echo=lambda *a: None)
    measured = pd.read_csv(tmp_path / "run" / "cells.csv").set_index("cell_id")
    assert set(planned.index) == set(measured.index)
    both = planned.add_suffix("_plan").join(measured)
    for col in ("requests", "raw_reads", "raw_writes"):
        pd.testing.assert_series_equal(both[f"{col}_plan"], both[col], check_names=False, check_dtype=False)
    pd.testing.assert_series_equal(measured["predicted_raw_reads"], measured["raw_reads"], check_names=False, check_dtype=False)
    assert (planned["time_s"] > 0).all()


def test_plan_flags_a_chunk_larger_than_the_cache(write_sweep):
    result = CliRunner().invoke(main, ["plan", str(write_sweep(SWEEP))])
    assert result.exit_code == 0
    assert "TRAP chunk larger than the cache" in result.output
