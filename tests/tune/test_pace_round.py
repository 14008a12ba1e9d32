"""Tune's answer time bounded by construction: the first round (and the refit's layouts) planned against
``--within`` (cells capped, layouts that do not fit not measured), the runoff and the checks held to the
time left (fewer rounds, capped passes, else skipped); every cut said in ``trimmed``."""

import json
import math
import textwrap

import pytest

from ccp.tune.pace import (
    CELL_EXTRA_S,
    CLOSE_S,
    FILE_FIXED_S,
    MIN_CELL_S,
    MIN_PASS_S,
    MIN_ROUNDS,
    PASS_EXTRA_S,
    LayoutNeed,
    Pace,
    RoundPlan,
    cell_cap,
    round_cap,
    rounds_plan,
)


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def need(label="x", file_s=0.0, cells=2, budget_s=10.0):
    return LayoutNeed(label, file_s, cells, budget_s)


def spent(needs, cap, k, extra):
    return sum(n.file_s + n.cells * (min(n.budget_s, max(cap, MIN_CELL_S)) + extra) for n in needs[:k])


@pytest.mark.parametrize("left_s, needs, capped, kept", [
    (100.0, [need(), need()], False, 2),                                     # 2 x 2 x 10.5 s = 42 s: fits
    (30.0, [need(), need()], True, 2),                                       # a common cap fits both
    (30.0, [need(), need(), need(file_s=40.0)], True, 2),                    # the last (a slow file) dropped
    (3.0, [need(), need()], True, 1),                                        # the first alone at MIN_CELL_S
    (0.5, [need(), need()], True, 0),                                        # nothing fits
], ids=["fits", "capped", "last-dropped", "first-only", "none"])
def test_the_round_cap_fits_the_time_left_dropping_the_last_layouts(left_s, needs, capped, kept):
    extra = 0.5
    cap, k = round_cap(left_s, needs, extra)
    assert k == kept
    assert math.isfinite(cap) is capped
    if k:
        assert spent(needs, cap, k, extra) <= left_s + 1e-6
        if capped:           # the largest such cap: a little more does not fit
            assert spent(needs, cap * 1.01, k, extra) > left_s


def test_a_round_caps_then_skips_then_says_what_it_cut():
    """Before each layout the plan caps its cells to the time left; a layout that does not fit even at
    MIN_CELL_S a cell is not measured, except the round's first (the answer is then a measured layout);
    a cap that cut a cell to a prefix and every skipped layout are in trimmed."""
    clock, said = Clock(), []
    pace = Pace(60.0, echo=said.append, start=clock.now, clock=clock)
    plan = RoundPlan.until(pace, "the first round", 0.0)           # ends at 60 - CLOSE_S = 52 s
    assert plan is not None
    needs = [need("a"), need("b"), need("c")]
    first = plan.budget(needs)                                     # 3 layouts x 2 cells x 10.5 s > 52 s: capped
    assert first is not None and MIN_CELL_S < first < 10.0
    clock.now += 40.0                                              # a slow layout: 12 s left
    got = plan.budget(needs[1:])
    assert got is not None and MIN_CELL_S <= got < 10.0
    plan.cut_cells += 1
    clock.now += 12.0                                              # nothing left: "c" is not measured
    assert plan.budget(needs[2:]) is None
    plan.close()
    said_all = " | ".join(pace.trimmed)
    assert "1 layout(s) not measured (c)" in said_all and "capped at" in said_all and "1 of them" in said_all
    assert all(any(t in s for s in said) for t in pace.trimmed)    # on the console too


def test_the_first_layout_of_a_round_is_always_measured():
    clock = Clock()
    pace = Pace(1.0, start=clock.now - 30.0, clock=clock)          # 29 s past the deadline already
    plan = RoundPlan.first_round(pace)
    assert plan is not None
    assert plan.budget([need("pick"), need("other")]) == MIN_CELL_S
    assert plan.budget([need("other")]) is None


def test_a_cap_no_cell_reached_is_not_trimmed():
    clock = Clock()
    pace = Pace(30.0, start=clock.now, clock=clock)
    plan = RoundPlan.until(pace, "the first round", 0.0)
    assert plan is not None
    assert plan.budget([need("a"), need("b")]) < 10.0
    plan.close()                                                   # no cell measured a prefix
    assert pace.trimmed == []


def test_no_deadline_no_plan():
    assert RoundPlan.first_round(Pace(None)) is None and RoundPlan.until(Pace(None), "x", 1.0) is None


def test_the_plan_learns_the_files_and_the_cells_overhead():
    """A file of many chunks scales the per-chunk and per-byte estimate; a small one, the fixed part; the
    cells' overhead is the time outside them, a share each, plus the worst overrun of a budget."""
    plan = RoundPlan(Pace(100.0), "r", 0.0)
    work = plan.file_work(262_144, 16 << 20, False)
    plan.learn(file_s=FILE_FIXED_S + 3 * work, file_work=work, wall_s=FILE_FIXED_S + 3 * work + 10.0,
               cells=[(2.0, 3.0), (2.0, 1.0)])
    assert plan.file_estimate(262_144, 16 << 20, False) == pytest.approx(FILE_FIXED_S + 3 * work)
    assert plan.extra_s == pytest.approx((10.0 - 4.0) / 2 + 1.0)
    plan.learn(file_s=0.0, file_work=0.0, wall_s=4.0, cells=[(2.0, 2.0), (2.0, 2.0)])
    plan.learn(file_s=0.0, file_work=0.0, wall_s=4.0, cells=[(2.0, 2.0), (2.0, 2.0)])
    assert plan.extra_s == CELL_EXTRA_S           # the median layout's: one slow layout does not set it
    small = plan.file_work(4, 4096, False)
    plan.learn(file_s=2.0, file_work=small, wall_s=2.0, cells=[])
    assert plan.file_estimate(4, 4096, False) == pytest.approx(2.0)
    assert plan.file_scale == pytest.approx(3.0)


