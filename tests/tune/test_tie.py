"""The runoff's tie rule: what is a tie (round against round, and a clear margin), and who wins one
(the fewest device trips the model prices, file operations where trips are unknown)."""

import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.tune.prove import Contender
from ccp.tune.settle import clearly_apart, fewest_io, predicted_io, tied
from ccp.tune.tune import choose
from ccp.tune.workload import WorkItem

# the league's NWB runoff (1a9e464): 8192x64 and contiguous storage, weighted passes of 7 interleaved rounds
NWB_8192 = [0.331, 0.236, 0.231, 0.260, 0.345, 0.262, 0.205]
NWB_CONTIGUOUS = [0.196, 0.313, 0.176, 0.188, 0.210, 0.243, 0.202]


def runoff_row(label, passes, chunks, predicted=1.0):
    return {"label": label, "kind": "candidate", "chunks": list(chunks) if chunks else None, "filters": "none",
            "cache_nbytes": 0, "cache_nslots": 521, "cache_w0": 0.75, "predicted_s": predicted,
            "measured_s": float(np.median(passes)), "measured_min_s": min(passes), "measured_max_s": max(passes),
            "passes": list(passes), "paired": True, "runoff": True}


def test_a_contiguous_column_with_many_sieve_reads_but_few_trips_wins_the_tie(costs, nofilter):
    """Channel reads of a (time, channel) int16 stream: contiguous storage is hundreds of sieve reads a
    channel (file operations) but one forward sweep (a device trip); column chunks of 8 channels are 25
    chunks 1 MiB apart, a trip each. Tied in the runoff, the fewer trips win, not the fewer operations."""
    src = describe_source(DatasetSpec("/data", generate=GenerateSpec((200_000, 64), np.dtype("<i2"))))
    items = (WorkItem(AccessSpec("read", (200_000, 1), random=4, seed=0), 1.0),)
    layouts = {"contiguous": Contender("contiguous", None, nofilter, ChunkCache(0, 521, 0.75), 1.0, "extreme"),
               "8192x8": Contender("8192x8", (8192, 8), nofilter, ChunkCache(1 << 20, 521, 0.75), 1.0, "candidate")}
    io = {name: predicted_io(c, items, src, costs) for name, c in layouts.items()}
    assert io["contiguous"][1] > 10 * io["8192x8"][1]          # far more file operations (the sieve's reads)
    assert io["contiguous"][0] < io["8192x8"][0]               # but fewer trips: the kernel streams them
    noisy = [1.0, 1.4, 0.7, 1.1, 0.9, 1.3, 0.8]
    rows = [runoff_row("8192x8", noisy, (8192, 8), predicted=0.5),
            runoff_row("contiguous", [x * 1.05 for x in noisy[::-1]], None, predicted=0.9)]
    for r in rows:
        r["predicted_io_trips"], r["predicted_io_ops"], r["predicted_io_bytes"] = io[r["label"]]
    assert tied(rows[0], rows[1])
    pick, why = choose(rows)
    assert pick["label"] == "contiguous" and "fewest device trips" in why and "tied in the runoff" in why
    assert "it makes the fewest device trips" in why and "needs" not in why, why     # audit22 F9: a layout makes them
    # the same tie judged by file operations (a row without trips, as before they were kept): the chunks
    for r in rows:
        del r["predicted_io_trips"]
    pick, why = fewest_io(rows)
    assert pick["label"] == "8192x8" and "fewest file operations" in why


@pytest.mark.parametrize("a, b, apart", [
    (NWB_8192, NWB_CONTIGUOUS, True),                                  # 6 of 7, median ratio 1.31
    (NWB_CONTIGUOUS, NWB_8192, True),                                  # either way round
    ([1.1] * 6 + [0.9], [1.0] * 7, False),                             # 6 of 7 by 10%: no clear margin
    ([1.5] * 5 + [0.9] * 2, [1.0] * 7, False),                         # 5 of 7 by 50%: not nearly every round
    ([1.5] * 3, [1.0] * 3, False),                                     # 3 rounds prove nothing one way
    ([1.5] * 5, [1.0] * 5, True),                                      # 5 of 5 by 50%
], ids=["nwb", "nwb-reversed", "small-margin", "five-of-seven", "three-rounds", "five-of-five"])
def test_clearly_apart(a, b, apart):
    assert clearly_apart(a, b) is apart


