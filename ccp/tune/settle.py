"""The runoff among the close layouts, and after the pick its chunk cache settled by measurement (interleaved
rounds); the tie rule of the runoff.

The search gives every layout the largest cache of the budget (the model's prediction that a smaller
one is as fast saves no memory on its own: cold passes measured such smaller caches slower). Here a
smaller cache replaces the pick's only when the model predicts it the same I/O and it measured no slower
beside it, and HDF5's default slot count only when measured no slower (interleaved: a pass of each a round).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.hdf5.defaults import MIN_NSLOTS
from ccp.report.stats import signed_rank_p as paired_p
from ccp.tune.prove import ROUNDS_CSV, Contender, measure_interleaved
from ccp.tune.search import frugal_cache
from ccp.units import format_bytes, format_seconds

TIE_FLOOR = 0.03           # two runoff layouts closer than this (or than their passes' spread) are tied
CLEAR_MARGIN = 1.25        # interleaved rounds: a median per-round ratio past this, one way in (nearly) every round,
CLEAR_SIGN_P = 0.125       # (the sign test's two-sided p at most this: 6 of 7 rounds, 5 of 5) is apart, not a tie


CACHE_RULE = ("the largest cache of the budget, unless a smaller one for which the model predicts the same I/O "
              "(every pattern's chunk loads, file operations and bytes read equal: counts, deterministic) also "
              "measured no slower beside it: the median per-round ratio of interleaved rounds (a cold pass of each a "
              "round) at most 1; a smaller cache that changes the predicted I/O is never recommended, nor measured. "
              "HDF5's default 521 slots replace a custom count when measured faster, or as fast with the same I/O "
              "predicted; a custom count is kept when the default measured as fast but is predicted more chunk loads")


def check_cache(wl, source, pick: Contender, costs, constraints, out: Path, work_dir: Path, repeats: int,
                cell_budget, echo):
    """The smallest cache the model predicts the same I/O for as the pick's (:func:`frugal_cache`) against
    the pick's in ``2 * repeats + 1`` interleaved rounds: the smaller one is recommended only when it also
    measured no slower (:func:`no_slower`: round against round), :data:`CACHE_RULE`. Memory is saved on
    deterministic counts and measured evidence; a predicted near-tie in time is neither. Returns (the
    contender to recommend, a note or None when no smaller cache keeps the I/O, the two measured)."""
    small = frugal_cache(pick.chunks, pick.filters, pick.cache, source, wl.items, costs,
                         max_cache_bytes=constraints.max_cache_bytes, fixed_cache=constraints.cache_nbytes)
    if small is None:
        return pick, None, []
    frugal = replace(pick, label=f"{pick.label}, {format_bytes(small.cache.nbytes)} cache", cache=small.cache,
                     predicted_s=small.workload_s, item_s=tuple(ic.seconds for ic in small.items))
    echo(f"  cache: {format_bytes(pick.cache.nbytes)} against {format_bytes(small.cache.nbytes)} (the same I/O predicted), alternating")
    a, b = side_by_side(wl, source, pick, frugal, out / "cache", work_dir, repeats, cell_budget, echo,
                        "cache check", costs)
    if a.measured_s is None or b.measured_s is None:
        return pick, None, [a, b]
    slower, said = cache_verdict(pick.cache.nbytes, a.measured_s, b.measured_s, no_slower(a, b, wl.items))
    if not slower:
        return frugal, (f"a {format_bytes(small.cache.nbytes)} cache, the same I/O predicted, measured no slower {said}: "
                        "the smaller cache"), [a, b]
    # a median per-round ratio of 1.01 is "not shown no slower", not "slower": the words say which (the rule keeps
    # the budget's cache either way: a smaller one measured within the noise cost 1.16-1.21x in the league)
    ra, rb = ({"measured_s": m.measured_s, "measured_min_s": m.min_s, "measured_max_s": m.max_s,
               "passes": weighted_passes(m, wl.items) if m.passes else None, "paired": True} for m in (a, b))
    how = "measured slower" if not tied(ra, rb) else "not measured no slower (within the noise, not apart)"
    return pick, (f"the {format_bytes(pick.cache.nbytes)} cache kept: {format_bytes(small.cache.nbytes)}, the same I/O "
                  f"predicted, {how} {said}"), [a, b]


def cache_verdict(big_nbytes: int, big_s: float, small_s: float, ratio: float | None) -> tuple[bool, str]:
    """(whether the smaller cache measured slower, the evidence in words): the median per-round ratio decides when
    there is one, and is printed first; the medians of the passes follow, labelled, with a word when they point the
    other way (a load that drifted between rounds moves the medians, not the round-against-round ratio)."""
    medians = f"medians {format_seconds(small_s)} against {format_seconds(big_s)} with {format_bytes(big_nbytes)}"
    if ratio is None:
        return small_s > big_s, f"({medians})"
    slower = ratio > 1.0
    other_way = (small_s > big_s) != slower and small_s != big_s
    return slower, (f"(round against round: median per-round ratio {ratio:.2f}, which decides; {medians}"
                    + ("; the medians point the other way" if other_way else "") + ")")


def no_slower(a, b, items) -> float | None:
    """``b`` against ``a`` measured in interleaved rounds: the median of the per-round ratios of their
    weighted pass totals (round i of each side by side, so a load that drifts cancels), None when either
    lacks whole passes of every round (the medians then decide)."""
    how, pa, pb = compared_passes({"passes": weighted_passes(a, items), "paired": True},
                                  {"passes": weighted_passes(b, items), "paired": True})
    if how != "paired" or min(pa) <= 0:
        return None
    return float(np.median(np.asarray(pb, float) / np.asarray(pa, float)))


def check_slots(wl, source, pick: Contender, out: Path, work_dir: Path, repeats: int, cell_budget, echo, costs=None):
    """A custom slot count is offered only when measured better: the pick and the pick with HDF5's
    default 521 slots in ``2 * repeats + 1`` interleaved rounds. The default measured faster (apart): it
    stands. Tied (:func:`tied`): the fewer predicted I/O decides, as in the runoff: the default (one less
    setting to carry) when the model (``costs``) predicts it the same I/O (:func:`same_io`), the custom
    count when the default's hash collisions are predicted more chunk loads (the league's MUR SST: 368
    against 352 of its series' loads at 521 slots, measured as fast on a busy machine, and 1.12x the oracle's
    answer beside it). Returns (the contender to recommend, a note, the two measured)."""
    from ccp.tune.search import evaluate, same_io

    if pick.cache.nbytes == 0 or pick.cache.nslots == MIN_NSLOTS or pick.chunks is None:
        return pick, None, []
    plain = replace(pick, label=f"{pick.label}, {MIN_NSLOTS} slots", cache=ChunkCache(pick.cache.nbytes, MIN_NSLOTS, pick.cache.w0))
    echo(f"  slots: {pick.cache.nslots} against HDF5's default {MIN_NSLOTS}, alternating")
    a, b = side_by_side(wl, source, pick, plain, out / "slots", work_dir, repeats, cell_budget, echo,
                        "slot check", costs)
    if a.measured_s is None or b.measured_s is None:
        return pick, None, [a, b]
    ra, rb = ({"measured_s": m.measured_s, "measured_min_s": m.min_s, "measured_max_s": m.max_s,
               "passes": weighted_passes(m, wl.items) if m.passes else None, "paired": True} for m in (a, b))
    said = (f"({check_time(b)} against {check_time(a)} with {pick.cache.nslots}, "
            f"{2 * repeats + 1} interleaved rounds: {out / 'slots' / ROUNDS_CSV})")
    is_tie = tied(ra, rb)
    how = "measured faster" if not is_tie else "measured as fast"
    if is_tie and runoff_verdict(ra, rb) == "undecided":
        how, said = "not told apart", said + f": undecided ({tie_basis(ra, rb)})"
    if b.measured_s <= a.measured_s or is_tie:
        if is_tie and costs is not None:
            ec, ed = (evaluate(c.chunks, c.filters, c.cache, source, wl.items, costs) for c in (pick, plain))
            if not same_io(ec, ed):
                ld, lc = (sum(it.weight * ic.chunk_loads for it, ic in zip(wl.items, e.items)) for e in (ed, ec))
                return pick, (f"{pick.cache.nslots} slots kept: HDF5's default {MIN_NSLOTS} {how} {said}, but the "
                              f"model predicts it more I/O (its hash slots collide: {ld:,.0f} chunk loads against "
                              f"{lc:,.0f})"), [a, b]
        return plain, (f"HDF5's default {MIN_NSLOTS} slots {how} {said}"
                       + (", the same I/O predicted" if is_tie and costs is not None else "") + ": no custom slot count"), [a, b]
    return pick, (f"{pick.cache.nslots} slots measured {b.measured_s / a.measured_s - 1:.0%} faster than "
                  f"HDF5's default {MIN_NSLOTS} ({check_time(a)} against {check_time(b)}, {2 * repeats + 1} "
                  f"interleaved rounds: {out / 'slots' / ROUNDS_CSV})"), [a, b]


def check_time(m) -> str:
    """A check's measured time as printed: "~" where a pass was a prefix completed by the fitted model."""
    return ("~" if m.extrapolated else "") + format_seconds(m.measured_s)


