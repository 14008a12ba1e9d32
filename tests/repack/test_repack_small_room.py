"""A copy whose memory budget leaves no room (a process already holding more than ``--memory``) is refused in
one line; a tiny ``--buffer`` still writes every value: the fast path encodes whole target chunks,
so a hyperslab never holds less than one (it once filled a chunk from a partial hyperslab and padded the
rest with fill; the read-back caught it and refused, so every such repack failed)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from ccp.errors import ConfigError
from ccp.repack import rechunk
from ccp.repack.copy import repack
from ccp.repack.rechunk import MemoryBudget, plan_pass

CASES = [
    ((40, 50, 60), (40, 1, 60), (1, 50, 7), "none"),
    ((6000, 30), (200, 1), (1337, 7), "gzip"),
    ((3000, 40), (1, 40), (3000, 1), "gzip"),
]


@pytest.mark.parametrize(("shape", "src", "dst", "filters"), CASES, ids=["3d", "unaligned", "transpose"])
def test_a_process_larger_than_the_budget_is_refused_in_one_line(tmp_path, monkeypatch, shape, src, dst, filters):
    data = np.random.default_rng(2).standard_normal(shape).astype("f4")
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", data=data, chunks=src, compression=None if filters == "none" else filters)
    monkeypatch.setattr(rechunk, "process_rss", lambda: 10 * rechunk.DEFAULT_MEMORY_BYTES)
    with pytest.raises(ConfigError, match=r"--memory.*512 MiB cannot hold the copy of /data.*give --memory \d+MiB"):
        repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": dst}, {}, memory_bytes=rechunk.DEFAULT_MEMORY_BYTES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


def test_the_room_is_what_the_process_does_not_hold_yet(monkeypatch):
    monkeypatch.setattr(rechunk, "process_rss", lambda: 10 * rechunk.DEFAULT_MEMORY_BYTES)
    assert MemoryBudget().room() == 0
    monkeypatch.setattr(rechunk, "process_rss", lambda: 100 * 2**20)
    assert MemoryBudget().room() == rechunk.DEFAULT_MEMORY_BYTES - 100 * 2**20


@pytest.mark.parametrize("buffer_bytes", [1, 100, 4 * 1337 * 7])
def test_a_pass_buffer_holds_at_least_one_target_chunk(buffer_bytes):
    plan = plan_pass((6000, 30), (200, 1), (1337, 7), 4, 1 << 30, buffer_bytes=buffer_bytes)
    assert plan.buffer_bytes >= 1337 * 7 * 4
    assert all(b % c == 0 or b >= d for b, c, d in zip(plan.block, (1337, 7), (6000, 30)))
