"""breaker9's findings on `ccp compare`'s verdict rule (issue 22: verdicts a busy machine cannot fake): the load may
excuse a slowdown only within what a known, really higher load per CPU explains and with the CPU time within its bar;
counts decide only when they differ materially and were measured; whatever the rule cannot clear is undecided."""

import re
import socket

import numpy as np
import pytest

from ccp.report.run_samples import host_is_this_machine
from ccp.report.stats import Sample, judge
from ccp.units import format_seconds

FIVE = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
TEN = np.linspace(0.98, 1.02, 10)
W = (("requests", 64.0), ("raw_reads", 16.0), ("raw_read_bytes", 16_777_216.0))
MIX = (("requests", 64.0), ("raw_reads", 4.0), ("raw_read_bytes", 67_108_864.0))          # fewer, bigger reads
LESS_BYTES = (("requests", 64.0), ("raw_reads", 16.0), ("raw_read_bytes", 16_525_558.0))  # 1.5% fewer bytes
TINY_MORE = (("requests", 64.0), ("raw_reads", 16.0), ("raw_read_bytes", 16_778_893.0))   # +0.01%
NAN = float("nan")


def _s(passes, cpu=None, work=W, contended=False, load=0.8, cpus=2.0, complete=True, busy=()):
    passes = np.asarray(passes, float)
    cpu = passes * 0.9 if cpu is None else np.asarray(cpu, float)
    return Sample(float(np.median(passes)), passes, np.zeros(0), 64.0, complete, cpu=cpu, work=work,
                  contended=contended, load=load, cpus=cpus, timed=2.0 if not complete else 64.0,
                  pass_busy=np.asarray(busy, bool))


QUIET = _s(FIVE * 0.0075, FIVE * 0.0077)                  # runs/A2q: a quiet baseline, load 0.8 on 2 CPUs


