"""benchmarks/league.py's paired score: each contender measured in interleaved rounds beside the oracle's layout,
the median of its per-round ratios (a load that drifts falls on both passes of a round alike)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("league", ROOT / "benchmarks" / "league.py")
assert _spec is not None and _spec.loader is not None
league = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(league)

TINY = {"what": "a tiny series + maps", "source": "this test", "dtype": "<f4", "data": "smooth",
        "shape": ([32, 16, 16], [32, 16, 16]), "items": [("read", [32, 1, 1], 20, 1), ("read", [1, 16, 16], 8, 2)],
        "filters": "none", "max_chunk": "1MiB", "cache": "64KiB"}


def test_paired_rounds_score_each_layout_round_against_round(tmp_path):
    wfile = tmp_path / "tiny.yaml"
    wfile.write_text(yaml.safe_dump(league.workload_doc("tiny", TINY, quick=True)))
    grid = {"nbytes": 65536, "nslots": league.GRID_NSLOTS, "w0": 0.75}
    small = {"nbytes": 0, "nslots": 521, "w0": 0.75}
    got = league.paired_rounds(wfile, {"same": ("8x4x4", grid), "other": ("1x16x16", grid), "no cache": ("8x4x4", small),
                                       "contiguous": ("contiguous", grid)},
                               ("8x4x4", grid), "none", tmp_path / "paired", tmp_path / "work", 3, 5.0)
    assert len(got["oracle"]["rounds_s"]) == 3 and all(t > 0 for t in got["oracle"]["rounds_s"])
    # the oracle's own layout and cache is the same measurement: exactly 1, whatever the machine did
    assert got["same"]["ratio"] == 1.0 and got["same"]["rounds_s"] == got["oracle"]["rounds_s"]
    for name in ("other", "no cache", "contiguous"):
        r = got[name]
        mine, base = np.asarray(r["rounds_s"]), np.asarray(got["oracle"]["rounds_s"])
        assert r["round_ratios"] == pytest.approx((mine / base).tolist())
        assert r["ratio"] == pytest.approx(float(np.median(mine / base)))
        assert r["median_s"] == pytest.approx(float(np.median(mine)))


@pytest.mark.parametrize("tune, expected", [
    ({"predicted_in_choice_s": 0.3, "measured_in_choice_s": 0.2, "predicted_s": 0.3, "measured_in_tune_s": 0.1}, 1.5),
    ({"predicted_s": 0.3, "measured_in_tune_s": 0.1}, 3.0),                  # a league.json from before the fields
    ({"predicted_s": 0.3, "measured_in_tune_s": None}, None),
], ids=["in-the-fitted-rounds", "older-json", "unmeasured"])
def test_predicted_over_measured_is_taken_in_the_rounds_the_prices_were_fitted_to(tune, expected):
    got = league._pick_ratio(tune)
    assert got == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("oracle_s, repeats, rounds", [
    (0.5, 3, 7), (0.141, 3, 15), (0.011, 3, 41), (0.2, 3, 11), (2.0, 5, 11),
], ids=["slow-oracle", "cris", "append", "even-made-odd", "repeats"])
def test_a_fast_oracle_gets_more_paired_rounds(oracle_s, repeats, rounds):
    assert league.paired_round_count(oracle_s, repeats) == rounds
