"""Reports render from real runs; a real browser loads every image; compare lines up shared cells."""

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ccp.cli import main
from ccp.engine import run_sweep

SWEEP = """
name: rep
dataset:
  generate: {shape: [8, 10, 200], dtype: ">f4", data: normal}
matrix:
  chunks: [[4, 10, 200], [1, 10, 200]]
  filters: ["gzip:1"]
  cache: ["16KiB", "64KiB"]
  access: [{op: read, block: [1, 1, 200]}, {op: write, block: [1, 10, 200]}]
repeats: 2
tables:
  - title: "Table 5 in miniature"
    rows: [file, cache, chunks, block, time, raw_reads, chunk_loads]
    columns:
      - {chunks: 4x10x200, cache: 16KiB, block: 1x1x200, op: read}
      - {chunks: 4x10x200, cache: 64KiB, block: 1x1x200, op: read}
    labels: [small cache, large cache]
    reference: [{time: 345}, {time: 0.37}]
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rep")
    (tmp / "s.yaml").write_text(SWEEP)
    run_sweep(tmp / "s.yaml", out=tmp / "run", work_dir=tmp / "work", echo=lambda *a: None)
    return tmp / "run"


def test_report_page_and_images(run_dir):
    page = (run_dir / "report.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) >= 6
    for name in images:
        assert (run_dir / name).stat().st_size > 1000, name
    assert "Table 5 in miniature" in page and "small cache" in page
    assert "(paper: 345 s; x" in page                      # published value beside ours, with the ratio
    assert "Which configuration is fastest, and why" in page
    assert "raw-data reads for" in page                    # the why: raw reads per request
    assert "chunk larger than the cache" in page           # traps flagged
    assert "http://" not in page and "https://" not in page  # opens from disk, no network


def test_bad_tables_key_is_a_config_error(write_sweep, tmp_path):
    bad = SWEEP.replace("    labels:", "    lables:")
    result = CliRunner().invoke(main, ["check", str(write_sweep(bad))])
    assert result.exit_code == 2
    assert "tables[0].lables" in result.output and "did you mean 'labels'" in result.output


def test_compare_two_runs(run_dir, tmp_path):
    other = tmp_path / "copy"
    shutil.copytree(run_dir, other)
    result = CliRunner().invoke(main, ["compare", str(run_dir), str(other), "--html", str(tmp_path / "cmp.html")])
    assert result.exit_code == 0, result.output
    assert "8 cells in common" in result.output
    assert (tmp_path / "cmp.html").exists() and (tmp_path / "cmp.png").exists()


def test_report_loads_in_a_real_browser(run_dir, browser_check):
    assert browser_check(run_dir / "report.html") >= 6


def test_quickstart_report_loads_in_a_real_browser(tmp_path, browser_check):
    config = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"
    run_sweep(config, out=tmp_path / "run", work_dir=tmp_path / "work", quick=True, echo=lambda *a: None)
    assert browser_check(tmp_path / "run" / "report.html") >= 4   # a quick run has no trace plots
