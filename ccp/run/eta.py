"""The progress line of `ccp run`: a bar and an ETA from the model's prediction of each cell, corrected by what
each finished pass measured, redrawn every few seconds by a ticker thread.

Averaging the cells already done misleads when one cell dominates (a 13-minute cell after ten 0.3 s ones
showed "ETA 3.72 s"); the compiled model predicts every cell's cost before it starts. The model's prices are
not this machine's at this moment, so every finished pass corrects them: the sweep's ratio of measured to
predicted seconds scales what is left, and the running cell's own finished passes (or, inside a long pass,
its requests done, at a pace that weighs its last RECENT_S seconds: a machine's pace changes within a run)
extrapolate that cell; its counted pass (under HDF5's log driver) is priced at what the finished cells' counted
passes cost against their timed ones. What the model does not price (making the work files, forking a
worker, committing the row) is the median of what it cost the cells so far. Issue 22: on configs/cris.yaml
the line said 42 min with 26.5 min left, froze for minutes between progress reports (one per 1,024
requests), and printed "cell 0 ns left" as a cell started; :class:`Ticker` redraws the line without waiting
for a report, and a cell past its estimate says so instead of "0 ns". Until enough of the model's prices is measured
to correct them, the line says "ETA estimating" rather than a number the first cells cannot back (see
:meth:`EtaClock.settled`).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ccp.units import format_count, format_seconds

EVENTS_ENV = "CCP_ETA_EVENTS"   # a file to append the clock's events to (benchmarks/eta_accuracy.py --events)
ESTIMATING = "ETA estimating"   # the line until enough of the model's prices is measured to correct them
TICK_S = 2.0          # the line is redrawn at least this often while a cell runs
PRICED_PASS_S = 0.2   # a pass the model prices under this is mostly fixed cost (open, close, cache drop)
RUNNING_PASS_MIN_S = 1.0   # the running pass corrects the model once this much of it is measured (its first
#                            requests alone are often the cold ones)
ENOUGH_PRICED_S = 0.5      # the line gives a number once passes the model prices at this many seconds are measured
ENOUGH_SHARE = 0.02        # ... or this share of the sweep's priced work, if less
ESTIMATING_MAX_S = 10.0    # ... or once a priced cell has measured this long without a correction: the model's own
RECENT_S = 30.0            # the running pass's pace: the mean of its last this many seconds' and its whole
COUNTED_STAGE = "counted pass"   # the worker's stage for the pass under HDF5's log driver (ccp.measurement)
TIMED_STAGE = "timed pass"
COUNTED_FROM_S = 5.0       # a finished cell's counted pass prices those to come once its timed passes took this long
#                            each: under it the pass's fixed tail (closing and reading the log, writing the cell's
#                            parts) is most of it (in the saved cris runs every cell but the long one had timed passes
#                            of 0.0-0.6 s, one cold 1.9 s, and a counted pass of 0.2-2.0 s)


def progress_bar(fraction: float, width: int = 20) -> str:
    done = max(0, min(width, int(round(fraction * width))))
    return "[" + "#" * done + "." * (width - done) + "]"


def predicted_seconds(cells, source, calibration, passes: int) -> list:
    """Each cell's predicted measuring time (all its passes), from the model without its work file; None if unknown."""
    from ccp.predict import predict_cell

    out = []
    for cell in cells:
        try:
            t = predict_cell(cell, source, calibration)["predicted_time_s"] if calibration is not None else None
        except Exception:  # an estimate for the progress line only
            t = None
        out.append(t * passes if t is not None and t == t else None)
    return out


def events_path() -> str | None:
    """Where to append the ETA's events: ``$CCP_ETA_EVENTS`` (set by benchmarks/eta_accuracy.py --events), else
    nowhere."""
    return os.environ.get(EVENTS_ENV) or None


def left_text(seconds: float) -> str:
    """A time left, never "0 ns": under a second is "<1 s"."""
    return "<1 s" if seconds < 1 else format_seconds(seconds)


@dataclass(frozen=True)
class Estimate:
    cell_left: float | None       # seconds; None: unknown, or the cell is past its estimate (``past``)
    sweep_left: float | None      # the running cell and every later one
    past: bool                    # the running cell has run longer than its estimate
    in_cell: float                # seconds the running cell has measured so far
    unpredicted: int              # later cells the model could not price (counted at the median cell's time)
    ratio: float                  # measured / predicted over the finished passes (1 before any)
    done_s: float                 # wall seconds since the sweep's first cell started
    settled: bool = True          # enough is measured for a number (else the line says ESTIMATING)


