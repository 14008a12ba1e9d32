"""What a verdict between two cells of one run lets the report say: stats.judge's words sorted by why the rule
did not call a difference, so the headline and the tables never call "tied" what the run could not test.

judge says "noise" both for passes that a test could have told apart and did not (a tie by the test) and for a
difference the slower side's load or competitors excuse, and "undecided" both for too few passes and for a load the
rule cannot clear (breaker9 G9, G15): the first is a tie, the others are undecided (a rerun decides). Which is which
is read from the verdict's basis (what decided it, set where judge decides) and the two samples' pass counts, never
from the ratio or the words of its reason.
"""

from __future__ import annotations

from ccp.report import stats
from ccp.report.stats import ALPHA, Sample, Verdict, least_p

TIE, NOISE, LOAD, FEW, UNKNOWN, DIFFERS = "tie", "noise", "load", "few", "unknown", "differs"

# the load kind is a load the rule cannot clear: measured under more of it, competitors, or no CPU time to rule it
# out at the same load (breaker10 B5: "different load" for two cells at 7.7 and 7.7)
LOAD_ADVICE = "undecided: the load cannot be ruled out, rerun quiet or ccp compare --remeasure"


def kind(v: Verdict, a: Sample | None = None, b: Sample | None = None) -> str:
    """One of TIE (within the threshold), NOISE (the same work and passes a test could tell apart, not apart),
    LOAD (the difference the load or competitors may explain: undecided), FEW (too few passes for the pass test:
    undecided), UNKNOWN (one pass each, no counts) or DIFFERS (faster or slower by the rule). ``a`` and ``b`` are the
    samples judged: a "noise" on passes so few the pass test could never reach ALPHA is FEW, whatever the CPU time
    said (breaker9 G9: 1.6x on 2 vs 2 passes was "tied")."""
    if v.differs:
        return DIFFERS
    if v.word == "tie":
        return TIE
    if v.word == "unknown":
        return UNKNOWN
    if v.basis == stats.LOAD:
        return LOAD
    if v.word == "noise" and a is not None and b is not None and least_p(len(a.passes), len(b.passes)) < ALPHA:
        return NOISE
    return FEW


def undecided(k: str) -> bool:
    """Neither a tie nor a difference: the run cannot tell (never counted as tied: breaker8 F7, breaker9 G9/G15)."""
    return k in (LOAD, FEW, UNKNOWN)


def short(k: str, ratio_text: str) -> str:
    """The verdict in a word or two beside its ratio, as a table cell shows it."""
    if k == DIFFERS:
        return ratio_text
    word = {TIE: "tie", NOISE: "tie", LOAD: "undecided: load", FEW: "undecided", UNKNOWN: "undecided"}[k]
    return f"{word} ({ratio_text})"
