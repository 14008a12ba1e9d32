"""The verdict rule on runs recorded on this shared 2-CPU machine (breaker12, 2026-11-28 04:18-04:50 UTC, load
2.0-6.1): each cell's passes, CPU time per pass, CPU share and load as ``ccp.report.stats.samples`` read them from
the run folders, in data/breaker12_passes.json (extracted with the same reader; the folders were 0.6 MB each).

- Ten runs of one sweep with the same ccp, no competitor of the tester's (A, A2, F1, F2, Q1-Q6): identical work. Of
  their 90 ordered pairs at ``--fail-above 1.5``, 3 failed (exit 1) before this rule: the CPU time per pass 2.51x
  with a pass of A's at 3.30 ms among 6.59-6.92 (the passes not apart in CPU time), and 1.68x between two runs whose
  passes both got 0.29-0.30 of a CPU (breaker12 D1).
- Planted regressions (B spins 8-30 us of CPU in each of 256 reads; A quiet or under 3 busy loops): a gate never
  passes one.
- Identical work under competitors (Iq/Ib: B under 3 busy loops; Q1/M1, Q2/M2: one memory-streaming process).

data/run_delay_passes.json: the same sweep run by a ccp that records each timed part's wait for a CPU (schema 7,
07:53-07:55 UTC, load 3.7-4.8; /tmp/d1runs/mk.sh): Q1-Q3 as quiet as the machine was, C1-C3 under 3 busy loops,
S1-S2 with a planted sleep of 200 us in every read (51 ms a pass: a wait regression, the same CPU work) and SC1-SC2
that under the 3 loops too.

data/breaker14_passes.json: a tester's runs (breaker14, 10:30-11:00 UTC, load 2.2-5.5; /tmp/breaker14/FINDINGS.md)
of two sweeps (b14s3: 8x64x64x64 f4, chunks 4x64x64x64 and 1x64x64x64, none and gzip:1, 8 MiB cache, h5py-lowlevel,
rows and whole-chunk reads; b14s8: whole-chunk reads of 8..1x64x64x64 chunks, 16 MiB cache, h5py-lowlevel and
native), identical runs and planted regressions, extracted with judge_recorded.py --extract.

data/pace_passes.json: noisy_compare's sweep (benchmarks/noisy_compare.py SWEEP: 8 warm cells, 5 passes, h5py-lowlevel)
run by a ccp that records the machine's pace after each pass (schema 8, 10:07-10:09 UTC, load 2.3 -> 1.3;
/tmp/pace/mk.py): Q1-Q4 as quiet as the machine was and M1-M4 under one memory-bound competitor, alternating; P1-P2
with noisy_compare's planted CPU regression (200 us of CPU before every read) quiet and PM1-PM2 under the competitor."""

from __future__ import annotations

import importlib.util
import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ccp.report.sample import Sample
from ccp.report.stats import judge

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("judge_recorded", ROOT / "benchmarks" / "judge_recorded.py")
assert _spec is not None and _spec.loader is not None
judge_recorded = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge_recorded)

RUNS = json.loads(judge_recorded.FIXTURE.read_text())
IDENTICAL = judge_recorded.IDENTICAL.split(",")
GATE = 1.5


def _exit(a: str, b: str) -> int:
    """``ccp compare RUN_A RUN_B --fail-above 1.5``'s exit code on the recorded cells."""
    return judge_recorded.gate(RUNS, a, b, GATE)[0]


RUNS7 = json.loads((judge_recorded.FIXTURE.parent / "run_delay_passes.json").read_text())
IDENTICAL7 = ["Q1", "Q2", "Q3", "C1", "C2", "C3"]
RUNS8 = json.loads((judge_recorded.FIXTURE.parent / "pace_passes.json").read_text())
IDENTICAL8 = ["Q1", "Q2", "Q3", "Q4", "M1", "M2", "M3", "M4"]


