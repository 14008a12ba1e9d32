"""What `ccp compare` says beside its verdicts (audit22): why two runs share no cell (F1), whose load a contention line
gives after --remeasure (F2), each pass's CPU time beside its wall time (F5), and ratios without exponents (F9)."""

from click.testing import CliRunner
from report_synthetic import slow_down

from ccp.cli import main

KIB = 1024


def _cli(*args):
    return CliRunner().invoke(main, ["compare", *map(str, args)])


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
