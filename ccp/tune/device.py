"""The device's part of a cold read pass (pure arithmetic: no I/O).

The sweep drops the file's pages before each pass, so a pass's reads wait for the device. The probe
prices a wait (``Costs.load_s``) on chunks fetched in random order, each a separate trip to the device;
but the kernel reads ahead (``read_ahead_kb``, 128 KiB by default) once reads go forward through the
file, so a request whose pieces follow one another in the file with gaps under the readahead window
waits about once and then streams its span (the next piece must fall in the first window, about 4x
the piece read, up to ``read_ahead_kb``: a column through 31 KiB chunks 155 KiB apart is a trip a chunk). Counted per raw read, a column of a contiguous dataset
(thousands of sieve reads a few KiB apart) or a window read in parts from a big chunk (a read per
row) priced 10-100x what the sweep measured, and the fitted prices went wrong for every cell to
absorb it (the device at its floor, the requests at their cap).

So a request's device trips are its *stretches*: the file runs it reaches, in file order, with runs
close enough for the readahead window merged into one forward sweep, whose bytes are the whole span. The
file is taken to hold the chunks in the C order of the chunk grid (as a dataset written whole or
by rows lays them out) and each chunk's elements in C order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

READAHEAD_BYTES = 128 * 1024      # Linux's default read_ahead_kb: the largest window a forward read brings in
PAGE_BYTES = 4096                 # the page cache's unit: a piece read alone is fetched a page at least


def stretches(extent: Sequence[float], container: Sequence[int], full: Sequence[bool], unit_bytes: float
              ) -> tuple[float, float]:
    """(device trips, bytes fetched) to read a box of ``extent`` units out of a C-ordered ``container``
    of units of ``unit_bytes`` (``full[d]``: the box spans the container's whole extent along ``d``).
    The box is contiguous runs along its last partial dimension; going outwards, the pieces of one
    level merge into one forward sweep over their span (while every inner level merged) when the next
    piece lies within the kernel's first readahead of this one: the window starts at about 4x the read
    (``get_init_ra_size``), up to :data:`READAHEAD_BYTES`; a piece further on is a new random read, its
    own trip, a page at least."""
    partial = [d for d, f in enumerate(full) if not f]
    if not partial:
        return 1.0, math.prod(container) * unit_bytes
    k = partial[-1]
    piece = extent[k] * math.prod(container[k + 1:]) * unit_bytes
    trips, merged = 1.0, True
    for d in reversed(range(k)):
        e = extent[d]
        if e <= 1:
            continue
        stride = math.prod(container[d + 1:]) * unit_bytes
        if merged and stride - piece <= min(READAHEAD_BYTES - piece, 3 * max(piece, PAGE_BYTES)):
            piece += (e - 1) * stride
        else:
            merged = False
            trips *= e
    return trips, trips * max(piece, PAGE_BYTES)


def request_stretches(shape: Sequence[int], chunks: Sequence[int] | None, block: Sequence[int], itemsize: int,
                      stored_chunk_bytes: float, in_parts: bool) -> tuple[float, float, float]:
    """(device trips, bytes spanned, chunks touched) of one block-aligned request of ``block``, the mean
    over the dataset's tiles. Contiguous storage (``chunks`` None) is one container of elements; chunks
    loaded whole are units of the chunk grid; chunks read ``in_parts`` (unfiltered, bigger than the
    cache) each a container of elements, read apart."""
    if chunks is None:
        full = [b >= n for b, n in zip(block, shape)]
        ext = [float(min(b, n)) for b, n in zip(block, shape)]
        trips, nbytes = stretches(ext, shape, full, itemsize)
        return trips, nbytes, 1.0
    grid = [-(-n // c) for n, c in zip(shape, chunks)]
    tiles = [-(-n // b) for n, b in zip(shape, block)]
    # chunks a tile touches along each dimension, the mean over the tiles (aligned tiles: exact sums)
    touched = [_touched_sum(n, b, c) / t for n, b, c, t in zip(shape, block, chunks, tiles)]
    per_request = math.prod(touched)
    if not in_parts:
        full = [b >= n for b, n in zip(block, shape)]
        trips, nbytes = stretches(touched, grid, full, stored_chunk_bytes)
        return trips, nbytes, per_request
    # each touched chunk read in parts: the request's share of it (the mean intersection along each dimension)
    ext = [n / (t * tc) for n, t, tc in zip(shape, tiles, touched)]
    full = [b % c == 0 or b >= n for b, c, n in zip(block, chunks, shape)]
    trips, nbytes = stretches([min(e, float(c)) for e, c in zip(ext, chunks)], chunks, full, itemsize)
    return trips * per_request, nbytes * per_request, per_request


@lru_cache(maxsize=65536)
def _touched_sum(n: int, b: int, c: int) -> int:
    """Along one dimension of ``n`` tiled by ``b`` with chunks of ``c``: chunks touched, summed over the tiles."""
    s = np.arange(0, n, b)
    return int(((np.minimum(s + b, n) - 1) // c - s // c + 1).sum())
