"""Pages opened in a real browser (headless Chromium): every image loads, nothing fails, nothing leaves the disk."""

import pytest

from ccp.report import write_compare


def check(seen: dict, at_least: int) -> None:
    assert seen["broken"] == [], f"images that did not load: {seen['broken']}"
    assert seen["errors"] == [], f"errors in the page: {seen['errors']}"
    assert seen["remote"] == [], f"loads from outside the run folder: {seen['remote']}"
    assert seen["images"] >= at_least and all(w > 0 for w in seen["widths"])


def test_synthetic_report(synthetic_report, open_in_chromium):
    run, _ = synthetic_report
    check(open_in_chromium(run / "report.html"), 8)


@pytest.mark.parametrize("quick", [True], ids=["quick-run"])
def test_quick_run_report(make_run, open_in_chromium, quick):
    from ccp.report import write_report

    check(open_in_chromium(write_report(make_run(quick=quick, tables=False))), 5)


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
