"""A first round measured at another load than the runoff (audit22 A7: the pick's passes at a median CPU share
of 0.46 in the first round, 0.85 in the runoff; predicted 2.11x its runoff time): tune says the pick's share in
each round beside its prediction before the runoff, and that prediction brought to the runoff's share."""

from pathlib import Path

import pytest

from ccp.chunkcache import ChunkCache
from ccp.hdf5.filters import parse_filters
from ccp.tune.answer import load_lines
from ccp.tune.fit import load_note, passes_share, round_share
from ccp.tune.prove import Contender, ItemPasses, Measured


def test_round_share_is_the_median_of_known_shares():
    assert round_share([0.2, 0.9, 0.4, float("nan")]) == pytest.approx(0.4)
    assert round_share([]) is None


def test_a_layouts_share_is_the_median_over_its_patterns_passes():
    c = Contender("tuned", (34, 4, 144), parse_filters("none"), ChunkCache(1 << 20, 1301, 0.75), 0.5, "candidate")
    m = Measured(c, 0.5, ((0.3, "ok"), (0.2, "ok")), Path("."),
                 passes=(ItemPasses(10, 10, (0.38, 0.44, 0.54), (0.45, 0.46, 0.46)),
                         ItemPasses(10, 10, (0.17, 0.15, 0.18), (0.46, 0.48, 0.42)), None))
    assert passes_share([m]) == pytest.approx(0.46)
    assert passes_share([None]) is None
    assert passes_share([Measured(c, 0.5, ((0.3, "ok"),), Path("."))]) is None      # no passes kept


def test_tune_says_the_load_beside_the_prediction_before_the_runoff():
    """audit22 A7's run: predicted 961 ms before the runoff, measured 456 ms in it; the pick's passes at a
    median share of 0.46 in the first round, 0.85 in the runoff."""
    rec = {"predicted_before_runoff_s": 0.961, "measured_in_choice_s": 0.456, **load_note(0.961, 0.456, 0.46, 0.85)}
    (line,) = load_lines(rec)
    assert "961 ms" in line and "2.11x the runoff's 456 ms" in line
    assert "median CPU share of 0.46 in the first round, 0.85 in the runoff" in line
    assert "brought to the runoff's share (the same CPU time), 520 ms (1.14x): the miss is the machine's load" in line
    # the README's command at load 6-7: 1.22x as measured, shares 0.51 and 0.44: 1.43x at the runoff's share, no verdict
    rec = {"predicted_before_runoff_s": 0.797, "measured_in_choice_s": 0.655, **load_note(0.797, 0.655, 0.51, 0.44)}
    (line,) = load_lines(rec)
    assert line.endswith("924 ms (1.41x)"), line
    # a miss the same CPU time does not bring within the target: not the load alone
    rec = {"predicted_before_runoff_s": 1.5, "measured_in_choice_s": 0.5, **load_note(1.5, 0.5, 0.4, 0.8)}
    assert load_lines(rec)[0].endswith("750 ms (1.50x): not the load alone")
    same = {"predicted_before_runoff_s": 0.5, "measured_in_choice_s": 0.456, **load_note(0.5, 0.456, 0.8, 0.84)}
    (line,) = load_lines(same)
    assert "the machine's load" not in line and "1.10x the runoff's" in line
    assert load_lines({"predicted_before_runoff_s": 0.5, "measured_in_choice_s": 0.4, **load_note(0.5, 0.4, None, 0.8)}) == []
    # a runoff time completed by the fitted model from prefixes is part prediction: no load judged against it
    assert load_note(0.811, 0.598, 0.43, 0.23, completed=True) == {}
