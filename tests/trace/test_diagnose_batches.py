"""``ccp diagnose``'s verdict does not depend on how the trace was read: in one piece or many small batches, or
streamed batch by batch (ccp.trace.stream: only light columns and replayed boxes kept)."""

import json
import textwrap

import numpy as np
import pytest
from traced_program import trace_program

from ccp.chunkcache import ChunkCache
from ccp.model import simulate_arrays
from ccp.trace import cures, sequence_model
from ccp.trace.check import load_checked
from ccp.trace.cures import block_sequence, chunk_candidates, partial_requests
from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.trace.sequence_model import run_blocks, run_model, working_set
from ccp.trace.stream import diagnose_folder, read_batches
from ccp.workload.replay import ReplaySequence
from ccp.workload.replay_batches import OutOfOrder
from ccp.workload.requestplan import RequestPlan

PROGRAM = textwrap.dedent("""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        f.create_dataset("cube", data=np.arange(16 * 12 * 6, dtype="f4").reshape(16, 12, 6), chunks=(4, 4, 6))
        log = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8), chunks=(4, 8), dtype="f8")
        for i in range(20):                    # appends, one row each
            log.resize(i + 1, axis=0)
            log[i] = np.full(8, i)
    for band in range(3):                      # a reopen per band: the cache is lost twice
        with h5py.File(path, "r", rdcc_nbytes=4096, rdcc_nslots=11) as f:
            f["cube"][:, :, band]
    with h5py.File(path, "r") as f:
        d = f["cube"]
        for i in range(60):                    # many small reads (the fast path)
            d[i % 16, (3 * i) % 12]
        d[::4, 0, 0]                           # a regular hyperslab with a stride
        d[[0, 5, 9], 1, 1]                     # fancy indexing: listed blocks
""")


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batches")
    return trace_program(tmp, PROGRAM)


@pytest.mark.parametrize("batch_rows", [1, 7, 50], ids=["1-row", "7-rows", "50-rows"])
def test_diagnosis_is_the_same_read_in_batches(traced, batch_rows):
    whole = load_checked(traced)
    parts = load_checked(traced, batch_rows=batch_rows)
    assert len(whole.table) > 2 * 50               # more rows than the largest batch: several batches were read
    assert list(whole.table.dtypes) == list(parts.table.dtypes)
    assert whole.table.equals(parts.table)
    one, many = diagnose(whole, tune_dir=None), diagnose(parts, tune_dir=None)
    assert json.dumps(one, sort_keys=True, default=str) == json.dumps(many, sort_keys=True, default=str)
    assert format_diagnosis(one) == format_diagnosis(many)
    assert {d["dataset"] for d in one["datasets"]} == {"/cube", "/log"}
    assert all(d["findings"] or d.get("write_findings") for d in one["datasets"])


# one-row batches stream the same as the others but cost minutes on a busy machine (205 s at load 12): slow
@pytest.mark.parametrize("batch_rows", [pytest.param(1, marks=pytest.mark.slow), pytest.param(7, marks=pytest.mark.slow),
                                        50, 200_000],   # 50-row batches: still more than one over the ~90-row trace
                         ids=["1-row", "7-rows", "50-rows", "one-batch"])
def test_streamed_diagnosis_is_the_whole_table_diagnosis(traced, batch_rows):
    """ccp diagnose reads the trace in batches and keeps only light columns and replayed boxes per dataset:
    the same text and JSON as the diagnosis of the table loaded whole."""
    whole = diagnose(load_checked(traced), tune_dir=None)
    trace, summary = read_batches(traced, batch_rows)        # raises OutOfOrder if it would fall back
    streamed = diagnose(trace, tune_dir=None, summary=summary)
    assert json.dumps(streamed, sort_keys=True, default=str) == json.dumps(whole, sort_keys=True, default=str)
    assert format_diagnosis(streamed) == format_diagnosis(whole)
    assert diagnose_folder(traced, batch_rows=batch_rows) == diagnose_folder(traced, verify=False)


def _sequence(rng, n: int, sessions: list[int], writes: bool) -> ReplaySequence:
    shape, chunks = (60, 40), (8, 16)
    starts = np.stack([rng.integers(0, 60, n), rng.integers(0, 40, n)], axis=1)
    counts = np.minimum(np.stack([rng.integers(1, 4, n), rng.integers(1, 20, n)], axis=1), np.array(shape) - starts)
    ops = np.where(rng.random(n) < (0.5 if writes else 0.0), "write", "read").astype(object)
    caches = tuple(ChunkCache(k * 8 * 16 * 4, 7, 0.75) for k in range(1, len(sessions) + 1))
    return ReplaySequence(file="f.h5", dataset="/d", pids=(1,), shape=shape, dtype="<f4", itemsize=4, chunks=chunks,
                          filtered=False, ops=ops, plan=RequestPlan(starts, counts), call_of=np.arange(n),
                          session_starts=np.asarray(sessions, np.int64), session_caches=caches,
                          session_pids=(1,) * len(sessions), ncalls=n, approximate=0)


@pytest.mark.parametrize(("batch", "sessions", "writes"), [(1, [0], False), (7, [0, 50, 51, 300], True),
                                                           (1000, [0, 123], True)],
                         ids=["1-request", "7-requests-4-sessions", "one-batch"])