def side_by_side(wl, source, pick: Contender, other: Contender, folder: Path, work_dir: Path, repeats: int,
                 cell_budget, echo, phase: str = "check", costs=None):
    """The pick and one variant of it measured in ``2 * repeats + 1`` interleaved rounds (a pass of each a
    round, alternating; ``phase`` names them): the measured pair, pick first, each pass cut to a prefix by its
    budget completed by the fitted model (``costs``; :func:`ccp.tune.complete.reestimate`), as the runoff's
    are: the engine's prefix scaled up is off the pick's scale (breaker9 G13: 179 ms beside a 36 ms pick)."""
    from ccp.tune.complete import reestimate

    pair = measure_interleaved(wl, source, [pick, other], folder, work_dir, 2 * repeats + 1, cell_budget, echo,
                               phase=phase)
    if costs is not None:
        pair = reestimate(pair, wl.items, source, costs)
    a, b = pair
    return a, b


def tied(a: dict, b: dict) -> bool:
    """Two layouts measured side by side (the runoff) whose difference is within the machine's noise.
    The pass is the unit of replication (a busy machine moves every request of a pass together).
    Passes measured in interleaved rounds (both ``paired``: pass i of each in round i) are compared
    round against round (:func:`paired_p`, a drift in load cancels within a round; and
    :func:`clearly_apart`, a large margin in all rounds but one); other passes by
    :mod:`ccp.report.stats`' pass-level Mann-Whitney test. Tied unless the test finds them apart
    (p < 0.05), or when the medians differ by less than :data:`TIE_FLOOR` anyway. Without passes: tied when the medians
    differ by less than their passes' spread (the larger half-range, relative) or the floor."""
    from ccp.report.stats import ALPHA, pass_p

    lo = min(a["measured_s"], b["measured_s"])
    diff = abs(a["measured_s"] - b["measured_s"])
    if diff <= TIE_FLOOR * lo:
        return True
    how, pa, pb = compared_passes(a, b)
    if how == "paired":
        return bool(paired_p(pa, pb) >= ALPHA) and not clearly_apart(pa, pb)
    if how == "unpaired":
        return bool(pass_p(pa, pb) >= ALPHA)
    spread = 0.0
    for r in (a, b):
        if r.get("measured_min_s") is not None and r.get("measured_max_s") is not None and r["measured_s"] > 0:
            spread = max(spread, (r["measured_max_s"] - r["measured_min_s"]) / (2 * r["measured_s"]))
    return diff <= max(TIE_FLOOR, spread) * lo


