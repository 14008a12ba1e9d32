"""Reports of real runs (the engine, HDF5, the log VFD): the page, the CLI commands and a real browser."""

import html
import re
from pathlib import Path

import pytest

from ccp.report import write_report
from ccp.run import run_sweep

pytestmark = pytest.mark.slow   # reports of real sweeps: make test-slow (CI); the page's parts are tested fast in test_report_page

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
    reference: [{time: 345}, {time_s: 0.37}]
"""


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rep")
    (tmp / "s.yaml").write_text(SWEEP)
    run_sweep(tmp / "s.yaml", out=tmp / "run", work_dir=tmp / "work", echo=lambda *a: None, report=write_report)
    return tmp / "run"


def test_report_page_and_images(run_dir):
    page = (run_dir / "report.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) >= 8
    for name in images:
        assert (run_dir / name).stat().st_size > 1000, name
    text = text_of(page)
    assert "Table 5 in miniature" in text and "small cache" in text
    assert "published: 345 s, x" in text                    # published value beside ours, with the ratio
    assert "model: " in text                                # the chunk-cache model beside the measurement
    assert "Which configuration is fastest for each access pattern, and why" in text
    assert "Read 1x1x200 (" in text and "Write 1x10x200 (" in text             # one headline per access pattern
    # each pattern's headline explains its winner, unless every cell of it was unstable (a busy machine): then it says so
    unstable = "every cell of this pattern is unstable"
    assert text.count("Why: ") + text.count(unstable) == 2
    assert ("raw-data reads for" in text and "per request" in text) or text.count(unstable) == 2 or (
        "raw-data writes for" in text and unstable in text)
    assert "chunk larger than the cache" in text            # traps flagged
    assert "Could not draw" not in page
    assert not re.search(r"(src|href)=[\"']?(https?:|//)", page)   # opens from disk, no network


def test_cli_report_rewrites_the_page(run_dir, cli):
    (run_dir / "report.html").unlink()
    result = cli("report", str(run_dir))
    assert result.exit_code == 0, result.output
    assert (run_dir / "report.html").exists()


@pytest.mark.slow          # renders the report twice (~25 CPU s); test_cli_report_rewrites_the_page renders it fast
def test_cli_report_self_contained(run_dir, cli):
    result = cli("report", str(run_dir), "--self-contained")
    assert result.exit_code == 0, result.output
    page = (run_dir / "report.html").read_text()
    assert 'src="data:image/png;base64,' in page and not re.search(r'<img src="[^"d][^"]*\.png"', page)
    cli("report", str(run_dir))      # back to the page with PNGs beside it, for the tests below


def test_bad_tables_key_is_a_config_error(write_sweep, cli):
    bad = SWEEP.replace("    labels:", "    lables:")
    result = cli("check", str(write_sweep(bad)))
    assert result.exit_code == 2
    assert "tables[0].lables" in result.output and "did you mean 'labels'" in result.output


def test_compare_a_run_with_itself(run_dir, tmp_path, cli):
    result = cli("compare", str(run_dir), str(run_dir), "--html", str(tmp_path / "cmp.html"),
                 "--fail-above", "1.01")
    assert result.exit_code == 0, result.output
    assert "8 cells in common" in result.output and "geometric mean 1.0x" in result.output
    assert "B slower in 0 cells, faster in 0, a tie in 8" in result.output
    assert (tmp_path / "cmp.html").exists() and (tmp_path / "cmp.png").exists()


def test_report_loads_in_a_real_browser(run_dir, open_in_chromium):
    seen = open_in_chromium(run_dir / "report.html")
    assert seen["broken"] == [] and seen["errors"] == [] and seen["remote"] == [] and seen["images"] >= 8


@pytest.mark.slow          # runs the quickstart sweep (~20 CPU s); test_report_loads_in_a_real_browser is the fast one
def test_quickstart_report_loads_in_a_real_browser(tmp_path, open_in_chromium):
    config = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"
    run_sweep(config, out=tmp_path / "run", work_dir=tmp_path / "work", quick=True, echo=lambda *a: None,
              report=write_report)
    seen = open_in_chromium(tmp_path / "run" / "report.html")
    assert seen["broken"] == [] and seen["errors"] == [] and seen["images"] >= 4   # a quick run has no file-operations plot
