"""write_compare: the cells two runs share, side by side with ratios, as terminal text and an HTML page."""

import re

import pandas as pd
import pytest

from ccp.report import write_compare


@pytest.fixture
def two_runs(make_run):
    a = make_run("a", tables=False)
    b = make_run("b", tables=False)
    cells = pd.read_parquet(b / "cells.parquet")
    cells["time_s"] *= 2.0
    cells["cache_w0"] = cells["cache_w0"] + 1e-12          # read back through another float path: still the same cache
    cells = cells[~((cells["chunks"] == "1x30x9x100") & (cells["filters"] == "none"))]   # B lacks two cells
    (b / "cells.parquet").unlink()                          # and only has the CSV
    cells.to_csv(b / "cells.csv", index=False)
    return a, b


def test_terminal_text(two_runs):
    a, b = two_runs
    text = write_compare(a, b)
    # 13 finished in A; B lacks 2 of them; the failed cell is never compared
    assert "11 cells in common (14 in A, 12 in B; only finished cells are compared)" in text
    assert "geometric mean 2" in text and "B slower by more than 10% in 11 cells" in text
    header = next(line for line in text.splitlines() if line.startswith("cell "))
    assert re.search(r"time A\s+time B\s+B / A\s+raw reads A\s+raw reads B\s+raw writes A\s+raw writes B", header)
    rows = [line for line in text.splitlines() if " | " in line]
    assert len(rows) == 11 and all(re.search(r"\s2\s", r) for r in rows)


def test_html_page(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "cmp" / "a-vs-b.html"
    write_compare(a, b, out)
    page = out.read_text()
    assert (tmp_path / "cmp" / "a-vs-b.png").stat().st_size > 5000
    assert '<img src="a-vs-b.png"' in page and "<style>" in page and "http" not in page
    assert page.count("<tr>") >= 11 + 3


def test_nothing_in_common(make_run):
    a = make_run("a", tables=False)
    b = make_run("b", tables=False)
    cells = pd.read_parquet(b / "cells.parquet")
    cells["cache_nbytes"] = cells["cache_nbytes"] * 2
    cells.to_parquet(b / "cells.parquet", index=False)
    assert "no cells in common" in write_compare(a, b)