def _known(v) -> bool:
    return v is not None and v == v and v >= 0


class EtaClock:
    """The ETA: the model's prediction of each cell, corrected by what the finished passes measured.

    Calls, in order per cell: :meth:`begin_cell` (before its work file is made), :meth:`start_cell` (its own
    prediction; measuring starts), :meth:`progress` (the worker's reports; request 0 marks a pass's start),
    :meth:`cell_done` (with the seconds the worker measured). ``clock`` is injectable for tests. ``events``: a file
    to which every event is appended as a JSON line (seconds since the start, method, arguments), the predictions
    first, so that a run's ETA can be replayed and re-scored without rerunning it (benchmarks/eta_accuracy.py).
    """

    def __init__(self, predicted: list, passes: int = 1, clock: Callable[[], float] = time.monotonic,
                 events: str | None = None):
        self.predicted = list(predicted)
        self.passes = max(int(passes), 1)
        # the passes each entry of ``predicted`` was priced for; start_cell may change the running cell's own count
        self.predicted_passes = self.passes
        self.clock = clock
        self.started = clock()
        self.events = events
        self._record("__init__", [[p if _known(p) else None for p in self.predicted], self.passes])
        self.priced_total_s = self._priced_sum(self.predicted)
        self.measured_s = 0.0       # finished passes: measured seconds ...
        self.predicted_s = 0.0      # ... and what the model predicted for them
        self.priced_measured_s = 0.0    # the same, over passes the model priced at PRICED_PASS_S or more
        self.priced_predicted_s = 0.0
        self.cell_times: list[float] = []     # measured seconds of each finished cell
        self.overheads: list[float] = []      # wall seconds of each finished cell beyond its measurement
        self.walls: list[tuple[float, float | None]] = []   # (wall seconds, predicted seconds) of each finished cell
        self.k = -1
        self.cell_started = self.started      # wall, before the work file
        self.measure_started: float | None = None
        self.own: float | None = None         # the running cell's predicted seconds, all passes
        self.pass_starts: list[float] = []
        self.in_pass = (0, 0)                 # (requests done, requests) of the running pass, as last reported
        self.reported = self.started          # when
        self.pass_reports: list[tuple[float, int]] = []   # (when, requests done) of the running pass's last RECENT_S
        self.pass_stages: list[str] = []      # the stage each of the running cell's passes reported ("timed pass", ...)
        # finished cells whose timed passes took COUNTED_FROM_S or more: their counted passes' seconds, and their last
        # timed passes' (a cell's passes to come are priced as its latest finished one: the counted pass against it)
        self.counted_s = 0.0
        self.counted_timed_s = 0.0
        self.counted_last = False             # the running cell ends with a counted pass
        self.last_cell_counted = False        # the latest finished cell did

    # ------------------------------------------------------------------------------------------- priced work
    def _priced_sum(self, predicted: list) -> float:
        """The seconds of the cells in ``predicted`` the model prices at PRICED_PASS_S or more a pass."""
        return sum(p for p in predicted if _known(p) and p / self.predicted_passes >= PRICED_PASS_S)

    @property
    def _own_priced(self) -> bool:
        """Whether the running cell's passes are priced at PRICED_PASS_S or more (they then correct the model)."""
        return self.own is not None and self.own / self.passes >= PRICED_PASS_S

    # ------------------------------------------------------------------------------------------- events
    def _record(self, call: str, args: list) -> None:
        if self.events:
            with open(self.events, "a") as fh:
                fh.write(json.dumps({"t": round(self.clock() - self.started, 4), "call": call, "args": args}) + "\n")

    def begin_cell(self, k: int) -> None:
        self._record("begin_cell", [k])
        self.k, self.cell_started = k, self.clock()
        self.measure_started, self.pass_starts, self.in_pass, self.pass_reports = None, [], (0, 0), []
        self.pass_stages = []
        self.counted_last = self.last_cell_counted
        p = self.predicted[k] if k < len(self.predicted) else None
        self.own = p if _known(p) else None

    def start_cell(self, predicted_time_s=None, passes: int | None = None, counted: bool | None = None) -> None:
        """The running cell's own prediction (with its work file's chunk sizes) replaces the estimate. ``passes``
        counts every pass it reports (warm-up, timed, counted); ``counted``: its last pass is a counted pass (None: as
        the latest finished cell's was -- events saved before the argument existed)."""
        args = [predicted_time_s if _known(predicted_time_s) else None, passes]
        self._record("start_cell", args if counted is None else [*args, bool(counted)])
        if passes is not None:
            self.passes = max(int(passes), 1)
        if self.k < 0:
            self.begin_cell(0)
        if counted is not None:
            self.counted_last = bool(counted)
        self.measure_started = self.clock()
        if _known(predicted_time_s):
            self.own = float(predicted_time_s) * self.passes

    def progress(self, stage: str, i: int, n: int) -> None:
        """A worker's report: request ``i`` of ``n`` in the running pass; ``i == 0`` is a new pass."""
        self._record("progress", [stage, int(i), int(n)])
        now = self.clock()
        if self.measure_started is None:
            self.measure_started = now
        if i == 0:
            if self.pass_starts and self.own is not None:     # the pass before this one finished
                self._count_pass(now - self.pass_starts[-1], self.own / self.passes)
            self.pass_starts.append(now)
            self.pass_stages.append(stage)
            self.pass_reports = []
        self.in_pass = (int(i), int(n))
        self.reported = now
        reports = self.pass_reports
        reports.append((now, int(i)))
        while len(reports) > 2 and reports[1][0] <= now - RECENT_S:   # one report at least RECENT_S old is kept
            reports.pop(0)

    def cell_done(self, k: int, elapsed_s=None) -> None:
        self._record("cell_done", [k, float(elapsed_s) if _known(elapsed_s) else None])
        now = self.clock()
        measured = float(elapsed_s) if _known(elapsed_s) else now - (self.measure_started or self.cell_started)
        if self.own is not None:
            if self.pass_starts:          # the passes progress() has not counted: the last (or the last few)
                counted = len(self.pass_starts) - 1
                self._count_pass(now - self.pass_starts[-1], max(self.own * (1 - counted / self.passes), 0.0))
            else:                         # no report from the worker: the whole cell at once
                self._count_pass(measured, self.own)
        self._count_counted_pass(now)
        self.cell_times.append(measured)
        self.overheads.append(max(now - self.cell_started - measured, 0.0))
        self.walls.append((now - self.cell_started, self.own))
        self.k, self.measure_started, self.own, self.pass_starts, self.in_pass = k, None, None, [], (0, 0)
        self.pass_reports, self.pass_stages = [], []

    def _count_counted_pass(self, now: float) -> None:
        """At a cell's end: its counted pass (to the cell's end: closing the log and reading it are its cost too)
        against its last timed pass, if its timed passes took COUNTED_FROM_S or more on average. Against the last, not
        their mean: the running cell's passes left are priced as its latest finished one (on the saved cris runs, the
        mean moved the last seconds' worst ratio of a run at load 3.4 from 2.11x to 2.13x; the last, none for the worse)."""
        stages, starts = self.pass_stages, self.pass_starts
        self.last_cell_counted = bool(stages) and stages[-1] == COUNTED_STAGE
        if not self.last_cell_counted:
            return
        ends = [*starts[1:], now]
        timed = [end - start for stage, start, end in zip(stages, starts, ends) if stage == TIMED_STAGE]
        if timed and statistics.fmean(timed) >= COUNTED_FROM_S:
            self.counted_s += now - starts[-1]
            self.counted_timed_s += timed[-1]

    @property
    def counted_ratio(self) -> float:
        """A counted pass's seconds over a timed pass's of the same cell, over the finished cells whose timed passes
        took COUNTED_FROM_S or more, weighted by their time; 1 (a timed pass's price) before any. Issue 22: the long
        cell of configs/cris.yaml x0.8 took 84 s for its counted pass against 48 s for its last timed pass in a run whose
        load changed, priced as a timed pass; in two runs at a steadier load the same pass took 1.00x and 1.04x its timed
        ones (docs/eta.md), so the ratio is measured, never assumed."""
        if self.counted_timed_s <= 0:
            return 1.0
        return min(max(self.counted_s / self.counted_timed_s, 0.5), 5.0)

    def _count_pass(self, measured: float, predicted: float) -> None:
        self.measured_s += measured
        self.predicted_s += predicted
        if predicted >= PRICED_PASS_S:
            self.priced_measured_s += measured
            self.priced_predicted_s += predicted

    # ------------------------------------------------------------------------------------------- the estimate
    def _running_pass(self) -> tuple[float, float] | None:
        """(measured, predicted) seconds of the running pass's requests done by the last report; None before a second
        of it is measured (issue 22: the quickstart's first pass ran 3.7x the model's price for 20 s before any pass
        ended to say so, and the ETA said 27 s with 110 s left)."""
        i, n = self.in_pass
        if not self.pass_starts or self.own is None or not n or i < 1:
            return None
        measured = self.reported - self.pass_starts[-1]
        return (measured, self.own / self.passes * i / n) if measured >= RUNNING_PASS_MIN_S else None

    @property
    def corrected(self) -> bool:
        """Whether any measurement corrects the model yet."""
        return self.predicted_s > 0 or self._running_pass() is not None

    def _priced_measured(self) -> float:
        """The model's seconds for the priced passes measured so far (the running one's requests done included)."""
        running = self._running_pass()
        return self.priced_predicted_s + (running[1] if running is not None and self._own_priced else 0.0)

    def settled(self, now: float, k: int) -> bool:
        """Whether enough is measured for the line to give a number: in a sweep the model prices no pass of at
        PRICED_PASS_S, a finished cell; else passes the model prices at ENOUGH_PRICED_S, or at
        ENOUGH_SHARE of the sweep's priced work (if less) -- or there is no priced work left to correct, or a priced
        cell has measured ESTIMATING_MAX_S without a correction (then the model's prices speak, said so). Issue 22:
        configs/cris.yaml x0.71 at load 12-17 said "sweep 52 min left" with 21 min left while four cells priced at
        milliseconds were all that was measured: their passes measure a file's open, close and cache drop, not the
        model's error."""
        if self.priced_total_s <= 0:
            # no pass the model prices at PRICED_PASS_S: the cells' fixed costs (work file, upload, fork, open) are the
            # sweep's time, known once a cell has finished (an S3 sweep said "sweep 1.3 s left (model ETA)" while its
            # first work file was made, with 28.6 s left: audit22 F6)
            return bool(self.cell_times)
        measured = self._priced_measured()
        if measured >= min(ENOUGH_PRICED_S, ENOUGH_SHARE * self.priced_total_s):
            return True
        own = self.own if self.own is not None and self._own_priced else 0.0
        later = self._priced_sum(self.predicted[k + 1:])
        if own + later <= 0:
            return True
        return own > 0 and self.measure_started is not None and now - self.measure_started >= ESTIMATING_MAX_S

    def _recent_pace(self) -> tuple[float, int] | None:
        """(seconds, requests done in them) of the running pass over its last RECENT_S seconds of reports (all of it,
        if shorter); None before two reports apart."""
        reports = self.pass_reports
        if len(reports) < 2:
            return None
        (t0, i0), (t1, i1) = reports[0], reports[-1]
        return (t1 - t0, i1 - i0) if t1 > t0 and i1 > i0 else None

    @property
    def ratio(self) -> float:
        # passes the model prices at milliseconds measure their open, close and cache drop, not the model's error:
        # configs/cris.yaml x0.71's four small cells said "model x 50" and 1 h 40 min with 17 min left. Once a pass the
        # model priced at PRICED_PASS_S or more is measured (or running), only those correct the model; the small
        # cells' fixed cost is counted per cell (_fixed_per_cell). The whole run's passes, not the recent ones: weighting
        # them by how recent they are (a weight halving every 60-300 s) moved two replayed x0.8 cris runs' lines with
        # a minute left within 1.5x by under 1% and let a few cells' own model error swing the ratio (the 40-cell sweep
        # of tests/run/test_eta.py went from 1.45x to 1.51-1.58x); a changing pace is followed in the running cell.
        running = self._running_pass()
        running_priced = running is not None and self._own_priced
        if self.priced_predicted_s > 0 or running_priced:
            measured, predicted = self.priced_measured_s, self.priced_predicted_s
            running = running if running_priced else None
        else:
            measured, predicted = self.measured_s, self.predicted_s
        if running is not None:
            measured, predicted = measured + running[0], predicted + running[1]
        return min(max(measured / predicted, 0.02), 50.0) if predicted > 0 else 1.0

    def _fixed_per_cell(self, ratio: float) -> float:
        """What a cell costs beyond its corrected prediction: making its work file, forking, opening and closing the
        file each pass, reading the counted pass's log, committing the row -- the median over the finished cells of
        their wall time less the model's price at this ratio (issue 22: seven 2-request cells took 1.5 s each while
        the model priced them at milliseconds, so the last 11 s of a run read "sweep 1.8 s left")."""
        extra = [max(wall - own * ratio, 0.0) for wall, own in self.walls if own is not None]
        if not extra and self.overheads:
            return statistics.median(self.overheads)
        if not extra:   # no cell finished yet: what the running one cost before its first pass (work file, fork, open)
            return self.pass_starts[0] - self.cell_started if self.pass_starts else 0.0
        return statistics.median(extra) if len(extra) >= 3 else min(extra)   # one cell's own model error is no rule

    def _pass_units(self) -> float:
        """The running cell's passes in timed passes: its counted pass counts as ``counted_ratio`` of one."""
        return self.passes + (self.counted_ratio - 1 if self.counted_last else 0.0)

    def _per_pass_guess(self, ratio: float) -> float | None:
        """A timed pass of the running cell before any of it is measured: the model's (corrected), else the median
        cell's -- a whole cell's share that its counted pass leaves to one timed pass (the sweep's ratio already holds
        what the finished counted passes cost beyond the model's price)."""
        if self.own is not None:
            return self.own * ratio / self._pass_units()
        return statistics.median(self.cell_times) / self._pass_units() if self.cell_times else None

    def _cell_left(self, now: float, ratio: float) -> tuple[float | None, float, bool]:
        """(seconds left in the running cell, None if unknown; seconds it has measured; past its estimate)."""
        begun = self.measure_started if self.measure_started is not None else self.cell_started
        in_cell = max(now - begun, 0.0)
        starts = self.pass_starts
        if not starts:                                        # making its work file, or no report yet
            guess = self._per_pass_guess(ratio)
            if guess is None:
                return None, in_cell, False
            whole = guess * self._pass_units()
            if self.measure_started is None:                  # not measuring yet: all of it is left
                return whole, 0.0, False
            left = whole - in_cell
            return (left, in_cell, False) if left > 0 else (None, in_cell, True)
        m = len(starts) - 1                                   # passes finished in this cell
        in_pass = now - starts[-1]
        i, n = self.in_pass
        # the latest finished pass, not their mean: a machine whose load grows (configs/cris.yaml x0.71 as five other
        # jobs started: passes of 40, 56, 88 and 81 s) is better told by its latest
        last_pass = starts[-1] - starts[-2] if m else None
        guess = last_pass if last_pass is not None else self._per_pass_guess(ratio)
        in_counted = bool(self.pass_stages) and self.pass_stages[-1] == COUNTED_STAGE
        # the counted pass to come, at what this run's finished counted passes cost against their timed ones
        counted_ahead = self.counted_last and not in_counted and self.passes - m - 1 >= 1
        this: float | None = guess * self.counted_ratio if guess is not None and in_counted else guess
        per_pass = guess
        pace = self._recent_pace()
        measured = self.reported - starts[-1]
        if n and i >= 1 and measured >= RUNNING_PASS_MIN_S and pace is not None:
            # inside a long pass, once a second of it is measured, its requests done extrapolate it (before, its first
            # 16 requests, the cold ones, said "194 s left" on a 3 s pass) at the mean of two paces: its last RECENT_S
            # seconds' follows a machine whose load changed within the pass (audit22 A2: the whole pass's mean alone
            # lagged a load that rose 1.4 -> 8.2), its whole one keeps a burst of a few seconds from swinging the line
            # (the recent pace alone, over 20 s, said 0.37x and then 1.9x of the time left when other jobs paused for
            # 20 s and came back). The later passes are priced as the latest finished one, moving as far as the pass
            # has gone to a pace between that mean and the whole pass's: a dip in the last seconds of a pass is not
            # theirs (an x0.71 run at load 10, replayed: at worst 1.55x with the mean for them too, 1.47x with this)
            span, requests = pace
            whole = measured / i                                   # seconds a request
            at_pace = (span / requests + whole) / 2
            this = max(measured + (n - i) * at_pace, in_pass)
            later_pace = (at_pace + whole) / 2
            per_pass = n * later_pace if guess is None else guess + (n * later_pace - guess) * min(i / n, 1.0)
        if this is None or per_pass is None:
            return None, in_cell, False
        later = per_pass * (max(self.passes - m - 1, 0) + (self.counted_ratio - 1 if counted_ahead else 0.0))
        if this <= in_pass and later <= 0:
            return None, in_cell, True
        return max(this - in_pass, 0.0) + later, in_cell, False

    def estimate(self, k: int | None = None) -> Estimate:
        now = self.clock()
        k = self.k if k is None else k
        ratio = self.ratio
        cell_left, in_cell, past = self._cell_left(now, ratio)
        rest = self.predicted[k + 1:]
        unknown = sum(not _known(p) for p in rest)
        typical = statistics.median(self.cell_times) if self.cell_times else None
        overhead = self._fixed_per_cell(ratio)
        sweep_left = None
        # the running cell's own fixed cost while it is not measuring yet (its work file, an S3 upload): an S3 sweep's
        # line said 8-13 s left with 17-28 s left, counting it only for the cells after it (audit22 F6)
        preparing = max(overhead - (now - self.cell_started), 0.0) if self.measure_started is None else 0.0
        if cell_left is not None or past:
            sweep_left = ((cell_left or 0.0) + preparing + sum(p for p in rest if _known(p)) * ratio
                          + overhead * len(rest))
            if unknown:
                sweep_left = sweep_left + unknown * typical if typical is not None else None
        return Estimate(cell_left, sweep_left, past, in_cell, unknown, ratio, now - self.started, self.settled(now, k))

    def describe(self, k: int | None = None) -> str:
        e = self.estimate(k)
        if not e.settled:
            return f" | {ESTIMATING}"
        if e.cell_left is None and not e.past:
            return ""
        cell = (f"cell past its estimate ({format_seconds(e.in_cell)} so far)" if e.past
                else f"cell {left_text(e.cell_left or 0.0)} left")
        sweep = f", sweep {left_text(e.sweep_left)} left" if e.sweep_left is not None else ""
        unpriced = f" ({e.unpredicted} unpredicted cells at the median cell's time)" if e.unpredicted and sweep else ""
        how = f"model x {e.ratio:.2g} measured" if self.corrected else "model ETA"
        return f" | {cell}{sweep}{unpriced} ({how})"

    def fraction_done(self, k: int | None = None) -> float:
        """The sweep's share done by the estimate (for the bar): wall so far / (so far + left); the cells' share done
        while the line is estimating."""
        e = self.estimate(k)
        if not e.settled:
            return max(self.k if k is None else k, 0) / max(len(self.predicted), 1)
        if e.sweep_left is None:
            return 0.0
        total = e.done_s + e.sweep_left
        return e.done_s / total if total > 0 else 1.0


