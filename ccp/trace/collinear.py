"""What diagnose says when the trace cannot tell a call's cost from a chunk load's, and what --verify measured
against the cure's prediction (breaker11 C7).

With one chunk load per call and no call that loaded nothing, calls and loads are collinear in the trace: any
split of its HDF5 time between them fits it equally well, and :func:`ccp.trace.sequence_model.fit_costs` splits it
at this machine's prices of a call and of a load (:mod:`ccp.trace.chunk_price`). A cure that keeps the calls and
drops loads (a chunk cache) is priced on that split, not on the trace: the output says so, with the prices and the
split used. On breaker11's trace (192 calls, 192 loads) the cache cure was predicted 3.0x faster and its replay
measured 1.7x, and nothing said the 3.0x rested on an assumed split; nor was it the prices' split: a load's floor
(:func:`ccp.trace.chunk_price.attribute_call_tail`, this machine's price of a load, above the trace's whole time
per call) then moved every call's share onto the loads, pricing the 128 calls the cure keeps at 0 ns. With calls
and loads collinear the prices' split stands.
"""

from __future__ import annotations

import numpy as np

from ccp.report.cheapest import CHEAPEST_WITHIN
from ccp.units import format_seconds

IDLE_CALLS = 3              # calls that loaded nothing from which fit_costs measures a call's cost itself
VERIFY_WITHIN = CHEAPEST_WITHIN     # a cure's predicted speed-up against its replay's: the tolerance the ranking uses


def collinear_split(loads, any_exact: bool, call_price_s: float, load_price_s: float, costs: dict) -> dict | None:
    """The split at this machine's prices when the trace's calls and loads are collinear (every exactly
    counted call loaded a chunk but fewer than :data:`IDLE_CALLS`), else None: the prices and what was used."""
    loads = np.asarray(loads, float)
    if not any_exact or not loads.sum() or int((loads == 0).sum()) >= IDLE_CALLS:
        return None
    return {"call_price_s": call_price_s, "load_price_s": load_price_s,
            "per_call_s": float(costs["hdf5_per_call_s"]), "per_load_s": float(costs["hdf5_per_load_s"])}


def collinear_line(split: dict) -> str:
    """The finding: the split was not measured, and at which prices it was made."""
    return (f"calls and chunk loads are collinear in this trace (every call loaded a chunk: their costs are not told "
            f"apart by it): split at this machine's prices (per call {format_seconds(split['call_price_s'])}, per load "
            f"{format_seconds(split['load_price_s'])}), scaled to the trace's time: per call "
            f"{format_seconds(split['per_call_s'])}, per load {format_seconds(split['per_load_s'])} here; a cure that "
            "keeps the calls and drops loads is priced on that split, not on the trace")


def against_prediction(verified: dict, cure: dict) -> dict:
    """``verified`` (a :func:`ccp.trace.verify.verify_top` result) with the cure's predicted speed-up beside the
    replay's and whether they agree within :data:`VERIFY_WITHIN`; unchanged when either is missing."""
    b, a, predicted = verified.get("before_s"), verified.get("after_s"), cure.get("speedup")
    if not (b and a and predicted):
        return verified
    replayed = b / a
    ratio = predicted / replayed
    return {**verified, "predicted_speedup": predicted, "replayed_speedup": replayed,
            "within": 1 / VERIFY_WITHIN <= ratio <= VERIFY_WITHIN}


def prediction_words(verified: dict) -> str:
    """The replay's speed-up against the cure's prediction, for the verified line ("" without one)."""
    if verified.get("predicted_speedup") is None:
        return ""
    p, r = verified["predicted_speedup"], verified["replayed_speedup"]
    agree = (f"within {VERIFY_WITHIN:g}x of it" if verified["within"]
             else f"NOT within {VERIFY_WITHIN:g}x of it: the cure's time above is off by {max(p / r, r / p):.1f}x")
    return f"predicted {p:.1f}x above, replayed {r:.1f}x: {agree}; "
