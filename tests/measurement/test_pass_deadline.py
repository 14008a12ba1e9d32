"""A budgeted first pass starts its clock after the page-cache drop: the drop's fsync of a freshly written work
file is no part of the pass (issue 22: a first pass was once timed on one request of 150)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from ccp.measurement import runner


@pytest.mark.parametrize("op", ["read", "copy"], ids=["cold-read", "cold-copy"])
def test_the_first_pass_budget_starts_after_the_drop(tmp_path, monkeypatch, op):
    budget_s, drop_s = 0.2, 0.5                       # the drop alone outlasts the pass's whole budget
    monkeypatch.setattr(runner, "drop_file", lambda path: time.sleep(drop_s))
    monkeypatch.setattr(runner, "target", lambda job: (tmp_path / "work.h5", "/data"))
    left_at_start: list[float] = []

    def one_pass(*args, deadline_ns=None, **kwargs):
        if deadline_ns is not None:
            left_at_start.append((deadline_ns - time.perf_counter_ns()) / 1e9)
        return SimpleNamespace(request_ns=[1, 2, 3])

    def write_pass(job, data, starts, counts, out, **kwargs):
        out.write_bytes(b"x")
        return one_pass(**kwargs), None

    loops = SimpleNamespace(read=one_pass, write=write_pass)
    job = SimpleNamespace(cell=SimpleNamespace(access=SimpleNamespace(op=op)), time_budget=budget_s, repeats=1,
                          counted_pass=False, cold=True, remote=None, warmup=False)
    runner.timed_passes(job, loops, None, [0, 1, 2], [1, 1, 1], tmp_path, progress=None)
    assert len(left_at_start) == 1 and left_at_start[0] > budget_s / 2, left_at_start
