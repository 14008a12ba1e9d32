"""breaker11 C2: the CPU time per pass against the wall time. A baseline A measured under competitors (its passes got
a fifth of a CPU) has its wall time inflated; a B whose timed CPU time per pass is 2-3.5x A's, every pass apart, the
same I/O, then looked tied, "not apart" or even faster in wall time, and the gate passed it (exit 0). The CPU time is
the witness: B's cell is never a tie, "not apart", faster or a pass then. It is "slower" when A's passes got a cut
share of a CPU (what kept A's wall time up) and B's CPU time per pass is beyond what competitors can raise it by
(2.25x: identical work's rose 1.9x under one memory-bound process whose CPU share showed nothing); otherwise
undecided. The mirror (A's CPU time per pass beyond B's) is never a regression.

The passes below are breaker11's recorded runs (requests.parquet: each timed pass's wall time and timed_cpu_s, in ms;
cells' cpu_ratio as the CPU share), /tmp/breaker11/runs at 67c676f."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import KIB, _cell, write_run

from ccp.cli import main
from ccp.report.data import normalise
from ccp.report.stats import LOAD, PASSES, Sample, judge
from ccp.report.verdict_kinds import LOAD as LOAD_KIND
from ccp.report.verdict_kinds import kind

MS = 1e-3
SAME = (("requests", 256.0), ("raw_reads", 8.0), ("raw_read_bytes", 2_097_152.0))


def _s(walls_ms, cpu_ms, share, load=6.0):
    walls = np.asarray(walls_ms, float) * MS
    return Sample(float(np.median(walls)), walls, np.zeros(0), 256.0, cpu=np.asarray(cpu_ms, float) * MS, work=SAME,
                  contended=True, load=load, cpus=2.0, cpu_share=share, timed=256.0)


# Ab5 (4 busy loops) / Bq5 (quiet, +30 us of CPU in each of 256 reads), cell 1x32x32x64 | none: B's CPU 2.13x A's
AB5_1X32_A = _s([38.95, 12.06, 4.35, 15.73, 15.75], [9.35, 5.58, 5.56, 5.64, 5.58], 0.25, load=6.1)
AB5_1X32_B = _s([12.9, 10.95, 12.09, 10.75, 10.62], [14.27, 12.02, 11.89, 11.74, 11.65], 0.97, load=6.6)
# the same pair, cell 4x32x32x64 | none: B's CPU 2.46x A's, its wall time 0.64x
AB5_4X32_A = _s([30.85, 27.46, 3.82, 19.99, 23.95], [9.13, 4.53, 5.8, 5.95, 5.99], 0.18, load=5.7)
AB5_4X32_B = _s([20.86, 16.69, 15.41, 13.12, 14.3], [18.63, 13.84, 12.22, 14.63, 15.87], 0.76, load=6.6)
# the same pair, cell 4x32x32x64 | gzip:1: B's CPU 1.58x A's, its wall time 0.40x (apart: B "faster" in wall time)
AB5_GZIP_A = _s([79.49, 79.97, 86.27, 60.03, 107.68], [20.04, 17.11, 18.75, 18.9, 21.6], 0.18, load=5.7)
AB5_GZIP_B = _s([37.63, 31.84, 31.42, 36.26, 31.69], [32.84, 29.81, 29.33, 30.23, 29.41], 0.82, load=6.6)
# Ab2 / Bq2, cell 1x32x32x64 | none: wall 1.06x (a tie), CPU 3.52x
AB2_A = _s([24.98, 2.61, 19.23, 22.82, 3.39], [6.77, 3.78, 4.81, 4.12, 5.04], 0.16, load=4.7)
AB2_B = _s([26.57, 16.4, 20.33, 28.37, 19.07], [20.65, 16.96, 16.25, 16.66, 17.23], 0.71, load=4.9)
# identical work, Am1 (quiet) / Bm1 (one memory-streaming competitor), cell 1x32x32x64 | none: CPU 1.9x, every pass
# apart, the CPU shares equal (0.53, 0.56), the walls overlapping
AM1_A = _s([4.25, 2.16, 2.2, 2.03, 6.38], [5.61, 3.09, 3.18, 2.97, 3.3], 0.53, load=3.1)
AM1_B = _s([6.34, 4.22, 3.74, 3.81, 8.06], [8.82, 6.27, 5.69, 5.76, 6.02], 0.56, load=3.3)
# a stronger such competitor: the same B with its CPU time per pass 1.25x more (2.4x A's), the shares still equal
AM1_B_MORE = _s(AM1_B.passes / MS, AM1_B.cpu / MS * 1.25, 0.56, load=3.3)


@pytest.mark.parametrize("a, b, threshold, word, basis, why", [
    (AB5_1X32_A, AB5_1X32_B, 1.5, "undecided", LOAD, "B's CPU time per pass 2.13x A's (every pass apart, beyond "
                                                     "1.5x) while its wall time is 0.696x: A's passes got 0.25 of a CPU, "
                                                     "B's 0.97: "),
    (AB5_1X32_A, AB5_1X32_B, 1.25, "undecided", LOAD, "A's passes got 0.25 of a CPU, B's 0.97"),
    # 2.46x is within the 3x identical work's CPU time rose with no share to show it (breaker12 D1: 2.51x)
    (AB5_4X32_A, AB5_4X32_B, 1.5, "undecided", LOAD, "B's CPU time per pass 2.46x A's"),
    (AB5_4X32_A, AB5_4X32_B, 1.25, "undecided", LOAD, "the CPU time alone decides only beyond 3x"),
    (AB5_GZIP_A, AB5_GZIP_B, 1.5, "undecided", LOAD, "B's CPU time per pass 1.58x A's"),
    (AB2_A, AB2_B, 1.5, "slower", PASSES, "B's CPU time per pass 3.53x A's"),
    (AB2_A, AB2_B, 1.25, "slower", PASSES, "A's passes got 0.16 of a CPU, B's 0.71"),
    (AM1_A, AM1_B, 1.5, "undecided", PASSES, "CPU time per pass 1.89x (beyond 1.5x) but the passes are not apart"),
    (AM1_A, AM1_B_MORE, 1.5, "undecided", PASSES, "CPU time per pass 2.37x (beyond 1.5x) but the passes are not apart"),
], ids=["C2-A-cut-B-2.1x-gate", "C2-A-cut-B-2.1x-table", "C2-A-cut-B-2.5x-wall-0.64x-gate",
        "C2-A-cut-B-2.5x-wall-0.64x-table", "C2-B-faster-in-wall-cpu-1.6x", "C2-wall-tie-cpu-3.5x-gate",
        "C2-wall-tie-cpu-3.5x-table", "identical-cpu-1.9x-equal-share", "identical-cpu-2.4x-equal-share"])
def test_bs_cpu_time_beyond_the_bar_is_never_a_tie_or_faster(a, b, threshold, word, basis, why):
    v = judge(a, b, threshold)
    assert (v.word, v.basis) == (word, basis), v
    assert why in v.why, v.why
    assert v.word not in ("tie", "noise", "faster"), v
    if v.word == "undecided" and v.basis == LOAD:
        assert kind(v, a, b) == LOAD_KIND, v


@pytest.mark.parametrize("a, b", [(AB5_4X32_A, AB5_4X32_B), (AB2_A, AB2_B), (AB5_1X32_A, AB5_1X32_B),
                                  (AB5_GZIP_A, AB5_GZIP_B), (AM1_A, AM1_B_MORE)],
                         ids=["2.5x", "3.5x", "2.1x", "1.6x-B-faster-in-wall", "identical-2.4x"])
@pytest.mark.parametrize("threshold", [1.25, 1.5], ids=["table", "gate"])
def test_the_mirror_is_never_a_regression(a, b, threshold):
    """B with A's passes and A's (B used a fraction of A's CPU time per pass): B improved or the rule cannot tell,
    never 'slower' however its wall time compares; 'faster' when B's cut CPU share kept its wall time up."""
    v = judge(b, a, threshold)
    assert v.word != "slower", v
    if (a, b) == (AB2_A, AB2_B):      # beyond 3x (2.46x is within what identical work's rose: the wall time's verdict)
        assert v.word == "faster" and "A's CPU time per pass" in v.why and "B's passes got" in v.why, v


def _recorded_run(folder, walls_ms, cpu_ms, share, load=1.0):
    """A run of one cell as ccp writes it: each timed pass's wall time (its requests' times) and its timed part's
    CPU time (timed_cpu_s), the cells row's CPU share (cpu_ratio) and load."""
    c = _cell("4x30x9x100", "gzip:6", 1024 * KIB, "1x1x1x100")
    walls = np.asarray(walls_ms, float) * MS
    t = float(np.median(walls))
    c.update(cell_id="00c2c2", time_s=t, time_s_min=float(walls.min()), time_s_max=float(walls.max()),
             spread=float(walls.max() / walls.min()), repeats=len(walls), open_s=0.0, close_s=0.0,
             request_s_median=t / c["requests"], first_request_s=t / c["requests"], flags="contended", cpu_ratio=share,
             load_max=load, cpus=2)
    run = write_run(folder, cells=normalise(pd.DataFrame([c])), tables=False)
    part = run / "requests.parquet" / "00c2c2.parquet"
    req = pd.read_parquet(part)
    timed = req["pass"] >= 0
    n = int(c["requests"])
    for p, (w, cpu) in enumerate(zip(walls, np.asarray(cpu_ms, float) * MS)):
        this = req["pass"] == p
        req.loc[this & (req["phase"] == "request"), "time_s"] = w / n
        req.loc[this & (req["phase"] != "request"), "time_s"] = 0.0
        opens = this & (req["phase"] == "open")
        req.loc[opens, ["pass_wall_s", "pass_cpu_s", "timed_cpu_s", "pass_load"]] = [w, cpu, cpu, load]
    assert np.allclose(req[timed].groupby("pass")["time_s"].sum().to_numpy(), walls)
    req.to_parquet(part, index=False)
    return run


@pytest.mark.parametrize("a, b, code, line", [
    (AB2_A, AB2_B, 3, "the CPU time alone decides only beyond 6x between two runs"),
    (AB5_4X32_A, AB5_4X32_B, 3, "B's CPU time per pass 2.46x A's"),
    (AB5_1X32_A, AB5_1X32_B, 3, "B's CPU time per pass 2.13x A's"),
    (AB5_GZIP_A, AB5_GZIP_B, 3, "B's CPU time per pass 1.58x A's"),
    (AB5_4X32_B, AB5_4X32_A, 0, "pass: no cell slower in B"),
    (AM1_A, AM1_B, 3, "CPU time per pass 1.89x (beyond 1.5x) but the passes are not apart"),
], ids=["C2-3.5x-two-runs-undecided", "C2-2.5x-undecided", "C2-2.1x-undecided", "C2-B-faster-in-wall-undecided", "mirror-passes", "identical-1.9x-not-1"])
def test_the_gate_counts_a_cell_by_its_cpu_time_when_the_wall_time_hides_it(tmp_path, a, b, code, line):
    """`ccp compare A B --fail-above 1.5` on run folders holding those passes: a cell slower in CPU time per pass
    fails or is undecided although its wall time is not above 1.5x (before: exit 0, 'pass')."""
    ra = _recorded_run(tmp_path / "a", a.passes / MS, a.cpu / MS, a.cpu_share, a.load)
    rb = _recorded_run(tmp_path / "b", b.passes / MS, b.cpu / MS, b.cpu_share, b.load)
    r = CliRunner().invoke(main, ["compare", str(ra), str(rb), "--fail-above", "1.5"])
    assert r.exit_code == code, r.output
    assert line in r.output, r.output


@pytest.mark.parametrize("cpu_b_ms, words", [
    (17.19, "the CPU time per pass fell (0.77x): the slower side waited, not worked"),
    (23.5, "the CPU time per pass moved only 1.06x"),
    (22.0, "the CPU time per pass moved only 0.988x"),
], ids=["C6-fell", "moved-a-little", "D3-0.99x-no-fall"])
def test_a_slower_side_that_used_less_cpu_waited(cpu_b_ms, words):
    """breaker11 C6 (Am1/Bm1, 4x32x32x64 | gzip:1: B under a memory-streaming competitor, its passes apart in wall time,
    its CPU time per pass 0.77x A's): said as a fall, never as "moved only 0.772x"."""
    five = np.array([1.0, 1.01, 0.99, 1.02, 0.98])
    a = _s(five * 20.25, five * 22.26, 0.97, load=3.1)
    # load 1.8 on 2 CPUs: no more processes than CPUs, so B's cut share is no competitors' (test_verdict_share_excuse)
    b = _s(five * 33.8, five * cpu_b_ms, 0.43, load=1.8)
    v = judge(a, b, 1.5)
    assert v.word == "undecided" and words in v.why, v


@pytest.mark.parametrize("time_b", [0.0, float("nan"), -1.0], ids=["zero", "nan", "negative"])
def test_a_cell_without_a_usable_time_stays_unknown(time_b):
    """B's passes and CPU time are there but its row's time is not (a damaged run, breaker9 G17): 'no usable time',
    never judged by its CPU time."""
    b = Sample(**{**AB5_4X32_B.__dict__, "time_s": time_b})
    v = judge(AB5_4X32_A, b, 1.5)
    assert v.word == "unknown" and "no usable time" in v.why, v


# identical work, noisy_compare A (load 5.7) / F (one memory-bound competitor, load 8.3 from other jobs), cell
# 4x32x32x64 | none | read 4x32x32x64 (2 requests a pass; results/noisy-warmup at bcd6fa4): F's CPU time per pass 5.3x
# A's, every pass apart, its share of a CPU cut to 0.26 (A's 0.88): the caches its passes kept warm in A were evicted
NOISY_F_A = _s([1.99, 1.17, 4.2, 1.53, 1.15], [1.02, 0.7, 0.59, 0.77, 0.63], 0.88, load=5.7)
NOISY_F_B = _s([20.56, 16.1, 20.56, 19.48, 23.38], [4.07, 3.68, 3.62, 3.75, 3.59], 0.26, load=8.3)
# a real same-work regression measured under the same competitors: the same passes, B's CPU time 10x
NOISY_F_B_10X = _s(NOISY_F_B.passes / MS * 2, NOISY_F_B.cpu / MS * 2, 0.26, load=8.3)


@pytest.mark.parametrize("threshold", [1.25, 1.5])
def test_a_slower_side_whose_cpu_share_was_cut_is_undecided_within_what_competitors_cost(threshold):
    """Competitors that cut a pass's share of a CPU raise its own CPU time too (5.3x here, identical work): within 6x
    such a side's slowdown is undecided (exit 3 under a gate, never a pass), not slower."""
    v = judge(NOISY_F_A, NOISY_F_B, threshold)
    assert (v.word, v.basis) == ("undecided", LOAD), v
    assert "measured under competitors (its passes got 0.26 of a CPU, the faster's 0.88)" in v.why, v.why
    assert "a regression only beyond 6x" in v.why and kind(v, NOISY_F_A, NOISY_F_B) == LOAD_KIND, v


@pytest.mark.parametrize("threshold", [1.25, 1.5])
def test_beyond_what_competitors_cost_a_cut_share_hides_no_regression(threshold):
    """The same passes with B's CPU time 10x A's (10.5x): beyond the 6x competitors cost, slower (breaker14 E3: a 26.8x
    CPU regression was undecided when the cut share had no bound)."""
    v = judge(NOISY_F_A, NOISY_F_B_10X, threshold)
    assert (v.word, v.basis) == ("slower", "passes"), v


def test_after_a_remeasure_the_undecided_line_no_longer_advises_one(tmp_path, monkeypatch):
    """breaker12 D5: a cell a remeasure cannot clear (B's run recorded 5.3x A's CPU time per pass) stays undecided;
    its summary line advised '... or --remeasure' just after one."""
    from ccp.report import remeasure

    ra = _recorded_run(tmp_path / "a", NOISY_F_A.passes / MS, NOISY_F_A.cpu / MS, NOISY_F_A.cpu_share, NOISY_F_A.load)
    rb = _recorded_run(tmp_path / "b", NOISY_F_B.passes / MS, NOISY_F_B.cpu / MS, NOISY_F_B.cpu_share, NOISY_F_B.load)
    same = _s([1.5] * 5, [0.7] * 5, 0.88, load=1.0)
    monkeypatch.setattr(remeasure, "interleaved", lambda run_a, run_b, ids, *a_, **k: ({ids[0]: (same, same)}, []))
    before = CliRunner().invoke(main, ["compare", str(ra), str(rb), "--fail-above", "1.5"])
    after = CliRunner().invoke(main, ["compare", str(ra), str(rb), "--fail-above", "1.5", "--remeasure", "5"])
    assert before.exit_code == after.exit_code == 3, (before.output, after.output)
    assert "on a quiet machine, or --remeasure)" in before.output
    assert "or --remeasure)" not in after.output and "on a quiet machine)" in after.output, after.output


# breaker12 D6: A under 3 busy loops (its passes 0.49 of a CPU; its own CPU time per pass ~2.3x a quiet run's), B
# quiet with +10 us of CPU a read (about 2x): the wall time a "tie" (0.87x), the CPU per pass 1.06x (runs Ac6/Bc6 at
# cb34192; walls are the requests' sums, CPU the timed part's)
D6_A = ([14.31, 8.07, 9.36, 6.03, 6.2], [8.49, 6.06, 7.41, 8.17, 8.35], 0.49, 3.6)
D6_B = ([7.89, 7.02, 7.08, 5.83, 5.56], [9.33, 8.64, 8.68, 6.99, 6.6], 1.0, 3.4)


@pytest.mark.parametrize("a, b, code, line", [
    (D6_A, D6_B, 3, "A was measured under competitors: its passes got 0.49 of a CPU, B's 1.00"),
    (D6_B, D6_A, 0, "pass: no cell slower in B"),
], ids=["D6-crowded-baseline-undecided", "crowded-B-within-the-gate-passes"])
def test_a_tie_over_a_baseline_measured_under_competitors_is_never_a_pass(tmp_path, a, b, code, line):
    """breaker12 D6: the gate passed a 2x CPU regression as a tie (exit 0, 4 of 6 tries) when A's share of a CPU was
    cut: A's competitors kept its wall and CPU time up. Now undecided, counted by the gate (exit 3). The mirror (B
    under the competitors, within the gate) still passes: B's times could only be kept up."""
    ra = _recorded_run(tmp_path / "a", *a)
    rb = _recorded_run(tmp_path / "b", *b)
    r = CliRunner().invoke(main, ["compare", str(ra), str(rb), "--fail-above", "1.5"])
    assert r.exit_code == code, r.output
    assert line in r.output, r.output