def test_a_clear_margin_is_not_a_tie():
    """The league's NWB runoff: the signed-rank test left it at p 0.11 (the reversed round was not among
    the smallest differences), and the tie rule handed it to 8192x64; faster in 6 of 7 rounds by a median
    1.31x, contiguous storage is the pick, measured fastest."""
    from ccp.tune.settle import paired_p

    assert paired_p(NWB_8192, NWB_CONTIGUOUS) > 0.05
    rows = [runoff_row("1 MiB rows", NWB_8192, (8192, 64), predicted=0.199),
            runoff_row("contiguous", NWB_CONTIGUOUS, None, predicted=0.211)]
    for r, io in zip(rows, [(113, 372, 3.9e8), (241, 1804, 1.9e8)]):
        r["predicted_io_trips"], r["predicted_io_ops"], r["predicted_io_bytes"] = io
    assert not tied(rows[0], rows[1])
    pick, why = choose(rows)
    assert pick["label"] == "contiguous" and "tied" not in why


def _t3_rows():
    """breaker8's F18 (T3): a runoff tie among the stored layout with a 4 MiB cache (no repack, 231 ms)
    and two repacks (278 and 284 ms): 7 interleaved rounds, not apart."""
    refit = runoff_row("refit", [0.231, 0.29, 0.22, 0.25, 0.21, 0.30, 0.23], (4, 30, 9, 100), predicted=0.2798)
    tuned2 = runoff_row("tuned #2", [0.278, 0.25, 0.30, 0.24, 0.29, 0.26, 0.28], (1, 30, 9, 100), predicted=0.2783)
    tuned = runoff_row("tuned", [0.284, 0.26, 0.29, 0.25, 0.30, 0.27, 0.28], (1, 2, 9, 100), predicted=0.280)
    for r, io in ((refit, (20.7, 20.7, 8.30e6)), (tuned2, (65.7, 65.7, 6.57e6)), (tuned, (66.0, 66.0, 6.6e6))):
        r["predicted_io_trips"], r["predicted_io_ops"], r["predicted_io_bytes"] = io
    refit["keeps_layout"] = True
    return [tuned, tuned2, refit]


def test_a_tie_with_the_stored_layout_goes_to_the_stored_layout():
    """A measured tie between a new cache on the stored layout and a repack: the cheapest change (a reader
    setting before a new file) wins, and the reason says so and how the tie was judged (breaker8 F18)."""
    rows = _t3_rows()
    assert all(tied(rows[2], r) for r in rows[:2])
    pick, why = choose(rows)
    assert pick["label"] == "refit"
    assert "keeps the stored layout" in why and "no repack" in why
    assert "7 interleaved rounds, round against round" in why


def test_a_tie_the_bytes_settled_names_the_bytes():
    """Without the stored layout among them, the same tie is decided by the model's counts, and the reason
    names each count that decided (not "as much I/O" when the bytes ruled one out)."""
    rows = _t3_rows()
    rows[2]["keeps_layout"] = False
    rows[2]["predicted_io_trips"] = rows[2]["predicted_io_ops"] = 65.0      # as many trips: the bytes rule refit out
    pick, why = choose(rows)
    assert pick["label"] == "tuned #2"
    assert "refit read over 10% more bytes (refit 7.92 MiB, tuned 6.29 MiB, tuned #2 6.27 MiB)" in why
    assert "fitted prediction breaks the tie among tuned, tuned #2" in why


def test_a_tie_without_passes_says_it_was_judged_on_medians():
    """Every finalist extrapolated (no whole passes): the tie was judged on medians and spread, and the reason
    says that, not "their passes not apart" (breaker8 F10)."""
    rows = _t3_rows()
    for r in rows:       # T1: each a prefix completed by the model, its min and max as wide as a busy machine's
        r.update(passes=None, paired=False, measured_min_s=0.15, measured_max_s=0.45)
    rows[2]["keeps_layout"] = False
    _, why = choose(rows)
    assert "no whole passes" in why and "passes not apart" not in why
