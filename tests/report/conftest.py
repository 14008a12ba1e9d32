"""Fixtures of the report tests; the synthetic run folder lives in report_synthetic.py, a name no other
test folder uses (every folder has a conftest.py, so `from conftest import ...` could find another's)."""

from report_synthetic import make_run, open_in_chromium, synthetic_report, undrawn_figures  # noqa: F401  (fixtures)