@pytest.mark.parametrize("a, b, word, why", [
    # G1: the malloc regression (same I/O, CPU time per pass 4.2x, wall 3.6x), B alone contended: a real slowdown
    (QUIET, _s(FIVE * 0.027, FIVE * 0.0323, contended=True, load=3.1), "slower", "CPU time per pass 4.19x"),
    # G1 J1: 10x, CPU 10x, load 2.1/2: no load explains 10x
    (_s(FIVE, FIVE), _s(FIVE * 10, FIVE * 10, contended=True, load=2.1), "slower", "CPU time per pass 10x"),
    # G1: the load explains the wall time, the CPU time did not move: the machine's
    (QUIET, _s(FIVE * 0.015, FIVE * 0.0077, contended=True, load=3.8), "noise", "explains up to 2.85x"),
    # G1: beyond what the load explains, CPU unmoved: undecided, never the machine's
    (QUIET, _s(FIVE * 0.03, FIVE * 0.0077, contended=True, load=3.8), "undecided", "explains only up to 2.85x"),
    # G1c: one pass of B (3x, CPU 3x) contended against 5 quiet: cannot judge, whatever the contention
    (QUIET, _s([0.0225], [0.0231], contended=True, load=3.1), "undecided", "too few passes"),
    (_s(FIVE[:3] * 0.0075, FIVE[:3] * 0.0077), _s(FIVE[:3] * 0.0225, FIVE[:3] * 0.0077, contended=True, load=7.9),
     "undecided", "too few passes"),
    # G1c: one busy pass of five: judged on the four quiet ones, which its load does not excuse
    (QUIET, _s([0.012, 0.0121, 0.0119, 0.0122, 0.04], FIVE * 0.0077, contended=True, load=3.8,
               busy=[False] * 4 + [True]), "undecided", "its quiet passes had no load to excuse them"),
    # G2: fewer, bigger reads (raw reads 16 -> 4, bytes 4x), 3.6x slower under contention: different work, real
    (QUIET, _s(FIVE * 0.027, FIVE * 0.0077, work=MIX, contended=True, load=3.1), "slower",
     "different work: raw reads 16 -> 4, raw read bytes 16,777,216 -> 67,108,864 (up on the slower side: raw read "
     "bytes"),
    # G2 J3: 1.5% fewer bytes, 3x slower, CPU 3x: less work yet slower: the passes and the CPU time decide
    (QUIET, _s(FIVE * 0.0225, FIVE * 0.0231, work=LESS_BYTES, contended=True, load=3.1), "slower", "CPU time per pass 3x"),
    # G7: equal loads (every --remeasure) are not "more": 10 v 10 apart, CPU 1.44x
    (_s(TEN, TEN, contended=True, load=8.4), _s(TEN * 1.3, TEN * 1.44, contended=True, load=8.4), "slower",
     "CPU time per pass 1.44x (beyond 1.25x)"),
    # G7: 2 v 2 alternating passes at 1.27x under equal load: undecided, not the machine's
    (_s(FIVE[:2], FIVE[:2], contended=True, load=7.6), _s(FIVE[:2] * 1.27, FIVE[:2], contended=True, load=7.6),
     "undecided", "too few passes"),
    # G21: B extrapolated from 2 requests with "more" counts: estimates, never rule (1)
    (_s(FIVE * 0.19, FIVE * 0.1), _s(FIVE * 4.1, FIVE * 0.1, work=(("requests", 64.0), ("raw_reads", 2000.0)),
                                     complete=False), "undecided", "B extrapolated from 2 of 64 requests a pass"),
    # G21: an extrapolated S3 cell against a local one: the kind of work is no estimate
    (_s(FIVE * 0.19, FIVE * 0.1), Sample(4.1, FIVE * 4.1, np.zeros(0), 64.0, False, path=("s3", "", "", "", "", ""),
                                         work=(("requests", 64.0), ("http_gets", 70.0))),
     "slower", "different work: 16 raw reads (local) against 70 GETs (S3)"),
    # G22: +0.01% of the bytes explains nothing; the load explains the 2x with the CPU time unmoved
    (QUIET, _s(FIVE * 0.015, FIVE * 0.0077, work=TINY_MORE, contended=True, load=3.8), "noise", "the machine's"),
    # G3: the slower side's load not recorded (NaN, inf): no excuse, whatever the flags
    (_s(FIVE * 0.0075, FIVE * 0.0077, contended=True, load=3.0), _s(FIVE * 0.027, FIVE * 0.0077, contended=True, load=NAN),
     "undecided", "the load is not known on both sides"),
    (_s(FIVE * 0.0075, FIVE * 0.0077, contended=True, load=3.0),
     _s(FIVE * 0.027, FIVE * 0.0077, contended=True, load=float("inf")), "undecided", "not known"),
    # G4: a load of 1e9, 0 or NaN CPUs: not a load
    (QUIET, _s(FIVE * 0.027, FIVE * 0.0077, contended=True, load=1e9), "undecided", "not known"),
    (QUIET, _s(FIVE * 0.027, FIVE * 0.0077, contended=True, load=3.1, cpus=0), "undecided", "not known"),
    (QUIET, _s(FIVE * 0.027, FIVE * 0.0077, contended=True, load=3.1, cpus=NAN), "undecided", "not known"),
    # G5: passes not apart (5 v 5) but CPU time 4x: undecided, never the machine's
    (QUIET, _s([0.006, 0.03, 0.005, 0.031, 0.032], FIVE * 0.031, contended=True, load=3.1), "undecided",
     "but the passes are not apart"),
    # G6: a run that recorded no load and no flag (schema 3) is not "quiet": no excuse for the other side
    (_s(FIVE * 0.0075, FIVE * 0.0077, load=NAN, cpus=NAN), _s(FIVE * 0.015, FIVE * 0.0077, contended=True, load=3.1),
     "undecided", "not known"),
    # G6: fastest / median / slowest of a cells row (no requests.parquet) are no sample of passes to test
    (Sample(0.016, np.array([0.012, 0.016, 0.03]), np.zeros(0), summary=True),
     _s([0.02, 0.035, 0.026, 0.027, 0.028], contended=True, load=7.6), "undecided", "nothing to test them with"),
    # G18: per CPU: 70 on 64 CPUs is less than 3 on 2; the reverse gets no excuse either
    (_s(FIVE, FIVE, contended=True, load=3.0), _s(FIVE * 1.4, FIVE * 1.4, contended=True, load=70.0, cpus=64.0),
     "slower", "CPU time per pass 1.4x (beyond 1.25x)"),
    (_s(FIVE, FIVE, contended=True, load=70.0, cpus=64.0), _s(FIVE * 1.4, FIVE * 1.4, contended=True, load=3.0),
     "undecided", "the slower side's load per CPU was not really higher"),
    # G19: 5 passes against 1: never "one pass each"
    (QUIET, _s([0.0225]), "undecided", "the pass test on 5 vs 1 passes"),
], ids=["G1-cpu-regression-contended", "G1-J1-10x", "G1-load-explains", "G1-beyond-the-load", "G1c-one-pass",
        "G1c-three-passes", "G1c-one-busy-pass", "G2-mixed-work", "G2-less-bytes-cpu-moved", "G7-equal-load-10v10",
        "G7-equal-load-2v2", "G21-extrapolated-counts", "G21-extrapolated-kind", "G22-immaterial-count", "G3-load-nan", "G3-load-inf",
        "G4-load-huge", "G4-cpus-0", "G4-cpus-nan", "G5-cpu-moved-passes-not-apart", "G6-no-load-not-quiet", "G6-min-median-max",
        "G18-per-cpu", "G18-per-cpu-reverse", "G19-five-vs-one"])
