"""The sweep engine end to end on small real files: I/O counts HDF5 produces, results, resume."""

import hashlib
import os

import h5py
import numpy as np
import pandas as pd
import pytest

from ccp.run import run_sweep
from ccp.store.schema import CELL_COLUMNS, REQUEST_COLUMNS, SCHEMA_VERSION


def run(sweep, tmp_path, **kw):
    kw.setdefault("report", False)
    return run_sweep(sweep, out=tmp_path / "run", work_dir=tmp_path / "work", echo=lambda *a: None, **kw)


def cells(tmp_path):
    return pd.read_csv(tmp_path / "run" / "cells.csv")


ROWS = """
name: rows
dataset:
  generate: {shape: [8, 10, 200], dtype: ">f4", data: normal}
matrix:
  chunks: [[4, 10, 200]]             # 32,000-byte chunks
  filters: ["gzip:1"]
  cache: ["16KiB", "64KiB"]          # smaller than a chunk, and holding two
  access: [{op: read, block: [1, 1, 200]}]
repeats: 2
"""


def test_rows_of_a_compressed_chunk_larger_than_the_cache(write_sweep, tmp_path):
    run(write_sweep(ROWS), tmp_path)
    df = cells(tmp_path).set_index("cache_nbytes")
    n_requests = 8 * 10
    # cache smaller than a chunk: every row reads (and decompresses) its chunk again
    assert df.loc[16384, "raw_reads"] == n_requests
    # cache holding a chunk: one read per chunk
    assert df.loc[65536, "raw_reads"] == 2
    assert (df["requests"] == n_requests).all()
    assert (df["status"] == "ok").all()
    # the counted pass attributes each raw read to the request that caused it
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    counted = req[(req["pass"] == -1) & (req["phase"] == "request")]
    small = counted[counted.cell_id == df.loc[16384, "cell_id"]]
    assert (small["raw_reads"] == 1).all()
    big = counted[counted.cell_id == df.loc[65536, "cell_id"]]
    assert big["raw_reads"].tolist()[:11] == [1] + [0] * 9 + [0]
    assert big["raw_reads"].sum() == 2
    assert set(req.columns) == set(REQUEST_COLUMNS)
    timed = req[req["pass"] >= 0]
    assert len(timed) == 2 * 2 * (n_requests + 2)


SEED001_WRITE = """
name: seed001-write-small
dataset:
  generate: {shape: [100, 50, 50], dtype: "<i4", data: "randint:0:100"}
matrix:
  chunks: [[10, 50, 50]]                # 100,000-byte chunks, 10 of them
  filters: [none, "gzip:6"]
  cache: ["64KiB", "256KiB"]
  access: [{op: write, block: [1, 50, 50]}]
repeats: 1
"""


def test_seed001_write_counts(write_sweep, tmp_path):
    """Seed 001's write table at 1/10 scale: planes written one per request into 10-plane chunks."""
    run(write_sweep(SEED001_WRITE), tmp_path)
    df = cells(tmp_path).set_index(["filters", "cache_nbytes"])
    got = {k: (int(r.raw_writes), int(r.raw_reads)) for k, r in df.iterrows()}
    assert got == {
        ("none", 65536): (100, 0),       # chunk > cache: each plane straight to the file
        ("none", 262144): (10, 0),       # chunk fits: one write per chunk
        ("gzip:6", 65536): (100, 90),    # read-modify-write of the compressed chunk for 9 of 10 planes
        ("gzip:6", 262144): (10, 0),
    }
    assert (df["close_s"] > 0).all()
    assert (df["storage_bytes"] > 0).all()


def test_results_files_and_schema(write_sweep, tmp_path):
    run(write_sweep(ROWS), tmp_path)
    rd = tmp_path / "run"
    for name in ("sweep.yaml", "env.json", "cells.csv", "cells.parquet", "requests.parquet", "io.parquet"):
        assert (rd / name).exists(), name
    df = pd.read_parquet(rd / "cells.parquet")
    assert list(df.columns)[: len(CELL_COLUMNS)] == CELL_COLUMNS
    assert (df["schema_version"] == SCHEMA_VERSION).all()
    row = df.iloc[0]
    assert row["cache_nslots"] == 521 and row["cache_w0"] == 0.75   # read back, stated defaults
    assert row["chunks"] == "4x10x200" and row["block"] == "1x1x200" and row["filters"] == "gzip:1"
    assert row["chunk_bytes"] == 32000 and row["nchunks"] == 2 and row["logical_bytes"] == 64000
    assert row["compression_ratio"] > 1
    assert row["time_s_min"] <= row["time_s"] <= row["time_s_max"]
    io = pd.read_parquet(rd / "io.parquet")
    assert {"draw", "super"} <= set(io["mem_type"])
    env = __import__("json").loads((rd / "env.json").read_text())
    for key in ("cpu", "cores", "memory_bytes", "kernel", "filesystem", "python", "h5py", "hdf5", "numpy", "hdf5plugin", "git_commit", "time"):
        assert key in env


def test_rerun_with_same_out_skips_finished_cells(write_sweep, tmp_path):
    sweep = write_sweep(ROWS)
    first = run(sweep, tmp_path)
    assert (first.ran, first.skipped) == (2, 0)
    before = cells(tmp_path)
    again = run(sweep, tmp_path)
    assert (again.ran, again.skipped) == (0, 2)
    pd.testing.assert_frame_equal(before, cells(tmp_path))


