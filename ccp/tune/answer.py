"""Tune's answer in words: the console table and the summary under it.

Every time a row shows is compared with the pick's from the same round (the runoff's for layouts measured
in it, else the first round's): rounds minutes apart under another load do not compare (a busy machine
measured a whole runoff 1.7x slower than the round before it). A layout that looks faster than the pick
and lost says why; a deadline overrun says by how much.
"""

from __future__ import annotations

import math

from ccp.tune.pace import RUNOFF_MAX, RUNOFF_WITHIN
from ccp.units import format_bytes, format_seconds, shape_str

PREDICTED_WITHIN = 1.25   # issue 22's target for the pick's prediction against its measurement
SHARES_DIFFER = 1.1        # the pick's CPU shares in its two rounds this far apart: its prediction at the runoff's share said
NO_REPACK_MARGIN = 0.05    # the current layout with a new cache is shown as an alternative when measured this close
RECOMPLETED = 0.01         # a first-round time the final prices moved by more than this: said


def same_round(r: dict, pick: dict) -> tuple[float | None, str | None]:
    """``r``'s time over the pick's in one round, and which: the runoff's when both were in it, else the
    first round's; (None, None) when the pick has no time in the row's round."""
    if r.get("runoff") and pick.get("runoff") and r["measured_s"] and pick["measured_s"]:
        return r["measured_s"] / pick["measured_s"], "runoff"
    a, b = r.get("first_measured_s"), pick.get("first_measured_s")
    if a and b:
        return a / b, "first round"
    return None, None


def why_lost(r: dict, pick: dict, rows: list[dict]) -> str:
    """Why ``r``, measured faster than the pick in the same round, is not the pick."""
    if r.get("runoff") and pick.get("runoff"):
        from ccp.tune.settle import runoff_verdict

        if runoff_verdict(pick, r) == "tied":
            return "tied with the pick in the runoff (the tie rule decided: see 'chosen')"
        return ("undecided in the runoff (it could not tell them apart), and the model's counts predict it more "
                "I/O than the pick: see 'chosen'")
    if not pick.get("runoff"):
        return "within the first round's noise of the pick"
    sel = r.get("first_at_selection_s")
    if sel is None:
        return "first round only: measured after the runoff's layouts were chosen"
    fastest = min(x["first_at_selection_s"] for x in rows if x.get("first_at_selection_s") is not None)
    if sel > fastest * (1 + RUNOFF_WITHIN):
        why = (f"first round only: not in the runoff, its first-round time then ({format_seconds(sel)}) over "
               f"{RUNOFF_WITHIN:.0%} slower than the fastest's ({format_seconds(fastest)})")
    else:
        why = (f"first round only: not in the runoff, which measures the {RUNOFF_MAX} fastest of the first round "
               f"(its time then {format_seconds(sel)}, the fastest's {format_seconds(fastest)})")
    first = r.get("first_measured_s")
    if first and abs(first - sel) > RECOMPLETED * sel:
        why += (f"; the final prices re-completed its extrapolated prefix to {format_seconds(first)} after the "
                "runoff's layouts were chosen")
    return why


def _time(r: dict, key: str, extrapolated: bool) -> str:
    if r.get(key) is None:
        return "-" if r.get("statuses") is None else "failed"
    return ("~" if extrapolated else "") + format_seconds(r[key])


def console_table(result: dict) -> list[str]:
    rows = result["contenders"]
    ran_runoff = any(r.get("runoff") for r in rows)
    head = f"{'layout':<18} {'chunks':<16} {'filters':<10} {'cache':<22} {'predicted':>10} {'1st round':>10}"
    lines = [head + (f" {'runoff':>10}" if ran_runoff else "") + f" {'pick is':>12}"]
    for r in rows:
        cache = f"{format_bytes(r['cache_nbytes'])}/{r['cache_nslots']}/{r['cache_w0']:g}"
        # a row outside the runoff: its time is the first round's
        first = (_time(r, "first_measured_s", bool(r.get("first_extrapolated"))) if r.get("runoff")
                 else _time(r, "measured_s", bool(r.get("extrapolated"))))
        again = _time(r, "measured_s", bool(r.get("extrapolated"))) if r.get("runoff") else ""
        sp = r.get("speedup_of_pick")
        tag = {"runoff": " (r)", "first round": " (1)"}.get(r.get("speedup_round") or "", "")
        sp_s = f"{sp:.2f}x{tag}" if sp else "-"
        lines.append(f"{r['label']:<18} {shape_str(r['chunks']):<16} {r['filters']:<10} {cache:<22} "
                     f"{format_seconds(r['predicted_s']):>10} {first:>10}" + (f" {again:>10}" if ran_runoff else "")
                     + f" {sp_s:>12}")
    lines.append("pick is: the layout's time over the pick's in the same round: (r) the runoff's, (1) the first "
                 "round's (rounds minutes apart under another load do not compare)")
    return lines