@pytest.mark.parametrize("left_s, passes, rounds, cell_s, want", [
    (math.inf, [1.0] * 4, 7, 10.0, (7, 10.0)),
    (100.0, [0.1] * 4, 7, 10.0, (7, 10.0)),                 # 7 rounds of 4 x (0.15 + PASS_EXTRA_S): fits
    (16.0, [0.3] * 4, 7, 10.0, "fewer"),                    # fewer rounds, whole passes
    (6.0, [2.0] * 4, 7, 10.0, "capped"),                    # 3 rounds, passes capped
    (0.5, [2.0] * 4, 7, 10.0, None),                        # no room for a pass: skipped
], ids=["no-deadline", "fits", "fewer-rounds", "capped", "skipped"])
def test_the_runoff_fits_the_time_left(left_s, passes, rounds, cell_s, want):
    got = rounds_plan(left_s, passes, rounds, cell_s)
    if want is None:
        assert got is None
        return
    if isinstance(want, tuple):
        assert got == want
        return
    assert got is not None
    r, cell = got
    assert MIN_ROUNDS <= r < rounds and cell / (r + 1) >= MIN_PASS_S
    # by construction: every pass run to its budget still ends in time
    assert r * len(passes) * (cell / (r + 1) + PASS_EXTRA_S) <= left_s + 1e-9
    if want == "fewer":           # fewer rounds of whole passes (as estimated) rather than prefixes
        assert r == 5 and cell / (r + 1) >= 1.5 * passes[0]
    else:
        assert r == MIN_ROUNDS and cell / (r + 1) < 1.5 * passes[0]


def test_the_cell_cap_is_a_bound_whatever_the_passes_take():
    cap = cell_cap(20.0, 4, 7)
    assert 7 * 4 * (cap / 8 + PASS_EXTRA_S) == pytest.approx(20.0)
    assert cell_cap(0.0, 4, 7) == 0.0


def test_a_tiny_within_cuts_the_first_round_and_answers_with_a_measured_layout(tmp_path, cli):
    """With --within 1s the first round is late from its start: the model's pick is measured (its cells at
    the least), every other layout is not, and tune.json's trimmed says which; the answer is the measured
    pick, its times fitted as the prefixes they are. The refit and the cache and slot checks are skipped,
    each said in tune.json and on the console."""
    w = tmp_path / "w.yaml"
    w.write_text(textwrap.dedent("""
        name: late
        dataset: {generate: {shape: [24, 16, 16]}}
        workload:
          - {access: {op: read, block: [24, 1, 1]}, weight: 2}
          - {access: {op: read, block: [1, 16, 16]}, weight: 1}
        constraints: {max_chunk_bytes: 4KiB, max_cache_bytes: 16KiB}
    """))
    out = tmp_path / "out"
    res = cli("tune", w, "--json", "--budget", "4s", "--repeats", "1", "--top", "2", "--within", "1s",
              "--out", out, "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    said = " | ".join(r["trimmed"])
    assert "the first round:" in said and "not measured" in said, said
    rows = r["contenders"]
    measured = [row for row in rows if row["measured_s"] is not None]
    assert [row["kind"] for row in measured] == ["candidate"]       # the model's pick alone
    assert all(row["statuses"] is None for row in rows if row not in measured)
    assert r["recommended"]["measured_s"] is not None and r["recommended"]["label"] == measured[0]["label"]
    assert json.loads((out / "tune.json").read_text())["trimmed"] == r["trimmed"]
    assert r["wall_s"] < 60.0 + CLOSE_S
    # everything after the first round is late too: the refit and the cache and slot checks skipped, each said
    assert "the cache check skipped" in said and "the slot check skipped" in said, said
    assert r["within_s"] == 1.0 and r["wall_s"] > 1.0
    assert r["cache"] is None and r["slots"] is None
    assert not (out / "cache").exists() and not (out / "slots").exists() and not (out / "refit").exists()


@pytest.mark.slow
def test_a_generous_within_trims_nothing(tmp_path, cli):
    w = tmp_path / "w.yaml"
    w.write_text("name: t\ndataset: {generate: {shape: [16, 8, 8]}}\nworkload: [{access: {block: [16, 1, 1]}}]\n")
    res = cli("tune", w, "--json", "--budget", "4s", "--repeats", "1", "--top", "1", "--within", "1h",
              "--out", tmp_path / "o", "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["trimmed"] == [] and all(row["measured_s"] is not None for row in r["contenders"])


def test_a_cap_within_a_few_percent_of_the_plan_leaves_it():
    clock = Clock()
    pace = Pace(2 * (9.8 + CELL_EXTRA_S) + CLOSE_S, start=clock.now, clock=clock)
    plan = RoundPlan.until(pace, "the first round", 0.0)
    assert plan is not None
    assert plan.budget([need("a", budget_s=10.0)]) == 10.0 and plan.capped == []
