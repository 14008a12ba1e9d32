"""The progress line's ETA (issue 22): the model's prediction corrected by what finished passes measured, within
1.5x of the truth through a long run, redrawn between the worker's reports, never "0 ns left". A fake clock
drives a simulated sweep: no test here waits on real time except the ticker's (a count, not a duration)."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from ccp.run.eta import ESTIMATING_MAX_S, EtaClock, ProgressLine, Ticker, left_text


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _sweep(seed: int, factor: float, cells: int = 40, passes: int = 3):
    """(predicted seconds per cell, all passes; true seconds per pass; requests per pass; overhead per cell)."""
    rng = np.random.default_rng(seed)
    predicted = rng.lognormal(0, 1.5, cells) * 2           # 0.1 s .. a minute or more
    predicted[cells // 3] = predicted.sum() * 0.6           # one cell dominates (the CrIS cache trap)
    true_pass = predicted / passes * factor * rng.lognormal(0, 0.25, cells)
    requests = rng.choice([300, 5000, 16200], cells)
    overhead = np.where(rng.random(cells) < 0.3, rng.uniform(0.5, 3, cells), 0.05)   # a work file now and then
    return predicted, true_pass, requests, overhead


def _events(predicted, true_pass, requests, overhead, passes):
    """The sweep as a timed list of (time, call, args): what the executor and the worker's reports do."""
    t, out = 0.0, []
    for k in range(len(predicted)):
        out.append((t, "begin_cell", (k,)))
        t += overhead[k]
        out.append((t, "start_cell", (predicted[k] / passes, passes)))
        for _ in range(passes):
            n = int(requests[k])
            for i in range(0, n, 1024):                      # the runner reports every 1,024 requests
                out.append((t + true_pass[k] * i / n, "progress", ("timed pass", i, n)))
            t += true_pass[k]
        out.append((t, "cell_done", (k, true_pass[k] * passes)))
    return out, t


@pytest.mark.parametrize(("seed", "factor"), [(1, 1.0), (2, 2.5), (3, 0.4), (4, 6.0)],
                         ids=["calibrated", "machine-2.5x-slower", "machine-2.5x-faster", "loaded-6x"])
def test_eta_is_within_1_5x_of_the_truth_through_a_long_run(seed, factor):
    passes = 3
    predicted, true_pass, requests, overhead = _sweep(seed, factor, passes=passes)
    events, end = _events(predicted, true_pass, requests, overhead, passes)
    clock = FakeClock()
    start = clock.t
    eta = EtaClock(list(predicted), passes, clock=clock)
    checked = worst = estimating = 0.0
    ticks = iter(np.arange(0.0, end, 2.0))               # the ticker redraws every 2 s
    tick = next(ticks)
    for when, call, args in events:
        while tick is not None and tick < when:
            clock.t = start + tick
            e = eta.estimate()
            left = end - tick
            # from the first line with a number (before it the line says it is estimating: too little of the
            # model's prices is measured to correct them) to the last 5% of the run (where what is left is one
            # cell, and its own model error, +-25% here, is the whole of the remainder; the ratio of a few
            # seconds' error to a few seconds left means little)
            if not e.settled:
                estimating += 1
                assert "estimating" in eta.describe() and "left" not in eta.describe()
            elif left > 0.05 * end:
                assert e.sweep_left is not None
                r = e.sweep_left / left
                worst = max(worst, r, 1 / r)
                checked += 1
            tick = next(ticks, None)
        clock.t = start + when
        getattr(eta, call)(*args)
    assert checked > 100
    assert worst <= 1.5, f"ETA off by {worst:.2f}x"
    assert estimating * 2.0 <= 12.0, f"estimating for {estimating * 2.0:.0f} s"


