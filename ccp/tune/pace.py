"""Tune's answer time: a wall-clock deadline (``--within``) and every measuring phase planned against it.

The first round (the shortlist, the current layout, the rules of thumb, the structural extremes) is
what the prices are fitted to; it is planned to end with :data:`FOLLOW_SHARE` of the time left kept
for what follows (:class:`RoundPlan`): before each layout, its cells' budgets and those of the
layouts after it are capped to the time left (the work files' making and each cell's overhead
estimated from the layouts already measured), and a layout that does not fit even at
:data:`MIN_CELL_S` a cell is not measured (the round's first, the model's pick, always is). The
refit's layouts are planned the same way. The runoff and the cache and slot checks are held to the
time left (:func:`rounds_plan`, :func:`cell_cap`: fewer rounds, then each pass capped so that rounds
whose every pass runs to its budget still end in time, else skipped); the refit, the cache check and
the slot check each run only when their estimate (from the first round's own measured times,
:data:`ESTIMATE_SLACK` over) fits in what is left after it. Whatever was cut is said (console and
``tune.json``: ``trimmed``). On the league's image stack at load 5-10 the first round alone, unplanned,
ran past the 120 s deadline (187 s in all): a pass measured seconds ago is the best guess of the next one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

RUNOFF_WITHIN = 0.30       # layouts measured this close to the fastest are measured again, interleaved
RUNOFF_MAX = 3
ESTIMATE_SLACK = 1.5       # a phase's estimate: its passes as the first round measured them, this much over
CLOSE_S = 8.0              # kept for the final fit, the rows, tune.json and tune.html (seconds, a busy machine)
PASS_EXTRA_S = 0.25        # a pass's time outside its budget: the page-cache drop, the open and close, the request
                           # that crosses it (the league's single-cell runoff at load 13-15: 30 passes, 0.24 s each)


@dataclass
class Pace:
    """The deadline (``within`` seconds after ``start``; None: no deadline) and the phases it trimmed."""

    within: float | None
    echo: Callable = lambda *_: None
    start: float = field(default_factory=time.perf_counter)
    trimmed: list[str] = field(default_factory=list)
    clock: Callable[[], float] = time.perf_counter      # the wall clock (a test's fake one)

    def left(self) -> float:
        if self.within is None:
            return math.inf
        return self.within - (self.clock() - self.start)

    def trim(self, note: str) -> None:
        """Something cut to end in time: said now and kept (``trimmed``)."""
        self.trimmed.append(note)
        self.echo(f"  trimmed: {note}")

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
    """The estimate of ``rounds`` interleaved rounds of ``layouts`` (their measured runs): their passes,
    :data:`ESTIMATE_SLACK` over, and :data:`PASS_EXTRA_S` a pass (its cache drop, open and close)."""
    passes = sum(len(m.per_item) for m in layouts if m is not None)
    return rounds * (ESTIMATE_SLACK * sum(pass_seconds(m) for m in layouts) + PASS_EXTRA_S * passes)


def runoff_seconds(contenders, measured, rounds: int) -> float:
    """The runoff's estimate: its finalists (none when fewer than 2) in ``rounds`` rounds."""
    keys = finalists(contenders, measured)
    if len(keys) < 2:
        return 0.0
    by_key = {c.key: m for c, m in zip(contenders, measured)}
    return rounds_seconds([by_key[k] for k in keys], rounds)


def runoff_reserve(contenders, measured, rounds: int) -> float:
    """The time kept for the runoff while the refit is planned: its estimate, at least :data:`FOLLOW_MIN_S`
    (the refit may add finalists; at the league's ERA5, load 9-13, a refit planned to the estimate alone
    left the runoff 10 s: 3 rounds, its cells capped at 0.4 s, 0.1 s a pass)."""
    return max(FOLLOW_MIN_S, runoff_seconds(contenders, measured, rounds))



# ---- interleaved rounds held to the time left (the runoff, the cache and slot checks) -----------------------

MIN_ROUNDS = 3             # the runoff's rounds, at least, when short of time (fewer: it is skipped)
MIN_PASS_S = 0.05          # a pass's budget, at least (less: the rounds are not run)


def cell_cap(left_s: float, passes_per_round: int, rounds: int) -> float:
    """The largest cell budget (each pass gets ``1 / (rounds + 1)`` of it) with which ``rounds`` rounds of
    ``passes_per_round`` passes end within ``left_s`` even when every pass runs to its budget: a bound by
    construction, whatever the load."""
    per_pass = left_s / max(1, rounds) / max(1, passes_per_round) - PASS_EXTRA_S
    return max(per_pass, 0.0) * (rounds + 1)


