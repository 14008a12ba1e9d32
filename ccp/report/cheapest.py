"""The "cheapest change" rule: of the options close to the fastest, the least invasive leads (a reader setting before
a code change before a new file). One function for the report's headline, ``ccp advise`` and ``ccp diagnose``
(issue 22)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

CHEAPEST_WITHIN = 2.0    # the cheapest change: the least invasive one whose time is within this factor of the fastest's
CHEAPEST_RULE = (f"the least invasive change whose time is within {CHEAPEST_WITHIN:g}x of the fastest's leads (a reader "
                 "setting before a code change before a new file); the rest follow fastest first")


def cheapest_first(options: Iterable[T], time: Callable[[T], float], effort: Callable[[T], Any],
                   within: float = CHEAPEST_WITHIN, fastest: float | None = None,
                   near: Callable[[T], bool] | None = None) -> list[T]:
    """The "cheapest change" rule, as the report's headline, ``ccp advise`` and ``ccp diagnose`` all apply it
    (CHEAPEST_RULE): of the options whose time is within ``within`` of the fastest's (``fastest``: that time, default
    the least of ``time``; ``near``: options to count as close whatever their time, e.g. tied with the fastest by
    the noise rule), the least invasive (lowest ``effort``, which may be a tuple; then the faster) leads; the rest
    follow fastest first. The rule is applied to the whole time, as stated: a setting 11.6x slower than a new layout
    does not lead however little it changes (issue 22)."""
    opts = list(options)
    lead = cheapest(opts, time, effort, within, fastest, near)
    return ([lead] if lead is not None else []) + sorted((o for o in opts if o is not lead), key=time)


def cheapest(options: Iterable[T], time: Callable[[T], float], effort: Callable[[T], Any],
             within: float = CHEAPEST_WITHIN, fastest: float | None = None,
             near: Callable[[T], bool] | None = None) -> T | None:
    """The option :func:`cheapest_first` puts first; None when no option is close to ``fastest``."""
    opts = list(options)
    if not opts:
        return None
    floor = min(time(o) for o in opts) if fastest is None else fastest
    close = [o for o in opts if time(o) <= within * floor or (near is not None and near(o))]
    return min(close, key=lambda o: (effort(o), time(o))) if close else None
