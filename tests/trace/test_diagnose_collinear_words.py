"""On a trace whose calls and chunk loads are collinear (one load per call, none without), diagnose says the split
was not measured and at which prices it was made, and --verify prints the cure's predicted speed-up beside the one
it replayed, judged at the stated 2x (breaker11 C7: predicted 3.0x, replayed 1.7x, neither said)."""

import pytest

from ccp.trace.collinear import VERIFY_WITHIN, against_prediction, prediction_words
from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace
from tests.trace.test_diagnose_collinear import ROWS, _dataset
from tests.trace.traced_program import trace_program


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collinear-verify")
    _dataset(tmp)
    diag = diagnose(load_trace(trace_program(tmp, ROWS.format(nbytes=128 * 1024, nslots=521))), verify=True)
    return diag


def test_diagnose_says_the_split_and_its_prices(verified):
    d = verified["datasets"][0]
    split = d["collinear_split"]
    assert split["call_price_s"] > 0 and split["load_price_s"] > split["call_price_s"]
    (line,) = [f for f in d["findings"] if f.startswith("calls and chunk loads are collinear in this trace")]
    assert "split at this machine's prices (per call " in line and ", per load " in line
    assert "per call" in format_diagnosis(verified).split("calls and chunk loads are collinear")[1]


def test_the_verified_line_compares_the_printed_prediction(verified):
    d = verified["datasets"][0]
    v, top = d["verified"], d["cures"][0]
    assert v["predicted_speedup"] == top["speedup"]                   # the figure printed for the cure
    assert v["replayed_speedup"] == pytest.approx(v["before_s"] / v["after_s"])
    text = format_diagnosis(verified)
    (line,) = [x for x in text.splitlines() if x.strip().startswith("verified:")]
    assert f"{top['speedup']:.1f}x faster" in text and f"predicted {top['speedup']:.1f}x above" in line
    assert f"within {VERIFY_WITHIN:g}x of it" in line or f"NOT within {VERIFY_WITHIN:g}x of it" in line


@pytest.mark.parametrize("before, after, predicted, words", [
    (0.0311, 0.0185, 3.0, "predicted 3.0x above, replayed 1.7x: within 2x of it; "),
    (0.0311, 0.0185, 8.0, "predicted 8.0x above, replayed 1.7x: NOT within 2x of it: the cure's time above is off by 4.8x; "),
    (0.0311, 0.0185, None, ""),                      # a cure with no speed-up printed (bounded counts)
    (None, None, 3.0, ""),                           # not measured
], ids=["breaker11-C7", "off", "no-prediction", "unmeasured"])
def test_prediction_words(before, after, predicted, words):
    v = against_prediction({"cure": "c", "before_s": before, "after_s": after, "note": "n"}, {"speedup": predicted})
    assert prediction_words(v) == words
