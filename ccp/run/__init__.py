"""Running a sweep: the checks before it, one job per cell, the executors (inline, forked, Dask) that
measure the cells, the ETA, and `ccp plan` as the dry run.

``run_sweep`` and ``RunSummary`` are imported when first used: `ccp plan` (checks, predictions) then never
loads the executors, the measurement room or pandas."""

from ccp.run.checks import prepare, request_count, scale_warnings

_EXPORTS = {"RunSummary": "ccp.run.sweep", "run_sweep": "ccp.run.sweep"}

__all__ = ["RunSummary", "prepare", "request_count", "run_sweep", "scale_warnings"]


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ccp.run' has no attribute {name!r}")
