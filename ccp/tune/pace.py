"""Tune's answer time: a wall-clock deadline (``--within``) and the phases after the first round fitted to it.

The first round (the shortlist, the current layout, the rules of thumb, the structural extremes)
always runs: it is what the prices are fitted to. What follows is planned against the time left:
the runoff, which decides among the close ones, is reserved first; the refit's new layouts, the
cache check and the slot check each run only when their estimate (from the first round's own
measured times, :data:`ESTIMATE_SLACK` over) fits in what is left after it, and a phase skipped is
said (console and ``tune.json``: ``trimmed``). On the league's ERA5 workload at load 7-9 the phases
ran one after another to 127 s; a pass measured seconds ago is the best guess of the next one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

RUNOFF_WITHIN = 0.30       # layouts measured this close to the fastest are measured again, interleaved
RUNOFF_MAX = 3
ESTIMATE_SLACK = 1.5       # a phase's estimate: its passes as the first round measured them, this much over
CLOSE_S = 8.0              # kept for the final fit, the rows, tune.json and tune.html (seconds, a busy machine)


@dataclass
class Pace:
    """The deadline (``within`` seconds after ``start``; None: no deadline) and the phases it trimmed."""

    within: float | None
    echo: Callable = lambda *_: None
    start: float = field(default_factory=time.perf_counter)
    trimmed: list[str] = field(default_factory=list)

    def left(self) -> float:
        if self.within is None:
            return math.inf
        return self.within - (time.perf_counter() - self.start)

    def fits(self, what: str, need_s: float, reserved_s: float = 0.0) -> bool:
        """Whether ``what`` (about ``need_s`` seconds) fits before the deadline with ``reserved_s`` kept for
        what must follow it (and :data:`CLOSE_S` for writing the answer); a phase that does not fit is
        recorded as trimmed."""
        left = self.left() - reserved_s - CLOSE_S
        if need_s <= left:
            return True
        self.trimmed.append(f"{what} skipped: about {need_s:.0f} s, {max(self.left(), 0.0):.0f} s left of --within "
                            f"{self.within:.0f} s" + (f" ({reserved_s:.0f} s of them kept for the runoff)" if reserved_s else ""))
        self.echo(f"  trimmed: {self.trimmed[-1]}")
        return False


def finalists(contenders, measured) -> dict:
    """{key: contender} of the layouts measured within :data:`RUNOFF_WITHIN` of the fastest, at most
    :data:`RUNOFF_MAX`, fastest first (each layout and cache once)."""
    timed = sorted((m.measured_s, i) for i, m in enumerate(measured) if m is not None and m.measured_s is not None)
    out: dict = {}
    for t, i in timed:
        c = contenders[i]
        if t <= timed[0][0] * (1 + RUNOFF_WITHIN) and c.key not in out and len(out) < RUNOFF_MAX:
            out[c.key] = c
    return out


def pass_seconds(m) -> float:
    """One pass of every pattern of a measured layout (unweighted: each pattern is measured once a round)."""
    if m is None:
        return 0.0
    return sum(t for t, _ in m.per_item if t is not None and math.isfinite(t))


def rounds_seconds(layouts: list, rounds: int) -> float:
    """The estimate of ``rounds`` interleaved rounds of ``layouts`` (their measured runs)."""
    return ESTIMATE_SLACK * rounds * sum(pass_seconds(m) for m in layouts)


def runoff_seconds(contenders, measured, rounds: int) -> float:
    """The runoff's estimate: its finalists (none when fewer than 2) in ``rounds`` rounds."""
    keys = finalists(contenders, measured)
    if len(keys) < 2:
        return 0.0
    by_key = {c.key: m for c, m in zip(contenders, measured)}
    return rounds_seconds([by_key[k] for k in keys], rounds)
