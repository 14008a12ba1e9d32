"""A runoff that could not judge is said as undecided, never as a tie; among undecided layouts what was
measured decides (unless the model's counts show the faster one more I/O), and the "measured" printed for
the pick is the figure the choice used, with its round (breaker9 G20)."""

import pytest

from ccp.tune.answer import summary_lines
from ccp.tune.settle import could_find_apart, runoff_verdict
from ccp.tune.tune import choose

MIB = 1 << 20


def finalist(label, measured, passes=None, lo=None, hi=None, predicted=0.0334, trips=2.0, nbytes=65 * MIB,
             extrapolated=False):
    """A runoff row as tune.json keeps it (paired: its passes are the runoff's interleaved rounds)."""
    return {"label": label, "kind": "candidate", "chunks": [64, 16, 64], "filters": "none", "cache_nbytes": 262144,
            "cache_nslots": 521, "cache_w0": 0.75, "predicted_s": predicted, "measured_s": measured,
            "measured_min_s": lo if lo is not None else (min(passes) if passes else measured),
            "measured_max_s": hi if hi is not None else (max(passes) if passes else measured),
            "passes": passes, "paired": True, "runoff": True, "extrapolated": extrapolated,
            "predicted_io_trips": trips, "predicted_io_ops": trips, "predicted_io_bytes": nbytes}


def t3_rows():
    """breaker9's T3 (tune.json): a runoff of 5 rounds; the model's pick (tuned) had no whole pass (1 of 64
    requests measured, the rest priced by the model), tuned #2 measured fastest, tuned #3 21% slower; the
    model's counts the same for all three, its fitted times 0.1 ms apart."""
    return [finalist("tuned", 0.036852, None, 0.021176, 0.118280, predicted=0.033345, extrapolated=True),
            finalist("tuned #2", 0.026652, [0.031572, 0.019400, 0.030006, 0.036707, 0.031296], predicted=0.033366,
                     nbytes=66 * MIB),
            finalist("tuned #3", 0.032361, [0.020882, 0.037569, 0.040721, 0.038228, 0.029051], predicted=0.033383)]


@pytest.mark.parametrize("a, b, verdict", [
    ([1.0] * 5, [1.5] * 5, "apart"),                                              # 5 of 5 by 50%: the clear margin
    ([1.0, 1.1, 0.9, 1.0, 1.05], [1.2, 1.15, 1.3, 1.1, 1.25], "undecided"),      # 5 rounds cannot show under 1.25x
    ([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.1], [1.2, 0.9, 1.3, 1.0, 1.1, 1.2, 0.95], "tied"),   # 7 rounds: a tested tie
    ([1.0, 1.1, 0.9, 1.0, 1.05], [1.01, 1.09, 0.92, 1.0, 1.04], "tied"),          # within the 3% floor
    (None, [1.2, 1.15, 1.3, 1.1, 1.25], "undecided"),                            # no whole pass: a prefix
], ids=["clear-margin", "five-rounds", "seven-rounds", "floor", "no-whole-pass"])
def test_runoff_verdict(a, b, verdict):
    ra = finalist("a", 1.0, a, lo=0.5, hi=1.6)
    rb = finalist("b", sorted(b)[len(b) // 2], b)
    assert runoff_verdict(ra, rb) == verdict and runoff_verdict(rb, ra) == verdict


@pytest.mark.parametrize("rounds, able", [(5, False), (6, True), (7, True)], ids=["5", "6", "7"])
def test_rounds_the_paired_test_needs(rounds, able):
    a, b = finalist("a", 1.0, [1.0] * rounds), finalist("b", 1.2, [1.2] * rounds)
    assert could_find_apart(a, b) is able


def test_an_undecided_runoff_is_not_called_a_tie_and_the_faster_measured_wins():
    pick, why = choose(t3_rows())
    assert pick["label"] == "tuned #2"
    assert "tied" not in why and "undecided in the runoff" in why and "could not tell them apart" in why
    assert "5 interleaved rounds, too few" in why and "no whole passes" in why
    assert "the faster measured in the runoff decides" in why and "fitted prediction" not in why


def test_undecided_goes_to_fewer_predicted_io_over_the_faster_measured():
    rows = t3_rows()
    rows[1]["predicted_io_trips"] = rows[1]["predicted_io_ops"] = 20.0     # the faster measured: 10x the trips
    pick, why = choose(rows)
    assert pick["label"] == "tuned #3"        # of the two with fewer trips, the faster measured
    assert "device trips" in why and "undecided" in why


def test_the_measured_printed_is_the_figure_the_choice_used():
    """T3 printed "measured 25.5 ms" (the pick's 3 first-round passes) while the choice used its runoff's 36.9 ms."""
    rows = t3_rows()
    pick = rows[0]
    rec = {"chunks": [64, 16, 64], "filters": "none", "cache_nbytes": 262144, "cache_nslots": 521, "cache_w0": 0.75,
           "predicted_s": 0.033345, "repack_needed": True, "why": "w", "label": "tuned",
           "measured_s": 0.025510, "measured_passes": 3, "measured_in_choice_s": pick["measured_s"],
           "predicted_in_choice_s": pick["predicted_s"], "measured_in_choice_round": "runoff",
           "measured_in_choice_passes": None, "measured_in_choice_extrapolated": True}
    lines = summary_lines({"contenders": [], "recommended": rec, "commands": {}, "prices": {"how": "fitted"}})
    first = next(line for line in lines if line.startswith("  measured "))
    assert first.startswith("  measured ~36.9 ms for the weighted workload in the runoff, the figure the choice used")
    assert "completed by the fitted model" in first
    pooled = next(line for line in lines if "every whole pass" in line)
    assert "25.5 ms, the median of 3" in pooled


def test_a_model_pick_as_fast_is_not_said_0_percent_slower():
    """A live run (--within 60s, no runoff): "the model's pick (tuned) measured 0% slower" at 29.2 ms against 29.2."""
    rows = [finalist("tuned", 0.029204, [0.029, 0.0292, 0.0295]), finalist("tuned #2", 0.029201, [0.0291, 0.0292, 0.03])]
    for r in rows:
        r.update(runoff=False, paired=False)
    pick, why = choose(rows)
    assert pick["label"] == "tuned #2" and "0% slower" not in why and "as fast (29.2 ms against 29.2 ms" in why
