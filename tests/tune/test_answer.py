"""Tune's console answer says only what was measured: each "pick is" within one round, a layout that
looks faster than the pick says why it lost, and a --within overrun says by how much (breaker8 F10)."""

import pytest

from ccp.tune.answer import console_table, same_round, summary_lines, why_lost


def row(label, first, again=None, at_selection=None, extrapolated=True):
    """A contender as tune.json keeps it: its first-round time (re-completed at the final prices), the runoff's
    when it ran in it, and the first-round time the runoff's layouts were chosen on."""
    return {"label": label, "kind": "candidate", "chunks": [1, 30, 9, 100], "filters": "gzip:6", "cache_nbytes": 4 << 20,
            "cache_nslots": 3803, "cache_w0": 0.75, "predicted_s": 0.912, "statuses": ["ok"],
            "measured_s": again if again is not None else first, "first_measured_s": first, "runoff": again is not None,
            "extrapolated": extrapolated, "first_extrapolated": extrapolated,
            "first_at_selection_s": at_selection if at_selection is not None else first}


def t1_rows():
    """breaker8's T1: tuned #3 (first round only) re-completed at the final prices to 772 ms, faster than the
    pick's first round (887 ms) and its runoff (911 ms); when the runoff's layouts were chosen it measured 1.2 s."""
    return [row("tuned", 0.577, 0.981), row("tuned #2", 0.887, 0.911), row("tuned #3", 0.772, at_selection=1.2),
            row("1 MiB rows", 0.634, 0.915), row("current", 3.09)]


def result(rows, pick, **more):
    for r in rows:
        r["speedup_of_pick"], r["speedup_round"] = same_round(r, pick)
        ratio = r["speedup_of_pick"]
        r["lost_why"] = why_lost(r, pick, rows) if r is not pick and ratio is not None and ratio < 1 else None
    rec = {"chunks": pick["chunks"], "filters": pick["filters"], "cache_nbytes": pick["cache_nbytes"],
           "cache_nslots": pick["cache_nslots"], "cache_w0": 0.75, "measured_s": pick["measured_s"],
           "predicted_s": pick["predicted_s"], "repack_needed": True, "why": "w", "label": pick["label"]}
    return {"contenders": rows, "recommended": rec, "commands": {}, "prices": {"how": "fitted"}, **more}


@pytest.mark.parametrize("label, ratio, round_", [
    ("tuned", 0.981 / 0.911, "runoff"),            # both in the runoff: the runoff's times
    ("tuned #3", 0.772 / 0.887, "first round"),    # first round only: against the pick's first round
    ("current", 3.09 / 0.887, "first round"),
], ids=["runoff-row", "first-round-row", "current"])
def test_pick_is_within_one_round(label, ratio, round_):
    rows = t1_rows()
    r = next(x for x in rows if x["label"] == label)
    got, which = same_round(r, rows[1])
    assert got == pytest.approx(ratio) and which == round_


def test_a_layout_faster_than_the_pick_says_why_it_lost():
    rows = t1_rows()
    res = result(rows, rows[1])
    table, summary = "\n".join(console_table(res)), "\n".join(summary_lines(res))
    assert "1st round" in table and "runoff" in table and "0.87x (1)" in table and "1.08x (r)" in table
    note = next(line for line in summary.splitlines() if line.startswith("  note: tuned #3"))
    assert "first round only: not in the runoff" in note and "over 30% slower" in note
    assert "re-completed its extrapolated prefix to ~772 ms" in note or "re-completed its extrapolated prefix to 772 ms" in note
    # the runoff's rows and the tied one are not called faster in another round's terms
    assert "note: tuned " not in summary.replace("note: tuned #3", "")


def test_a_fourth_close_layout_is_left_out_by_the_runoffs_size():
    rows = t1_rows()
    rows[2]["first_at_selection_s"] = 0.70          # within 30% of the fastest, but the runoff takes three
    assert "which measures the 3 fastest" in why_lost(rows[2], rows[1], rows)


@pytest.mark.parametrize("wall, says", [(126.0, "36 s past --within 90 s"), (80.0, None)], ids=["over", "within"])
def test_an_overrun_of_within_is_said(wall, says):
    rows = t1_rows()
    res = result(rows, rows[1], within_s=90.0, wall_s=wall, search={"search_s": 3.3, "calibration_s": 9.5})
    over = [line for line in summary_lines(res) if "over --within" in line]
    if says is None:
        assert not over
    else:
        assert len(over) == 1 and says in over[0] and "12.8 s before the first measurement" in over[0]


@pytest.mark.parametrize("within, limit", [(None, 30.0), (120.0, 30.0), (30.0, 7.5)], ids=["none", "default", "short"])
def test_the_search_is_held_to_a_quarter_of_within(within, limit):
    """A 30 s search left nothing of --within 30s (breaker8 F14): at most a quarter of it; the default 2 min keeps 30 s."""
    from ccp.tune.tune import search_limit

    assert search_limit(within) == limit
