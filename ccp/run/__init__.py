"""Running a sweep: the checks before it, one job per cell, the executors (inline, forked, Dask) that
measure the cells, the ETA, and `ccp plan` as the dry run."""

from ccp.run.checks import prepare, request_count, scale_warnings
from ccp.run.sweep import RunSummary, run_sweep

__all__ = ["RunSummary", "prepare", "request_count", "run_sweep", "scale_warnings"]