def test_one_long_pass_without_reports_counts_down_and_never_says_0_ns():
    """A cell whose pass makes no report for minutes (fewer than 1,024 slow requests) still counts down on each
    redraw, and past its estimate says so instead of "0 ns left"."""
    clock = FakeClock()
    eta = EtaClock([60.0, 30.0], 1, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(60.0, 1)
    eta.progress("timed pass", 0, 800)
    texts = []
    for _ in range(40):                   # 80 s of ticks, every 2 s
        clock.t += 2
        texts.append(eta.describe())
    assert len(set(texts)) > 20           # the line changes between reports
    assert not any(re.search(r"(?<![\d.])0 (ns|us|ms|s) left", t) for t in texts)
    assert "cell past its estimate (80 s so far)" in texts[-1]
    assert "sweep 30 s left" in texts[-1]  # the next cell, not yet corrected (no pass finished)


def test_a_cell_starting_says_less_than_a_second_not_0_ns():
    clock = FakeClock()
    eta = EtaClock([2e-3, 1e-9, 2e-3], 2, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(2e-3, 2)
    clock.t += 0.01
    eta.cell_done(0, 0.004)                  # a finished cell: the line gives a number (nothing here is priced)
    eta.begin_cell(1)
    eta.start_cell(1e-9, 2)
    text = eta.describe()
    assert "cell <1 s left" in text and "ns" not in text


@pytest.mark.parametrize(("seconds", "text"), [(0.0, "<1 s"), (1e-9, "<1 s"), (0.99, "<1 s"), (12.3, "12.3 s"),
                                               (1500, "25.0 min")], ids=["zero", "ns", "under-1s", "seconds", "minutes"])
def test_left_text(seconds, text):
    assert left_text(seconds) == text


def test_finished_passes_correct_the_model_before_the_cell_ends():
    """After one of three passes took 3x its prediction, the cell and the sweep are estimated at 3x."""
    clock = FakeClock()
    eta = EtaClock([30.0, 30.0], 3, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(10.0, 3)
    eta.progress("timed pass", 0, 100)
    clock.t += 30.0                      # the first pass: 30 s, predicted 10 s
    eta.progress("timed pass", 0, 100)
    e = eta.estimate()
    assert e.ratio == pytest.approx(3.0)
    assert e.cell_left == pytest.approx(60.0)            # two passes of 30 s
    assert e.sweep_left == pytest.approx(60.0 + 90.0)    # and the next cell, 30 s predicted x 3


def test_unpredicted_cells_count_at_the_median_cell():
    clock = FakeClock()
    eta = EtaClock([10.0, None, None], 1, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(10.0, 1)
    eta.progress("timed pass", 0, 10)
    clock.t += 20
    eta.cell_done(0, 20.0)
    eta.begin_cell(1)
    eta.start_cell(None, 1)
    e = eta.estimate()
    assert e.unpredicted == 1 and e.sweep_left == pytest.approx(40.0)
    assert "1 unpredicted cells at the median cell's time" in eta.describe()


def test_the_ticker_redraws_the_line_without_reports():
    clock = FakeClock()
    eta = EtaClock([100.0], 1, clock=clock)
    lines, enough = [], threading.Event()

    def write(text):
        lines.append(text)
        clock.t += 1.0
        if len(lines) >= 5:
            enough.set()

    line = ProgressLine(eta, 1, write)
    line.begin(0, "chunks 4x30x9x717 | cache 1 MiB")
    eta.start_cell(100.0, 1)
    eta.progress("timed pass", 0, 100)
    clock.t += 2.0
    eta.progress("timed pass", 10, 100)     # two seconds measured: the line gives a number
    with Ticker(line.render, every=0.01):
        assert enough.wait(30), "the ticker drew nothing"
    assert all(x.startswith("[1/1] [") and x.endswith("| preparing: chunks 4x30x9x717 | cache 1 MiB") for x in lines)
    assert len(set(lines)) >= 4          # each redraw shows less time left


def test_the_running_pass_corrects_the_model_before_it_ends():
    """Issue 22 (quickstart): the first pass ran 3.7x the model's price for 20 s and the ETA said 27 s with 110 s left.
    A second into the pass, its requests done already scale every later cell."""
    clock = FakeClock()
    eta = EtaClock([12.0, 30.0], 3, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(4.0, 3)                # 4 s a pass predicted
    eta.progress("timed pass", 0, 1000)
    clock.t += 0.5
    eta.progress("timed pass", 50, 1000)  # half a second: too little to correct anything
    assert not eta.corrected and eta.estimate().ratio == 1.0
    clock.t += 3.5
    eta.progress("timed pass", 250, 1000)  # 4 s for a quarter of a 4 s pass: the machine is 4x the model
    e = eta.estimate()
    assert eta.corrected and e.ratio == pytest.approx(4.0)
    assert e.sweep_left == pytest.approx(12.0 + 32.0 + 30.0 * 4.0)
    assert "model x 4 measured" in eta.describe()


def test_a_cells_fixed_cost_counts_for_every_cell_left():
    """Cells the model prices at milliseconds still cost their fork, open, counted pass and commit: the median of what
    finished cells cost beyond their corrected price is added per cell left."""
    clock = FakeClock()
    eta = EtaClock([0.003] * 6, 1, clock=clock)
    for k in range(3):
        eta.begin_cell(k)
        eta.start_cell(0.003, 1)
        eta.progress("timed pass", 0, 2)
        clock.t += 1.5                      # 1.5 s of wall for a cell priced at 3 ms
        eta.cell_done(k, 1.2)
    eta.begin_cell(3)
    e = eta.estimate()
    assert e.sweep_left is not None and e.sweep_left > 2 * 1.4    # two cells after this one, ~1.5 s each


def test_native_batches_report_a_long_pass_often(tmp_path):
    """The compiled loop returns to Python for progress after a short first batch, then every ~0.5 s: a pass of
    2,160 slow requests no longer reports only at its start (the quickstart's status line read 0/2,160 for 100 s)."""
    import h5py

    from ccp.measurement.native import run_requests

    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(3000 * 4, dtype="<f4").reshape(3000, 4), chunks=(100, 4))
    starts = np.array([[i, 0] for i in range(3000)])
    counts = np.tile([1, 4], (3000, 1))
    seen = []
    with h5py.File(path, "r") as f:
        ds = f["x"].id
        run_requests(ds, ds.get_space(), starts, counts, "<f4", progress=lambda stage, i, n: seen.append(i))
    assert seen[:2] == [0, 16] and all(b > a for a, b in zip(seen, seen[1:]))


def test_a_passs_first_requests_do_not_extrapolate_it_when_an_earlier_pass_can_say():
    """configs/cris.yaml x0.71: the last cell's counted pass reported its first 16 (cold) requests and the line said
    "194 s left" for a 3 s pass. Under a second into a pass, the cell's earlier passes estimate it."""
    clock = FakeClock()
    eta = EtaClock([6.0], 2, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(3.0, 2)
    eta.progress("timed pass", 0, 5418)
    clock.t += 3.0
    eta.progress("counted pass", 0, 5418)     # the first pass took 3 s
    clock.t += 0.12
    eta.progress("counted pass", 16, 5418)    # 16 slow requests: 0.12 s x 5418 / 16 would be 41 s
    e = eta.estimate()
    assert e.cell_left == pytest.approx(3.0 - 0.12)


def test_cells_priced_at_milliseconds_do_not_scale_a_long_one():
    """configs/cris.yaml x0.71: four small cells (their passes all open, close and cache drop) measured 50x the
    model, and the ETA said 1 h 40 min with 17 min left. A pass priced at a second corrects the model on its own."""
    clock = FakeClock()
    eta = EtaClock([0.02, 40.0], 2, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(0.01, 2)
    for _ in range(2):
        eta.progress("timed pass", 0, 100)
        clock.t += 1.0                       # 1 s a pass priced at 10 ms
    eta.cell_done(0, 2.0)
    eta.begin_cell(1)
    eta.start_cell(20.0, 2)                  # 20 s a pass
    eta.progress("timed pass", 0, 1000)
    clock.t += 4.0
    eta.progress("timed pass", 100, 1000)   # 4 s for a tenth: 2x the model
    assert eta.estimate().ratio == pytest.approx(2.0)


def test_the_worker_is_forked_holding_the_progress_lines_lock(monkeypatch, tmp_path):
    """A fork while the ticker thread is inside a write to stderr copies stderr's lock, held, into the worker, whose
    exit flush then waits forever (and `ccp run` joining it): the fork happens under the line's lock, which every
    write of the line holds. The worker here fails at once (no work file); what is checked is the lock at the fork."""
    import multiprocessing.context as mpc

    from ccp.run import executors

    lock = threading.Lock()
    held = []
    real = mpc.ForkProcess.start

    def start(self):
        held.append(lock.locked())
        return real(self)

    monkeypatch.setattr(mpc.ForkProcess, "start", start)
    monkeypatch.setattr(executors, "measure_and_store", lambda *a: (_ for _ in ()).throw(executors.CcpError("no cell")))

    class Job:
        class cell:
            cell_id = "c0"

    monkeypatch.setattr(executors, "failed_row", lambda cell, why: why)
    row = executors.run_isolated(Job(), None, tmp_path, lambda *a: None, 60, lock)
    assert held == [True] and not lock.locked() and row == "no cell"


def test_cells_priced_at_milliseconds_alone_say_estimating_not_a_number():
    """configs/cris.yaml x0.71 at load 12-17: while four cells priced at milliseconds were all that was measured (their
    passes measure a file's open, close and cache drop), the line said 52 min with 21 min left. It says it is
    estimating until a second of the long cell is measured, then gives a number."""
    clock = FakeClock()
    eta = EtaClock([0.02, 0.02, 80.0], 4, clock=clock)
    for k in range(2):
        eta.begin_cell(k)
        eta.start_cell(0.005, 4)
        for _ in range(4):
            eta.progress("timed pass", 0, 100)
            clock.t += 1.0                   # 1 s a pass priced at 5 ms
        eta.cell_done(k, 4.0)
    eta.begin_cell(2)
    assert eta.describe() == " | ETA estimating" and not eta.estimate().settled
    eta.start_cell(20.0, 4)
    eta.progress("timed pass", 0, 1000)
    clock.t += 0.5
    eta.progress("timed pass", 10, 1000)
    assert "estimating" in eta.describe()    # half a second of the long pass: not yet
    clock.t += 1.5
    eta.progress("timed pass", 50, 1000)     # 2 s for 1 s of the model's price: 2x
    assert eta.estimate().settled and eta.estimate().ratio == pytest.approx(2.0)
    assert "sweep 158 s left (model x 2 measured)" in eta.describe()   # 4 passes of 40 s, 2 s of them done


def test_the_models_prices_speak_after_a_long_cell_measured_without_a_correction():
    """A long pass that reports nothing (fewer than 1,024 slow requests, before the compiled loop's batches) says it is
    estimating for at most ESTIMATING_MAX_S of measuring, then the model's price, labelled as such."""
    clock = FakeClock()
    eta = EtaClock([60.0], 1, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(60.0, 1)
    eta.progress("timed pass", 0, 800)
    clock.t += ESTIMATING_MAX_S - 1
    assert "estimating" in eta.describe()
    clock.t += 1
    assert eta.describe() == f" | cell {60 - ESTIMATING_MAX_S:.0f} s left, sweep {60 - ESTIMATING_MAX_S:.0f} s left (model ETA)"


def test_a_sweep_of_cells_priced_at_milliseconds_gives_a_number_once_a_cell_finished():
    """Nothing the model prices at seconds is there to correct: the fixed cost of each cell (its work file, an S3
    upload, the fork, the opens) is the estimate, known once one cell has finished (audit22 F6: an S3 sweep said
    "sweep 1.3 s left (model ETA)" while its first work file was made, with 28.6 s left)."""
    clock = FakeClock()
    eta = EtaClock([0.004, 0.004], 2, clock=clock)
    eta.begin_cell(0)
    assert eta.describe() == " | ETA estimating"
    clock.t += 5.0                           # the work file and an upload
    eta.start_cell(0.002, 2)
    eta.progress("timed pass", 0, 16)
    clock.t += 1.0
    assert not eta.estimate().settled
    eta.cell_done(0, 1.0)
    eta.begin_cell(1)
    assert eta.estimate().settled and "sweep" in eta.describe()
    assert eta.estimate().sweep_left == pytest.approx(6.0, rel=0.05)   # the first cell's 6 s wall, most of it fixed


def test_a_machine_slowing_down_is_told_by_its_latest_pass_and_the_running_one():
    """configs/cris.yaml x0.71 while five other jobs started: passes of 40, 56, 88 and 81 s. The passes left are priced
    as the latest finished one, moving to the running pass's pace as far as it has gone -- not the mean of them all."""
    clock = FakeClock()
    eta = EtaClock([160.0], 4, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(40.0, 4)
    for seconds in (40.0, 56.0):
        eta.progress("timed pass", 0, 1000)
        clock.t += seconds
    eta.progress("timed pass", 0, 1000)                 # the third pass starts
    assert eta.estimate().cell_left == pytest.approx(2 * 56.0)
    clock.t += 44.0
    eta.progress("timed pass", 500, 1000)               # half of it in 44 s: an 88 s pass
    assert eta.estimate().cell_left == pytest.approx(44.0 + (56.0 + 88.0) / 2)


@pytest.mark.parametrize(("sweep", "measured_s", "settled"),
                         [([10.0], 0.15, False), ([10.0], 0.25, True), ([100.0], 0.45, False), ([100.0], 0.55, True)],
                         ids=["small-sweep-under-2%", "small-sweep-2%", "large-sweep-under-0.5s", "large-sweep-0.5s"])
def test_a_number_once_half_a_second_or_2_percent_of_the_priced_work_is_measured(sweep, measured_s, settled):
    """The line gives a number once the running pass's requests done are worth ENOUGH_PRICED_S (0.5 s) of the model's
    prices, or ENOUGH_SHARE (2%) of the sweep's priced work if that is less (here, one second into the pass)."""
    clock = FakeClock()
    eta = EtaClock(sweep, 1, clock=clock)
    eta.begin_cell(0)
    eta.start_cell(sweep[0], 1)
    eta.progress("timed pass", 0, 10000)
    clock.t += 1.0                           # a second: the running pass corrects nothing before
    eta.progress("timed pass", round(10000 * measured_s / sweep[0]), 10000)
    assert eta.estimate().settled is settled


def test_before_any_cell_finished_each_cell_left_costs_what_the_running_one_did_before_its_first_pass():
    """The quickstart: seven cells priced at milliseconds after the long first one took ~1 s each, and with no cell
    finished the ETA priced them at nothing ("sweep 1 s left" with 11 s left). Until a cell finishes, what the running
    cell cost before its first pass (its work file, the fork, the open) is the fixed cost of each cell left."""
    clock = FakeClock()
    eta = EtaClock([40.0] + [0.02] * 7, 4, clock=clock)
    eta.begin_cell(0)
    clock.t += 0.3                            # the work file
    eta.start_cell(10.0, 4)
    clock.t += 0.2                            # the fork and the open
    eta.progress("timed pass", 0, 1000)
    clock.t += 2.0
    eta.progress("timed pass", 100, 1000)     # 2 s for a tenth of a 10 s pass: the model's pace x2
    e = eta.estimate()
    assert e.sweep_left == pytest.approx(e.cell_left + 7 * (0.02 * 2 + 0.5))
