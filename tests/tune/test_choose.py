"""The recommendation is decided by measurement: the fastest measured contender, whoever proposed it."""

import pytest

from ccp.config.filters import parse_filters
from ccp.tune.tune import choose, no_repack_alternative


def row(label, kind, measured, chunks=(4, 4), filters="none", cache=1024):
    return {"label": label, "kind": kind, "measured_s": measured, "chunks": list(chunks), "filters": filters,
            "cache_nbytes": cache, "cache_nslots": 521, "cache_w0": 0.75, "predicted_s": 1.0}


@pytest.mark.parametrize("rows, want, says", [
    ([row("tuned", "candidate", 1.0), row("tuned #2", "candidate", 2.0), row("h5py guess", "heuristic", 3.0)],
     "tuned", "the model's pick, measured fastest"),
    # a heuristic measured fastest wins: the pick is never slower than a measured heuristic
    ([row("tuned", "candidate", 1.05), row("h5py guess", "heuristic", 1.0)], "h5py guess", "5% slower"),
    ([row("tuned", "candidate", 2.0), row("tuned #2", "candidate", 1.0), row("current", "current", 9.0)],
     "tuned #2", "measured 100% slower"),
    ([row("tuned", "candidate", None), row("tuned #2", "candidate", 3.0)], "tuned #2", "failed to measure"),
    ([row("tuned", "candidate", None), row("h5py guess", "heuristic", None)], "tuned", "not measured"),
    # equal times: the first in the model's order
    ([row("tuned", "candidate", 1.0), row("h5py guess", "heuristic", 1.0)], "tuned", "the model's pick"),
], ids=["model-wins", "heuristic-wins", "second-candidate-wins", "model-pick-failed", "nothing-measured", "tie"])
def test_choose_takes_the_fastest_measured(rows, want, says):
    pick, why = choose(rows)
    assert pick["label"] == want
    assert says in why
    timed = [r["measured_s"] for r in rows if r["measured_s"] is not None]
    if timed:
        assert pick["measured_s"] == min(timed)


def test_keeping_the_layout_is_offered_when_within_the_margin():
    current = ((8, 8), parse_filters("gzip:1"))
    rows = [row("tuned", "candidate", 1.0, chunks=(2, 8)),
            row("tuned #2", "candidate", 1.03, chunks=(8, 8), filters="gzip:1", cache=300_000),
            row("current", "current", 9.0, chunks=(8, 8), filters="gzip:1")]
    pick, _ = choose(rows)
    alt = no_repack_alternative(rows, pick, current)
    assert alt["label"] == "tuned #2"
    rows[1]["measured_s"] = 1.2
    assert no_repack_alternative(rows, pick, current) is None
    assert no_repack_alternative(rows, rows[1], current) is None       # the pick keeps the layout already
