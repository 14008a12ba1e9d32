"""A warm local cell of a full run makes one warm-up pass before its timed passes (breaker10 B11: the first warm pass
was the slowest of five in 34 of 48 cells, 1.54x the others' median): recorded as pass -2 and ``warmup_s``, never in
the cell's time or spread. Cold, S3 and --quick cells make none; under a time budget the warm-up is one of the
budget's passes, stopped at its deadline, and the first timed pass sets the prefix the others follow."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ccp.measurement import runner
from ccp.store.schema import COUNTED_PASS, WARMUP_PASS

SWEEP = """
name: warmup
dataset:
  generate: {{shape: [16, 40], dtype: "<f8", data: normal, seed: 0}}
matrix:
  chunks: [[4, 40]]
  filters: ["gzip:1"]
  cache: ["64KiB"]
  access: [{{op: {op}, block: [1, 40]}}]
repeats: 3
cold: {cold}
"""

PLANTED = 1000    # the warm-up pass's request times x this: were it counted, time_s would show it


def _run(tmp_path, monkeypatch, op: str, cold: bool, quick: bool):
    """One cell run in this process, its first pass's request times (the warm-up's, when there is one) planted slow."""
    from ccp.run import run_sweep

    real = runner.client_loops
    made: list[int] = []

    def planted(loop):
        def first_slow(*args, **kwargs):
            out = loop(*args, **kwargs)
            timing = out[0] if isinstance(out, tuple) else out
            if not made and not kwargs.get("counted"):
                timing.request_ns = timing.request_ns * PLANTED
            made.append(1)
            return out
        return first_slow

    def client_loops(job):
        read, write, flags = real(job)
        return planted(read), planted(write), flags

    monkeypatch.setattr(runner, "client_loops", client_loops)
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(op=op, cold=str(cold).lower()))
    summary = run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "run", work_dir=tmp_path / "work", echo=lambda *a: None,
                        report=None, isolate=False, quick=quick)
    assert summary.failed == 0
    return pd.read_csv(tmp_path / "run" / "cells.csv").iloc[0], pd.read_parquet(tmp_path / "run" / "requests.parquet")


@pytest.mark.parametrize("op", ["read", "write", "copy"])
def test_a_warm_cell_makes_a_warm_up_pass_that_is_recorded_and_not_counted(tmp_path, monkeypatch, op):
    row, req = _run(tmp_path, monkeypatch, op, cold=False, quick=False)
    assert sorted(set(req["pass"])) == [WARMUP_PASS, COUNTED_PASS, 0, 1, 2]
    totals = req.groupby("pass")["time_s"].sum()
    timed = totals[totals.index >= 0].to_numpy()
    # the median, fastest and slowest are the three timed passes'; the planted warm-up is in none of them
    assert row["time_s"] == pytest.approx(float(np.median(timed)))
    assert (row["time_s_min"], row["time_s_max"]) == pytest.approx((timed.min(), timed.max()))
    assert row["warmup_s"] == pytest.approx(totals[WARMUP_PASS]) and row["warmup_s"] > 10 * row["time_s_max"]
    assert row["repeats"] == 3
    warm_open = req[(req["pass"] == WARMUP_PASS) & (req["phase"] == "open")].iloc[0]
    assert warm_open["pass_wall_s"] > 0 and warm_open["timed_cpu_s"] > 0      # its machine state, for a report


@pytest.mark.parametrize("op, cold, quick", [
    ("read", True, False),
    ("copy", True, False),
    ("read", False, True),
], ids=["cold-read", "cold-copy", "quick"])
def test_cold_and_quick_cells_make_no_warm_up_pass(tmp_path, monkeypatch, op, cold, quick):
    row, req = _run(tmp_path, monkeypatch, op, cold=cold, quick=quick)
    assert WARMUP_PASS not in set(req["pass"]) and pd.isna(row["warmup_s"])
    # the planted first pass is a timed pass here: the cell's slowest
    totals = req[req["pass"] >= 0].groupby("pass")["time_s"].sum()
    assert row["time_s_max"] == pytest.approx(totals[0])


def _fake_job(op: str, repeats: int, counted: bool, warmup: bool, cold: bool = False, remote=None):
    return SimpleNamespace(cell=SimpleNamespace(access=SimpleNamespace(op=op)), time_budget=0.6, repeats=repeats,
                           counted_pass=counted, cold=cold, remote=remote, warmup=warmup)


@pytest.mark.parametrize("op", ["read", "write"])
def test_under_a_time_budget_the_warm_up_is_a_pass_of_it_and_the_first_timed_pass_sets_the_prefix(tmp_path, monkeypatch,
                                                                                                   op):
    """Budget 0.6 s, 3 timed passes + the counted pass + the warm-up: 0.12 s each. The warm-up stops at its deadline
    after 1 of 5 requests (it is the slow pass it absorbs); the first timed pass, with a deadline of its own, stops
    after 3 and sets the prefix every later timed pass follows (breaker12 D2: the warm-up's prefix cut a 2 ms cell's
    timed passes to 1 request of 256)."""
    monkeypatch.setattr(runner, "target", lambda job: (tmp_path / "work.h5", "/data"))
    seen: list[tuple[int, float | None]] = []

    def one_pass(job, starts, counts, *, deadline_ns=None, **kwargs):
        left = (deadline_ns - time.perf_counter_ns()) / 1e9 if deadline_ns is not None else None
        seen.append((len(starts), left))
        n = len(starts) if deadline_ns is None else 1 if len(seen) == 1 else 3
        return SimpleNamespace(request_ns=np.ones(n, np.int64))

    def write_pass(job, data, starts, counts, out, **kwargs):
        out.write_bytes(b"x")
        return one_pass(job, starts, counts, **kwargs), 1

    loops = SimpleNamespace(read=one_pass, write=write_pass)
    passes = runner.timed_passes(_fake_job(op, 3, True, True), loops, None, list(range(5)), [1] * 5, tmp_path,
                                 progress=runner.Progress())
    assert len(seen) == 4 and seen[0][0] == 5 and 0.06 < seen[0][1] <= 0.12       # the warm-up: budget / 5
    assert seen[1][0] == 5 and 0.06 < seen[1][1] <= 0.12                          # the first timed pass: its own
    assert seen[2:] == [(3, None)] * 2
    assert passes.measured == 3 and len(passes.timings) == 3 and len(passes.warmup[0].request_ns) == 1
    assert not list(tmp_path.glob("warmup.h5"))     # a write's warm-up file is gone


@pytest.mark.parametrize("kind, job", [
    ("warm-read", _fake_job("read", 3, True, True)),
    ("warm-write-of-a-cold-sweep", _fake_job("write", 3, True, True, cold=True)),
    ("cold-read", _fake_job("read", 3, True, True, cold=True)),
    ("s3", _fake_job("read", 3, False, True, remote=object())),
    ("quick", _fake_job("read", 1, False, False)),
], ids=["warm-read", "warm-write-of-a-cold-sweep", "cold-read", "s3", "quick"])
def test_which_cells_warm_up(kind, job):
    assert runner.warms_up(job) == (kind in ("warm-read", "warm-write-of-a-cold-sweep"))


@pytest.mark.parametrize(("cold", "passes"), [(False, 5), (True, 4)], ids=["warm:warm-up+3+counted", "cold:3+counted"])
def test_the_eta_counts_the_warm_up_as_one_of_the_cells_passes(tmp_path, monkeypatch, cold, passes):
    """The ETA counts a cell's passes by their request 0: a warm-up it did not expect would be a pass past the cell's
    last, its time left priced at nothing."""
    import json

    from ccp.run import run_sweep
    from ccp.run.eta import EVENTS_ENV

    events = tmp_path / "events.jsonl"
    monkeypatch.setenv(EVENTS_ENV, str(events))
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(op="read", cold=str(cold).lower()))
    run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "run", work_dir=tmp_path / "work", echo=lambda *a: None,
              report=None, isolate=False)
    lines = [json.loads(ln) for ln in events.read_text().splitlines()]
    started = [ev["args"][1] for ev in lines if ev["call"] == "start_cell"]
    pass_starts = sum(ev["call"] == "progress" and ev["args"][1] == 0 for ev in lines)
    assert started == [passes] and pass_starts == passes