class ProgressLine:
    """The one status line of a local run: ``[3/12] [####....] 1,024/16,200 req | cell ... left, sweep ... left
    | timed pass: LABEL``, drawn on each worker report and by the :class:`Ticker` in between."""

    def __init__(self, eta: EtaClock, cells: int, write: Callable[[str], None]):
        self.eta, self.cells, self.write = eta, cells, write
        self.lock = threading.Lock()
        self.k, self.label, self.stage, self.i, self.n = -1, "", "", 0, 0

    def begin(self, k: int, label: str) -> None:
        with self.lock:
            self.k, self.label, self.stage, self.i, self.n = k, label, "preparing", 0, 0
            self.eta.begin_cell(k)

    def set_stage(self, stage: str) -> None:
        """What the running cell does before its first report (making its work file)."""
        with self.lock:
            self.stage = stage

    def progress(self, stage: str, i: int, n: int) -> None:
        with self.lock:
            self.stage, self.i, self.n = stage, i, n
            self.eta.progress(stage, i, n)
        self.render()

    def text(self) -> str:
        with self.lock:
            if self.k < 0:
                return ""
            bar = progress_bar(self.eta.fraction_done(self.k))   # what matters first: a narrow terminal cuts the label
            req = f" {format_count(self.i)}/{format_count(self.n)} req" if self.n else ""
            return f"[{self.k + 1}/{self.cells}] {bar}{req}{self.eta.describe(self.k)} | {self.stage}: {self.label}"

    def render(self) -> None:
        text = self.text()
        if text:
            with self.lock:
                self.write(text)

    def done(self) -> None:
        with self.lock:
            self.k = -1


class Ticker:
    """Calls ``tick`` every ``every`` seconds in a daemon thread until stopped (a context manager)."""

    def __init__(self, tick: Callable[[], None], every: float = TICK_S):
        self.tick, self.every = tick, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Ticker:
        self._thread = threading.Thread(target=self._run, name="ccp-progress", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.tick()
            except Exception:  # the progress line never stops a sweep
                return

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
