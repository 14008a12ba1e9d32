"""`ccp run` says what it does before its first cell measures (audit22 A2: 8-30 s of silence on a fresh work folder
while the sweep engine loaded, the model calibrated and two work files were generated): on a terminal each phase is
the status line, elsewhere one plain line each, before the first cell's line."""

from __future__ import annotations

import time

import pytest

from ccp.run import run_sweep
from ccp.run.phases import PhaseLine

SWEEP = """
name: phases
dataset:
  generate: {shape: [8, 10, 200], dtype: "<f4", data: normal}
matrix:
  chunks: [[4, 10, 200], [2, 10, 200]]
  filters: [none]
  cache: ["1MiB"]
  access: [{op: read, block: [1, 1, 200]}]
repeats: 1
"""


class Recorder:
    """A stream (a terminal or not) and an echo writing into one log, in order."""

    def __init__(self, tty: bool):
        self.tty, self.log = tty, []

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> None:
        self.log.append(("stream", text))

    def flush(self) -> None:
        pass

    def echo(self, *args, **kw) -> None:
        self.log.append(("echo", " ".join(map(str, args))))


def _run(write_sweep, tmp_path, tty: bool, phases: bool = True) -> list:
    rec = Recorder(tty)
    run_sweep(write_sweep(SWEEP), out=tmp_path / "run", work_dir=tmp_path / "work", echo=rec.echo, stream=rec,
              isolate=False, report=None, phases=PhaseLine(rec) if phases else None)
    return rec.log


def _first(log: list, text: str) -> int:
    return next(i for i, (_, line) in enumerate(log) if text in line)


def test_not_on_a_terminal_each_phase_is_one_plain_line_before_the_first_cells(write_sweep, tmp_path):
    log = _run(write_sweep, tmp_path, tty=False)
    first_cell = _first(log, "ok ")
    plain = [line for where, line in log[:first_cell] if where == "stream"]
    assert plain == [
        "ccp run: calibrating the model's prices on this machine (cached in the work folder)\n",
        "ccp run: pricing 2 cell(s) with the model\n",
        "ccp run: making work file 1 of 2, 62.5 KiB, for read 1x1x200 | chunks 4x10x200 | none | cache 1 MiB/521/0.75\n",
    ]
    assert "making work file 2 of 2" in "".join(line for _, line in log[first_cell:])
    assert not any(where == "stream" and "checking" in line for where, line in log)   # a bad sweep stays one line


def test_on_a_terminal_the_status_line_says_each_phase_before_the_first_report(write_sweep, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")      # the line is cut at the terminal's width
    log = _run(write_sweep, tmp_path, tty=True)
    drawn = [line for where, line in log if where == "stream"]
    first_report = next(i for i, line in enumerate(drawn) if " req |" in line)
    before = "".join(drawn[:first_report])
    for phase in ("ccp run: checking the sweep", "ccp run: calibrating", "ccp run: pricing 2 cell(s)",
                  "[1/2] ", "| making work file 1 of 2, 62.5 KiB: read 1x1x200"):
        assert phase in before
    assert _first(log, "ccp run: checking") < _first(log, "ccp run phases: 2 cells")


def test_a_second_run_on_the_same_work_folder_makes_no_work_file(write_sweep, tmp_path):
    _run(write_sweep, tmp_path, tty=False)
    rec = Recorder(False)
    run_sweep(write_sweep(SWEEP), out=tmp_path / "run2", work_dir=tmp_path / "work", echo=rec.echo, stream=rec,
              isolate=False, report=None)
    assert not any("making work file" in line for _, line in rec.log)


@pytest.mark.parametrize(("tty", "written"), [(True, "\r" + " " * 10), (False, "")], ids=["terminal", "not-a-terminal"])
def test_clear_erases_the_phase_line_on_a_terminal_only(tty, written):
    rec = Recorder(tty)
    phases = PhaseLine(rec)
    phases.say("loading", plain=False)
    rec.log.clear()
    phases.clear()
    assert "".join(line for _, line in rec.log).startswith(written)
    rec.log.clear()
    phases.clear()                       # once erased, nothing more
    assert rec.log == []


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "not-a-terminal"])
def test_a_caller_other_than_ccp_run_gets_no_ccp_run_phase_lines(write_sweep, tmp_path, tty):
    """run_sweep without ``phases`` (ccp tune's rounds, a notebook) says no "ccp run: ..." line: `ccp tune --json`'s
    output was preceded by them."""
    log = _run(write_sweep, tmp_path, tty=tty, phases=False)
    assert not any(where == "stream" and "ccp run: " in line for where, line in log), log


@pytest.mark.parametrize("ends", ["say", "clear"])
def test_a_ticking_phase_is_redrawn_with_its_seconds_until_the_next_line(monkeypatch, ends):
    """audit22 F4: "loading", "checking the sweep" (a loopback S3 server starting) and "writing the report" sat
    unchanged for 6-24 s at load 4-6; a ticking phase redraws itself every TICK_S, and stops at the next line."""
    monkeypatch.setattr("ccp.run.phases.TICK_S", 0.01)
    rec = Recorder(True)
    phases = PhaseLine(rec)
    phases.say("writing the report", tick=True)
    for _ in range(500):                  # at most 5 s (a busy machine): the redraws come every 10 ms
        if sum("writing the report (" in line for _, line in rec.log) >= 3:
            break
        time.sleep(0.01)
    assert sum("writing the report (" in line for _, line in rec.log) >= 3
    if ends == "say":
        phases.say("next", plain=False)
    else:
        phases.clear()
    n = len(rec.log)
    time.sleep(0.1)                       # ten ticks' time: none comes after the next line
    assert len(rec.log) == n
    assert not any("writing the report (" in line for _, line in rec.log[n - 1:])


def test_a_ticking_phase_is_one_plain_line_off_a_terminal(monkeypatch):
    monkeypatch.setattr("ccp.run.phases.TICK_S", 0.01)
    rec = Recorder(False)
    phases = PhaseLine(rec)
    phases.say("writing the report", tick=True)
    time.sleep(0.1)
    assert [line for _, line in rec.log] == ["ccp run: writing the report\n"]
