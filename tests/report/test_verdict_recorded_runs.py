"""The verdict rule on runs recorded on this shared 2-CPU machine (breaker12, 2026-11-28 04:18-04:50 UTC, load
2.0-6.1): each cell's passes, CPU time per pass, CPU share and load as ``ccp.report.stats.samples`` read them from
the run folders, in data/breaker12_passes.json (extracted with the same reader; the folders were 0.6 MB each).

- Ten runs of one sweep with the same ccp, no competitor of the tester's (A, A2, F1, F2, Q1-Q6): identical work. Of
  their 90 ordered pairs at ``--fail-above 1.5``, 3 failed (exit 1) before this rule: the CPU time per pass 2.51x
  with a pass of A's at 3.30 ms among 6.59-6.92 (the passes not apart in CPU time), and 1.68x between two runs whose
  passes both got 0.29-0.30 of a CPU (breaker12 D1).
- Planted regressions (B spins 8-30 us of CPU in each of 256 reads; A quiet or under 3 busy loops): a gate never
  passes one.
- Identical work under competitors (Iq/Ib: B under 3 busy loops; Q1/M1, Q2/M2: one memory-streaming process)."""

from __future__ import annotations

import importlib.util
import itertools
import json
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


def test_identical_runs_never_fail_the_gate():
    codes = {(a, b): _exit(a, b) for a, b in itertools.permutations(IDENTICAL, 2)}
    assert [pair for pair, code in codes.items() if code == 1] == []
    # the same work waiting for a CPU is the machine's (its passes' share of a CPU explains it): 25 of 90 passed
    # before it, 30 with it; the rest stay undecided (exit 3: a baseline under competitors, or the CPU time moved)
    assert sum(code == 0 for code in codes.values()) >= 30


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
    ("Ab1", "Bq1", 3), ("Ab2", "Bq2", 1), ("Ab3", "Bq3", 1), ("Ac4", "Bc4", 1), ("Ac5", "Bc5", 3),
    ("Ac6", "Bc6", 3), ("Ac7", "Bc7", 3), ("Ac8", "Bc8", 3), ("Ac9", "Bc9", 3), ("R1", "S1", 3), ("R2", "S2", 1),
], ids=lambda x: str(x))
def test_a_planted_regression_never_passes(a, b, code):
    """B spins extra CPU in every read; A quiet (R) or under 3 busy loops (Ab, Ac). Exit 3 where both sides'
    passes got under 0.7 of a CPU (Ab1: 0.20-0.25 and 0.46-0.49; R1: 0.45-0.51 and 0.41-0.85) and B's CPU time per
    pass within the 2.25x competitors can cost, or A's share was cut (Ac5-9)."""
    assert _exit(a, b) == code


@pytest.mark.parametrize("a, b", [("Iq1", "Ib1"), ("Iq2", "Ib2"), ("Iq3", "Ib3"), ("Q1", "M1"), ("M1", "Q1"),
                                  ("Q2", "M2"), ("M2", "Q2")], ids=lambda x: str(x))
def test_identical_work_under_competitors_never_fails(a, b):
    assert _exit(a, b) != 1


FIVE = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
SAME = (("requests", 256.0), ("raw_reads", 8.0), ("raw_read_bytes", 2_097_152.0))


def _s(wall_ms: float, cpu_ms: float, share: float, load: float) -> Sample:
    return Sample(wall_ms * 1e-3, FIVE * wall_ms * 1e-3, np.zeros(0), 256.0, cpu=FIVE * cpu_ms * 1e-3, work=SAME,
                  load=load, cpus=2.0, cpu_share=share, timed=256.0)


@pytest.mark.parametrize("wall_b, share_b, load_b, word, words", [
    (33.8, 0.43, 3.2, "noise", "got 0.43 of a CPU, the faster's 0.97, with more processes than CPUs (load 3.2/2 "
                               "CPUs), which explains up to 3.38x: the machine's"),
    (33.8, 0.43, 1.8, "undecided", "the rule cannot clear it"),
    (70.0, 0.43, 3.2, "undecided", "the rule cannot clear it"),
    (33.8, 0.85, 3.2, "undecided", "the rule cannot clear it"),
], ids=["share-explains", "no-more-processes-than-cpus", "beyond-what-the-shares-explain", "share-not-smaller"])
def test_the_same_work_waiting_for_a_cpu_is_the_machines(wall_b, share_b, load_b, word, words):
    """The same work, the same CPU time per pass (1.05x), B's passes apart and slower in wall time: the machine's when
    B's passes got a really smaller share of a CPU with more processes than CPUs, within 1.5x the shares' ratio
    (breaker12: 38 of 90 compares of identical runs were undecided so); undecided otherwise."""
    a = _s(20.25, 22.26, 0.97, load=3.1)
    b = _s(wall_b, 23.4, share_b, load=load_b)
    v = judge(a, b, 1.5)
    assert v.word == word and words in v.why, v


def test_a_cell_waiting_on_gets_is_never_excused_by_its_share():
    """An S3 cell's share of a CPU is cut by its GET waits, not only by competitors: the share excuse is the local
    cells' (rule (2) and the passes judge the GETs' waits)."""
    a = _s(20.25, 22.26, 0.97, load=3.1)
    b = Sample(**{**_s(33.8, 23.4, 0.43, load=3.2).__dict__, "wait": FIVE * 10e-3})
    v = judge(a, b, 1.5)
    assert v.word == "undecided", v
