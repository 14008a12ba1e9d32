"""`ccp check` knows a `ccp tune` workload from a sweep, and says when the matrix names one layout twice
(breaker8 F16)."""

from pathlib import Path

import h5py
import numpy as np
import pytest

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_a_tune_workload_is_checked_as_one(cli):
    """The workload `ccp tune --help` uses is valid, and called a tune workload, not a bad sweep."""
    result = cli("check", str(CONFIGS / "tune-series-maps.yaml"))
    assert result.exit_code == 0, result.output
    assert "valid `ccp tune` workload" in result.output and "2 pattern(s)" in result.output
    assert "read 365x1x1, weight 1" in result.output and "unknown key" not in result.output


def test_a_bad_tune_workload_is_one_line_naming_the_key(tmp_path, cli):
    w = tmp_path / "w.yaml"
    w.write_text("name: w\ndataset: {path: /d, generate: {shape: [8, 8], dtype: <f4}}\n"
                 "workload:\n  - {access: {op: read, block: [4, 4, 4]}, weight: 1}\n")
    result = cli("check", str(w))
    assert result.exit_code == 2
    assert "workload[0].access.block" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("chunks, filters, note", [
    ("[source, 8x8]", "[source, 'gzip:1']", "3 of the 4 chunks x filters pairs are the same layout"),
    ("[source, 4x8]", "[source, none]", None),
], ids=["source-repeated", "all-distinct"])
def test_check_says_when_source_repeats_a_listed_layout(tmp_path, cli, chunks, filters, note):
    with h5py.File(tmp_path / "u.h5", "w") as f:
        f.create_dataset("/x", data=np.zeros((16, 8), "f4"), chunks=(8, 8), compression="gzip", compression_opts=1)
    s = tmp_path / "s.yaml"
    s.write_text(f"name: s\ndataset: {{file: u.h5, path: /x}}\nmatrix:\n  chunks: {chunks}\n  filters: {filters}\n"
                 "  cache: [1MiB, 2MiB]\n  access: [{op: read, block: [1, 8]}]\n")
    result = cli("check", str(s))
    assert result.exit_code == 0, result.output
    if note is None:
        assert "same layout" not in result.output
    else:
        assert note in result.output and "source is 8x8 gzip:1" in result.output and "2 cells" in result.output