def could_find_apart(a: dict, b: dict) -> bool:
    """Whether the test :func:`tied` applies to ``a`` and ``b`` could find them apart at all below
    :data:`CLEAR_MARGIN`: paired rounds, when the exact signed-rank test's smallest p (every round one way,
    ``2 / 2**n``) is under ALPHA (6 rounds or more); unpaired passes, when the exact Mann-Whitney test's
    smallest p (``2 / C(m + n, m)``) is; never without whole passes. Five rounds' smallest p is 0.0625: only
    the clear margin (1.25x in every round) can part them, so "not apart" there is "could not tell"."""
    from math import comb

    from ccp.report.stats import ALPHA

    how, pa, pb = compared_passes(a, b)
    if how == "paired":
        return 2 / 2 ** len(pa) < ALPHA
    if how == "unpaired":
        return 2 / comb(len(pa) + len(pb), len(pa)) < ALPHA
    return False


def compared_passes(a: dict, b: dict) -> tuple[str, list, list]:
    """("paired" | "unpaired" | "none", ``a``'s passes, ``b``'s) as :func:`tied` compares them: interleaved
    rounds (both ``paired``, as many rounds) on the rounds whole on both sides (a round with a pass cut to a
    prefix is None in ``passes``: dropped from both, so round i stays beside round i), at least 2; other
    passes, each side's whole ones, at least 2 a side; else none (the medians and their spread decide)."""
    pa, pb = a.get("passes") or [], b.get("passes") or []
    if pa and pb and a.get("paired") and b.get("paired") and len(pa) == len(pb):
        both = [(x, y) for x, y in zip(pa, pb) if x is not None and y is not None]
        if len(both) >= 2:
            return "paired", [x for x, _ in both], [y for _, y in both]
        return "none", [], []
    qa, qb = [x for x in pa if x is not None], [y for y in pb if y is not None]
    if len(qa) >= 2 and len(qb) >= 2:
        return "unpaired", qa, qb
    return "none", [], []