def test_identical_runs_minutes_apart_never_fail():
    """pace_passes.json: noisy_compare's sweep run 4 times quiet (Q) and 4 times under one memory-bound competitor (M),
    alternating, with a ccp that records the pace (schema 8). Judged pass by pass, 10 of the 56 ordered pairs failed
    (Q1's 2-request cell at 0.90-1.23 ms of CPU a pass, Q2's at 2.84-2.96: every pass apart, 2.82x); with the 6x
    two runs' CPU time alone must pass, none does."""
    codes = {(a, b): judge_recorded.gate(RUNS8, a, b, GATE)[0] for a, b in itertools.permutations(IDENTICAL8, 2)}
    assert [pair for pair, code in codes.items() if code == 1] == []
    assert sum(code == 0 for code in codes.values()) >= 35
    v = judge(*(replace(Sample.from_record(RUNS8[k]["4x32x32x64 | none | read 4x32x32x64"]), origin=k)
                for k in ("Q1", "Q2")), GATE)
    assert v.word == "undecided" and "within the 6x the same work's CPU time per pass moves between two runs" in v.why
    # the same two samples as passes of one process (compare --remeasure) are judged by the pass's own bar
    same = judge(*(replace(Sample.from_record(RUNS8[k]["4x32x32x64 | none | read 4x32x32x64"]), origin="remeasure")
                   for k in ("Q1", "Q2")), GATE)
    assert same.word == "slower"


RUNS14 = json.loads((judge_recorded.FIXTURE.parent / "breaker14_passes.json").read_text())
BASELINES14 = ["P_Q1", "P_Q2", "P_Q3", "P_Q4", "P_Q5", "P_Q6", "P_Q7", "P_Q8", "P_Q9", "P_M1", "P_M2", "P_C1"]
PLANTS14 = ["P_cpu20", "P_cpu20b", "P_cpu500", "P_Mcpu20", "P_sleep", "P_bounce", "P_cache", "P_Mbounce"]


@pytest.mark.parametrize("names", [BASELINES14, ["X_Q1", "X_M1", "X_Q2", "X_M2", "X_Q3", "X_C1"]],
                         ids=["b14s3-h5py-lowlevel", "b14s8-two-request-cells"])
def test_breaker14_identical_runs_never_fail(names):
    """breaker14_passes.json: a tester's runs of two sweeps, no competitor of the tester's (Q: other agents' load, 2.2-5.5),
    under two busy loops (C) or a memory-bound copy loop (M). X_Q1 -> X_Q3's 2-request native cell: CPU time per pass
    4.05x, every pass apart, shares 0.94 and 0.86 (E1): within the 6x between two runs."""
    codes = {(a, b): judge_recorded.gate(RUNS14, a, b, GATE)[0] for a, b in itertools.permutations(names, 2)}
    assert [pair for pair, code in codes.items() if code == 1] == []


def test_breaker14_planted_regressions_never_pass():
    """12 baselines x 8 plants (20 or 500 us of CPU before each read, a 200 us sleep, a bounce buffer copying 4x the
    bytes read, a chunk cache 1/8 its size; quiet or under a memory-bound competitor): none exits 0. E2's pair (a
    baseline whose passes got 0.51 of a CPU, its CPU time raised 3.7x by that, against the bounce plant at 1.31x of
    it) passed as the machine's by its run delay: a crowded baseline's CPU time shows nothing the same."""
    codes = {(a, b): judge_recorded.gate(RUNS14, a, b, GATE)[0] for a in BASELINES14 for b in PLANTS14}
    assert [pair for pair, code in codes.items() if code == 0] == []
    assert codes[("P_Q9", "P_Mbounce")] == 3 and sum(code == 1 for code in codes.values()) >= 20