def test_user_file_is_opened_read_only_and_not_modified(write_sweep, tmp_path):
    src = tmp_path / "user.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("/a/b", data=np.arange(600, dtype="<i2").reshape(20, 30), chunks=(10, 30), compression="gzip")
    os.chmod(src, 0o444)
    digest, mtime = hashlib.sha256(src.read_bytes()).hexdigest(), src.stat().st_mtime_ns
    sweep = write_sweep(f"""
    name: user
    dataset: {{path: /a/b, file: {src}}}
    matrix:
      chunks: [source, [5, 30]]
      filters: [source]
      access: [{{op: read, block: [1, 30]}}, {{op: write, block: [5, 30]}}]
    repeats: 1
    """)
    summary = run(sweep, tmp_path)
    assert summary.failed == 0
    df = cells(tmp_path)
    assert set(df["chunks"]) == {"10x30", "5x30"} and set(df["filters"]) == {"gzip:6"} or set(df["filters"]) == {"gzip:4"}
    src_cells = df[(df.chunks == "10x30") & (df.op == "read")]
    assert src_cells["dataset_file"].iloc[0] == str(src)       # the source layout is read in place
    assert np.isnan(src_cells["repack_s"].iloc[0])
    assert df[(df.chunks == "5x30") & (df.op == "read")]["repack_s"].iloc[0] > 0
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest and src.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("fault", ["segv", "memory"])
def test_a_crashing_cell_is_recorded_failed_and_the_rest_finish(write_sweep, tmp_path, monkeypatch, fault):
    from ccp.run import prepare

    sweep = write_sweep(ROWS)
    victim = prepare(sweep)[2][0].cell_id
    monkeypatch.setenv("CCP_FAULT_INJECT", f"{victim}:{fault}")
    summary = run(sweep, tmp_path)
    assert summary.failed == 1
    df = cells(tmp_path).set_index("cell_id")
    assert df.loc[victim, "status"].startswith("failed:")
    assert ("SIGSEGV" if fault == "segv" else "MemoryError") in df.loc[victim, "status"]
    assert (df.drop(victim)["status"] == "ok").all()
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert victim not in set(req.cell_id)
    # a rerun retries the failed cell only
    monkeypatch.delenv("CCP_FAULT_INJECT")
    again = run(sweep, tmp_path)
    assert (again.ran, again.failed) == (1, 0)
    assert (cells(tmp_path)["status"] == "ok").all()


def test_cell_timeout(write_sweep, tmp_path, monkeypatch):
    from ccp.run import prepare

    sweep = write_sweep(ROWS)
    victim = prepare(sweep)[2][1].cell_id
    monkeypatch.setenv("CCP_FAULT_INJECT", f"{victim}:hang")
    summary = run(sweep, tmp_path, cell_timeout=3)
    assert summary.failed == 1
    assert cells(tmp_path).set_index("cell_id").loc[victim, "status"].startswith("failed: timeout")


COPY = """
name: copy
dataset:
  generate: {shape: [60, 60], dtype: "<f4", chunks: [20, 30], filters: "gzip:1"}
matrix:
  chunks: [[30, 20]]
  filters: ["gzip:1"]
  cache: ["0B"]                       # no chunk cache: every partial access goes to the file
  access:
    - {op: copy, block: [60, 60]}     # one request: each source chunk read once, each destination chunk written once
    - {op: copy, block: [20, 30]}     # aligned with the source chunks only
repeats: 1
"""


def test_copy_reads_the_stored_layout_and_writes_the_cell_layout(write_sweep, tmp_path):
    run(write_sweep(COPY), tmp_path)
    df = cells(tmp_path).set_index("block")
    whole, src_aligned = df.loc["60x60"], df.loc["20x30"]
    assert (whole.raw_reads, whole.raw_writes) == (6, 6)
    # each 20x30 block covers one source chunk (1 read) and parts of two destination chunks:
    # with no cache, every partial destination chunk is read back, merged and written again
    assert src_aligned.raw_reads > 6 and src_aligned.raw_writes > 6
    assert src_aligned.dataset_file.endswith(".h5")


BUDGET = """
name: budget
dataset:
  generate: {shape: [40, 10, 2000], dtype: "<f4", data: normal}
matrix:
  chunks: [[8, 10, 2000]]           # 640 KB chunks through a 64 KiB cache: every row decodes its chunk
  filters: ["gzip:1"]
  cache: ["64KiB"]
  access: [{op: read, block: [1, 1, 2000]}]
repeats: 2
cold: false
"""


def test_time_budget_measures_a_prefix_and_extrapolates(write_sweep, tmp_path):
    sweep = write_sweep(BUDGET)
    run(sweep, tmp_path, time_budget=0.15)
    row = cells(tmp_path).iloc[0]
    assert row["status"] == "extrapolated"
    assert 0 < row["fraction_measured"] < 1
    assert row["requests"] == 400
    assert row["raw_reads"] == 400 == row["predicted_raw_reads"]      # every request loads its chunk
    assert "partial" in row["flags"]
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    measured = req[(req["pass"] == 0) & (req["phase"] == "request")]
    assert len(measured) == round(row["fraction_measured"] * 400)
    # the estimate is of the same order as the whole pass (the benchmark checks it closely)
    full = sum(measured["time_s"]) / row["fraction_measured"]
    assert 0.5 < row["time_s"] / full < 2
    # an extrapolated cell counts as finished: a rerun does not measure it again
    assert run(sweep, tmp_path, time_budget=0.15).ran == 0


def test_short_disk_is_one_line_before_any_work(write_sweep, tmp_path, monkeypatch, cli):
    import shutil
    from collections import namedtuple


    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9, 1000))
    result = cli("run", str(write_sweep(ROWS)), "--out", str(tmp_path / "run"), "--work", str(tmp_path / "work"))
    assert result.exit_code == 2
    assert result.output.startswith("ccp: error: disk:") and "free" in result.output
    assert not (tmp_path / "run").exists()
