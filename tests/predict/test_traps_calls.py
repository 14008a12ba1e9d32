"""explain's chunk checks take a call on many boxes (a traced list index, a strided call's runs) as one call: the
chunks it needs together are those of all its boxes (issue 23)."""

from __future__ import annotations

import numpy as np

from ccp.model import ChunkGrid
from ccp.predict import explain
from ccp.workload.requestplan import RequestPlan


def test_a_list_index_needs_the_chunks_of_all_its_boxes_together():
    grid = ChunkGrid((100, 10), (10, 10))
    # d[[0, 5, 35], :] twice, then one box: rows 0 and 5 share chunk 0, row 35 is in chunk 3
    starts = np.array([[0, 0], [5, 0], [35, 0], [0, 0], [5, 0], [35, 0], [50, 0]], np.int64)
    counts = np.array([[1, 10]] * 7, np.int64)
    plan = RequestPlan(starts, counts, calls=np.array([0, 0, 0, 1, 1, 1, 2]))
    partial, ntouched, keys = explain._call_chunks(grid, plan, max_calls=256)
    assert partial
    assert ntouched.tolist() == [2, 2, 1]           # box by box: 1, 1, 1 (no call needed two chunks)
    assert keys[0].tolist() == [grid.hash_key((0, 0)), grid.hash_key((3, 0))]
    _, ntouched, _ = explain._call_chunks(grid, plan, max_calls=1)
    assert ntouched.tolist() == [2]


def test_a_strided_call_as_boxes_keeps_its_call():
    plan = RequestPlan(np.array([[0]], np.int64), np.array([[100]], np.int64), strides=np.array([[30]], np.int64),
                       blocks=np.array([[1]], np.int64))
    boxes = plan.as_boxes((10,))
    assert len(boxes) == 4 and boxes.calls is not None and boxes.calls.tolist() == [0, 0, 0, 0]
