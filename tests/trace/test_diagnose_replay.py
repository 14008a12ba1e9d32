"""Replay sequences and diagnoses of traced programs (one trace per program, shared by the tests)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ccp.chunkcache import ChunkCache
from ccp.errors import CcpError
from ccp.hdf5.defaults import chunk_cache_default
from ccp.model import simulate
from ccp.trace.diagnose import diagnose, format_diagnosis, run_model
from ccp.workload.replay_batches import replay_sequence
from ccp.workload.tracefile import Trace, load_trace

ROOT = Path(__file__).resolve().parents[2]

READER = textwrap.dedent("""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        f.create_dataset("cube", data=np.arange(8 * 12 * 6, dtype="f4").reshape(8, 12, 6), chunks=(4, 4, 6))
    for band in range(3):                      # a reopen per band: the cache is lost twice
        with h5py.File(path, "r", rdcc_nbytes=4096, rdcc_nslots=11) as f:
            f["cube"][:, :, band]
    with h5py.File(path, "r") as f:
        d = f["cube"]
        d[1:3, 2:9, 0:6]
        d[::4, 0, 0]                           # regular hyperslab with stride: one strided request
        d[[0, 5], 1, 1]                        # fancy index: two blocks
""")


def _trace(tmp_path_factory, source, name):
    tmp = tmp_path_factory.mktemp(name)
    prog = tmp / "prog.py"
    prog.write_text(source)
    out = tmp / "trace"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp / "data.h5")], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return load_trace(out)


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return _trace(tmp_path_factory, READER, "reader")


def test_replay_sequence_is_the_exact_selection_order(reader):
    seq = replay_sequence(reader, "/cube", op="read")
    assert seq.plan.starts.tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 2, 0], [0, 0, 0], [0, 1, 1]]
    assert seq.plan.counts.tolist() == [[8, 12, 1]] * 3 + [[2, 7, 6]] + [[5, 1, 1]] + [[6, 1, 1]]
    strides, blocks = seq.plan.hyperslab(0, len(seq.plan))
    # d[::4, 0, 0]: rows 0 and 4; d[[0, 5], 1, 1], which h5py selects as a hyperslab too: rows 0 and 5
    assert strides[4:].tolist() == [[4, 1, 1], [5, 1, 1]] and blocks[4:].tolist() == [[1, 1, 1]] * 2
    assert (blocks[:4] == seq.plan.counts[:4]).all()      # the boxes: their count
    assert seq.call_of.tolist() == [0, 1, 2, 3, 4, 5]
    # each reopen starts a new session with the cache that reader set; the last file has the default cache
    assert seq.session_starts.tolist() == [0, 1, 2, 3]
    assert [c.nbytes for c in seq.session_caches] == [4096, 4096, 4096, 8 * 1024 * 1024]
    assert seq.reopens == 3
    writes = replay_sequence(reader, "/cube", op="write")
    assert writes.plan.counts.tolist() == [[8, 12, 6]]


def test_model_over_the_sequence_matches_simulate_session_by_session(reader):
    seq = replay_sequence(reader, "/cube", op="read")
    got = run_model(seq)
    want = 0
    for cache, sl in seq.sessions():
        strides, blocks = seq.plan.hyperslab(0, len(seq.plan))
        reqs = [("read", seq.plan.starts[i], seq.plan.counts[i], strides[i], blocks[i]) for i in range(sl.start, sl.stop)]
        preds = simulate(seq.shape, seq.chunks, seq.itemsize, filtered=False,
                         cache=ChunkCache(cache.nbytes, cache.nslots, cache.w0), requests=reqs, allocated=True)
        want += sum(p.chunk_loads for p in preds)
    assert got["chunk_loads"] == want
    # kept open, the three band reads share their chunks: fewer loads than with the reopens
    assert run_model(seq, merge_sessions=True)["chunk_loads"] < want


@pytest.mark.parametrize("hdf5, nbytes, nslots", [
    ("1.14.6", 1024 * 1024, 521),
    ("1.10.7", 1024 * 1024, 521),
    ("2.0.0", 8 * 1024 * 1024, 8191),
], ids=["1.14", "1.10", "2.0"])
def test_a_trace_without_its_cache_replays_with_the_default_of_its_hdf5(reader, hdf5, nbytes, nslots):
    # a trace whose opens recorded no cache (an older recorder, another tool): the library default of the
    # HDF5 the program ran with, from the trace's environment, not this process's
    table = reader.table.copy()
    table[["cache_nbytes", "cache_nslots"]] = None
    table["cache_w0"] = float("nan")
    header = {**reader.header, "environment": {**reader.header.get("environment", {}), "hdf5": hdf5}}
    seq = replay_sequence(Trace(reader.path, header, table), "/cube", op="read")
    assert {(c.nbytes, c.nslots, c.w0) for c in seq.session_caches} == {(nbytes, nslots, 0.75)}


def test_a_trace_with_an_unreadable_hdf5_version_replays_with_this_librarys_default(reader):
    table = reader.table.copy()
    table[["cache_nbytes", "cache_nslots"]] = None
    table["cache_w0"] = float("nan")
    header = {**reader.header, "environment": {"hdf5": "2.0.0-snapshot"}}
    seq = replay_sequence(Trace(reader.path, header, table), "/cube", op="read")
    d = chunk_cache_default()
    assert {(c.nbytes, c.nslots) for c in seq.session_caches} == {(d.nbytes, d.nslots)}


def test_unknown_dataset_and_pid_are_one_line_errors(reader):
    with pytest.raises(CcpError, match="not in the trace"):
        replay_sequence(reader, "/cub")
    with pytest.raises(CcpError, match="pid 1 made no call"):
        replay_sequence(reader, "/cube", pid=1)


def test_diagnosis_names_the_reopens_and_the_cure(reader):
    diag = diagnose(reader)
    d = diag["datasets"][0]
    assert d["dataset"] == "/cube" and d["reopens"] == 3
    assert any("reopened" in f and "lost 3 time(s)" in f for f in d["findings"])
    names = [c["cure"] for c in d["cures"]]
    assert any("keep the file" in n for n in names)
    keep = next(c for c in d["cures"] if "keep the file" in c["cure"])
    assert d["file"] in keep["code"] and "/cube" in keep["code"]
    assert keep["chunk_loads"] < d["chunk_loads"]
    text = format_diagnosis(diag)
    assert "cures, best first" in text
    json.dumps(diag, default=str)


def test_band_reader_example_diagnosis(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bands")
    out = tmp / "trace"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable,
                        str(ROOT / "examples" / "band_reader.py"), "--bands", "6", "--file", str(tmp / "cube.h5")],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    d = diagnose(load_trace(out))["datasets"][0]
    assert d["reopens"] == 5
    # six bands from one 32-band chunk slab: each reopen reloads the same 9 chunks
    assert d["chunk_loads"] == 6 * 9
    assert d["cures"] and d["cures"][0]["predicted_s"] < d["predicted_s"]


def test_verify_replays_the_top_cure(reader):
    d = diagnose(reader, verify=True)["datasets"][0]
    v = d["verified"]
    assert v["cure"] == d["cures"][0]["cure"]
    assert v["before_s"] > 0 and v["after_s"] > 0 and "median of 3" in v["note"]


def test_traced_plan_is_what_a_sweep_replays(reader):
    from ccp.workload.replay_batches import traced_plan

    plan, reopen_before, caches = traced_plan(reader.path, "/cube", shape=(8, 12, 6))
    assert len(plan) == 8 and reopen_before.tolist() == [1, 2, 3] and len(caches) == 4
    # a runner reads boxes: each strided call a run per chunk of the traced layout (d[::4, 0, 0] and d[[0, 5], 1, 1]
    # two boxes each); the model's totals take the calls as made (strided=True: one request each)
    assert plan.starts[4:].tolist() == [[0, 0, 0], [4, 0, 0], [0, 1, 1], [5, 1, 1]] and plan.strides is None
    calls, reopen_calls, _ = traced_plan(reader.path, "/cube", shape=(8, 12, 6), strided=True)
    assert len(calls) == 6 and reopen_calls.tolist() == [1, 2, 3] and calls.strides[4:, 0].tolist() == [4, 5]
    with pytest.raises(CcpError, match="traced with shape"):
        traced_plan(reader.path, "/cube", shape=(8, 12, 7))


def _replay_sweep(tmp_path, trace, dataset="/cube", pid=None):
    sweep = tmp_path / "s.yaml"
    extra = f", pid: {pid}" if pid is not None else ""
    sweep.write_text(textwrap.dedent(f"""
        name: replay
        dataset: {{generate: {{shape: [8, 12, 6], dtype: "<f4", chunks: [4, 4, 6]}}}}
        matrix: {{chunks: [[4, 4, 6]], access: [{{trace: {trace}, dataset: {dataset}{extra}}}]}}
        """))
    return sweep


def test_config_parses_a_replay_and_the_workload_loads_its_trace(reader, tmp_path):
    """Config (below the workload room) parses the entry without reading the trace; the workload sets the block."""
    from ccp.config.sweep import parse_sweep_file as parse_only
    from ccp.workload.sweep import load_sweep_with_replays

    path = _replay_sweep(tmp_path, reader.path)
    [spec] = parse_only(path).access
    assert spec.trace == str(Path(reader.path).resolve()) and spec.block == ()
    [access] = load_sweep_with_replays(path).access
    seq = replay_sequence(reader, "/cube", op="read")
    assert access.block == tuple(int(c) for c in seq.plan.counts.max(axis=0))    # the largest request
    assert (access.trace, access.trace_dataset, access.pid) == (spec.trace, "/cube", None)


@pytest.mark.parametrize("dataset, pid, message", [
    ("/nope", None, r"matrix\.access\[0\]\.trace: .*dataset '/nope' is not in the trace"),
    ("/cube", 1, r"matrix\.access\[0\]\.trace: .*pid 1 made no call on /cube"),
], ids=["unknown-dataset", "unknown-pid"])
def test_a_replay_the_trace_cannot_give_names_its_key(reader, tmp_path, dataset, pid, message):
    from ccp.errors import ConfigError
    from ccp.workload.sweep import load_sweep_with_replays

    with pytest.raises(ConfigError, match=message):
        load_sweep_with_replays(_replay_sweep(tmp_path, reader.path, dataset, pid))


def test_the_matrix_refuses_a_replay_whose_trace_was_not_loaded(reader, tmp_path):
    from ccp.config.sweep import parse_sweep_file as parse_only
    from ccp.errors import ConfigError
    from ccp.hdf5.dataset import describe_source
    from ccp.matrix.cells import expand

    sweep = parse_only(_replay_sweep(tmp_path, reader.path))
    with pytest.raises(ConfigError, match=r"matrix\.access\[0\]\.trace: the replay's trace is not loaded"):
        expand(sweep, describe_source(sweep.dataset))


def test_a_tune_workload_loads_its_replay_like_a_sweep(reader, tmp_path):
    """A replay in `ccp tune`'s workload gets its block from the trace, as a sweep's does (it was left rank 0)."""
    from ccp.tune.workload import parse_workload
    from ccp.workload.sweep import load_sweep_with_replays

    raw = {"name": "t", "dataset": {"generate": {"shape": [8, 12, 6], "dtype": "<f4", "chunks": [4, 4, 6]}},
           "workload": [{"access": {"trace": str(reader.path), "dataset": "/cube"}, "weight": 1}]}
    [item] = parse_workload(raw, tmp_path).items
    [swept] = load_sweep_with_replays(_replay_sweep(tmp_path, reader.path)).access
    assert item.access.block == swept.block and len(item.access.block) == 3


def test_a_chunk_larger_than_the_programs_cache_is_said_in_explains_words(reader):
    # the same program as if it had opened the file with a 256-byte cache: a 384-byte chunk never stays
    table = reader.table.copy()
    opened = table["cache_nbytes"].notna()
    table.loc[opened, "cache_nbytes"] = 256
    d = diagnose(Trace(reader.path, reader.header, table))["datasets"][0]
    assert "a chunk (384 B) is larger than the cache (256 B), so HDF5 cannot keep it between requests" in d["findings"]