def test_the_load_excuses_only_what_it_explains(a, b, word, why):
    v = judge(a, b)
    assert v.word == word and why in v.why, v
    if word != "noise":
        assert "the machine's" not in v.why


@pytest.mark.parametrize("time_a, time_b", [(1.0, float("inf")), (1.0, float("nan")), (1.0, 0.0), (1.0, -1.0),
                                            (float("inf"), 1.0)],
                         ids=["b-inf", "b-nan", "b-zero", "b-negative", "a-inf"])
def test_a_time_that_is_no_time_is_never_judged(time_a, time_b):
    """G17: inf, NaN, 0 or a negative time: "unknown", said which, never an error and never a ratio."""
    a = Sample(time_a, np.array([1.0]), np.zeros(0))
    b = Sample(time_b, np.array([1.0]), np.zeros(0))
    v = judge(a, b)
    assert v.word == "unknown" and "no usable time" in v.why and not np.isfinite(v.ratio), v
    assert "e+" not in v.why


@pytest.mark.parametrize("seconds, text", [(-1.0, "-1 s"), (float("inf"), "infinite"), (-0.002, "-2 ms")],
                         ids=["minus-one", "inf", "minus-2ms"])
def test_a_damaged_time_reads_as_it_is(seconds, text):
    """G19: never "-1e+09 ns"."""
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("host, here", [
    ("localhost", True), ("localhost.", True), ("LocalHost", True), ("127.0.0.1", True), ("127.1", True),
    ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("::ffff:127.0.0.1", True), ("0.0.0.0", True), ("::", True),
    (socket.gethostname(), True), (socket.gethostname().upper() + ".", True),
    ("example.com", False), ("10.0.0.1", False), ("192.168.1.10", False), ("s3.amazonaws.com", False), ("", False),
], ids=lambda v: str(v) if not isinstance(v, bool) else "")
def test_the_loopback_guard_goes_by_meaning(host, here):
    """G14: an endpoint on this machine, however it is spelled (no DNS lookup: offline it must not hang)."""
    assert host_is_this_machine(host) is here


def _cli(*args):
    from click.testing import CliRunner

    from ccp.cli import main

    return CliRunner().invoke(main, ["compare", *map(str, args)])


def _set_time(run, value):
    """One ok cell of a run folder given ``value`` as its time (cells.parquet and cells.csv), as a damaged run has."""
    import pandas as pd

    cells = pd.read_parquet(run / "cells.parquet")
    i = cells.index[cells["status"] == "ok"][0]
    cells.loc[i, "time_s"] = value
    cells.to_parquet(run / "cells.parquet", index=False)
    cells.to_csv(run / "cells.csv", index=False)
    return str(cells.loc[i, "label"]) if "label" in cells else ""


@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), float("nan")], ids=["zero", "negative", "inf", "nan"])
def test_a_b_cell_without_a_usable_time_is_not_a_pass(make_run, value):
    """G17: under a gate, a B cell whose time is 0, negative, infinite or missing was not compared: exit 3 with the
    reason, never a pass and never an internal error."""
    a = make_run("a", tables=False)
    b = make_run("b", tables=False)
    _set_time(b, value)
    r = _cli(a, b, "--fail-above", "1.5")
    assert r.exit_code == 3, r.output
    assert "internal error" not in r.output and "e+" not in r.output.split("where a difference")[0]
    assert "no usable time" in r.output or "not compared" in r.output
    assert not re.search(r" -\d[\d.]*x ", r.output), r.output        # no ratio of a negative time (G19)


