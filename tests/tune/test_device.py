"""The device's part of a cold pass: trips are the file stretches a request reaches (runs within the
kernel's readahead merged into one forward sweep), not one per raw read; pages fetched once a pass."""

import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import Cell
from ccp.tune.device import request_stretches
from ccp.tune.search import item_cost


@pytest.mark.parametrize("shape, chunks, block, itemsize, in_parts, trips, span", [
    # a channel of a contiguous (time, channel) int16 stream: 200,000 2-byte runs 128 B apart, one sweep
    ((200_000, 64), None, (200_000, 1), 2, True, 1, 199_999 * 128 + 2),
    # a z-profile of a contiguous (z, y, x) stack: runs 512 KiB apart, beyond readahead: a trip each
    ((32, 512, 512), None, (32, 1, 1), 2, True, 32, 32 * 4096),
    # a window of all channels from (200000, 32) chunks read in parts: one run in each of its 2 chunks
    ((200_000, 64), (200_000, 32), (3000, 64), 2, True, 2, 2 * 3000 * 64),
    # a gene column through row chunks loaded whole: 4096 adjacent 4 KiB chunks, one sweep
    ((4096, 1024), (1, 1024), (4096, 1), 4, False, 1, 4096 * 4096),
    # a whole map in a map chunk: one chunk
    ((96, 32, 64), (1, 32, 64), (1, 32, 64), 4, False, 1, 32 * 64 * 4),
], ids=["contiguous-column", "contiguous-z-profile", "window-in-parts", "column-row-chunks", "map-chunk"])
def test_request_stretches(shape, chunks, block, itemsize, in_parts, trips, span):
    chunk_bytes = int(np.prod(chunks)) * itemsize if chunks else 0
    t, nbytes, _ = request_stretches(shape, chunks, block, itemsize, chunk_bytes, in_parts)
    assert t == pytest.approx(trips)
    assert nbytes == pytest.approx(span, rel=0.01)     # the mean over the tiles (a short last tile)


def source_of(shape, dtype="<f4"):
    return describe_source(DatasetSpec("/data", generate=GenerateSpec(tuple(shape), np.dtype(dtype))))


def test_a_contiguous_column_waits_once_not_per_sieve_read(costs, nofilter):
    """The model counts a sieve read per 64 KiB of a contiguous column; the device streams them: one trip
    per request, each stored byte fetched once a pass (the NWB channel read the probes priced 16x high)."""
    src = source_of((200_000, 64), "<i2")
    cell = Cell(None, nofilter, ChunkCache(0, 521, 0.75), AccessSpec("read", (200_000, 1), random=4, seed=1))
    ic = item_cost(cell, src, costs.group("cold"))
    assert ic.raw_reads > 100                                     # the sieve's reads, counted by the model
    assert ic.seconds == pytest.approx(costs.load_s, rel=0.05)    # the first column's sweep; the rest from the page cache


def test_far_runs_each_wait(costs, nofilter):
    src = source_of((32, 512, 512), "<u2")
    cell = Cell(None, nofilter, ChunkCache(0, 521, 0.75), AccessSpec("read", (32, 1, 1), random=10, seed=1))
    ic = item_cost(cell, src, costs)
    assert ic.raw_reads == 10 * 32                        # a sieve read per run: the runs are 512 KiB apart
    # each run its own trip, but the 320 sieve reads (64 KiB each) reach more than the 16 MiB file holds:
    # the share of them that an earlier read of the pass already fetched waits for nothing
    reach = min(1.0, 32 * 512 * 512 * 2 / ic.raw_read_bytes)
    assert item_cost(cell, src, costs.group("cold")).seconds == pytest.approx(320 * reach * costs.load_s, rel=0.01)


def test_chunks_further_than_the_first_readahead_are_a_trip_each():
    """A gene column through (38, 205) float32 chunks of a (4096, 1024) matrix: 31 KiB chunks 155 KiB apart.
    The first readahead of a 31 KiB read (about 4x it, 124 KiB) does not reach the next chunk: 108 trips,
    not one sweep; (16, 1024) chunks are adjacent: one sweep."""
    far = request_stretches((4096, 1024), (38, 205), (4096, 1), 4, 38 * 205 * 4, False)
    assert far[0] == pytest.approx(4096 / 38, rel=0.01)
    near = request_stretches((4096, 1024), (16, 1024), (4096, 1), 4, 16 * 1024 * 4, False)
    assert near[0] == 1
