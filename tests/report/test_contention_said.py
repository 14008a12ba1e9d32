"""A run measured under contention says so up front (audit22 A9): the report's top (a box and a "contended" figure
beside cells / finished / failed / flagged), and ``ccp run``'s last lines; a quiet run says nothing of it."""

import pandas as pd
import pytest
from report_synthetic import slow_down

from ccp.report import write_report
from ccp.report.data import contention_line


@pytest.mark.parametrize("busy", [True, False], ids=["contended", "quiet"])
def test_the_report_says_a_run_was_measured_under_contention(make_run, busy, undrawn_figures):
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


@pytest.mark.parametrize("busy, said", [
    ([True, False, True, False, False], ", 2 of 5 timed passes with the load above the CPUs"),
    ([False] * 5, ", 0 of 5 timed passes with the load above the CPUs"),
    ([], ""),
], ids=["two-busy", "none-busy", "not-recorded"])
def test_a_contended_cell_says_how_many_of_its_passes_ran_under_load(make_run, busy, said):
    """Issue 22: "flag a run, or a pass, measured under contention": each contended cell in the report's Stability box
    says how many of its timed passes ran with the 1-minute load above its CPUs (the passes a verdict sets aside when
    enough quiet ones are left)."""
    from dataclasses import replace

    import numpy as np

    from ccp.report.data import load_cells, prepare
    from ccp.report.html import stability_html
    from ccp.report.stats import samples

    run = make_run("r", tables=False)
    slow_down(run, 2.0, cpu=False)
    cells, _ = prepare(load_cells(run))           # as the report reads them (labelled)
    ss = samples(run, cells)
    ss = {k: replace(s, passes=np.ones(len(busy)) if busy else s.passes, pass_busy=np.array(busy, bool))
          for k, s in ss.items()}
    box = stability_html(cells, ss).split("<b>contended</b>")[1]
    n = box.count("CPU/wall")            # the contended cells whose load and share are recorded
    assert n >= len(cells) - 1
    if said:
        assert box.count(f"{said})</li>") == n
    else:
        assert "timed passes with the load" not in box