def rounds_plan(left_s: float, pass_s: list[float], rounds: int, cell_s: float) -> tuple[int, float] | None:
    """(rounds, cell budget) for interleaved rounds of passes estimated at ``pass_s`` (seconds, whole; one
    per layout and pattern) within ``left_s``: fewer rounds first (down to :data:`MIN_ROUNDS`; whole passes
    decide), then each cell's budget capped (:func:`cell_cap`) so that even passes that all run to their
    budget end in time; None when a pass would get under :data:`MIN_PASS_S`."""
    if math.isinf(left_s):
        return rounds, cell_s

    def need(r: int) -> float:
        return r * sum(min(ESTIMATE_SLACK * p, cell_s / (r + 1)) + PASS_EXTRA_S for p in pass_s)

    r = rounds
    while r > MIN_ROUNDS and need(r) > left_s:
        r -= 2
    cell = min(cell_s, cell_cap(left_s, len(pass_s), r))
    if cell / (r + 1) < MIN_PASS_S:
        return None
    return r, cell


def item_passes_s(measured) -> list[float]:
    """Each pattern's pass of each measured layout, seconds (the estimate of its next pass)."""
    return [t if t is not None and math.isfinite(t) else 0.0 for m in measured if m is not None for t, _ in m.per_item]


# ---- a measured round held to an end time (the first round, the refit's layouts) ----------------------------

FOLLOW_SHARE = 0.2         # of the time left when the first round starts, kept for what follows it (runoff, checks)
FOLLOW_MIN_S = 10.0        # ... at least this (seconds)
MIN_CELL_S = 1.0           # a cell's budget, at least, when the round is short of time (a pass of 0.25 s: a prefix)
CAP_SLACK = 0.95           # a cap at least this share of a cell's planned budget leaves the plan
FILE_FIXED_S = 0.3         # a layout file's making, before one is measured: a file, per chunk (262,144 chunks of
FILE_CHUNK_S = 40e-6       # 64 B: 9.5 s at load 6), per byte unfiltered, per byte filtered (gzip:1, about 50 MB/s)
FILE_BYTE_S = 5e-9
FILE_BYTE_FILTERED_S = 20e-9
FILE_SCALES_FROM_S = 0.5   # files estimated at least this long scale the estimate; shorter ones, the fixed part
CELL_EXTRA_S = 0.5         # a cell's time over its budget, before one is measured: its process, the cache drop,
                           # the counted pass's logging, the request that crosses the budget


@dataclass(frozen=True)
class LayoutNeed:
    """What measuring one layout takes: its work file's making (estimated), its cells and their budget."""

    label: str
    file_s: float          # the work file's making, estimated (0: none to make)
    cells: int
    budget_s: float        # each cell's budget as planned
    file_work: float = 0.0  # the work file's chunks and bytes at the priors' prices (RoundPlan.file_work)


def round_cap(left_s: float, needs: list[LayoutNeed], extra_s: float) -> tuple[float, int]:
    """The largest common cap on the cells' budgets such that every layout of ``needs`` fits in ``left_s``
    (each cell at most its budget, capped, plus ``extra_s``), and how many of ``needs`` (a prefix of the
    list, which is in order of priority) that keeps: when even :data:`MIN_CELL_S` a cell does not fit,
    the last layouts are dropped. (inf, n): no cap needed. A cap below a budget shorter than
    :data:`MIN_CELL_S` leaves that budget alone."""
    def total(cap: float, k: int) -> float:
        return sum(n.file_s + n.cells * (min(n.budget_s, max(cap, MIN_CELL_S)) + extra_s) for n in needs[:k])

    for k in range(len(needs), 0, -1):
        if total(math.inf, k) <= left_s:
            return math.inf, k
        if total(MIN_CELL_S, k) <= left_s:
            lo, hi = MIN_CELL_S, max(n.budget_s for n in needs[:k])
            for _ in range(40):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if total(mid, k) <= left_s else (lo, mid)
            return lo, k
    return MIN_CELL_S, 0


