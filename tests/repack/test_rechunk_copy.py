"""Rechunking copies (transposes and other hard ones): values exact, each source chunk read as often as
the plan says, the plan's JSON, and bad --memory/--plan/--json use as one line."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.cli import main
from ccp.repack.copy import repack
from ccp.repack.forecast import forecast_repack

CASES = [
    ((6000, 30), (200, 1), (2000, 10), "gzip:1"),
    ((6000, 30), (200, 1), (1337, 7), "gzip:1"),
    ((3000, 40), (1, 40), (3000, 1), "shuffle+gzip:4"),
    ((40, 50, 60), (40, 1, 60), (1, 50, 7), "none"),
]
IDS = ["6458-small", "unaligned", "transpose", "3d"]


def make(path, shape, chunks, filters):
    data = np.random.default_rng(1).standard_normal(shape).astype("f4").round(2)
    kw = {} if filters == "none" else {"compression": "gzip", "compression_opts": 1, "shuffle": "shuffle" in filters}
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=chunks, **kw)
    return data


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """The process the copy runs in holds what a fresh ``ccp repack`` does (~150 MiB), not what a long-lived test
    worker has grown to (600-700 MiB seen, over the 512 MiB these copies are given): plan and copy then see the same
    room whatever ran before in this worker. Refusals of a process over its budget: test_repack_small_room.py."""
    from ccp.repack import forecast, rechunk

    monkeypatch.setattr(rechunk, "process_rss", lambda: 150 * 2**20)
    monkeypatch.setattr(forecast, "process_rss", lambda: 150 * 2**20)


@pytest.mark.parametrize(("shape", "src", "dst", "filters"), CASES, ids=IDS)
def test_rechunk_exact_and_reads_as_planned(tmp_path, counted, shape, src, dst, filters):
    data = make(tmp_path / "in.h5", shape, src, filters)
    fc = forecast_repack(tmp_path / "in.h5", {"/data": dst}, {"/data": filters}, memory_bytes=512 * 2**20)
    (plan,) = fc.datasets
    counted.clear()
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": dst}, {"/data": filters}, memory_bytes=512 * 2**20)
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["data"].chunks == dst
        np.testing.assert_array_equal(f["data"][...], data)
    assert counted == [plan.source_chunk_reads]
    assert plan.source_chunk_reads == plan.source_chunks_stored   # each source chunk once within 512 MiB


def test_plan_json_has_the_promised_keys(tmp_path):
    make(tmp_path / "in.h5", (6000, 30), (200, 1), "gzip:1")
    r = CliRunner().invoke(main, ["repack", "-l", "data:CHUNK=2000x10", "--plan", "--json", str(tmp_path / "in.h5")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    for key in ("predicted_seconds", "peak_memory_bytes", "bytes_read", "bytes_written"):
        assert doc[key] > 0
    (d,) = doc["datasets"]
    assert d["read_order"].startswith("bands of 6000x30 elements, each decoded into one array")  # 800-byte pieces
    assert d["cache_bytes"] == 0 and d["hyperslab"] == [6000, 30]   # one band: no source chunk kept for a later one
    assert d["decode_mb_per_s"] > 0 and d["encode_mb_per_s"] > 0
    assert not list(tmp_path.glob("*.ccp-tmp-*")) and sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


@pytest.mark.parametrize(("dst", "buffer", "cache"), [
    ((2000, 10), "32MiB", "0 B"),
    ((150, 10), "64KiB", "46.9 KiB"),      # bands of 450 rows: 60 source chunks of 200x1 span two bands at once
], ids=["one-band", "chunks-span-bands"])
def test_plan_cache_is_what_the_data_needs_not_the_budget(tmp_path, dst, buffer, cache):
    make(tmp_path / "in.h5", (6000, 30), (200, 1), "gzip:1")
    r = CliRunner().invoke(main, ["repack", "-l", f"data:CHUNK={dst[0]}x{dst[1]}", "--plan", "--buffer", buffer,
                                  str(tmp_path / "in.h5")])
    assert r.exit_code == 0, r.output
    assert f"cache       {cache} for decoded" in r.output
    assert " 0.0 MB/s" not in r.output     # (a sampled rate of 100.0 MB/s may well be printed)


def test_plan_says_n_a_for_a_codec_rate_it_does_not_sample(tmp_path):
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", data=np.arange(600.0).reshape(20, 30))      # contiguous: the library path
    r = CliRunner().invoke(main, ["repack", "-l", "data:CHUNK=5x5", "-f", "data:GZIP=1", "--plan", str(tmp_path / "in.h5")])
    assert r.exit_code == 0, r.output
    assert "(library path)" in r.output and "decode n/a, encode n/a per thread" in r.output
    doc = json.loads(CliRunner().invoke(main, ["repack", "-l", "data:CHUNK=5x5", "--plan", "--json",
                                               str(tmp_path / "in.h5")]).output)
    assert doc["datasets"][0]["decode_mb_per_s"] is None


@pytest.mark.parametrize(("args", "names"), [
    (["--memory", "10MiB"], "--memory"),
    (["--memory", "lots"], "--memory"),
    (["--json"], "--json"),
    (["--plan", "-o", "outdir"], "--plan"),
], ids=["memory-too-small", "memory-not-a-size", "json-without-plan", "plan-with-outdir"])
def test_bad_plan_options_are_one_line(tmp_path, args, names):
    make(tmp_path / "in.h5", (100, 10), (10, 1), "none")
    r = CliRunner().invoke(main, ["repack", *args, str(tmp_path / "in.h5"), str(tmp_path / "out.h5")])
    assert r.exit_code == 2
    assert names in r.output
    assert not (tmp_path / "out.h5").exists()


@pytest.mark.slow   # 20,000 chunks copied twice: ~10-30 s on a shared 2-core machine
def test_a_copy_one_pass_cannot_do_within_memory_goes_in_stages(tmp_path, counted, monkeypatch):
    from ccp.repack.rechunk import MemoryBudget

    # row chunks -> column chunks with 18 MiB of room besides the chunk indexes' 20,200 KiB: one pass would read
    # 19,933 row chunks again
    monkeypatch.setattr(MemoryBudget, "room", lambda self: 38 * 2**20)
    data = make(tmp_path / "in.h5", (20000, 200), (1, 200), "gzip:1")
    fc = forecast_repack(tmp_path / "in.h5", {"/data": (20000, 1)}, {}, memory_bytes=512 * 2**20, threads=2)
    # rechunker's stages within the room less the read-back's share and the allocator's slack, as plan_copy chose
    from ccp.repack.rechunk import pass_room
    from ccp.repack.stages import plan_copy

    room = pass_room(MemoryBudget(), (20000, 1), 4, 2, (20000, 200), (1, 200))
    plan = plan_copy((20000, 200), (1, 200), (20000, 1), 4, room, 2)
    mid = "x".join(map(str, plan.stages[0]))
    assert len(plan.stages) == 1
    assert fc.datasets[0].read_order.startswith(f"2 passes through unfiltered temporary copies chunked {mid}")
    counted.clear()
    res = repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (20000, 1)}, {}, memory_bytes=512 * 2**20, threads=2)
    assert any(f"copied in 2 passes through {mid}" in n for n in res.dataset("/data").notes)
    assert counted == [p.count.chunk_reads for p in plan.passes]     # the passes read what their plans count
    assert counted[0] == 20000       # each source chunk once
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["data"].chunks == (20000, 1) and f["data"].compression == "gzip"
        np.testing.assert_array_equal(f["data"][...], data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5", "out.h5"]    # the stage copy is gone


def test_a_stage_copy_left_by_a_killed_repack_is_removed(tmp_path):
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    make(tmp_path / "in.h5", (100, 10), (10, 1), "none")
    stage = tmp_path / f"out.h5.ccp-tmp-{dead.pid}.stage0"
    stage.write_bytes(b"half a stage")
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (100, 1)}, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5", "out.h5"]


@pytest.mark.parametrize("opts", [["-f", "GZIP=6"], ["-l", "CHUNK=2x2"], []], ids=["filter-all", "chunk-all", "none"])
def test_plan_of_a_file_of_every_kind_writes_nothing(rich, tmp_path, opts):
    before = sorted(p.name for p in tmp_path.iterdir())
    r = CliRunner().invoke(main, ["repack", *opts, "--plan", "--json", str(rich)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert {d["method"] for d in doc["datasets"]} <= {"copy", "fast", "library", "create"}
    assert all(d["predicted_seconds"] >= 0 and d["read_order"] for d in doc["datasets"])
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_measured_cores_are_within_the_threads_asked_for():
    from ccp.repack.forecast import measured_cores

    cores, share = measured_cores(2, seconds=0.05)
    assert 0 < cores <= 2 and 0 < share <= 1 and share == pytest.approx(min(1.0, cores))  # a thread alone: the process's


@pytest.mark.parametrize(("shape", "src", "dst", "want"), [
    ((6000, 30), (200, 1), (2000, 10), 4 * 10 * 10),     # 9 target chunks: the sample is 4 of them, 100 source chunks each
    ((60, 30), (4, 30), (1, 30), 2),                      # CrIS-like: pairs share a source chunk
    ((10, 10), (5, 5), (10, 10), 4),                      # one target chunk: all 4 source chunks
], ids=["6458-small", "pairs-share", "one-target-chunk"])
def test_readback_sample_counts_the_source_chunks_under_it(shape, src, dst, want):
    from ccp.repack.forecast import _sampled_source_chunks

    assert _sampled_source_chunks(shape, src, dst) == want


# 16 MiB for the passes, besides the chunk indexes' 20,200 KiB (ccp.repack.rechunk.index_bytes)
@pytest.mark.parametrize(("room", "refused"), [(36 * 2**20, True), (512 * 2**20, False)], ids=["staged", "one-pass"])
def test_free_space_check_counts_the_stage_copies(tmp_path, monkeypatch, room, refused):
    import os

    import ccp.repack.copy as copy_mod
    from ccp.errors import CcpError
    from ccp.repack.rechunk import MemoryBudget

    monkeypatch.setattr(MemoryBudget, "room", lambda self: room)
    make(tmp_path / "in.h5", (20000, 200), (1, 200), "gzip:1")
    size = os.path.getsize(tmp_path / "in.h5")

    class Disk:        # room for OUT (the input's size and a little), not for a 16 MB unfiltered stage copy too
        f_bavail, f_frsize = (size + 4 * 2**20) // 4096, 4096

    monkeypatch.setattr(copy_mod.os, "statvfs", lambda path: Disk())
    monkeypatch.setattr(copy_mod, "_create_output", lambda *a: pytest.fail("got past the free-space check"))
    if refused:
        with pytest.raises(CcpError, match="needs about .* is free"):
            repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (20000, 1)}, {}, memory_bytes=512 * 2**20)
    else:
        with pytest.raises(pytest.fail.Exception, match="free-space check"):
            repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (20000, 1)}, {}, memory_bytes=512 * 2**20)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


@pytest.mark.parametrize(("shape", "src", "dst", "filters"), CASES, ids=IDS)
def test_plan_samples_the_copy_in_its_threads(tmp_path, shape, src, dst, filters):
    """The plan's bytes written are its sample's encodings scaled to the dataset (within 10% of what the copy
    stores: the sample is three target chunks of random values), and the cores it says the copy's threads got
    are what its sample, run in those threads, got: more than none, at most one per thread."""
    make(tmp_path / "in.h5", shape, src, filters)
    fc = forecast_repack(tmp_path / "in.h5", {"/data": dst}, {}, memory_bytes=512 * 2**20, threads=2)
    assert 0 < fc.effective_threads <= 2
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": dst}, {}, memory_bytes=512 * 2**20)
    with h5py.File(tmp_path / "out.h5", "r") as f:
        stored = f["data"].id.get_storage_size()
    assert fc.datasets[0].method == "fast"
    assert fc.bytes_written == pytest.approx(stored, rel=0.10)


@pytest.mark.parametrize("first_band", [True, False], ids=["band-then-pipeline", "pipeline-then-band"])
def test_the_forecast_prices_the_pass_its_rates_were_sampled_for(tmp_path, monkeypatch, first_band):
    """breaker7 R5: planned again after its sample (whose buffers raised the process's memory), the pass could take
    the other path, whose rates were not sampled: `--plan --json` failed with KeyError 'check' near the boundary."""
    import dataclasses

    from ccp.repack import forecast

    make(tmp_path / "in.h5", (6000, 30), (200, 1), "gzip:1")
    real = forecast.plan_pass
    calls: list = []

    def flipping(*args, **kwargs):      # each plan of the same pass takes the other path than the one before
        pp = real(*args, **kwargs)
        calls.append(pp)
        band = first_band if len(calls) == 1 else not first_band
        return dataclasses.replace(pp, band_bytes=max(pp.band_bytes, 1) if band else 0)

    monkeypatch.setattr(forecast, "plan_pass", flipping)
    fc = forecast_repack(tmp_path / "in.h5", {"/data": (2000, 10)}, {"/data": "gzip:1"}, memory_bytes=512 * 2**20)
    (plan,) = fc.datasets
    assert len(calls) == 1 and plan.predicted_seconds > 0
