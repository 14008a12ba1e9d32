"""A first round measured on a machine whose load moved between its layouts (audit22 A7: CPU shares 0.16-0.68
in one round at load 4-5): each pass enters the fit at the round's median CPU share, so the cells are one
linear function of the counts again; and tune says the shares its two rounds ran at beside the prediction
before the runoff."""

import math
from pathlib import Path

import pytest

from ccp.tune.answer import load_lines
from ccp.tune.fit import at_share, load_note, round_share
from ccp.tune.prove import ItemPasses, Measured
from ccp.tune.search import PRICE_GROUPS, evaluate
from ccp.tune.workload import WorkItem
from tests.tune.test_fit import layouts


def test_a_round_at_uneven_loads_fits_as_one(costs, nofilter, gzip):
    """Each layout's cells 'measured' as the model at known prices, every other layout at a fifth of a core
    (its walls 2.5x the half-core layouts'): as measured, no prices fit both; at the round's share, they fit
    within 2%, and the fit says the share."""
    from ccp.tune.tune import fit_from_round

    src, items, cs = layouts(costs, nofilter, gzip)
    truth = costs.scaled({"request": 3.0, "chunk": 0.5, "byte": 2.0, "cold": 4.0, "write": 1.0}, 1e-3, "truth")
    measured = []
    for n, c in enumerate(cs):
        share = 0.2 if n % 2 else 0.5
        ts = [evaluate(c.chunks, c.filters, c.cache, src, (WorkItem(it.access, 1.0),), truth).workload_s * 0.5 / share
              for it in items]
        measured.append(Measured(c, sum(ts), tuple((t, "ok") for t in ts), Path("."),
                                 passes=tuple(ItemPasses(1, 1, (t,) * 3, (share,) * 3) for t in ts)))
    cells: list = []
    fit = fit_from_round(cs, measured, items, src, costs, cells)
    assert fit is not None and fit.cpu_share == pytest.approx(0.35)
    assert [c["at_cpu_share"] for c in cells] == pytest.approx([0.35] * len(cells))
    assert worst(fit, cells) < 1.02
    # the runoff's interleaved rounds ran side by side: their walls are the equations as measured, and these
    # (walls at two loads) no prices fit: some cell is missed by 2x or more
    cells = []
    runoff = fit_from_round(cs, measured, items, src, costs, cells, round_name="runoff")
    assert runoff is not None and runoff.cpu_share is None and worst(runoff, cells) > 2.0


def worst(fit, cells) -> float:
    """The fit's largest miss of one of its equations, as a ratio (>= 1)."""
    s = [fit.scales[g] for g in PRICE_GROUPS if g != "open"]
    return max(math.exp(abs(math.log((sum(f * p for f, p in zip(s, c["parts"])) + fit.scales["open"]) / c["measured_s"])))
               for c in cells)


@pytest.mark.parametrize("passes, shares, share, want", [
    ([0.4, 0.2], [0.2, 0.4], 0.4, 0.2),          # both brought to 0.4: 0.2 and 0.2
    ([0.4, 0.2], [], 0.4, 0.3),                  # no shares kept: the walls as measured
    ([0.4, 0.2], [0.2, 0.4], None, 0.3),
    ([0.4, 0.2], [0.2], 0.4, 0.3),               # shares not beside every pass: as measured
], ids=["brought", "no-shares", "no-round-share", "misaligned"])
def test_at_share(passes, shares, share, want):
    assert at_share(passes, shares, share) == pytest.approx(want)


def test_round_share_is_the_median_of_known_shares():
    assert round_share([0.2, 0.9, 0.4, float("nan")]) == pytest.approx(0.4)
    assert round_share([]) is None


def test_tune_says_the_load_beside_the_prediction_before_the_runoff():
    """audit22 A7's run: predicted 961 ms before the runoff, measured 456 ms in it; first round at a median
    share of 0.41, the runoff at 0.84."""
    rec = {"predicted_before_runoff_s": 0.961, "measured_in_choice_s": 0.456, **load_note(0.961, 0.456, 0.41, 0.84)}
    (line,) = load_lines(rec)
    assert "961 ms" in line and "2.11x the runoff's 456 ms" in line
    assert "median CPU share of 0.41, the runoff's at 0.84" in line
    assert "the machine's load; brought to the runoff's share, 469 ms (1.03x)" in line
    same = {"predicted_before_runoff_s": 0.5, "measured_in_choice_s": 0.456, **load_note(0.5, 0.456, 0.8, 0.84)}
    (line,) = load_lines(same)
    assert "the machine's load" not in line and "1.10x the runoff's" in line
    assert load_lines({"predicted_before_runoff_s": 0.5, "measured_in_choice_s": 0.4, **load_note(0.5, 0.4, None, 0.8)}) == []