def runoff_verdict(a: dict, b: dict) -> str:
    """"apart", "tied" or "undecided" for two layouts measured side by side. Tied: the medians within
    :data:`TIE_FLOOR`, or not apart by a test that could have found them apart (:func:`could_find_apart`);
    undecided: not apart where the runoff could not judge (too few rounds or passes for the test, or no whole
    pass: a prefix completed by the model). An undecided pair is never called a tie."""
    if not tied(a, b):
        return "apart"
    lo = min(a["measured_s"], b["measured_s"])
    if abs(a["measured_s"] - b["measured_s"]) <= TIE_FLOOR * lo or could_find_apart(a, b):
        return "tied"
    return "undecided"


IO_NEAR = 0.10      # predicted I/O counts this close are equal: the next count (then the fitted prediction) decides
TIE_RULE = (f"runoff layouts are compared round against round (interleaved rounds): apart when an exact Wilcoxon "
            f"signed-rank test on the per-round ratios gives p < 0.05, or when the median per-round ratio is at least "
            f"{CLEAR_MARGIN:g}x one way in nearly every round (sign test p <= {CLEAR_SIGN_P:g}: 6 of 7 rounds); tied "
            f"when the medians differ by less than {TIE_FLOOR:.0%}, or when not apart by a test that could have "
            f"found them apart (6 rounds or more; unpaired passes likewise); undecided otherwise (fewer rounds, or no "
            f"whole pass): among undecided layouts the faster measured is chosen unless the model predicts it more "
            f"device trips, then more bytes read, by over {IO_NEAR:.0%}. A tie between the stored layout (only a "
            f"chunk cache) and a repack goes to the stored layout (the cheapest change, as the report ranks); "
            f"otherwise the tie goes to the fewest device trips "
            f"the model prices (reads within the kernel's readahead of each other one forward sweep; file operations "
            f"where trips are unknown), then the fewest bytes read (each count within {IO_NEAR:.0%} counted equal), "
            f"then the fitted model's time")


def predicted_io(c, items, source, costs) -> tuple[float, float, float]:
    """(device trips, file operations, bytes read) the model predicts for a layout's weighted workload.
    Trips are what the device model prices (:func:`ccp.tune.search.cold_seconds`: a read pattern's file
    stretches, reads within the kernel's readahead of each other one forward sweep, once a pass); a
    pattern without them (a write) counts its file operations. File operations are raw reads (a filtered
    chunk's load is one; a contiguous column's sieve reads each one) and writes. Counts, not times: exact,
    whatever the machine's load."""
    from ccp.tune.search import evaluate

    cand = evaluate(c.chunks, c.filters, c.cache, source, items, costs)
    ops = sum(it.weight * (ic.raw_reads + ic.raw_writes) for it, ic in zip(items, cand.items))
    trips = sum(it.weight * (ic.raw_writes + (ic.device_trips if ic.device_trips is not None else ic.raw_reads))
                for it, ic in zip(items, cand.items))
    nbytes = sum(it.weight * ic.raw_read_bytes for it, ic in zip(items, cand.items))
    return trips, ops, nbytes


