"""Reports: an HTML page with paper-style tables and PNG plots for a run; comparisons of two runs."""

from __future__ import annotations

from pathlib import Path

from ccp.report.tables import parse_tables  # noqa: F401  (sweep validation uses it)


def write_report(run_dir: Path) -> Path:
    """Write ``report.html`` and its PNGs into the run folder; returns the page's path."""
    from ccp.report.html import build

    return build(Path(run_dir))


def write_compare(run_a: Path, run_b: Path, out_html: Path | None = None) -> str:
    """The cells two runs share, side by side with ratios; returns the terminal text."""
    from ccp.report.compare import compare

    return compare(Path(run_a), Path(run_b), out_html)
