"""A cell's counted pass (HDF5's log driver, pass -1 in requests.parquet) is priced from what this run measured: the
counted-over-timed ratio of the finished cells whose timed passes took COUNTED_FROM_S or more, a timed pass's price
before any (issue 22: configs/cris.yaml x0.8's long cell took 84 s for its counted pass against 48 s for its last timed
pass, and the line priced it as a timed pass). A fake clock drives synthetic event streams: no test here waits on real
time."""

from __future__ import annotations

import json

import pytest

from ccp.run.eta import COUNTED_FROM_S, COUNTED_STAGE, TIMED_STAGE, EtaClock

REQUESTS, REPORT_S = 1000, 0.5


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Run:
    """A sweep fed to an EtaClock by hand: each cell's timed passes, then (if it has one) its counted pass, reported
    every REPORT_S seconds."""

    def __init__(self, cells: int, pass_s: float, timed: int = 3, counted: bool | None = True, events=None):
        self.clock = FakeClock()
        self.timed, self.has_counted = timed, counted
        passes = timed + (counted is not False)
        self.eta = EtaClock([pass_s * passes] * cells, passes, clock=self.clock, events=events)

    def begin(self, k: int, pass_s: float) -> None:
        self.eta.begin_cell(k)
        self.eta.start_cell(pass_s, self.timed + (self.has_counted is not False), self.has_counted)

    def run_pass(self, stage: str, seconds: float, until: float = 1.0) -> None:
        """``until`` of the pass (a share), its reports evenly paced."""
        steps = max(int(seconds / REPORT_S), 1)
        for j in range(int(steps * until)):
            self.eta.progress(stage, REQUESTS * j // steps, REQUESTS)
            self.clock.t += seconds / steps

    def cell(self, k: int, pass_s: float, counted_s: float) -> None:
        self.begin(k, pass_s)
        for _ in range(self.timed):
            self.run_pass(TIMED_STAGE, pass_s)
        if self.has_counted is not False:
            self.run_pass(COUNTED_STAGE, counted_s)
        self.eta.cell_done(k, self.timed * pass_s + counted_s)

    def cell_left(self) -> float:
        left = self.eta.estimate().cell_left
        assert left is not None
        return left


def test_after_a_cell_whose_counted_pass_took_1_7x_the_later_counted_passes_are_priced_at_1_7x():
    """Three cells of three 10 s timed passes and a 17 s counted pass. The first cell's counted pass is priced as a
    timed pass (nothing measured says otherwise); from the second on, at 1.7x: as the second cell's counted pass begins
    its line says ~17 s left in the cell, not 10 (before this change: 10, and 20 s left at its last timed pass's start
    where 27 were)."""
    run = Run(cells=3, pass_s=10.0)
    run.begin(0, 10.0)
    for _ in range(3):
        run.run_pass(TIMED_STAGE, 10.0)
    run.run_pass(COUNTED_STAGE, 17.0, until=0.0)
    run.eta.progress(COUNTED_STAGE, 0, REQUESTS)
    assert run.cell_left() == pytest.approx(10.0, rel=0.05)          # the fallback: a timed pass's price
    run.clock.t += 17.0
    run.eta.cell_done(0, 47.0)
    assert run.eta.counted_ratio == pytest.approx(1.7, rel=0.01)

    run.begin(1, 10.0)
    run.run_pass(TIMED_STAGE, 10.0)
    run.run_pass(TIMED_STAGE, 10.0)
    run.eta.progress(TIMED_STAGE, 0, REQUESTS)                        # the last timed pass begins: 10 + 17 left
    assert run.cell_left() == pytest.approx(27.0, rel=0.05)
    run.clock.t += 10.0
    run.eta.progress(COUNTED_STAGE, 0, REQUESTS)                      # the counted pass begins: 17 left
    assert run.cell_left() == pytest.approx(17.0, rel=0.05)


def test_the_sweep_left_counts_every_later_cells_counted_pass_at_the_measured_ratio():
    """Before the third cell starts its measuring, after two cells of 3 x 10 s + 17 s: its whole cell is priced at
    3 x 10 + 17 = 47 s (the model's 10 s a pass was right), not 40."""
    run = Run(cells=3, pass_s=10.0)
    run.cell(0, 10.0, 17.0)
    run.cell(1, 10.0, 17.0)
    run.eta.begin_cell(2)
    assert run.cell_left() == pytest.approx(47.0, rel=0.05)


@pytest.mark.parametrize(("pass_s", "counted_s", "ratio"), [
    (0.08, 0.5, 1.0),                       # a 0.08 s pass's counted pass is mostly its fixed tail: no rule
    (COUNTED_FROM_S - 0.5, (COUNTED_FROM_S - 0.5) * 1.3, 1.0),
    (COUNTED_FROM_S + 0.5, (COUNTED_FROM_S + 0.5) * 1.3, 1.3),
    (40.0, 30.0, 0.75),                     # a counted pass faster than the timed ones (the machine sped up)
], ids=["tail-of-a-short-cell", "under-the-floor", "over-the-floor", "faster-counted-pass"])
def test_only_cells_whose_timed_passes_took_counted_from_s_set_the_ratio(pass_s, counted_s, ratio):
    run = Run(cells=2, pass_s=pass_s)
    run.cell(0, pass_s, counted_s)
    assert run.eta.counted_ratio == pytest.approx(ratio, rel=0.02)


def test_the_ratio_weighs_the_cells_by_their_time():
    """A 10 s cell whose counted pass took 2x and a 90 s one whose counted pass took 1x: (20 + 90) / (10 + 90)."""
    run = Run(cells=3, pass_s=10.0)
    run.cell(0, 10.0, 20.0)
    run.cell(1, 90.0, 90.0)
    assert run.eta.counted_ratio == pytest.approx(110 / 100, rel=0.01)


def test_a_cell_without_a_counted_pass_is_not_charged_one():
    """An S3 or --quick cell (start_cell's ``counted`` False) after cells whose counted passes took 1.7x: its last
    pass is a timed one, priced as one."""
    run = Run(cells=3, pass_s=10.0)
    run.cell(0, 10.0, 17.0)
    run.eta.begin_cell(1)
    run.eta.start_cell(10.0, 3, False)
    run.run_pass(TIMED_STAGE, 10.0)
    run.eta.progress(TIMED_STAGE, 0, REQUESTS)
    assert run.cell_left() == pytest.approx(20.0, rel=0.05)


def test_the_running_counted_pass_goes_at_its_own_pace_once_measured():
    """Half-way through a counted pass running at 1.7x a timed pass (after a first cell whose counted pass took as
    long as its timed ones), the line says the half left at the counted pass's own pace, ~8.5 s, not 5."""
    run = Run(cells=2, pass_s=10.0)
    run.cell(0, 10.0, 10.0)
    run.begin(1, 10.0)
    for _ in range(3):
        run.run_pass(TIMED_STAGE, 10.0)
    run.run_pass(COUNTED_STAGE, 17.0, until=0.5)
    assert run.cell_left() == pytest.approx(8.5, rel=0.1)


def test_the_counted_argument_is_saved_and_replayed(tmp_path):
    """start_cell's ``counted`` goes to the events file (benchmarks/eta_accuracy.py --events), and a clock fed the
    saved calls says what the live one said."""
    events = tmp_path / "events.jsonl"
    run = Run(cells=2, pass_s=10.0, events=str(events))
    run.cell(0, 10.0, 17.0)
    run.begin(1, 10.0)
    run.run_pass(TIMED_STAGE, 10.0)
    live = run.eta.estimate().sweep_left
    saved = [json.loads(line) for line in events.read_text().splitlines()]
    assert [ev["args"] for ev in saved if ev["call"] == "start_cell"] == [[10.0, 4, True]] * 2
    now = [0.0]
    replayed = EtaClock(*saved[0]["args"], clock=lambda: now[0])
    for ev in saved[1:]:
        now[0] = ev["t"]
        getattr(replayed, ev["call"])(*ev["args"])
    now[0] = run.clock.t - 100.0
    assert replayed.estimate().sweep_left == pytest.approx(live, rel=1e-6)


def test_the_counted_pass_is_set_against_the_last_timed_pass_it_will_be_priced_as():
    """Timed passes of 20, 15 and 10 s (the machine speeding up), then a 17 s counted pass: 1.7x the last timed pass
    (what the passes to come are priced as), not 17 / 15 against their mean."""
    run = Run(cells=2, pass_s=15.0)
    run.begin(0, 15.0)
    for seconds in (20.0, 15.0, 10.0):
        run.run_pass(TIMED_STAGE, seconds)
    run.run_pass(COUNTED_STAGE, 17.0)
    run.eta.cell_done(0, 62.0)
    assert run.eta.counted_ratio == pytest.approx(1.7, rel=0.01)


SWEEP = """
name: counted
dataset:
  generate: {shape: [16, 40], dtype: "<f8", data: normal, seed: 0}
matrix:
  chunks: [[4, 40]]
  cache: ["64KiB"]
  access: [{op: read, block: [1, 40]}]
repeats: 2
cold: true
"""


@pytest.mark.parametrize("quick", [False, True], ids=["counted-pass", "quick-no-counted-pass"])
def test_the_executor_tells_the_clock_the_passes_the_worker_reports_and_whether_one_is_counted(tmp_path, monkeypatch,
                                                                                               quick):
    """start_cell's passes are the passes the worker reports (request 0 starts one), and its ``counted`` says whether
    the last is a counted pass: --quick (and S3) cells have none, and are not charged one."""
    from ccp.run import run_sweep
    from ccp.run.eta import EVENTS_ENV

    events = tmp_path / "events.jsonl"
    monkeypatch.setenv(EVENTS_ENV, str(events))
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "run", work_dir=tmp_path / "work", echo=lambda *a: None,
              report=None, isolate=False, quick=quick)
    saved = [json.loads(line) for line in events.read_text().splitlines()]
    (started,) = [ev["args"] for ev in saved if ev["call"] == "start_cell"]
    stages = [ev["args"][0] for ev in saved if ev["call"] == "progress" and ev["args"][1] == 0]
    assert started[1] == len(stages)
    assert started[2] is (not quick) and (stages[-1] == COUNTED_STAGE) is (not quick)