def fewest_io(rows: list[dict], last: str = "predicted") -> tuple[dict, str]:
    """Among layouts measured within noise of each other, the one the model predicts the least I/O
    for: device trips first (each one waits for the device; the count the device model prices, so a
    contiguous column's sieve reads, streamed by the kernel's readahead, are one trip, not thousands),
    file operations where a row has no trips (tune.json from before they were kept), then bytes read,
    each within :data:`IO_NEAR` counted equal, then the fitted model's time. Counts are exact whatever
    the load; the times that tied are not. Returns the row and what decided. ``last="measured"`` (layouts
    the runoff could not tell apart, :func:`runoff_verdict`): the faster measured decides after the counts,
    not the fitted model's time (a prediction 0.3% apart does not outweigh a measurement)."""
    if any(r.get("predicted_io_ops") is None for r in rows):
        if last == "measured":
            return _faster_measured(rows)
        return min(rows, key=lambda r: float(r["predicted_s"])), "the model's fitted prediction breaks the tie"
    key, what = (("predicted_io_trips", "device trips") if all(r.get("predicted_io_trips") is not None for r in rows)
                 else ("predicted_io_ops", "file operations"))
    least = min(r[key] for r in rows)
    few = [r for r in rows if r[key] <= least * (1 + IO_NEAR)]
    if len(few) == 1:
        others = ", ".join(f"{r[key]:,.0f}" for r in rows if r is not few[0])
        return few[0], f"it makes the fewest {what} by the model ({few[0][key]:,.0f} against {others})"
    counts = _counts(few, key, "{:,.0f}")
    least_b = min(r["predicted_io_bytes"] for r in few)
    fewer = [r for r in few if r["predicted_io_bytes"] <= least_b * (1 + IO_NEAR)]
    more_b = [r for r in few if r not in fewer]
    bytes_read = _counts(few, "predicted_io_bytes", None)
    # every count that decided is named: a tie that bytes settled is not "as much I/O"
    if len(fewer) == 1:
        return fewer[0], (f"as many {what} by the model ({counts}: within {IO_NEAR:.0%}), the fewest bytes read "
                          f"({bytes_read})")
    by_bytes = (f"; {', '.join(r['label'] for r in more_b)} read over {IO_NEAR:.0%} more bytes ({bytes_read})"
                if more_b else f", as many bytes read ({bytes_read}: within {IO_NEAR:.0%})")
    if last == "measured":
        pick, said = _faster_measured(fewer)
        return pick, f"as many {what} by the model ({counts}: within {IO_NEAR:.0%}){by_bytes}; {said}"
    pick = min(fewer, key=lambda r: float(r["predicted_s"]))
    return pick, (f"as many {what} by the model ({counts}: within {IO_NEAR:.0%}){by_bytes}; the fitted prediction "
                  f"breaks the tie among {', '.join(r['label'] for r in fewer)} "
                  f"({_counts(fewer, 'predicted_s', None, seconds=True)})")


def _faster_measured(rows: list[dict]) -> tuple[dict, str]:
    """The row measured fastest (the runoff's medians), and the words: what was measured decides."""
    pick = min(rows, key=lambda r: float(r["measured_s"]))
    times = ", ".join(f"{r['label']} {'~' if r.get('extrapolated') else ''}{format_seconds(r['measured_s'])}" for r in rows)
    return pick, f"the faster measured in the runoff decides among {', '.join(r['label'] for r in rows)} ({times})"


def _counts(rows: list[dict], key: str, fmt: str | None, seconds: bool = False) -> str:
    """"a 1,234, b 5,678": each row's count, labelled (bytes as bytes, times as times)."""
    def one(v: float) -> str:
        if seconds:
            return format_seconds(v)
        return fmt.format(v) if fmt else format_bytes(v)
    return ", ".join(f"{r['label']} {one(float(r[key]))}" for r in rows)


