"""A time-budgeted write cell never reports fewer I/O operations than the full pass makes (issue 17)."""

import textwrap

import pandas as pd

from ccp.run import run_sweep

SWEEP = """
name: tb
dataset:
  generate: {shape: [2000, 1000], dtype: "<f4"}
matrix:
  chunks: [[1, 1000]]
  cache: ["16MiB"]              # holds every chunk: the raw writes all happen when the dataset closes
  access: [{op: write, block: [1, 1000]}]
repeats: 1
cold: false
"""


def test_budgeted_write_cell_counts_are_never_the_prefixs(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(textwrap.dedent(SWEEP))
    # 1 ms for 2,000 writes and a file create: the pass always stops after a prefix
    run_sweep(sweep, out=tmp_path / "run", work_dir=tmp_path / "work", report=False, echo=lambda *a: None,
              time_budget=0.001)
    row = pd.read_csv(tmp_path / "run" / "cells.csv").iloc[0]
    assert row["status"] == "extrapolated"
    assert pd.isna(row["raw_writes"]) or row["raw_writes"] >= 2000, row["raw_writes"]
    assert pd.isna(row["raw_write_bytes"]) or row["raw_write_bytes"] >= 2000 * 4000
    if pd.isna(row["raw_writes"]):
        assert "io-prefix-only" in row["flags"]