def test_a_regression_beyond_what_competitors_cost_is_one():
    """breaker14 E3: 500 us of CPU before each read, its passes' share of a CPU cut (by the plant's own spinning on a
    busy machine): CPU time per pass 26.8x, beyond the 5.3x competitors were seen to cost: slower, not undecided."""
    label = "1x64x64x64 | none | read 1x1x64x64"
    v = judge(*(replace(Sample.from_record(RUNS14[k][label]), origin=k) for k in ("P_Q1", "P_cpu500")), GATE)
    assert v.word == "slower" and "26.8x" in v.why, v


@pytest.mark.parametrize("a, b", [("Q1", "P1"), ("Q2", "P2"), ("Q3", "PM1"), ("Q4", "PM2"), ("M1", "PM1"),
                                  ("M2", "PM2")], ids=lambda x: str(x))
def test_a_regression_beyond_what_two_runs_differ_by_fails(a, b):
    """B spins 200 us of CPU before every read (noisy_compare's planted CPU regression), quiet (P) or under the
    memory-bound competitor (PM): its 256-request cells' CPU time per pass 13x A's: exit 1."""
    assert judge_recorded.gate(RUNS8, a, b, GATE)[0] == 1


def test_identical_runs_never_fail_the_gate():
    codes = {(a, b): _exit(a, b) for a, b in itertools.permutations(IDENTICAL, 2)}
    assert [pair for pair, code in codes.items() if code == 1] == []
    # 25 pass; the rest are undecided (exit 3: a baseline under competitors, a CPU time moved, a wall time apart
    # that nothing recorded explains: these runs predate the run delay)
    assert sum(code == 0 for code in codes.values()) == 24


def test_identical_runs_that_record_their_wait_for_a_cpu():
    """The wall time a competitor costs is time runnable, not running: less it, identical work is within the
    threshold, "the machine's"; the "moved only ... undecided" cells left among these 30 pairs are those whose faster
    side was crowded (its CPU time raised by its competitors shows nothing the same: breaker14 E2)."""
    codes = {(a, b): judge_recorded.gate(RUNS7, a, b, GATE) for a, b in itertools.permutations(IDENTICAL7, 2)}
    assert [pair for pair, (code, _) in codes.items() if code == 1] == []
    assert sum(code == 0 for code, _ in codes.values()) >= 5
    whys = [v.why for a, b in codes for _, v, _ in judge_recorded.verdicts(RUNS7, a, b, GATE)]
    assert any("waited" in w and "for a CPU" in w and "the machine's" in w for w in whys)
    assert all("its competitors raised its CPU time per pass too" in w for w in whys
               if "moved only" in w and "cannot clear" in w)


@pytest.mark.parametrize("a, b", [("Q1", "S1"), ("Q2", "S2"), ("Q3", "S1"), ("Q1", "SC1"), ("Q2", "SC2"),
                                  ("C1", "SC1"), ("C2", "SC2"), ("C3", "SC1"), ("C1", "S1"), ("C3", "S2")],
                         ids=lambda x: str(x))
def test_a_wait_regression_never_passes(a, b):
    """B sleeps 200 us in every read (51 ms a pass), quiet or under 3 busy loops: its share of a CPU falls as a
    competitor's would, but its run delay does not explain its wall time (breaker13 E1: the share did, exit 0)."""
    assert judge_recorded.gate(RUNS7, a, b, GATE)[0] != 0


@pytest.mark.parametrize("a, b, label", [
    ("A2", "A", "4x32x32x64 | none"),
    ("F2", "A", "4x32x32x64 | none"),
    ("Q5", "Q6", "1x32x32x64 | none"),
], ids=["D1-cpu-2.51x-not-apart", "D1-cpu-2.58x-not-apart", "D1-cpu-1.68x-both-at-0.3-of-a-cpu"])
def test_breaker12_d1_cells_are_undecided(a, b, label):
    sa, sb = Sample.from_record(RUNS[a][label]), Sample.from_record(RUNS[b][label])
    v = judge(sa, sb, GATE)
    assert v.word == "undecided", v