def test_a_threshold_above_the_gate_is_refused(make_run):
    """G16: --threshold 3 --fail-above 1.5 would fail cells the table calls ties: one line, exit 2."""
    a = make_run("a", tables=False)
    r = _cli(a, a, "--threshold", "3", "--fail-above", "1.5")
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "--threshold 3 is above --fail-above 1.5" in r.output
    assert _cli(a, a, "--fail-above", "1.1").exit_code == 0      # the default threshold: the gate judges at 1.1


@pytest.mark.parametrize("wall_factor, witness", [(1.02, True), (1.9, True), (2.5, False), (9.0, False)],
                         ids=["timed-is-the-pass", "timed-over-half", "timed-under-half", "mostly-harness"])
def test_a_pass_mostly_harness_has_no_cpu_witness(make_run, wall_factor, witness):
    """G8: a pass's CPU time spans the whole pass (the loop's setup, the file open); when the timed part is under half
    of it, the CPU time measures ccp's overhead, not the reads: no witness (the wall time alone then decides nothing)."""
    import pandas as pd

    from ccp.report.run_samples import samples

    run = make_run("a", tables=False)
    cells = pd.read_parquet(run / "cells.parquet")
    cid = str(cells.loc[cells["status"] == "ok", "cell_id"].iloc[0])
    part = run / "requests.parquet" / f"{cid}.parquet"
    req = pd.read_parquet(part)
    totals = req[req["pass"] >= 0].groupby("pass")["time_s"].sum()
    opens = (req["phase"] == "open") & (req["pass"] >= 0)
    req.loc[opens, "pass_wall_s"] = req.loc[opens, "pass"].map(totals).to_numpy(float) * wall_factor
    req.to_parquet(part, index=False)
    s = samples(run, cells)[cid]
    assert (len(s.cpu) == len(s.passes)) is witness, s.cpu


@pytest.mark.parametrize("b, remeasured", [
    (_s(FIVE * 0.0225, FIVE * 0.0077, work=TINY_MORE, contended=True, load=3.1), True),     # +0.01%: no rule (1)
    (_s(FIVE * 4.1, FIVE * 0.1, work=(("requests", 64.0), ("raw_reads", 2000.0)), complete=False), True),  # estimates
    (_s(FIVE * 0.0225, FIVE * 0.0077, work=MIX, contended=True, load=3.1), False),           # rule (1) decided
    # breaker10 B2: the passes apart and the CPU time per pass 2.36x at the same load: decided, never remeasured away
    (_s(FIVE * 0.0177, FIVE * 0.0182, load=0.8), False),
    # the passes apart in wall time only, the CPU time unmoved: undecided, remeasured
    (_s(FIVE * 0.0177, FIVE * 0.0077, load=0.8), True),
    # breaker10 B12: one pass each (a --quick run): cannot tell, remeasured (the advice it prints)
    (_s([0.0275], [0.0277], load=0.8), True),
], ids=["G22-immaterial", "G21-extrapolated", "G2-mixed-decided", "B2-cpu-decided", "wall-only-undecided",
        "B12-one-pass-each"])
def test_remeasure_skips_only_what_rule_one_decided(monkeypatch, b, remeasured):
    """--remeasure leaves out the cells rule (1) decided, and those rule (3) decided on the recorded passes and their
    CPU time (breaker10 B2), by the verdict: not a cell whose counts differ by +0.01% (G22) or were extrapolated (G21,
    'never remeasured'), nor one the rule left undecided."""
    import pandas as pd

    from ccp.report import compare, remeasure

    asked = []
    monkeypatch.setattr(remeasure, "interleaved", lambda run_a, run_b, ids, *a, **k: (asked.extend(ids), ({}, []))[1])
    a = (QUIET if len(b.passes) > 1 else _s([0.0075], [0.0077])) if b.complete else \
        _s(FIVE * 0.19, FIVE * 0.1, work=(("requests", 64.0), ("raw_reads", 1869.0)))
    j = pd.DataFrame({"label": ["cell"], "cell_id_a": ["x"], "cell_id_b": ["x"]})
    v = judge(a, b)
    compare._remeasured("A", "B", j, [(a, b)], [v], [None], 4, 1.25, None, lambda *_: None)
    assert bool(asked) is remeasured, v


