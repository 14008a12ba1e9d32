"""What tune hands the sweep engine: each pattern of the workload as the sweep file must say it."""

import pytest

from ccp.config.axes.access import AccessSpec, parse_access
from ccp.tune.prove import access_dict


@pytest.mark.parametrize("spec", [
    AccessSpec(op="read", block=(1, 16)),
    AccessSpec(op="read", block=(4, 4), order=(1, 0)),
    AccessSpec(op="read", block=(2, 3), random=50, seed=7),
    AccessSpec(op="write", block=(8,)),
], ids=["tile", "order", "random", "write"])
def test_a_block_pattern_is_written_as_it_was_given(spec):
    assert parse_access(access_dict(spec), "access") == spec


@pytest.mark.parametrize("pid", [None, 4242], ids=["all-processes", "one-process"])
def test_a_replay_is_written_as_a_replay_not_as_tiles_of_its_largest_request(tmp_path, pid):
    """A trace's pattern was written as `block: [2, 1]` (its largest request, tiled), so the sweep never
    replayed the program and tune found no cell for the pattern: every layout 'failed', exit 0."""
    (tmp_path / "trace.json").write_text("{}")
    spec = AccessSpec(op="read", block=(2, 1), trace=str(tmp_path), trace_dataset="/log", pid=pid)
    raw = access_dict(spec)
    assert raw == {"op": "read", "trace": str(tmp_path), "dataset": "/log", **({"pid": pid} if pid else {})}
    back = parse_access(raw, "access")
    assert (back.trace, back.trace_dataset, back.pid) == (str(tmp_path.resolve()), "/log", pid)
