"""The library path's rechunk within ``--memory`` (breaker7 R4): filters ccp cannot encode (scaleoffset, Blosc)
are written by HDF5, but the source is read as the fast path reads it, each source chunk decoded whole by HDF5
and kept by ccp for a later hyperslab while the plan's cache has room, so the reads are the plan's (counted,
not HDF5's cache's), the child's peak stays under the budget, a budget below the floor is refused in one line,
and every value is the input's."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from test_repack_memory import _run

from ccp.repack.copy import repack
from ccp.repack.forecast import forecast_repack
from ccp.repack.library import library_pass, replay_reads
from ccp.repack.plan import chunks_in, plan_slabs
from ccp.repack.rechunk import MemoryBudget, pass_room

hdf5plugin = pytest.importorskip("hdf5plugin")

MiB = 2**20


def _values(shape, dtype):
    idx = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    return (((idx * 2654435761) % 1000003) / 997.0 * 10).astype(dtype)


def _scaleoffset(path, shape, chunks):
    data = _values(shape, "<i2")
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=chunks, scaleoffset=0, fillvalue=-7)
    return data


def _blosc(path, shape, chunks):
    data = _values(shape, "<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=chunks,
                         **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
    return data


# (maker, shape, source chunks, target chunks, itemsize): breaker7's i4d and blosc files scaled down
JOBS = {
    "scaleoffset-4d": (_scaleoffset, (9, 13, 31, 41), (9, 1, 31, 41), (1, 13, 4, 41), 2),
    "blosc-columns": (_blosc, (5000, 203), (5000, 2), (100, 203), 4),
}


def test_the_replay_counts_what_a_brute_force_walk_of_the_reader_counts():
    shape, src, dst, itemsize = (40, 30), (40, 3), (4, 30), 4
    for buffer, cache in [(960, 0), (960, 1000), (1920, 480 * 5), (4800, 10**9)]:
        plan = plan_slabs(shape, dst, itemsize, buffer)
        kept: dict = {}
        held = reads = 0
        for index, slab in enumerate(plan):
            for off in chunks_in(slab, src):
                if off in kept:
                    continue
                reads += 1
                last = plan.slab_index(tuple(min(o + c, d) - 1 for o, c, d in zip(off, src, shape)))
                if last > index and held + 480 <= cache:
                    kept[off] = last
                    held += 480
            for off in [o for o, last in kept.items() if last <= index]:
                del kept[off]
                held -= 480
        assert replay_reads(shape, src, dst, itemsize, buffer, cache).chunk_reads == reads


@pytest.mark.parametrize("job", list(JOBS), ids=list(JOBS))
@pytest.mark.parametrize("room", [0, 200_000, 64 * MiB], ids=["no-cache", "some-cache", "roomy"])
def test_the_copy_reads_what_its_plan_and_the_forecast_count(tmp_path, monkeypatch, counted, job, room):
    make, shape, src, dst, itemsize = JOBS[job]
    data = make(tmp_path / "in.h5", shape, src)
    monkeypatch.setattr(MemoryBudget, "room", lambda self: room)
    planned = library_pass(shape, src, dst, itemsize, pass_room(MemoryBudget(), dst, itemsize, 2, shape, src))
    fc = forecast_repack(tmp_path / "in.h5", {"/d": dst}, {}, memory_bytes=8192 * MiB, threads=2)
    res = repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/d": dst}, {}, memory_bytes=8192 * MiB, threads=2)
    assert res.dataset("/d").method == "library"
    assert counted[-1] == planned.count.chunk_reads == fc.datasets[0].source_chunk_reads
    assert fc.datasets[0].method == "library" and fc.datasets[0].predicted_seconds > 0
    if room >= 64 * MiB:
        assert planned.count.chunk_reads == planned.count.source_chunks
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["d"].chunks == dst
        np.testing.assert_array_equal(f["d"][...], data)


def test_a_rereading_copy_says_how_often_and_the_budget_that_reads_each_once(tmp_path, monkeypatch):
    make, shape, src, dst, itemsize = JOBS["scaleoffset-4d"]
    data = make(tmp_path / "in.h5", shape, src)
    monkeypatch.setattr(MemoryBudget, "room", lambda self: 0)
    res = repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/d": dst}, {}, memory_bytes=8192 * MiB, threads=2,
                 buffer_bytes=16 * 1024)
    notes = " ".join(res.dataset("/d").notes)
    assert "reads each source chunk" in notes and "reads each once" in notes
    with h5py.File(tmp_path / "out.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)


@pytest.mark.slow
@pytest.mark.parametrize("job", ["scaleoffset", "blosc"])
def test_a_library_copy_stays_under_its_budget(tmp_path, job):
    """Source chunks across every target chunk (each read back before through 256 target chunks of 128 KiB at
    once), in a child process whose own peak the kernel measures."""
    if job == "scaleoffset":
        shape, src, layout = (64, 16, 64, 256), (64, 1, 64, 256), "d:CHUNK=1x16x16x256"
        data = _scaleoffset(tmp_path / "in.h5", shape, src)
    else:
        shape, src, layout = (20000, 1000), (20000, 4), "d:CHUNK=100x1000"
        data = _blosc(tmp_path / "in.h5", shape, src)
    code, out, err, rss = _run("--memory", "96MiB", "-l", layout, str(tmp_path / "in.h5"), str(tmp_path / "out.h5"))
    assert code == 0, err
    assert rss <= 96 * MiB, f"peak {rss / MiB:.1f} MiB over --memory 96MiB"
    assert "library" in out
    with h5py.File(tmp_path / "out.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)


@pytest.mark.parametrize("plan", [False, True], ids=["copy", "plan"])
def test_a_budget_below_the_library_floor_is_refused_in_one_line(tmp_path, plan):
    # 4 MiB target chunks: one a hyperslab, HDF5's copies of it and the read-back's pieces need more than 64 MiB leaves
    _scaleoffset(tmp_path / "in.h5", (64, 2048, 64), (64, 2048, 1))
    args = ["--memory", "64MiB", "-l", "d:CHUNK=16x2048x64"]
    args += ["--plan", str(tmp_path / "in.h5")] if plan else [str(tmp_path / "in.h5"), str(tmp_path / "out.h5")]
    code, out, err, _ = _run(*args)
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err
    assert "cannot hold the copy of /d" in lines[0] and "library path's hyperslab" in lines[0]
    assert "give --memory" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]
