"""What `ccp compare` says beside its verdicts (audit22): why two runs share no cell (F1), whose load a contention line
gives after --remeasure (F2), each pass's CPU time beside its wall time (F5), and ratios without exponents (F9)."""

import html
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import slow_down

from ccp.cli import main
from ccp.report import compare as comparing
from ccp.report.stats import Sample
from ccp.units import format_seconds

KIB = 1024
FIXTURES = Path(__file__).parents[1] / "store" / "fixtures"


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


def test_after_remeasure_each_load_is_said_by_its_source(make_run, monkeypatch):
    """audit22 F2: after --remeasure the contention line read "load A 4.9 vs B 5.6": the remeasure's load for A, the
    run's recorded load for B. The remeasured cells' loads and the recorded cells' are now two pairs, each named."""
    from ccp.report import remeasure

    a = make_run("a", tables=False)
    gz = lambda c: c["filters"] == "gzip:6"                      # noqa: E731
    b = slow_down(make_run("b", tables=False), 3.0, where=gz, cpu=False)    # the machine's: remeasured
    cells = pd.read_parquet(b / "cells.parquet")
    quiet = ~gz(cells)                           # the same times, recorded under a load of 7.9: ties, kept as recorded
    cells.loc[quiet, "flags"], cells.loc[quiet, "load_max"] = "contended", 7.9
    cells.to_parquet(b / "cells.parquet", index=False)
    cells.to_csv(b / "cells.csv", index=False)
    five = np.array([1.0, 1.01, 0.99, 1.02, 0.98]) * 0.01

    def measured_here(run_a, run_b, ids, rounds, old, echo=print):
        def here(s: Sample) -> Sample:
            return Sample(0.01, five, np.zeros(0), s.n_requests, True, cpu=five * 0.9, work=s.work, load=0.6, cpus=2.0)
        return {(ida, idb): (here(old[("a", ida)]), here(old[("b", idb)])) for ida, idb in ids}, []

    monkeypatch.setattr(remeasure, "interleaved", measured_here)
    text = comparing.compare(a, b, None, remeasure=5, echo=lambda *_: None)
    j = text.joined
    assert j["remeasured"].any() and not j["remeasured"].all(), text
    line = next(x for x in text.splitlines() if x.startswith("contention: "))
    assert "load A 0.4 vs B 7.9 as recorded, A 0.6 vs B 0.6 remeasured here on 2 CPUs" in line, line
    assert f"B measured {int((~j['remeasured']).sum())} cell(s) under contention (0 of them in the remeasure)" in line


def _median_cpu(run: Path, cell_id: str) -> float:
    req = pd.read_parquet(run / "requests.parquet" / f"{cell_id}.parquet")
    return float(np.median(req.loc[(req["phase"] == "open") & (req["pass"] >= 0), "pass_cpu_s"]))


def test_compare_shows_each_sides_cpu_time_per_pass(make_run, tmp_path):
    """audit22 F5 (issue 22: the report and compare show each pass's wall time and the process's CPU time): a
    CPU/pass column for A and B beside the times, "n/a" where a run did not record it (an extrapolated cell)."""
    a = make_run("a", tables=False)
    b = slow_down(make_run("b", tables=False), 2.0)
    page = tmp_path / "cmp.html"
    r = _cli(a, b, "--html", page)
    assert r.exit_code == 0, r.output
    header = next(x for x in r.output.splitlines() if x.startswith("cell "))
    assert header.split().index("B") < header.index("CPU/pass A") < header.index("CPU/pass B") < header.index("verdict")
    j = comparing.compare(a, b, None).joined
    for row in j.itertuples():
        line = next(x for x in r.output.splitlines() if x.startswith(row.label + " "))
        if row.status_a == "extrapolated":       # its CPU time is a prefix's: no figure for the whole pass
            assert line.count("n/a") == 2, line
            continue
        assert "n/a" not in line, line
        cpu_a, cpu_b = _median_cpu(a, row.cell_id_a), _median_cpu(b, row.cell_id_b)
        assert f"{format_seconds(cpu_a)}  " in line and format_seconds(cpu_b) in line, line
        assert cpu_b == pytest.approx(2 * cpu_a)
    assert "<th>CPU/pass A</th><th>CPU/pass B</th>" in page.read_text()


def test_a_run_without_cpu_times_says_not_recorded(tmp_path):
    """A schema-3 run (no CPU time recorded) against itself: its CPU/pass is "n/a", never 0 or a blank."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "schema3", a)
    shutil.copytree(FIXTURES / "schema3", b)
    r = _cli(a, b)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("cell "))
    assert "CPU/pass A" in lines[at] and "CPU/pass B" in lines[at]
    rows = [x for x in lines[at + 2:] if x.strip()]
    assert rows and all(x.split().count("n/a") == 2 for x in rows), r.output


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
