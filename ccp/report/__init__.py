"""Reports: an HTML page with paper-style tables and PNG plots for a run; comparisons of two runs.

- ``write_report(run_dir, self_contained=False)``: ``report.html`` and its PNGs in the run folder (inline CSS, relative
  image paths or, self-contained, embedded ones; no scripts, no network: it opens from disk in any browser).
- ``write_compare(run_a, run_b, out_html=None)``: the cells both runs finished, side by side with ratios B / A;
  returns the terminal text, and writes an HTML page (and its PNG beside it) when ``out_html`` is given.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_compare", "write_report"]


def write_report(run_dir: Path, self_contained: bool = False) -> Path:
    """Write ``report.html`` and its PNGs into the run folder; returns the page's path. With ``self_contained`` the
    page embeds its images (base64), one file to attach to an issue or an email."""
    from ccp.report.html import build

    return build(Path(run_dir), self_contained)


def write_compare(run_a: Path, run_b: Path, out_html: Path | None = None, fail_above: float | None = None,
                  threshold: float | None = None, remeasure: int = 0):
    """The cells two runs share, side by side with ratios; returns the terminal text (a str subclass whose
    ``regressions`` lists the cells significantly slower in B by more than ``fail_above``)."""
    from ccp.report.compare import compare

    return compare(Path(run_a), Path(run_b), out_html, fail_above=fail_above, threshold=threshold, remeasure=remeasure)