def summary_lines(result: dict) -> list[str]:
    rec = result["recommended"]
    out = [f"recommended: chunks {shape_str(rec['chunks'])}, filters {rec['filters']}, chunk cache "
           f"{format_bytes(rec['cache_nbytes'])} / {rec['cache_nslots']} slots / w0 {rec['cache_w0']:g}"
           + ("" if rec["repack_needed"] else "  (the current layout: no repack, only the cache)")]
    if rec.get("measured_in_choice_s") is not None:
        out += measured_lines(rec)
    elif rec["measured_s"] is not None:
        n = rec.get("measured_passes")
        out.append(f"  measured {format_seconds(rec['measured_s'])} for the weighted workload (predicted "
                   f"{format_seconds(rec['predicted_s'])})" + (f": the median of its {n} whole passes, the checks' too" if n else ""))
    else:
        out.append(f"  predicted {format_seconds(rec['predicted_s'])} for the weighted workload (not measured)")
    for r in result["contenders"]:
        # a layout measured faster than the pick in the same round: why it lost, said, not hidden
        if r.get("lost_why") and r.get("speedup_of_pick") and r["speedup_of_pick"] < 1:
            out.append(f"  note: {r['label']} measured faster than the pick in the {r.get('speedup_round')} "
                       f"({r['speedup_of_pick']:.2f}x): {r['lost_why']}")
    out.append(f"  chosen: {rec['why']}")
    out += extrapolated_lines(result["contenders"])
    out.append("  predicted: the model's counts priced " + (result.get("prices", {}).get("how") or "by the probes")
               + " (tune.json: contenders[].predicted_s; a run folder's predicted_time_s is the sweep engine's own, "
               "at its calibration's prices, not tune's fit); measured: the sweep engine, cold, median of the passes")
    if any(r.get("runoff") for r in result["contenders"]):
        out.append("  runoff: the layouts within "
                   f"{RUNOFF_WITHIN:.0%} of the fastest (a fastest alone: beside the next fastest, a confirmation), measured "
                   "again in interleaved rounds (a pass of each a round), more passes")
    if result.get("cache"):
        out.append(f"  cache: {result['cache']}")
    if result.get("slots"):
        out.append(f"  slots: {result['slots']}")
    for note in result.get("trimmed") or []:
        out.append(f"  trimmed: {note} (the answer's deadline)")
    out += answered_lines(result)
    out += overrun_lines(result)
    alt = result.get("no_repack_alternative")
    if alt:
        out.append(f"  or keep the stored layout with a chunk cache of {format_bytes(alt['cache_nbytes'])} / {alt['cache_nslots']} slots: "
                   f"measured {format_seconds(alt['measured_s'])}, within {NO_REPACK_MARGIN:.0%} of the pick, no repack")
    out.append("apply it:")
    for k, v in result["commands"].items():
        out.append(f"  {k:<12} {v}")
    return out


def extrapolated_lines(rows: list[dict]) -> list[str]:
    """What a "~" time is, and for each, the run folder's figure beside it and where it is: the sweep engine
    scales a prefix up to every request (cells.csv's time_s; rounds.csv's for interleaved rounds), tune
    completes the prefix with the fitted model instead (breaker9 G12: "~496 ms" against a folder's 13.6 s)."""
    shown = []
    for r in rows:
        # each time the table shows with a "~": the first-round column's and the runoff column's
        if r.get("runoff") and r.get("first_extrapolated"):
            shown.append((r, "1st round", r.get("first_measured_s"), r.get("first_engine_measured_s"),
                          r.get("first_extrapolated_how"), r.get("first_run_dir"), "cells.csv"))
        if r.get("extrapolated"):
            shown.append((r, "runoff" if r.get("runoff") else "1st round", r.get("measured_s"),
                          r.get("engine_measured_s"), r.get("extrapolated_how"), r.get("run_dir"),
                          "rounds.csv" if r.get("runoff") else "cells.csv"))
    if not shown:
        return []
    out = ["  ~ extrapolated: a pattern of this layout ran past its cell's time budget; its time is the measured prefix "
           "of requests (its cold first requests counted once) plus the fitted model's time of the rest "
           "(tune.json: extrapolated_how), not the sweep engine's figure in its run folder, which scales the prefix up "
           "to every request (time_s, status 'extrapolated')"]
    for r, col, t, engine, how, where, table in shown:
        line = f"    ~ {r['label']} ({col}): {how or 'a prefix'}: {format_seconds(t) if t is not None else '-'}"
        if engine is not None and where:
            of = "each pattern's median round" if table == "rounds.csv" else "its patterns'"
            line += f"; the engine's figure: {format_seconds(engine)} ({of} time_s, weighted: {where}/{table})"
        out.append(line)
    return out


