"""Calls the trace keeps only as their bounding box, and what ``ccp diagnose`` says of them.

The recorder lists a call's blocks or points (one by one, or as runs in arithmetic progression:
:mod:`ccp.trace.selections`) up to a limit; a larger call, or one whose list did not decode, is replayed by its
bounding box (``ReplaySequence.bounded``). A bounding box spans every chunk any selected element could be in, so
the model's chunk loads for such a call, and every sum over the sequence holding it, are upper bounds: diagnose
prints them as "at most", fits no per-load cost on those calls, sizes no chunk cache on them, and says so before
any count it bounds."""

from __future__ import annotations

import numpy as np

from ccp.workload.replay import ReplaySequence


def exact_calls(seq: ReplaySequence, n: int) -> np.ndarray:
    """A mask of the first ``n`` low-level calls: True where the model has the call's own selection."""
    exact = np.ones(n, bool)
    if seq.bounded is not None and len(seq.bounded):
        inside = seq.bounded[seq.bounded < n]
        exact[inside] = False
    return exact


def bounded_note(bounded: int, reads: int) -> str:
    """The line said before any count a bounding box makes an upper bound."""
    return (f"{bounded} of this dataset's calls to HDF5 (under its {reads} read call(s)) are known only by their "
            "bounding box (more blocks or points than ccp keeps a call: 131,072 values in the trace, even as runs, "
            "or 65,536 boxes in the model): the model reads "
            "each box whole, so the chunk loads, bytes decoded and times below are upper bounds (at most); no chunk "
            "cache is sized and no cost is fitted on those calls")
