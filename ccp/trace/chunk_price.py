"""What a chunk load costs, so a cure of tiny chunks or of many tiny calls is priced honestly (issue 23).

Two faults this corrects, both found by a tester (breaker3 F-1x1, F-block-pred):

- the trace's cost fit (:func:`ccp.trace.sequence_model.fit_costs`) takes HDF5's fixed cost per call as the
  *median* of the calls that loaded nothing and puts everything above it on the few chunk loads: 100,000 reads
  of an 8 KiB dataset (10 loads) priced a load at 121 ms, so "read the block once" (10 loads again) was predicted
  1.3x faster and measured 1094x. :func:`attribute_call_tail` takes the *mean* instead, so a load costs what
  the loaded calls took above an idle call (the total, hence the predicted current time, is unchanged);
- a load's price scaled down to its bytes: 60,000 one-element chunks looked nearly free (4 B each). A load has a
  fixed part (index lookup, filter call, one I/O call) that does not shrink with the chunk: :func:`load_ratio`.

And one a later tester found (audit22 A1): with one chunk load per call and no call that loaded nothing, the fit
took the cheapest call as HDF5's cost per call, a third of a gzip decode that no cure removed; it now splits the
time at this machine's price of a call (:func:`call_cost`) and of a load (:func:`load_cost`).
"""

from __future__ import annotations

import numpy as np

# HDF5's fixed cost of one chunk load on this machine (B-tree lookup, filter call, one read), measured with h5py:
# benchmarks/chunk_load_cost.py (a whole 1-D f4 dataset read with rdcc_nbytes=0, each chunk one load, median of 5;
# load average 12 on 2 cores, 2026-11-27): 24.4 us per 4 B chunk, 27.5 us per 64 B, 25.6 us per 1 KiB unfiltered;
# 28.6 us per 4 B and 30.4 us per 64 B gzip (16.5 and 17.6 us on a smooth series). A column of a 200x300 f4
# dataset in 1x1 gzip chunks took 85 us per chunk (tester's t11.py: 17 ms for 200 chunks). 25 us is the floor taken.
FIXED_LOAD_S = 25e-6
# per byte moved, same measurement: 256 KiB unfiltered 120 us (0.45 ns/B); gzip level 4, 256 KiB: 5.5 ms on random
# f4 data (21 ns/B), 3.6 ms on a smooth series (`--smooth`: 14 ns/B); 15 ns/B taken for any filter.
RAW_BYTE_S = 0.45e-9
FILTERED_BYTE_S = 15e-9
# HDF5's cost of a read call that loads nothing (its chunk in the cache: the selection, the cache lookup, the copy
# out), measured as `ccp trace` times a low-level call: benchmarks/chunk_load_cost.py --calls (2,000 one-row 1x574
# and one-element boxes of a 48x574 gzip f4 chunk held in the cache, 5 passes; load 8.6 on 2 cores, 2026-11-28):
# median 7.5 us (1x574 <f4), 8.9 us (1x574 >f4, byte-swapped), 7.2-7.3 us (1x1); means 20-26 us on the busy machine.
# A 1x1x1x574 row of a 4-D >f4 chunk took 11 us (same run, t_read.py). 10 us taken, plus the bytes copied out at
# RAW_BYTE_S. Used where the trace cannot measure it (no call that loaded nothing): the prior of
# :func:`ccp.trace.sequence_model.fit_costs`.
FIXED_CALL_S = 10e-6
# indexing a block already in memory (numpy): `python -m timeit -s "import numpy as np; b=np.zeros((200,300),'f4')"
# "b[17, 33]"` 0.21 us, "b[17:19, 3:90]" 1.2 us (same machine and load): 0.5 us per call taken
NUMPY_INDEX_S = 0.5e-6
# a chunk shape whose fixed part is more than this share of its load's cost is not offered: its loads are all
# overhead (a 1x1 f4 chunk: 99.9%)
OVERHEAD_DOMINATES = 0.9


def load_cost(nbytes: float, filtered: bool) -> float:
    """This machine's seconds for one chunk load of ``nbytes``: the fixed part plus the bytes."""
    return FIXED_LOAD_S + max(float(nbytes), 0.0) * (FILTERED_BYTE_S if filtered else RAW_BYTE_S)


def call_cost(nbytes: float) -> float:
    """This machine's seconds for one read call that loads nothing and delivers ``nbytes``: the fixed part plus the
    copy out of the cache."""
    return FIXED_CALL_S + max(float(nbytes), 0.0) * RAW_BYTE_S


def load_ratio(old_bytes: float, new_bytes: float, filtered: bool) -> float:
    """Cost of a ``new_bytes`` chunk load over that of an ``old_bytes`` one; the fixed part never vanishes."""
    return load_cost(new_bytes, filtered) / load_cost(old_bytes, filtered)


def overhead_share(nbytes: float, filtered: bool) -> float:
    """The share of a chunk load of ``nbytes`` that is its fixed part."""
    return FIXED_LOAD_S / load_cost(nbytes, filtered)


def attribute_call_tail(costs: dict, low_hdf5, low_loads, floor_s: float = 0.0) -> dict:
    """``costs`` with HDF5's fixed cost per call the mean (not the median) of the calls that loaded nothing, and
    the cost per load what is left over the loads: the slow tail of idle calls (allocation, garbage collection,
    the lock) is a cost of calls, which a cure making fewer calls saves and one making fewer loads does not. A load
    costs at least ``floor_s`` (this machine's :func:`load_cost`: on a loaded machine the idle calls' tail can
    swallow the few loads' time, and free loads made 1x1 chunks look harmless). The sum over the trace is kept,
    so the predicted current time is the same."""
    low_hdf5, low_loads = np.asarray(low_hdf5, float), np.asarray(low_loads, float)
    nloads, total, n = float(low_loads.sum()), float(low_hdf5.sum()), len(low_hdf5)
    if not nloads or not n:
        return costs
    idle = low_hdf5[low_loads == 0]
    per_call = float(idle.mean()) if len(idle) >= 3 else float(costs["hdf5_per_call_s"])
    per_load = max(total - per_call * n, 0.0) / nloads
    if per_load < floor_s:
        per_load = min(floor_s, total / nloads)
        per_call = max(total - per_load * nloads, 0.0) / n
    return {**costs, "hdf5_per_call_s": per_call, "hdf5_per_load_s": per_load}
