"""The order ``ccp diagnose`` lists its cures in: the "cheapest change" rule the report and ``ccp advise`` apply
(:func:`ccp.report.cheapest.cheapest_first`): the least invasive cure whose predicted time is within 2x of the fastest's
leads, the rest follow fastest first. Before issue 22 diagnose ranked by predicted time alone, so a repack 1.1x
faster than a one-line cache setting came first.
"""

from __future__ import annotations

from ccp.report.cheapest import CHEAPEST_RULE, cheapest_first

# what a cure costs the program's owner: a reader setting < a change to the reading (or writing) code < a new file
EFFORT = {"cache": 0, "xarray_file_cache": 0, "keep_open": 1, "batched": 1, "blocks": 1, "repack": 2}
RULE = CHEAPEST_RULE


def effort(cure: dict) -> int:
    """0 a setting, 1 a code change, 2 a new file. A cache that also needs the file kept open is a code change; the
    write cures carry no ``apply`` and are known by their names."""
    how = cure.get("apply") or {}
    kind = how.get("kind")
    if kind == "cache":
        return 1 if how.get("merge") else 0
    if kind in EFFORT:
        return EFFORT[kind]
    name = str(cure.get("cure", ""))
    if name.startswith("a chunk cache"):
        return 0
    return 2 if name.startswith("repack") else 1


def rank_cures(cures: list[dict]) -> list[dict]:
    """``cures`` in the rule's order; equal predicted times by name, so the order is stable."""
    return cheapest_first(sorted(cures, key=lambda c: str(c.get("cure", ""))), lambda c: float(c["predicted_s"]),
                          effort)
