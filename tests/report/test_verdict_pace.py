"""The machine's pace (schema 8): one 4 MiB memory copy timed just after each pass, recorded (``pass_pace_s``) and
read into each Sample. The rule does not read it: on a tester's runs it did not follow a memory-bound competitor in 4
sweeps and moved +-30% between sibling cells of one run (breaker14 E4), so a bar it widened was widened at random."""

from __future__ import annotations

import numpy as np

from ccp.measurement.passes import PACE_BYTES, pace_probe
from ccp.report.sample import Sample
from ccp.report.stats import judge

FIVE = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
SAME = (("requests", 2.0), ("raw_reads", 8.0), ("raw_read_bytes", 2_097_152.0))


def _s(wall_ms: float, cpu_ms: float, pace_ms: float | None) -> Sample:
    paced = {} if pace_ms is None else {"pace": FIVE * pace_ms * 1e-3}
    return Sample(wall_ms * 1e-3, FIVE * wall_ms * 1e-3, np.zeros(0), 2.0, cpu=FIVE * cpu_ms * 1e-3, work=SAME,
                  load=1.0, cpus=2.0, cpu_share=0.92, timed=2.0, run_delay=FIVE * 0.3e-3, span=FIVE * wall_ms * 1e-3,
                  **paced)


def test_the_rule_does_not_read_the_pace():
    a, b = _s(0.57, 0.74, 0.60), _s(1.42, 1.74, 0.97)
    assert judge(a, b, 1.5) == judge(_s(0.57, 0.74, None), _s(1.42, 1.74, None), 1.5)


def test_the_pace_survives_a_record():
    s = _s(1.42, 1.74, 0.97)
    assert np.array_equal(Sample.from_record(s.to_record()).pace, s.pace)


def test_the_probe_times_one_copy_of_this_thread():
    """Seconds of this thread's CPU time for one PACE_BYTES copy: positive and well under a second."""
    t = [pace_probe() for _ in range(3)]
    assert all(0 < x < 1.0 for x in t) and PACE_BYTES >= 1 << 20
