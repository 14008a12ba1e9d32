"""benchmarks/eta_accuracy.py --events / --replay: a run's ETA events saved by the clock replay to the lines the live
clock drew, so the estimator can be re-scored on a saved run without rerunning it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ccp.run.eta import EtaClock

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("eta_accuracy", ROOT / "benchmarks" / "eta_accuracy.py")
assert _spec is not None and _spec.loader is not None
eta_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eta_accuracy)


class FakeClock:
    def __init__(self):
        self.t = 500.0

    def __call__(self) -> float:
        return self.t


def _live_run(events: Path) -> list[tuple[float, str]]:
    """Two cells (a tiny one, then a long one 2x the model), with the line drawn after each report, as live."""
    clock = FakeClock()
    start = clock.t
    eta = EtaClock([0.01, 24.0], 2, clock=clock, events=str(events))
    drawn = []
    for k, (per_pass, requests) in enumerate([(0.5, 15), (24.0, 1000)]):
        eta.begin_cell(k)
        clock.t += 0.25
        eta.start_cell([0.005, 12.0][k], 2)
        for _ in range(2):
            for i in range(0, requests, 100):
                eta.progress("timed pass", i, requests)
                drawn.append((round(clock.t - start, 4), "[" + eta.describe()))
                clock.t += per_pass * min(100, requests) / requests
        eta.cell_done(k, 2 * per_pass)
    return drawn


def test_a_replay_draws_the_lines_the_live_clock_drew(tmp_path):
    events = tmp_path / "events.jsonl"
    drawn = _live_run(events)
    assert json.loads(events.read_text().splitlines()[0])["args"] == [[0.01, 24.0], 2]
    replayed, end = eta_accuracy.replay(str(events))
    on_reports = [line for line in replayed if line[0] in {t for t, _ in drawn}]
    assert on_reports == drawn
    assert end == pytest.approx(0.25 * 2 + 1.0 + 48.0)
    assert any("estimating" in ln for _, ln in drawn) and any("left" in ln for _, ln in drawn)


def test_estimating_stretches_run_from_the_first_such_line_to_the_next_number():
    lines = [(0.0, "[1/2] | ETA estimating"), (1.5, "[1/2] | ETA estimating"), (2.0, "[2/2] | cell 3 s left"),
             (9.0, "[2/2] | ETA estimating")]
    assert eta_accuracy.estimating_stretches(lines, 10.0) == [2.0, 1.0]


@pytest.mark.parametrize("text", ["not json\n", '{"t": 0, "call": "progress", "args": []}\n', ""],
                         ids=["not-json", "no-predictions-first", "empty"])
def test_replay_of_a_file_that_is_not_an_events_file_is_one_line_and_exit_2(tmp_path, capsys, text):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    with pytest.raises(SystemExit) as exc:
        eta_accuracy.main(["--replay", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err


def test_a_pace_change_stretches_the_run_after_it_and_nothing_before(tmp_path):
    """--pace-change AT:FACTOR: every second after AT of the run takes FACTOR seconds, the worker's measured seconds
    of a cell that ends after it too; the events before it are the run's own."""
    events = tmp_path / "events.jsonl"
    _live_run(events)
    saved = [json.loads(ln) for ln in events.read_text().splitlines()]
    end = max(ev["t"] for ev in saved)
    slower = eta_accuracy.paced(saved, 0.5, 2.0)
    assert [ev for ev in slower if ev["t"] <= end / 2] == [ev for ev in saved if ev["t"] <= end / 2]
    assert max(ev["t"] for ev in slower) == pytest.approx(end * 1.5, abs=1e-3)
    last = [ev for ev in slower if ev["call"] == "cell_done"][-1]
    assert last["args"][1] == pytest.approx(2 * 24.0 * 2 - (end / 2 - (end - 48.0)), abs=1e-3)
    assert eta_accuracy.paced(saved, 0.5, 1.0) == saved


def test_passes_lists_each_long_cells_passes_and_its_counted_pass_against_its_timed_ones(tmp_path, capsys):
    """--passes: a cell's passes from its reports (request 0 starts one; its last runs to cell_done); a cell whose
    passes took under a second on average is left out."""
    events = [{"t": 0.0, "call": "__init__", "args": [[0.1, 40.0], 4]}]
    t = 0.0
    for k, (timed_s, counted_s) in enumerate([(0.02, 0.3), (10.0, 17.0)]):
        events += [{"t": t, "call": "begin_cell", "args": [k]}, {"t": t, "call": "start_cell", "args": [timed_s, 4]}]
        for stage, seconds in [("timed pass", timed_s)] * 3 + [("counted pass", counted_s)]:
            events.append({"t": t, "call": "progress", "args": [stage, 0, 100]})
            t += seconds
        events.append({"t": t, "call": "cell_done", "args": [k, 3 * timed_s + counted_s]})
    assert [(k, [round(s, 6) for _, s in p]) for k, p in eta_accuracy.cell_passes(events)] == [
        (0, [0.02, 0.02, 0.02, 0.3]), (1, [10.0, 10.0, 10.0, 17.0])]
    assert eta_accuracy.passes_text(events) == [
        "cell 1: timed pass 10.0 s, timed pass 10.0 s, timed pass 10.0 s, counted pass 17.0 s; counted / last timed "
        "1.70x, / mean timed 1.70x"]
    assert eta_accuracy.passes_text(events, 0.0)[0].startswith("cell 0: timed pass 0.0 s")
    saved = tmp_path / "events.jsonl"
    saved.write_text("".join(json.dumps(ev) + "\n" for ev in events))
    assert eta_accuracy.main(["--replay", str(saved), "--passes"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("cell 1: timed pass 10.0 s")
