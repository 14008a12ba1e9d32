"""Where `ccp compare` may write its page, and which ratios it takes: never over a run it compares or a file
that is not an earlier comparison, never a gate that a NaN makes always pass."""

import hashlib

import pytest
from click.testing import CliRunner
from report_synthetic import write_run

from ccp.cli import main


def _cli(*args):
    return CliRunner().invoke(main, ["compare", *map(str, args)])


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs shared by the tests: each refusal checks that neither changed."""
    tmp = tmp_path_factory.mktemp("runs")
    return write_run(tmp / "a", tables=False), write_run(tmp / "b", tables=False)


@pytest.mark.parametrize("where, says", [
    (lambda a, b, tmp: a / "run.json", "inside the run folder"),
    (lambda a, b, tmp: b / "report.html", "inside the run folder"),
    (lambda a, b, tmp: a / "new-page.html", "inside the run folder"),
    (lambda a, b, tmp: tmp / "sweep.yaml", "is not a page ccp compare wrote"),
    (lambda a, b, tmp: tmp / "notes.html", "is not a page ccp compare wrote"),
    (lambda a, b, tmp: tmp / "plotted.html", "its plot"),
], ids=["run-json-of-a", "report-of-b", "new-file-in-a", "a-sweep-file", "someone-elses-page", "a-png-beside"])
def test_html_that_would_replace_a_run_or_a_users_file_is_refused(runs, tmp_path, where, says):
    a, b = runs
    (tmp_path / "sweep.yaml").write_text("name: mine\n")
    (tmp_path / "notes.html").write_text("<html><title>my notes</title></html>")
    (tmp_path / "plotted.png").write_bytes(b"\x89PNG not ours")
    target = where(a, b, tmp_path)
    before = {p: _digest(p) for d in (a, b, tmp_path) for p in d.rglob("*") if p.is_file()}
    r = _cli(a, b, "--html", target)
    assert r.exit_code == 2, r.output
    assert says in r.output and str(target.name) in r.output and "Traceback" not in r.output
    assert {p: _digest(p) for d in (a, b, tmp_path) for p in d.rglob("*") if p.is_file()} == before


def test_an_earlier_comparison_page_is_replaced(runs, tmp_path):
    a, b = runs
    out = tmp_path / "cmp.html"
    assert _cli(a, b, "--html", out).exit_code == 0
    first = out.read_text()
    r = _cli(a, b, "--html", out)
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("<!doctype html>") and len(out.read_text()) > 0.5 * len(first)
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize("option", ["--fail-above", "--threshold"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0.5"])
def test_a_ratio_that_is_not_a_finite_number_of_at_least_one_is_refused(runs, option, value):
    a, b = runs
    r = _cli(a, b, option, value)
    assert r.exit_code == 2, r.output
    assert option in r.output and "Traceback" not in r.output
