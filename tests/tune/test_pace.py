"""Tune's answer time (``--within``): the phases after the first round run only when their estimate fits
before the deadline, the runoff's time kept first; what was skipped is said."""

import json
import math
from pathlib import Path

import pytest

from ccp.chunkcache import ChunkCache
from ccp.hdf5.filters import parse_filters
from ccp.tune.pace import CLOSE_S, ESTIMATE_SLACK, PASS_EXTRA_S, Pace, rounds_seconds, runoff_seconds
from ccp.tune.prove import Contender, Measured


def measured(label, per_item, chunks=(4, 4)):
    c = Contender(label, chunks, parse_filters("none"), ChunkCache(1024, 521, 0.75), 1.0, "candidate")
    return c, Measured(c, sum(t for t, _ in per_item), tuple(per_item), Path("."))


@pytest.mark.parametrize("left_s, need_s, reserved_s, fits", [
    (100.0, 10.0, 0.0, True),
    (100.0, 10.0, 85.0, False),                      # the runoff's time is kept first
    (100.0, 100.0 - CLOSE_S + 1, 0.0, False),        # writing the answer is kept too
    (math.inf, 1e9, 1e9, True),                      # no deadline
], ids=["fits", "runoff-kept", "close-kept", "no-deadline"])
def test_a_phase_runs_only_when_it_fits(left_s, need_s, reserved_s, fits):
    said: list = []
    pace = Pace(None if math.isinf(left_s) else left_s, echo=said.append)
    assert pace.fits("the cache check", need_s, reserved_s) is fits
    assert len(pace.trimmed) == len(said) == (0 if fits else 1)        # on the console as it happens
    if not fits:
        assert pace.trimmed[0].startswith("the cache check skipped") and "--within" in pace.trimmed[0]


def test_estimates_come_from_the_measured_passes():
    """A round is one pass of every pattern of each layout (unweighted); the runoff's layouts are those within
    30% of the fastest; a runoff of one is none."""
    (a, ma), (b, mb), (c, mc) = (measured("a", [(0.2, "ok"), (0.1, "ok")], (4, 4)),
                                 measured("b", [(0.25, "ok"), (0.1, "ok")], (2, 4)),
                                 measured("c", [(2.0, "ok"), (1.0, "extrapolated")], (1, 4)))
    assert rounds_seconds([ma], 7) == pytest.approx(7 * (ESTIMATE_SLACK * 0.3 + 2 * PASS_EXTRA_S))
    assert runoff_seconds([a, b, c], [ma, mb, mc], 7) == pytest.approx(7 * (ESTIMATE_SLACK * (0.3 + 0.35) + 4 * PASS_EXTRA_S))
    assert runoff_seconds([a, c], [ma, mc], 7) == 0.0


@pytest.mark.parametrize("within, where", [("soon", "--within"), ("-1s", "--within")], ids=["word", "negative"])
def test_a_bad_within_is_one_line(tmp_path, within, where, cli):
    w = tmp_path / "w.yaml"
    w.write_text("name: t\ndataset: {generate: {shape: [16, 8, 8]}}\nworkload: [{access: {block: [16, 1, 1]}}]\n")
    res = cli("tune", w, "--within", within, "--out", tmp_path / "o", "--work", tmp_path / "work")
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and where in lines[0], res.output


def test_within_none_is_no_deadline(tmp_path, cli):
    w = tmp_path / "w.yaml"
    w.write_text("name: t\ndataset: {generate: {shape: [16, 8, 8]}}\nworkload: [{access: {block: [16, 1, 1]}}]\n")
    res = cli("tune", w, "--json", "--no-measure", "--within", "none", "--out", tmp_path / "o", "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["within_s"] is None and r["trimmed"] == []