@dataclass
class RoundPlan:
    """A measured round (``what``) planned to end by ``end`` (a :func:`time.perf_counter` time): before each
    layout, the cells' budgets of it and of the layouts after it are capped to what is left
    (:func:`round_cap`, with the work files' making and each cell's overhead estimated from the layouts
    already measured, the priors before one is), and a layout that does not fit even at
    :data:`MIN_CELL_S` a cell is not measured. The first layout of a round is always measured (at the
    least, its cells at :data:`MIN_CELL_S`): tune's answer is then a measured layout. What was cut is
    said (:meth:`close`: ``trimmed``)."""

    pace: Pace
    what: str
    end: float
    file_scale: float = 1.0          # measured work files' time over the priors' estimate (the load, the disk)
    file_fixed_s: float = FILE_FIXED_S
    extra_s: float = CELL_EXTRA_S
    capped: list = field(default_factory=list)       # (label, planned budget, budget given)
    skipped: list = field(default_factory=list)      # (label, estimate, left)
    cut_cells: int = 0                               # cells a cap cut to a prefix
    extras: list = field(default_factory=list)       # each measured layout's time over its cells' budgets, a cell
    started: int = 0

    @classmethod
    def first_round(cls, pace: Pace, what: str = "the first round") -> RoundPlan | None:
        """The first round's plan: it ends with :data:`FOLLOW_SHARE` of the time left (at least
        :data:`FOLLOW_MIN_S`) and :data:`CLOSE_S` kept. None without a deadline."""
        if pace.within is None:
            return None
        left = pace.left() - CLOSE_S
        return cls(pace, what, pace.clock() + left - max(FOLLOW_MIN_S, FOLLOW_SHARE * left))

    @classmethod
    def until(cls, pace: Pace, what: str, kept_s: float) -> RoundPlan | None:
        """A round that ends with ``kept_s`` and :data:`CLOSE_S` left before the deadline."""
        if pace.within is None:
            return None
        return cls(pace, what, pace.clock() + pace.left() - CLOSE_S - kept_s)

    def file_estimate(self, nchunks: int, nbytes: int, filtered: bool) -> float:
        return self.file_fixed_s + self.file_scale * self.file_work(nchunks, nbytes, filtered)

    @staticmethod
    def file_work(nchunks: int, nbytes: int, filtered: bool) -> float:
        return nchunks * FILE_CHUNK_S + nbytes * (FILE_BYTE_FILTERED_S if filtered else FILE_BYTE_S)

    def budget(self, needs: list[LayoutNeed]) -> float | None:
        """The budget of the first of ``needs`` (the layout about to be measured; the rest follow it), or
        None: it does not fit, and it is not measured (said)."""
        left = self.end - self.pace.clock()
        cap, kept = round_cap(left, needs, self.extra_s)
        first = needs[0]
        if kept == 0 and self.started > 0:
            need = first.file_s + first.cells * (min(first.budget_s, MIN_CELL_S) + self.extra_s)
            self.skipped.append((first.label, need, max(left, 0.0)))
            self.pace.echo(f"  {self.what}: {first.label} not measured: about {need:.0f} s, {max(left, 0.0):.0f} s left")
            return None
        self.started += 1
        given = min(first.budget_s, max(cap, MIN_CELL_S))
        if given >= CAP_SLACK * first.budget_s:      # a cap within a few percent of the plan cuts nothing worth saying
            given = first.budget_s
        if given < first.budget_s:
            self.capped.append((first.label, first.budget_s, given))
            self.pace.echo(f"  {self.what}: {first.label}'s cells capped at {given:.1f} s (planned {first.budget_s:.1f} s): "
                           f"{max(left, 0.0):.0f} s left for {len(needs)} layout(s)")
        return given

    def learn(self, file_s: float, file_work: float, wall_s: float, cells: list[tuple[float, float]]) -> None:
        """What a layout took: its work file (``file_s``; ``file_work``: the priors' estimate of its chunks and
        bytes, :meth:`file_work`; 0: none was made), its whole measurement (``wall_s``) and each cell's (budget,
        elapsed). A file of many chunks or bytes scales the estimate (the load, the disk); a small one, whose
        time is the file's own, the fixed part."""
        if file_work >= FILE_SCALES_FROM_S and file_s > 0:
            self.file_scale = max(self.file_scale, (file_s - self.file_fixed_s) / file_work)
        elif file_work > 0 and file_s > 0:
            self.file_fixed_s = max(self.file_fixed_s, file_s - self.file_scale * file_work)
        if cells:
            outside = max(0.0, wall_s - file_s - sum(e for _, e in cells)) / len(cells)
            over = max(max(0.0, e - b) for b, e in cells)
            self.extras.append(outside + over)
            # the median layout's: one layout whose single request outlasts its pass's budget (a tile read from
            # 16,384 chunks of 64 B) overruns by seconds a cell, the others do not; the time left absorbs it
            self.extra_s = max(CELL_EXTRA_S, statistics.median(self.extras))

    def close(self) -> None:
        """What the round cut, into the pace's ``trimmed`` (and on the console): layouts not measured, and
        cells whose capped budget cut them to a prefix. A cap no cell reached changed no measurement and is
        only echoed."""
        if self.skipped:
            names = ", ".join(label for label, _, _ in self.skipped)
            self.pace.trim(f"{self.what}: {len(self.skipped)} layout(s) not measured ({names}): "
                           f"the round planned to end {self._before()}")
        if self.capped and self.cut_cells:
            lo = min(g for _, _, g in self.capped)
            hi = max(p for _, p, _ in self.capped)
            self.pace.trim(f"{self.what}: the cells of {len(self.capped)} layout(s) capped at {lo:.1f} s or more "
                           f"(planned up to {hi:.1f} s), {self.cut_cells} of them measured on a prefix "
                           f"(completed by the fitted model: extrapolated_how); the round planned to end {self._before()}")

    def _before(self) -> str:
        within = self.pace.within or 0.0
        return f"{max(self.end - self.pace.start, 0.0):.0f} s into --within {within:.0f} s"
