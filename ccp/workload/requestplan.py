"""The request plan type: the hyperslabs a cell reads or writes, in order.

Its own module because both planners build it: :mod:`ccp.workload.requests` (tilings, random blocks,
and :func:`~ccp.workload.requests.plan_for`, which dispatches to the replay) and
:mod:`ccp.workload.replay` (a traced sequence); neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RequestPlan:
    """``starts[i]`` and ``counts[i]`` are the i-th request's hyperslab (edge blocks clipped)."""

    starts: np.ndarray   # (n, rank) int64
    counts: np.ndarray   # (n, rank) int64
    reopen_before: np.ndarray | None = None   # replays: requests before which the program lost its cache

    def __len__(self) -> int:
        return len(self.starts)