def measured_lines(rec: dict) -> list[str]:
    """The pick's measured time as the choice used it (its round, its passes, whether a prefix was completed
    by the model), then, when it differs, the median of every whole pass of the recommendation as recommended
    (the first round's, the runoff's, the checks'), labelled: two figures, each saying what it is."""
    where = rec.get("measured_in_choice_round") or "first round"
    n = rec.get("measured_in_choice_passes")
    ex = bool(rec.get("measured_in_choice_extrapolated"))
    what = (f"the median of its {n} {'interleaved ' if where == 'runoff' else ''}passes"
            + (", those cut to a prefix completed by the fitted model" if ex else "") if n
            else "the median of its passes, each pattern's measured prefix completed by the fitted model" if ex
            else "the median of its passes")
    before = " (its cache before the checks)" if rec.get("checked_cache") else ""
    out = [f"  measured {'~' if ex else ''}{format_seconds(rec['measured_in_choice_s'])} for the weighted workload in the "
           f"{where}{before}, the figure the choice used: {what} (predicted {format_seconds(rec['predicted_in_choice_s'])})"]
    pooled, k = rec.get("measured_s"), rec.get("measured_passes")
    if k and pooled is not None and abs(pooled - rec["measured_in_choice_s"]) > RECOMPLETED * rec["measured_in_choice_s"]:
        out.append(f"  every whole pass of the recommendation as recommended (the first round's, the runoff's, the "
                   f"checks'): {format_seconds(pooled)}, the median of {k} (tune.json: recommended.measured_s)")
    return out + load_lines(rec)


def load_lines(rec: dict) -> list[str]:
    """The pick's prediction before the runoff against the runoff, with the pick's CPU share in each round: a
    first round measured on a busier (or quieter) machine than the runoff priced every layout at its own load,
    and the two shares say how much of a miss is that (audit22 A7: 2.11x as measured, 1.14x brought to the
    runoff's share)."""
    before, at, m = (rec.get("predicted_before_runoff_s"), rec.get("predicted_before_runoff_at_runoff_share_s"),
                     rec.get("measured_in_choice_s"))
    if not (before and at and m):
        return []
    first, runoff = rec["first_round_cpu_share"], rec["runoff_cpu_share"]
    line = (f"  before the runoff: predicted {format_seconds(before)} at the first round's prices, "
            f"{before / m:.2f}x the runoff's {format_seconds(m)}; the pick's passes had a median CPU share of "
            f"{first:.2f} in the first round, {runoff:.2f} in the runoff (the rest of a pass's wall: waiting for a "
            "core or the disk)")
    if abs(math.log(first / runoff)) <= math.log(SHARES_DIFFER):
        return [line]
    line += f"; brought to the runoff's share (the same CPU time), {format_seconds(at)} ({at / m:.2f}x)"
    # a verdict only on a miss: the load accounts for it when the same CPU time comes within the target
    if not within(before / m):
        line += ": the miss is the machine's load" if within(at / m) else ": not the load alone"
    return [line]


def within(ratio: float) -> bool:
    return 1 / PREDICTED_WITHIN <= ratio <= PREDICTED_WITHIN


def answered_lines(result: dict) -> list[str]:
    """When something was trimmed and the answer came within --within: when it came. Each phase is planned
    against its worst case (every pass to its budget, each estimate over), so a trim is what the plan needed,
    not what the deadline turned out to need (breaker10 B7: a runoff pass cut "to end in time", answered at
    39.5 s of 90 s)."""
    limit, wall = result.get("within_s"), result.get("wall_s")
    if not result.get("trimmed") or limit is None or wall is None or wall > limit:
        return []
    return [f"  trimmed as planned to end in time (each phase against its worst case): answered at "
            f"{format_seconds(wall)}, {wall / limit:.0%} of --within {format_seconds(limit)}"]


def overrun_lines(result: dict) -> list[str]:
    """--within overrun: by how much, and what before the first measurement took of it."""
    within, wall = result.get("within_s"), result.get("wall_s")
    if within is None or wall is None or wall <= within:
        return []
    search = result.get("search") or {}
    before = (search.get("search_s") or 0.0) + (search.get("calibration_s") or 0.0)
    return [f"  over --within: answered {format_seconds(wall - within)} past --within {format_seconds(within)} "
            f"({format_seconds(wall)} by tune's clock; the calibration and the search took {format_seconds(before)} "
            "before the first measurement)"]
