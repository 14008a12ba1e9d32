"""Every verdict judge gives says what decided it (``Verdict.basis``), consistently with its word: the headline and
the tables sort verdicts by that basis, never by the words of the reason, which change as the rule's wording does."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccp.report.stats import BASES, ENDPOINT, LOAD, NOTHING, PASSES, THRESHOLD_BASIS, WORK, Sample, judge
from ccp.report.verdict_kinds import DIFFERS, kind
from ccp.report.verdict_kinds import LOAD as LOAD_KIND

W = (("requests", 64.0), ("raw_reads", 16.0), ("raw_read_bytes", 16_777_216.0))
MORE = (("requests", 64.0), ("raw_reads", 32.0), ("raw_read_bytes", 33_554_432.0))


@st.composite
def samples(draw):
    n = draw(st.integers(0, 8))
    scale = draw(st.sampled_from([0.001, 0.01, 1.0, 3.0]))
    passes = np.asarray(draw(st.lists(st.floats(0.5, 5.0), min_size=n, max_size=n)), float) * scale
    cpu_share = draw(st.sampled_from([None, 0.2, 0.9, 1.0]))
    cpu = np.zeros(0) if cpu_share is None else passes * cpu_share
    complete = draw(st.booleans()) or n == 0
    time_s = float(np.median(passes)) if n else draw(st.sampled_from([scale, float("nan"), 0.0]))
    return Sample(time_s, passes, np.zeros(0), 64.0, complete, cpu=cpu, work=draw(st.sampled_from([(), W, MORE])),
                  contended=draw(st.booleans()), load=draw(st.sampled_from([float("nan"), 0.5, 2.0, 7.9])),
                  cpus=2.0, timed=64.0 if complete else 8.0, path=draw(st.sampled_from([(), ("s3", "20 ms")])),
                  pass_busy=np.asarray([draw(st.booleans()) for _ in range(n)], bool))


@settings(suppress_health_check=[HealthCheck.too_slow])    # the first draw pays numpy's and judge's first calls
@given(samples(), samples(), st.sampled_from([1.25, 1.5, 3.0]))
def test_every_verdict_says_what_decided_it(a, b, threshold):
    v = judge(a, b, threshold)
    assert v.basis in BASES, v
    if v.differs:
        assert v.basis in (WORK, ENDPOINT, PASSES), v
    if v.word == "tie":
        assert v.basis == THRESHOLD_BASIS, v
    if v.word == "unknown":
        assert v.basis == NOTHING, v
    # the load decides only what it cannot tell apart: never a difference
    assert (kind(v, a, b) == LOAD_KIND) == (v.basis == LOAD), v
    assert kind(v, a, b) != DIFFERS or v.basis != LOAD, v


def test_a_load_excused_slowdown_is_based_on_the_load():
    five = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
    quiet = Sample(0.0075, five * 0.0075, np.zeros(0), 64.0, cpu=five * 0.0077, work=W, load=0.8, cpus=2.0)
    busy = Sample(0.015, five * 0.015, np.zeros(0), 64.0, cpu=five * 0.0077, work=W, contended=True, load=3.8,
                  cpus=2.0)
    v = judge(quiet, busy)
    assert (v.word, v.basis) == ("noise", LOAD), v
    assert kind(v, quiet, busy) == LOAD_KIND
