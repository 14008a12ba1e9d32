"""A run measured under contention says so up front (audit22 A9): the report's top (a box and a "contended" figure
beside cells / finished / failed / flagged), and ``ccp run``'s last lines; a quiet run says nothing of it."""

import pandas as pd
import pytest
from report_synthetic import slow_down

from ccp.report import write_report
from ccp.report.data import contention_line


@pytest.mark.parametrize("busy", [True, False], ids=["contended", "quiet"])
def test_the_report_says_a_run_was_measured_under_contention(make_run, busy):
    run = make_run("r", tables=False)
    if busy:
        slow_down(run, 2.0, cpu=False)         # every cell flagged contended, load 7.9 on 2 CPUs
    page = write_report(run).read_text()
    top = page.split('id="summary"')[0]
    cells = pd.read_parquet(run / "cells.parquet")
    n = len(cells)
    said = f"{n} of {n} cells measured under contention (load up to 7.9 on 2 CPUs)"
    assert (said in top) is busy, top[-2000:]
    assert ("<div>contended<b>" in top) is busy
    assert (contention_line(cells) == "") is not busy
