"""The machine's pace (schema 8): a reference memory copy timed just after each pass. A memory-bound competitor raised
a 2-request pass's own CPU time 2.35x, every pass apart, at 0.92 of a CPU and 0.3 ms of run delay a pass
(benchmarks/noisy_compare.py F, identical work): no share, load or run delay shows it, the copy does. The CPU time's
bar is widened by the pace ratio, never narrowed."""

from __future__ import annotations

import numpy as np
import pytest

from ccp.measurement.passes import PACE_BYTES, pace_probe
from ccp.report.competitors import pace_ratio
from ccp.report.sample import Sample
from ccp.report.stats import cpu_bar, judge

FIVE = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
SAME = (("requests", 2.0), ("raw_reads", 8.0), ("raw_read_bytes", 2_097_152.0))


def _s(wall_ms: float, cpu_ms: float, pace_ms: float | None, share: float = 0.92) -> Sample:
    """A 2-request cell's five passes: wall and CPU ms a pass, its run delay 0.3 ms, the pace after each (None: a run
    before schema 8)."""
    paced = {} if pace_ms is None else {"pace": FIVE * pace_ms * 1e-3}
    return Sample(wall_ms * 1e-3, FIVE * wall_ms * 1e-3, np.zeros(0), 2.0, cpu=FIVE * cpu_ms * 1e-3, work=SAME,
                  load=1.0, cpus=2.0, cpu_share=share, timed=2.0, run_delay=FIVE * 0.3e-3, span=FIVE * wall_ms * 1e-3,
                  **paced)


@pytest.mark.parametrize("pace_a, pace_b, word, words", [
    (0.60, 0.97, "undecided", "within the 2.42x the machine's pace explains"),
    (0.60, 0.60, "slower", "CPU time per pass 2.35x (beyond 1.5x)"),
    (None, None, "slower", "CPU time per pass 2.35x (beyond 1.5x)"),
    (0.60, None, "slower", "CPU time per pass 2.35x (beyond 1.5x)"),
    (0.97, 0.60, "slower", "CPU time per pass 2.35x (beyond 1.5x)"),
], ids=["memory-competitor-on-B", "same-pace", "not-recorded", "one-side-recorded", "competitor-on-A-narrows-nothing"])
def test_the_pace_widens_the_cpu_bar(pace_a, pace_b, word, words):
    """noisy_compare F's cell: B's CPU time per pass 2.35x A's, every pass apart, the share and run delay showing
    nothing. With B's pace 1.62x A's (the copy slowed as the pass did) the rule cannot clear it; the same numbers
    without a pace change, or without the pace recorded on both sides, are a regression as before."""
    a, b = _s(0.57, 0.74, pace_a), _s(1.42, 1.74, pace_b)
    v = judge(a, b, 1.5)
    assert v.word == word and words in v.why, v


def test_a_regression_beyond_the_widened_bar_is_still_one():
    """A CPU regression larger than the pace explains: slower, and the bar says the pace was in it."""
    a, b = _s(0.57, 0.74, 0.60), _s(2.60, 2.96, 0.97)
    v = judge(a, b, 1.5)
    assert v.word == "slower" and "(beyond 2.42x, the machine's pace included)" in v.why, v


def test_the_bar_is_never_narrowed():
    a, b = _s(0.57, 0.74, 0.97), _s(1.42, 1.74, 0.60)
    assert pace_ratio(a, b) == 1.0 and pace_ratio(b, a) == pytest.approx(0.97 / 0.60)
    assert cpu_bar(a, b, 1.5) == 1.5 and cpu_bar(b, a, 1.5) == pytest.approx(1.5 * 0.97 / 0.60)


def test_the_pace_survives_a_record():
    s = _s(1.42, 1.74, 0.97)
    assert np.array_equal(Sample.from_record(s.to_record()).pace, s.pace)


def test_the_probe_times_one_copy_of_this_thread():
    """Seconds of this thread's CPU time for one PACE_BYTES copy: positive and well under a second."""
    t = [pace_probe() for _ in range(3)]
    assert all(0 < x < 1.0 for x in t) and PACE_BYTES >= 1 << 20
