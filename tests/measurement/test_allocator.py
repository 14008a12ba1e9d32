"""The measuring process's malloc thresholds (ccp.measurement.allocator): set in every measure(), recorded in env.json.
That it makes runs agree is a measurement (benchmarks/allocator_runs.py), not a test."""

from __future__ import annotations

import sys

import pytest

from ccp.measurement import allocator


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_steady_sets_and_says_the_thresholds():
    assert allocator.steady() == {"mmap_threshold": 32 << 20, "trim_threshold": 64 << 20}


def test_a_c_library_without_mallopt_is_said_as_nothing(monkeypatch):
    monkeypatch.setattr(allocator.ctypes.util, "find_library", lambda name: "/nonexistent/libc.so")
    allocator._mallopt.cache_clear()           # looked up once a process: look again with the library missing
    try:
        assert allocator.steady() == {}
    finally:
        monkeypatch.undo()
        allocator._mallopt.cache_clear()


def test_every_cell_measured_sets_them(monkeypatch, tmp_path):
    from ccp.measurement import runner

    called = []
    monkeypatch.setattr(allocator, "steady", lambda: called.append(1) or {})

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr("ccp.workload.requests.plan_for", stop)
    with pytest.raises(Stop):
        job = type("Job", (), {"cell": type("Cell", (), {"access": None})(), "source": type("Src", (), {"shape": (1,)})()})
        runner.measure(job(), tmp_path)
    assert called == [1]


def test_the_run_records_them(tmp_path):
    from ccp.measurement.env import collect

    assert collect(tmp_path)["malloc"] == allocator.steady()
