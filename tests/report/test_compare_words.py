"""What `ccp compare` says beside its verdicts (audit22): why two runs share no cell (F1), whose load a contention line
gives after --remeasure (F2), each pass's CPU time beside its wall time (F5), and ratios without exponents (F9)."""

import html
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import slow_down

from ccp.cli import main

KIB = 1024


def _cli(*args):
    return CliRunner().invoke(main, ["compare", *map(str, args)])


def _keep(run: Path, pick) -> Path:
    """The run with only the cells ``pick(cells)`` selects, as a sweep that configured only those would have written."""
    cells = pd.read_parquet(run / "cells.parquet")
    cells = cells[pick(cells)]
    cells.to_parquet(run / "cells.parquet", index=False)
    cells.to_csv(run / "cells.csv", index=False)
    return run


def _reads(cells: pd.DataFrame, cache: int) -> pd.Series:
    return (cells["cache_nbytes"] == cache) & (cells["op"] == "read")


@pytest.mark.parametrize("a_cache, b_cache, says", [
    (1024 * KIB, 256 * KIB, "no cells in common: A's sweep has cache 1 MiB, B's 256 KiB (compare matches cells of the "
                            "same configuration; to compare two settings, run both in one sweep: its report ranks them)"),
    (None, 256 * KIB, "no cells in common: A finished none of its"),
], ids=["other-cache", "a-finished-none"])
def test_two_runs_that_share_no_cell_say_why_and_never_pass(make_run, tmp_path, a_cache, b_cache, says):
    """audit22 F1: the quickstart run with cache 1 MiB against the same with 256 KiB printed "pass: no cell slower in
    B ..." before "not compared". Nothing compared leads with why, no "pass:" line anywhere, exit 3."""
    a = make_run("a", tables=False)
    if a_cache is None:      # every cell of A failed
        cells = pd.read_parquet(a / "cells.parquet")
        cells["status"] = "failed: MemoryError in H5Dread"
        cells.to_parquet(a / "cells.parquet", index=False)
        cells.to_csv(a / "cells.csv", index=False)
    else:
        _keep(a, lambda c: _reads(c, a_cache))
    b = _keep(make_run("b", tables=False), lambda c: _reads(c, b_cache))
    page = tmp_path / "cmp.html"
    r = _cli(a, b, "--fail-above", "1.5", "--html", page)
    assert r.exit_code == 3, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith(says), r.output
    assert not any(x.startswith(("pass:", "FAIL")) for x in lines), r.output
    assert "exit 3, not a pass" in r.output
    shown = html.unescape(page.read_text())
    assert says in shown and "pass: no cell" not in shown
    assert _cli(a, b).exit_code == 0              # no gate: said, nothing fails


def test_a_large_ratio_has_no_exponent(make_run):
    """audit22 F9: '15.7 ms  15.8 s  1e+03x  slower'."""
    a = make_run("a", tables=False)
    pick = lambda c: (c["filters"] == "none") & (c["cache_nbytes"] == 1024 * KIB) & (c["op"] == "write")   # noqa: E731
    b = slow_down(make_run("b", tables=False), 1080.0, where=pick)
    r = _cli(a, b, "--fail-above", "1.5")
    assert r.exit_code == 1, r.output
    row = next(x for x in r.output.splitlines() if x.startswith("4x30x9x100 | none | 1 MiB | write"))
    figures = row.split(" slower ")[0]            # the table's own figures (the why is the rule's words: stats.py)
    assert " 1,080x " in figures and "e+0" not in figures, row
    assert "e+0" not in "\n".join(x for x in r.output.splitlines() if " | " not in x or x.startswith("FAIL"))
