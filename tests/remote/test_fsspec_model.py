"""The pure fsspec cache model against fsspec's own cache classes (a byte-string fetcher, no network)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.remote.fsspec_model import ReadCost, simulate_fsspec

fsspec_caching = pytest.importorskip("fsspec.caching", reason="fsspec is not installed")

CLASSES = {"none": "BaseCache", "readahead": "ReadAheadCache", "blockcache": "BlockCache", "first": "FirstChunkCache"}


def fsspec_costs(reads, cache_type, block_size, size):
    """GETs per read through fsspec's real cache class, with a fetcher that answers like S3 (short at EOF)."""
    data = bytes(size)
    calls = []

    def fetcher(start, end):
        if start >= end:               # s3fs makes no request for an empty range
            return b""
        calls.append(min(end, size) - start)
        return data[start:end]

    cache = getattr(fsspec_caching, CLASSES[cache_type])(block_size, fetcher, size)
    out = []
    for off, n in reads:
        before = len(calls), sum(calls)
        cache._fetch(off, off + n)
        out.append(ReadCost(len(calls) - before[0], sum(calls) - before[1]))
    return out


reads_st = st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 3000)), min_size=1, max_size=40)


@pytest.mark.parametrize("cache_type", list(CLASSES))
@settings(max_examples=150, deadline=None)
@given(reads=reads_st, block_size=st.integers(1, 4096), size=st.integers(1, 6000))
def test_model_equals_fsspec(cache_type, reads, block_size, size):
    assert simulate_fsspec(reads, cache_type, block_size, size) == fsspec_costs(reads, cache_type, block_size, size)


@pytest.mark.parametrize(("cache_type", "expected"), [
    ("none", [ReadCost(1, 100), ReadCost(1, 100), ReadCost(1, 100)]),
    ("readahead", [ReadCost(1, 1100), ReadCost(0, 0), ReadCost(1, 1100)]),
    ("blockcache", [ReadCost(1, 1000), ReadCost(0, 0), ReadCost(1, 1000)]),
    ("first", [ReadCost(1, 1000), ReadCost(0, 0), ReadCost(1, 100)]),
], ids=["none", "readahead", "blockcache", "first"])
def test_small_table(cache_type, expected):
    reads = [(0, 100), (200, 100), (5000, 100)]
    assert simulate_fsspec(reads, cache_type, 1000, 10_000) == expected


def test_unknown_cache_type_is_refused():
    with pytest.raises(ValueError, match="not modelled"):
        simulate_fsspec([(0, 1)], "mmap", 10, 10)
