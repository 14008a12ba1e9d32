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


@pytest.mark.parametrize(("memory", "refused"), [(None, False), ("512MiB", True)], ids=["default-budget", "user-budget"])
def test_only_a_budget_the_user_set_is_enforced(tmp_path, monkeypatch, cli, memory, refused):
    """A long-lived process (a notebook, a test worker) already over the default 512 MiB still copies, within a
    quarter of the budget; the same budget given as ``--memory`` is a promise, and refused when it cannot be kept."""
    data = np.random.default_rng(3).standard_normal((3000, 40)).astype("f4")
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", data=data, chunks=(1, 40), compression="gzip")
    monkeypatch.setattr(rechunk, "process_rss", lambda: 2 * rechunk.DEFAULT_MEMORY_BYTES)
    args = ["repack", "-q", "-l", "data:CHUNK=3000x1", tmp_path / "in.h5", tmp_path / "out.h5"]
    result = cli(*(args[:1] + (["--memory", memory] if memory else []) + args[1:]))
    if refused:
        assert result.exit_code == 2, result.output
        assert "--memory" in result.output and not (tmp_path / "out.h5").exists()
    else:
        assert result.exit_code == 0, result.output
        with h5py.File(tmp_path / "out.h5", "r") as f:
            assert f["data"].chunks == (3000, 1)
            np.testing.assert_array_equal(f["data"][...], data)


def test_the_default_budget_leaves_a_quarter_of_itself_in_a_large_process(monkeypatch):
    monkeypatch.setattr(rechunk, "process_rss", lambda: 10 * rechunk.DEFAULT_MEMORY_BYTES)
    assert MemoryBudget(strict=False).room() == rechunk.DEFAULT_MEMORY_BYTES // 4
