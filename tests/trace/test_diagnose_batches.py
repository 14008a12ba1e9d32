"""``ccp diagnose``'s verdict does not depend on how the trace was read: in one piece or many small batches, or
streamed batch by batch (ccp.trace.stream: only light columns and replayed boxes kept)."""

import json
import textwrap

import pytest
from traced_program import trace_program

from ccp.trace.check import load_checked
from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.trace.stream import diagnose_folder, read_batches

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


@pytest.mark.parametrize("batch_rows", [1, 7, 50, 200_000], ids=["1-row", "7-rows", "50-rows", "one-batch"])
def test_streamed_diagnosis_is_the_whole_table_diagnosis(traced, batch_rows):
    """ccp diagnose reads the trace in batches and keeps only light columns and replayed boxes per dataset:
    the same text and JSON as the diagnosis of the table loaded whole."""
    whole = diagnose(load_checked(traced), tune_dir=None)
    trace, summary = read_batches(traced, batch_rows)        # raises OutOfOrder if it would fall back
    streamed = diagnose(trace, tune_dir=None, summary=summary)
    assert json.dumps(streamed, sort_keys=True, default=str) == json.dumps(whole, sort_keys=True, default=str)
    assert format_diagnosis(streamed) == format_diagnosis(whole)
    assert diagnose_folder(traced, batch_rows=batch_rows) == diagnose_folder(traced, verify=False)
