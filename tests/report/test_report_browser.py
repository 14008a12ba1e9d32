"""Pages opened in a real browser (headless Chromium): every image loads, nothing fails, nothing leaves the disk."""

import re

import pytest

from ccp.report import write_compare, write_report
from ccp.report.data import load_cells, prepare

pytestmark = pytest.mark.slow   # a real browser: make test-slow (CI); the page's content is checked without one in test_report_page


def check(seen: dict, at_least: int) -> None:
    assert seen["broken"] == [], f"images that did not load: {seen['broken']}"
    assert seen["errors"] == [], f"errors in the page: {seen['errors']}"
    assert seen["remote"] == [], f"loads from outside the run folder: {seen['remote']}"
    assert seen["images"] >= at_least and all(w > 0 for w in seen["widths"])


@pytest.mark.slow   # a real browser: make test-slow (CI); the page's content is checked without one in test_report_page
def test_synthetic_report(synthetic_report, open_in_chromium):
    run, _ = synthetic_report
    check(open_in_chromium(run / "report.html"), 8)


@pytest.mark.slow       # ~15 CPU s; the quick-run page's text is test_report_page's test_quick_run_without_counted_pass
@pytest.mark.parametrize("quick", [True], ids=["quick-run"])
def test_quick_run_report(make_run, open_in_chromium, quick):
    from ccp.report import write_report

    check(open_in_chromium(write_report(make_run(quick=quick, tables=False))), 5)


@pytest.mark.slow   # a real browser: make test-slow (CI); the page's content is checked without one in test_report_page
def test_compare_page(make_run, open_in_chromium, tmp_path):
    out = tmp_path / "cmp.html"
    write_compare(make_run("a", tables=False), make_run("b", tables=False), out)
    check(open_in_chromium(out), 1)


def test_a_broken_image_is_caught(synthetic_report, open_in_chromium, tmp_path):
    """The probe itself: a page with a missing PNG fails the check."""
    run, page = synthetic_report
    bad = run / "broken.html"
    bad.write_text(page.replace('src="storage.png"', 'src="missing.png"'))
    seen = open_in_chromium(bad)
    assert seen["broken"] == ["missing.png"] and any("missing.png" in e for e in seen["errors"])


def test_what_a_reader_sees_in_order(synthetic_report, open_in_chromium):
    """Headline first, then the Table-8 tables, then the plots; the sweep and the many file operations folded at the end."""
    run, _ = synthetic_report
    seen = open_in_chromium(run / "report.html")
    s = seen["sections"]
    assert s[:3] == ["summary", "tables", "time"] and s.index("run") > s.index("cells") and s[-1] == "io"
    assert "sweep.yaml" in seen["folded"] and any(f.startswith("File operations") for f in seen["folded"])


def test_no_headline_compares_different_access_patterns(synthetic_report, open_in_chromium):
    run, _ = synthetic_report
    cells, _ = prepare(load_cells(run))
    patterns = set(cells.loc[cells["status"].isin(["ok", "extrapolated"]), "access_label"])
    seen = open_in_chromium(run / "report.html")
    assert len(seen["headlines"]) == len(patterns)
    for box in seen["headlines"]:
        mine = [p for p in patterns if box.lower().startswith(p)]
        assert len(mine) == 1, box
        others = [p for p in patterns if p != mine[0] and re.search(rf"\b{re.escape(p)}\b", box.lower())]
        assert not others, f"a headline about {mine[0]} names {others}: {box}"


def test_extrapolated_and_unstable_say_so_where_they_are_read(synthetic_report, open_in_chromium):
    run, _ = synthetic_report
    text = open_in_chromium(run / "report.html")["visible_text"]
    assert "extrapolated from 25% of the requests" in text          # beside the time, in the tables and the headline
    assert "Faster on the median but unstable, so not ranked" in text or "unstable" in text
    assert "Green: the fastest stable cell" in text and "tie with the fastest" in text


@pytest.mark.slow   # a real browser: make test-slow (CI); the page's content is checked without one in test_report_page
def test_self_contained_page_has_every_image_inside(make_run, open_in_chromium, tmp_path):
    run = make_run(tables=False)
    page = write_report(run, self_contained=True)
    moved = tmp_path / "mail" / "report.html"                  # attached to an email: no PNG beside it
    moved.parent.mkdir()
    moved.write_text(page.read_text())
    assert 'src="data:image/png;base64,' in moved.read_text()
    seen = open_in_chromium(moved)
    check(seen, 6)