@pytest.mark.parametrize("a, b, code", [
    ("Ab1", "Bq1", 3), ("Ab2", "Bq2", 3), ("Ab3", "Bq3", 3), ("Ac4", "Bc4", 3), ("Ac5", "Bc5", 3),
    ("Ac6", "Bc6", 3), ("Ac7", "Bc7", 3), ("Ac8", "Bc8", 3), ("Ac9", "Bc9", 3), ("R1", "S1", 3), ("R2", "S2", 3),
], ids=lambda x: str(x))
def test_a_planted_regression_never_passes(a, b, code):
    """B spins 8-30 us of extra CPU in every read; A quiet (R) or under 3 busy loops (Ab, Ac): B's CPU time per pass
    1.5-2.5x A's, within the 6x two runs of identical work can differ by (breaker14 E1: 4.05x):
    exit 3, never 0. A planted regression beyond it fails (test_a_regression_beyond_what_two_runs_differ_by_fails)."""
    assert _exit(a, b) == code


@pytest.mark.parametrize("a, b", [("Iq1", "Ib1"), ("Iq2", "Ib2"), ("Iq3", "Ib3"), ("Q1", "M1"), ("M1", "Q1"),
                                  ("Q2", "M2"), ("M2", "Q2")], ids=lambda x: str(x))
def test_identical_work_under_competitors_never_fails(a, b):
    assert _exit(a, b) != 1


FIVE = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
SAME = (("requests", 256.0), ("raw_reads", 8.0), ("raw_read_bytes", 2_097_152.0))


def _s(wall_ms: float, cpu_ms: float, delay_ms: float | None, share: float = 0.5, load: float = 4.0) -> Sample:
    recorded = {} if delay_ms is None else {"run_delay": FIVE * delay_ms * 1e-3, "span": FIVE * wall_ms * 1e-3}
    return Sample(wall_ms * 1e-3, FIVE * wall_ms * 1e-3, np.zeros(0), 256.0, cpu=FIVE * cpu_ms * 1e-3, work=SAME,
                  load=load, cpus=2.0, cpu_share=share, timed=256.0, **recorded)


@pytest.mark.parametrize("wall_b, delay_a, delay_b, word, words", [
    (33.8, 0.5, 14.0, "noise", "the slower side's passes waited 14 ms a pass for a CPU (runnable, not running), the "
                               "faster's 0.5 ms; less that wait they are 1.0x the faster's: the machine's"),
    (33.8, 0.5, 2.0, "undecided", "less the time they waited for a CPU (runnable, not running) its passes are still "
                                  "beyond the threshold: they waited for something else"),
    (33.8, None, None, "undecided", "the rule cannot clear it"),
], ids=["run-delay-explains", "a-wait-it-does-not-explain", "not-recorded"])
def test_the_same_work_waiting_for_a_cpu_is_the_machines(wall_b, delay_a, delay_b, word, words):
    """The same work, the same CPU time per pass (1.05x), B's passes apart and 1.67x slower in wall time: the machine's
    when B's passes less their wait for a CPU are within the threshold of A's less theirs; a wait the run delay does not
    explain (a sleep, a lock) is not; runs without the run delay (before schema 7) are not excused by the share."""
    a = _s(20.25, 22.26, delay_a, share=0.97, load=3.1)
    b = _s(wall_b, 23.4, delay_b, share=0.43, load=3.2)
    v = judge(a, b, 1.5)
    assert v.word == word and words in v.why, v


def test_a_cell_waiting_on_gets_is_never_excused_by_its_run_delay():
    """An S3 cell's wall time holds its GET waits: rule (2) and the passes judge those, never the run delay."""
    a = _s(20.25, 22.26, 0.5, share=0.97, load=3.1)
    b = Sample(**{**_s(33.8, 23.4, 14.0, share=0.43).__dict__, "wait": FIVE * 10e-3})
    v = judge(a, b, 1.5)
    assert v.word == "undecided", v