def test_competitors_the_load_average_has_not_caught_up_with_leave_it_undecided():
    """breaker10 B1: identical work, A right after 8 busy loops ended (the load average a stale 9.0, its passes 0.97
    of a CPU), B under 3 fresh ones (load 7.7 and falling, its passes 0.49 of a CPU, its CPU time per pass 1.57x by
    shared caches): the CPU share says who had competitors; the rule cannot clear it, never 'slower'."""
    a = _s(FIVE * 0.0139, FIVE * 0.016, contended=True, load=9.0)
    b = _s(FIVE * 0.0415, FIVE * 0.0251, contended=True, load=7.7)
    plain = judge(a, b)
    assert plain.word == "slower", plain     # without the CPU shares (a run before them): the passes and CPU decided
    a, b = (Sample(**{**s.__dict__, "cpu_share": share}) for s, share in ((a, 0.97), (b, 0.49)))
    v = judge(a, b)
    assert v.word == "undecided" and "0.49 of a CPU, the faster's 0.97" in v.why, v
    # nor is 2.8x: competitors that cut B's share raised identical work's CPU time per pass 5.3x (noisy_compare F)
    b3 = Sample(**{**b.__dict__, "cpu": FIVE * 0.045})
    assert judge(a, b3).word == "undecided"


def test_one_slow_pass_on_the_faster_side_never_makes_a_regression_the_machines():
    """breaker10 B8: B's five passes 8-17x A's median, the same I/O; one A pass (a load spike) above them all makes the
    U test fail; with no CPU time to show the work per pass the same, that is undecided, never 'the machine's'."""
    a = _s([0.0061, 0.0047, 0.0917, 0.0037, 0.0039], [], load=5.0)
    b = _s([0.050, 0.055, 0.0576, 0.060, 0.065], [], load=5.1)
    v = judge(a, b)
    assert v.word == "undecided" and "no CPU time per pass on both sides" in v.why, v
    # the same passes with the CPU time alike on both sides: the work per pass is the same, the overlap decides
    flat = judge(_s(a.passes, FIVE * 0.004, load=5.0), _s(b.passes, FIVE * 0.004, load=5.1))
    assert flat.word == "noise", flat


@pytest.mark.parametrize("b, cleared", [
    # breaker11 C1: B's CPU per pass 3.3x in every pass, the passes not apart in wall time (undecided): recorded
    (_s([0.0205, 0.0183, 0.0203, 0.0171, 0.0210], FIVE * 0.0171, load=0.8), False),
    # C3: one pass each (a --quick run), B's CPU 6.5x
    (_s([0.0428], [0.037], load=0.8), False),
    # wall time apart, the CPU time per pass unmoved: the remeasure decides
    (_s(FIVE * 0.0177, FIVE * 0.0052, load=0.8), True),
], ids=["C1-cpu-recorded-3x", "C3-one-pass-cpu-6x", "wall-only"])
def test_a_remeasure_never_clears_what_bs_run_recorded_of_its_cpu_time(monkeypatch, b, cleared):
    """--remeasure runs this ccp and HDF5 on both runs' files: a tie there clears a difference of the cells' settings,
    never B's own CPU time per pass beyond the bar, which is in what measured B (breaker11 C1, C3: a 3.3x and a 6.5x
    CPU regression in the code passed the gate after --remeasure)."""
    import pandas as pd

    from ccp.report import compare, remeasure

    a = (_s([0.0125, 0.0122, 0.0119, 0.0350, 0.0121], FIVE * 0.0052, load=0.8) if len(b.passes) > 1 else
         _s([0.0043], [0.0057], load=0.8))
    same = _s(FIVE * 0.0036, FIVE * 0.0034, load=0.8)
    monkeypatch.setattr(remeasure, "interleaved", lambda run_a, run_b, ids, *a_, **k: ({ids[0]: (same, same)}, []))
    j = pd.DataFrame({"label": ["cell"], "cell_id_a": ["x"], "cell_id_b": ["x"], "status_a": ["ok"], "status_b": ["ok"],
                      "time_s_a": [a.time_s], "time_s_b": [b.time_s], "ratio": [b.time_s / a.time_s]})
    v = judge(a, b)
    assert not v.differs, v
    verdicts, gate, _ = compare._remeasured("A", "B", j, [(a, b)], [v], [judge(a, b, 1.5)], 5, 1.25, 1.5,
                                            lambda *_: None)
    assert (verdicts[0].word == "tie") is cleared, verdicts[0]
    if not cleared:
        assert verdicts[0].word == gate[0].word == "undecided" and "B's run recorded" in verdicts[0].why, verdicts[0]
        assert "the difference is in what measured B" in gate[0].why
