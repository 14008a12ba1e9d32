"""A call on many boxes over S3 (issue 23): ``d[[0, 2, 5, 7, 14]]``-like list indexes and point selections are one
H5Dread, and the GETs and bytes the GET model predicts for them (each chunk loaded once per call; a contiguous
dataset read one run of the call's elements at a time) equal those counted through the loopback S3 server."""

from __future__ import annotations

import pytest

from ccp.model.union import MultiBox
from tests.remote.conftest import NEEDS_S3, SHAPE
from tests.remote.test_counts import CACHES, _cell

pytestmark = NEEDS_S3

ROWS = MultiBox.of("read", [(i, 0, 0, 0) for i in (0, 2, 5, 7, 14)], [(1, *SHAPE[1:])] * 5)   # d[[0, 2, 5, 7, 14]]
COLUMNS = MultiBox.of("read", [(0, 0, 0, j) for j in (1, 4)], [(SHAPE[0], 1, 1, 1)] * 2)      # d[:, 0, 0, [1, 4]]
POINTS = MultiBox.of("read", [(23, 0, 0, 0), (0, 1, 2, 3), (0, 1, 2, 4), (13, 29, 8, 6)], None, points=True)


@pytest.mark.parametrize("cache_type", ["none", "readahead", "blockcache"])
@pytest.mark.parametrize("name", ["gzip", "contiguous", "paged"])
@pytest.mark.parametrize("cache", ["big", "none"])
def test_predicted_gets_of_calls_on_many_boxes_equal_measured(s3, layouts, name, cache_type, cache):
    _, store = s3
    path = layouts[name]
    key = store.upload(path, f"test-{name}").key
    requests = [ROWS, COLUMNS, POINTS, ROWS]
    counts, pred = _cell(store, path, key, cache_type, 4096, requests, CACHES[cache])
    assert [r.gets for r in counts.requests] == [c.gets for c in pred.per_request]
    assert [r.fetched for r in counts.requests] == [c.fetched for c in pred.per_request]
    assert [r.used for r in counts.requests] == [sum(s for _, s in reads) for reads in pred.reads]
    if name == "gzip" and cache == "none":      # each chunk once per call: rows 0-7 and 14 are in chunks 0, 1, 3
        assert len(pred.reads[0]) == 3          # (box by box: 5 loads)