def test_batched_cures_equal_the_whole_sequence(monkeypatch, batch, sessions, writes):
    """The whole-chunk cure modelled a batch at a time (run_blocks) is the block sequence modelled whole, and
    the working set, partial requests and most common read do not depend on the batch size."""
    seq = _sequence(np.random.default_rng(len(sessions)), 400, sessions, writes)
    blocks = block_sequence(seq)
    want = (blocks.ncalls, run_model(blocks, per_call=False, allocated=False))
    whole = (working_set(seq, seq.chunks), partial_requests(seq, seq.chunks).tolist(), chunk_candidates(seq))
    for module in (cures, sequence_model):
        monkeypatch.setattr(module, "BATCH", batch)
    monkeypatch.setattr(sequence_model, "MODEL_BATCH", batch)
    nblocks, got = run_blocks(seq, allocated=False)
    assert nblocks == want[0] and {k: v for k, v in got.items() if "per_call" not in k} == \
        {k: v for k, v in want[1].items() if "per_call" not in k}
    again = block_sequence(seq)
    assert np.array_equal(again.plan.starts, blocks.plan.starts) and np.array_equal(again.plan.counts, blocks.plan.counts)
    assert np.array_equal(again.session_starts, blocks.session_starts) and list(again.ops) == list(blocks.ops)
    assert (working_set(seq, seq.chunks), partial_requests(seq, seq.chunks).tolist(), chunk_candidates(seq)) == whole
    assert run_model(seq)["chunk_loads"] == want_loads(seq)


def want_loads(seq: ReplaySequence) -> int:
    """Chunk loads of the sequence's sessions on the one-shot compiled model."""
    total = 0
    for cache, sl in seq.sessions():
        codes = (seq.ops[sl] == "write").astype(np.uint8)
        total += simulate_arrays(seq.shape, seq.chunks, seq.itemsize, filtered=False, cache=cache, ops=codes,
                                 starts=seq.plan.starts[sl], counts=seq.plan.counts[sl]).total().chunk_loads
    return total


def _without_timings(diag: dict) -> str:
    """The diagnosis with --verify's measured seconds left out (two replays never take the same time)."""
    out = json.loads(json.dumps(diag, default=str))
    for d in out["datasets"]:
        if "verified" in d:
            d["verified"] = {k: v for k, v in d["verified"].items()
                             if k not in ("before_s", "after_s", "verdict", "replayed_speedup", "within")}
    return json.dumps(out, sort_keys=True)


@pytest.mark.parametrize("batch_rows", [pytest.param(7, marks=pytest.mark.slow), 50, 200_000],   # 50: more than one
                         ids=["7-rows", "50-rows", "one-batch"])                                  # batch, in make test
def test_verify_streams_and_measures_what_the_whole_table_does(traced, batch_rows, monkeypatch):
    """--verify replays the read sequence the streamed diagnosis built: the table is never loaded whole, and the
    verdict (the cure measured, how) is the whole-table one."""
    whole = diagnose(load_checked(traced), tune_dir=None, verify=True)

    def loaded_whole(*args, **kwargs):
        raise AssertionError("the trace was loaded whole")

    monkeypatch.setattr("ccp.trace.check.load_trace", loaded_whole)
    streamed = diagnose_folder(traced, verify=True, batch_rows=batch_rows)
    assert _without_timings(streamed) == _without_timings(whole)
    measured = [d["verified"] for d in streamed["datasets"] if "verified" in d]
    assert measured and all(v["before_s"] > 0 and v["after_s"] > 0 for v in measured)


@pytest.fixture(scope="module")
def shuffled(traced, tmp_path_factory):
    """The traced program's table with its rows shuffled (a foreign table: ccp trace writes it sorted)."""
    import shutil

    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("shuffled")
    shutil.copy(traced / "trace.json", tmp / "trace.json")
    rows = pq.read_table(traced / "calls.parquet")
    pq.write_table(rows.take(np.random.default_rng(1).permutation(rows.num_rows)), tmp / "calls.parquet")
    return tmp


@pytest.mark.parametrize("batch_rows", [pytest.param(7, marks=pytest.mark.slow), 50, 200_000],
                         ids=["7-rows", "50-rows", "one-batch"])             # 7-row batches: 100 s at load 12
def test_a_table_out_of_order_is_sorted_in_batches_to_the_same_diagnosis(traced, shuffled, batch_rows, monkeypatch):
    """Rows not in (pid, seq) order are sorted into a temporary copy in runs of batch_rows, merged, then streamed:
    the diagnosis of the sorted table, never the table loaded whole."""
    whole = diagnose(load_checked(traced), tune_dir=None)
    with pytest.raises(OutOfOrder):
        read_batches(shuffled, batch_rows)
    monkeypatch.setattr("ccp.trace.check.load_trace", lambda *a, **k: pytest.fail("the trace was loaded whole"))
    streamed = diagnose_folder(shuffled, batch_rows=batch_rows)
    text = json.dumps(streamed, sort_keys=True, default=str).replace(str(shuffled), str(traced))
    assert text == json.dumps(whole, sort_keys=True, default=str)
    assert format_diagnosis(streamed).replace(str(shuffled), str(traced)) == format_diagnosis(whole)
