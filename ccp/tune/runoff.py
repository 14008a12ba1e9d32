"""The runoff: the layouts the first round measured close, measured again side by side.

Short cells on a shared machine vary by more than the layouts differ, and the first round measured
each layout minutes apart under a different load: the runoff measures the close ones again in
interleaved rounds (a cold pass of each a round, the order reversed every round), so that a load that
drifts falls on all of them alike, with more passes; a clear winner is confirmed beside the next
fastest the same way, so that every pick's prediction is fitted to interleaved passes.
"""

from __future__ import annotations

import math
from pathlib import Path

from ccp.tune.pace import (
    CLOSE_S,
    RUNOFF_WITHIN,
    Pace,
    finalists,
    item_passes_s,
    pass_seconds,
    rounds_plan,
    rounds_seconds,
)
from ccp.tune.prove import measure_interleaved, per_cell_budget

RUNOFF_CELL_S = 10.0       # a runoff cell's time budget, at least: the decision is on whole passes, not on a
                           # prefix scaled up (a cold pass's first requests pay the disk; scaled, they mislead 10-40x)
RUNOFF_MIN_S = 1.0         # the runoff's rounds: enough for the fastest finalist's passes to add up to this,
RUNOFF_MAX_ROUNDS = 41     # at most this many (the league's paired rounds; a 2-7 ms write pass varied 0.4-7.3x)


def run_off(wl, source, contenders, measured, out: Path, work_dir: Path, budget: float, repeats: int, echo,
            confirm: bool = True, pace: Pace | None = None) -> dict:
    """The layouts measured within :data:`RUNOFF_WITHIN` of the fastest (at most :data:`RUNOFF_MAX`),
    measured again in interleaved rounds (:func:`measure_interleaved`: a pass of each a round,
    alternating; :func:`runoff_rounds` of them): {contender key: Measured}. When the fastest is alone
    within it and ``confirm``, a **confirmation**: the fastest and the next fastest, measured the same way.

    Short cells on a shared machine vary by more than the layouts differ, and the first round
    measured each layout minutes apart under a different load: the runoff decides among the close
    ones under the same conditions, round against round (a load that drifts hits every finalist's
    pass of that round alike), with more passes. The confirmation gives a clear winner the same: its
    prediction is then fitted to interleaved passes beside a rival's, not to a first round's 3 (the
    league's GOES pick: 749, 325 and 353 ms)."""
    final = finalists(contenders, measured)
    what = f"{len(final)} layouts within {RUNOFF_WITHIN:.0%} of the fastest"
    if len(final) < 2 and confirm:
        final = confirmation(contenders, measured)
        what = "confirmation: the fastest and the next fastest"
    if len(final) < 2:
        return {}
    by_key = {c.key: m for c, m in zip(contenders, measured)}
    rounds = runoff_rounds([by_key[k] for k in final], repeats)
    n_cells = len(final) * len(wl.items)
    # a pass's share of the cell's budget as with 2 x repeats + 1 rounds: more rounds of short passes get more
    cell_budget = max(RUNOFF_CELL_S, per_cell_budget(budget, n_cells, 2 * repeats + 1) or 0.0) \
        * (rounds + 1) / (2 * repeats + 2)
    planned = (rounds, cell_budget)
    if pace is not None:      # held to the time left: fewer rounds, then shorter passes, else none (said)
        plan = rounds_plan(pace.left() - CLOSE_S, item_passes_s([by_key[k] for k in final]), rounds, cell_budget)
        planned_n = len(final)
        while plan is None and len(final) > 2:
            # fewer finalists before none: the slowest of the first round drops out (finalists come fastest first)
            final = dict(list(final.items())[:-1])
            plan = rounds_plan(pace.left() - CLOSE_S, item_passes_s([by_key[k] for k in final]), rounds, cell_budget)
        if plan is None:
            pace.trim(f"the runoff skipped: {max(pace.left(), 0.0):.0f} s left of --within {pace.within:.0f} s "
                      f"for the {what} (the first round's times decide)")
            return {}
        if len(final) < planned_n:
            pace.trim(f"the runoff held to the time left: the {len(final)} fastest of the {what} "
                      f"({max(pace.left(), 0.0):.0f} s left of --within {pace.within:.0f} s)")
            what = f"the {len(final)} fastest of the {what}"
        rounds, cell_budget = plan
        if rounds < planned[0]:
            pace.trim(f"the runoff held to the time left: {rounds} rounds (planned {planned[0]}), "
                      f"{max(pace.left(), 0.0):.0f} s left")
    echo(f"  runoff ({what}): measured again, interleaved, {rounds} rounds")
    again = measure_interleaved(wl, source, list(final.values()), out / "runoff", work_dir, rounds, cell_budget, echo)
    if pace is not None and cell_budget < planned[1] and any(m.extrapolated for m in again):
        # the cap (every pass to its budget still ends in time) cut a pass to a prefix: said as what it is, a bound
        # against the worst case, with how many passes reached it (breaker10 B7: 1 of 39, answered at 44% of
        # --within, was worded "to end in time" as if the deadline had needed it)
        cut, passes = cut_passes(again)
        pace.trim(f"the runoff's cells capped at {cell_budget:.1f} s (planned {planned[1]:.1f} s), a bound under which "
                  f"its rounds end in time even were every pass to run to its budget: {cut} of {passes} passes reached "
                  "it and measured a prefix (completed by the fitted model: extrapolated_how)")
    return {m.contender.key: m for m in again if m.measured_s is not None}


def cut_passes(measured) -> tuple[int, int]:
    """(passes cut to a prefix, passes) over every pattern of ``measured`` (interleaved rounds' Measured)."""
    cut = total = 0
    for m in measured:
        for d in m.passes or ():
            if d is None:
                continue
            each = d.each if len(d.each) == len(d.passes) else (d.measured,) * len(d.passes)
            cut += sum(1 for k in each if k < d.requests)
            total += len(d.passes)
    return cut, total


def runoff_rounds(finals: list, repeats: int) -> int:
    """``2 x repeats + 1`` rounds, more when the fastest finalist's pass (every pattern once, as the first
    round measured it) is short: enough for its passes to add up to :data:`RUNOFF_MIN_S`, at most
    :data:`RUNOFF_MAX_ROUNDS`. A pass of a few ms is mostly the machine's noise; its median over 7 is not
    the layout's time."""
    least = 2 * repeats + 1
    fastest = min((s for s in (pass_seconds(m) for m in finals) if s > 0), default=0.0)
    if fastest <= 0:
        return least
    return int(min(RUNOFF_MAX_ROUNDS, max(least, math.ceil(RUNOFF_MIN_S / fastest))))


def confirmation_seconds(contenders, measured, repeats: int) -> float:
    """The confirmation round's estimate: its two layouts' first-round passes, :func:`runoff_rounds` of them."""
    by_key = {c.key: m for c, m in zip(contenders, measured)}
    pair = [by_key[k] for k in confirmation(contenders, measured)]
    return rounds_seconds(pair, runoff_rounds(pair, repeats)) if pair else 0.0


def confirmation(contenders, measured) -> dict:
    """{key: contender} of the fastest measured layout and the next fastest (another layout or cache), or
    {} when fewer than two were measured."""
    timed = sorted((m.measured_s, i) for i, m in enumerate(measured) if m is not None and m.measured_s is not None)
    out: dict = {}
    for _, i in timed:
        out.setdefault(contenders[i].key, contenders[i])
        if len(out) == 2:
            return out
    return {}