def tie_basis(a: dict, b: dict) -> str:
    """What :func:`tied` judged ``a`` and ``b`` tied on, in words: their rounds, their passes, or (no whole
    passes: every pattern extrapolated from a prefix) their medians only."""
    lo = min(a["measured_s"], b["measured_s"])
    gap = abs(a["measured_s"] - b["measured_s"]) / lo if lo > 0 else 0.0
    kind, pa, pb = compared_passes(a, b)
    able = could_find_apart(a, b)
    every = len(a.get("passes") or [])
    rounds = f"{len(pa)} interleaved rounds" + (f" (of {every}: the rest had a pass cut to a prefix)"
                                                 if kind == "paired" and len(pa) < every else "")
    if gap <= TIE_FLOOR:
        how = f"medians within {TIE_FLOOR:.0%} ({gap:.1%} apart)"
    elif kind == "paired":
        how = (f"{rounds}, round against round, not apart (medians {gap:.0%} apart)" if able else
               f"{rounds}, too few for the round-against-round test to find them apart under "
               f"{CLEAR_MARGIN:g}x (medians {gap:.0%} apart)")
    elif kind == "unpaired":
        how = (f"their passes ({len(pa)} and {len(pb)}) not apart (medians {gap:.0%} apart)" if able else
               f"their passes ({len(pa)} and {len(pb)}), too few for the passes' test to find them apart "
               f"(medians {gap:.0%} apart)")
    else:
        how = (f"no whole passes to compare (a pass cut to a prefix, completed by the fitted model): medians "
               f"{gap:.0%} apart, within the spread of their passes")
    return how


def weighted_passes(m, items) -> list[float | None] | None:
    """A layout's weighted pass totals (pass i of every pattern, weighted), when every pattern was
    measured whole with the same number of passes: the runoff's unit of comparison. Interleaved rounds
    (each pass's requests known: ``ItemPasses.each``) with some passes cut to a prefix: the rounds whole in
    every pattern, None for the others (round i stays round i), when at least 2 are whole."""
    if m is None or not m.passes or any(d is None or not d.passes for d in m.passes):
        return None
    sizes = {len(d.passes) for d in m.passes}
    if len(sizes) != 1:
        return None
    n = sizes.pop()
    if all(d.whole for d in m.passes):
        return [sum(it.weight * d.passes[i] for it, d in zip(items, m.passes)) for i in range(n)]
    if not all(d.each and len(d.each) == n for d in m.passes):
        return None
    out = [sum(it.weight * d.passes[i] for it, d in zip(items, m.passes))
           if all(d.each[i] >= d.requests for d in m.passes) else None for i in range(n)]
    return out if sum(x is not None for x in out) >= 2 else None


def pooled(key, measured, items) -> tuple[float, int] | None:
    """The median of every whole weighted pass of one layout and cache (``key``) among ``measured``
    (each a round, the runoff or a check), and how many: None when none was measured whole."""
    passes: list[float] = []
    for m in measured:
        if m is not None and m.contender.key == key:
            passes += [x for x in weighted_passes(m, items) or [] if x is not None]
    return (float(np.median(passes)), len(passes)) if passes else None


def clearly_apart(a, b) -> bool:
    """Interleaved rounds (round i of ``a`` and ``b`` side by side) one way by a clear margin: the median
    per-round ratio at least :data:`CLEAR_MARGIN` and the rounds' directions a sign test's two-sided
    p at most :data:`CLEAR_SIGN_P` (6 of 7 rounds, 5 of 5; never with 3 rounds). With 7 rounds the
    signed-rank test calls one reversed round apart only when it is among the two smallest
    differences; a busy machine's one slow pass can be larger (the league's NWB: contiguous faster in 6
    of 7 rounds, median ratio 1.31, p 0.11, and the tie went to a layout 1.4x slower in the league's
    sweep). Calling such rounds apart only hands the pick to the layout measured faster, which costs
    nothing if they truly tie; calling them tied can cost the margin."""
    from math import comb

    r = np.asarray(a, float) / np.asarray(b, float)
    r = r[r != 1.0]
    n = len(r)
    if n == 0:
        return False
    up = int((r > 1).sum())
    k = min(up, n - up)
    sign_p = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n)
    ratio = float(np.median(np.asarray(a, float) / np.asarray(b, float)))
    return bool(sign_p <= CLEAR_SIGN_P and max(ratio, 1 / ratio) >= CLEAR_MARGIN)


