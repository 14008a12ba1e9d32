"""A cell over its time budget is a measured prefix: fitted as a prefix, completed by the fitted model
(its cold first requests counted once, never scaled up), and cold reads of chunk parts priced per page."""

import math
from pathlib import Path

import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import Cell
from ccp.tune.fit import observe
from ccp.tune.prove import Contender, ItemPasses, Measured
from ccp.tune.search import PRICE_GROUPS, item_cost
from ccp.tune.tune import reestimate, weighted_passes
from ccp.tune.workload import WorkItem


def source_of(shape):
    return describe_source(DatasetSpec("/data", generate=GenerateSpec(tuple(shape), np.dtype("<f4"))))


SRC = source_of((96, 32, 64))
SERIES = WorkItem(AccessSpec("read", (96, 1, 1), random=40, seed=1), 1.0)
MAPS = WorkItem(AccessSpec("read", (1, 32, 64)), 1.0)


@pytest.mark.parametrize("chunks, item", [
    ((96, 8, 16), SERIES), ((8, 32, 64), MAPS), ((1, 32, 64), SERIES),
], ids=["series-big-chunks", "maps-tiled", "series-maps-chunks"])
def test_a_prefix_is_priced_as_a_prefix(costs, nofilter, chunks, item):
    """The model's time of the first k requests grows with k up to the whole pattern's, and the fit's
    equation of a prefix is that time split by price group."""
    cell = Cell(chunks, nofilter, ChunkCache(1 << 16, 521, 0.75), item.access)
    n = item_cost(cell, SRC, costs).requests
    times = [item_cost(cell, SRC, costs, first=k).seconds for k in (1, n // 4, n // 2, n)]
    assert times == sorted(times) and times[0] < times[-1]
    assert times[-1] == pytest.approx(item_cost(cell, SRC, costs).seconds)
    c = Contender("x", chunks, nofilter, cell.cache, 0.0, "candidate")
    o = observe(c, item, SRC, costs, 1.0, first=n // 2)
    assert len(o.parts) == len(PRICE_GROUPS) and sum(o.parts) == pytest.approx(times[2])


def test_cold_reads_of_chunk_parts_stream_the_chunk_once(costs, nofilter):
    """A series through a chunk bigger than the cache reads the chunk in parts: 96 runs 8 KiB apart, one
    forward sweep the kernel reads ahead (not a trip per run or per page); the 39 series after the first
    find the chunk's pages in the page cache. A chunk that fits the cache: one fetch."""
    only_cold = costs.group("cold")
    cell = Cell((96, 32, 64), nofilter, ChunkCache(1024, 521, 0.75), SERIES.access)   # one chunk, 768 KiB
    assert item_cost(cell, SRC, costs).raw_reads >= 40 * 96
    assert item_cost(cell, SRC, only_cold).seconds == pytest.approx(costs.load_s, rel=0.05)
    cached = Cell((96, 32, 64), nofilter, ChunkCache(1 << 20, 521, 0.75), SERIES.access)  # the chunk fits: one fetch
    assert item_cost(cached, SRC, only_cold).seconds == pytest.approx(costs.load_s)


def measured_of(c, per_item, passes):
    return Measured(c, sum(t for t, _ in per_item), tuple(per_item), Path("."), passes=tuple(passes))


def test_reestimate_completes_a_prefix_with_the_model(costs, nofilter):
    c = Contender("x", (96, 8, 16), nofilter, ChunkCache(1 << 16, 521, 0.75), 0.0, "candidate")
    items = (SERIES, MAPS)
    n_series = item_cost(Cell(c.chunks, c.filters, c.cache, SERIES.access), SRC, costs).requests
    prefix = ItemPasses(n_series, 4, (0.50, 0.40, 0.60))       # 4 requests measured, the first cold
    whole = ItemPasses(96, 96, (0.20, 0.30, 0.25))
    m = measured_of(c, [(0.5 * n_series / 4, "extrapolated"), (0.25, "ok")], [prefix, whole])
    (again,) = reestimate([m], items, SRC, costs)
    cell = Cell(c.chunks, c.filters, c.cache, SERIES.access)
    rest = item_cost(cell, SRC, costs).seconds - item_cost(cell, SRC, costs, first=4).seconds
    assert again.measured_s == pytest.approx(0.50 + rest + 0.25)
    assert again.min_s == pytest.approx(0.40 + rest + 0.20) and again.max_s == pytest.approx(0.60 + rest + 0.30)
    assert "4/40 requests measured" in again.how and again.extrapolated
    assert again.measured_s < m.measured_s                       # not the first requests' cost x 10
    assert weighted_passes(again, items) is None                 # a prefix: no whole passes to compare
    done = measured_of(c, [(0.5, "ok"), (0.25, "ok")], [ItemPasses(40, 40, (0.5, 0.4, 0.6)), whole])
    assert reestimate([done], items, SRC, costs) == [done]
    assert weighted_passes(done, items) == pytest.approx([0.7, 0.7, 0.85])


def test_unknown_passes_keep_the_engine_time(costs, nofilter):
    c = Contender("x", (8, 8, 8), nofilter, ChunkCache(1 << 16, 521, 0.75), 0.0, "candidate")
    m = Measured(c, 3.0, ((3.0, "extrapolated"),), Path("."))
    assert reestimate([m], (SERIES,), SRC, costs) == [m]
    assert math.isfinite(m.measured_s)


def test_writes_are_priced_as_their_own_group(costs, nofilter):
    """A chunk written to the file has its own price (probed, then fitted): doubling it doubles the write
    group's time of a write pattern and moves no other group; a read pattern has no write time."""
    from dataclasses import replace

    write = Cell((16, 32, 64), nofilter, ChunkCache(1 << 16, 521, 0.75), AccessSpec("write", (1, 32, 64)))
    read = Cell((16, 32, 64), nofilter, ChunkCache(1 << 16, 521, 0.75), MAPS.access)
    dear = replace(costs, write_op_s=2 * costs.write_op)
    for g in PRICE_GROUPS:
        base, twice = item_cost(write, SRC, costs.group(g)).seconds, item_cost(write, SRC, dear.group(g)).seconds
        if g == "write":
            assert base > 0 and twice > base
        else:
            assert twice == pytest.approx(base)
    assert item_cost(read, SRC, costs.group("write")).seconds == 0.0
