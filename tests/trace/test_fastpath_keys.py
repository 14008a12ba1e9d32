"""The recorder's fast path (issue 23, F7): a single int, numpy integer or slice key goes into flat per-kind lists
turned into columns at a flush; a tuple key is one tuple per call with its numpy integers made ints (pickled as a numpy
scalar, each cost more than the read). Its cost is measured by ``benchmarks/trace_overhead.py --inprocess``, never
here. Every kind of key gives the same calls.parquet rows as the recorder's full path."""

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from h5py import _selector
from h5py._hl.dataset import Dataset

from ccp.trace.fastpath import WIDTH, FastColumns, block_calls, fast_getitem

ROOT = Path(__file__).resolve().parents[2]


class Kept:
    """The part of the recorder the fast path touches; flushes keep the column blocks in ``blocks``."""

    stopped = None

    def __init__(self, capacity: int = 16384):
        self.handle_of: dict = {}
        self.columns = FastColumns(capacity)
        self.seq = itertools.count(2, 2)
        self.blocks: list = []
        self.most_buffered = 0

    def token_of(self, dsid):
        return self.handle_of.setdefault(id(dsid), 1)

    def flush(self):
        self.most_buffered = max(self.most_buffered, len(self.columns))
        self.blocks += self.columns.take()

    def failed(self, exc):
        raise exc

    def keys(self) -> list:
        self.flush()
        return [call[4] for block in self.blocks for call in block_calls(block)]


@pytest.mark.parametrize("index,kept", [
    (np.int64(3), (3,)),
    (np.uint8(4), (4,)),
    (5, (5,)),
    (-1, (-1,)),
    (slice(1, 4), (slice(1, 4),)),
    (slice(None, None, 2), (slice(None, None, 2),)),
    ((np.int32(2), slice(1, 4)), (2, slice(1, 4))),
    ((np.uint8(1), np.int16(0)), (1, 0)),
    (Ellipsis, (Ellipsis,)),
], ids=["np.int64", "np.uint8", "int", "negative-int", "slice", "stepped-slice", "np.int32+slice", "two-numpy-ints",
        "ellipsis"])
def test_fast_keys_are_kept_as_ints_and_slices(tmp_path, index, kept):
    rec = Kept()
    getitem = fast_getitem(rec, Dataset.__getitem__, _selector.Reader.__dict__["read"])
    with h5py.File(tmp_path / "x.h5", "w") as f:
        d = f.create_dataset("x", data=np.arange(60.0).reshape(6, 10))
        assert np.array_equal(getitem(d, index), d[index])
    keys = rec.keys()
    assert keys == [kept]
    assert all(type(a) in (int, slice, type(Ellipsis)) for a in keys[0])


def test_buffered_calls_never_exceed_the_capacity(tmp_path):
    """Memory flat in the number of calls: each kind's flat list is written out when it holds ``capacity`` calls."""
    rec = Kept(capacity=8)
    getitem = fast_getitem(rec, Dataset.__getitem__, _selector.Reader.__dict__["read"])
    with h5py.File(tmp_path / "x.h5", "w") as f:
        d = f.create_dataset("x", data=np.arange(100.0))
        for i in range(100):
            getitem(d, [i, np.int64(i), slice(i, i + 1), (np.int32(i),)][i % 4])
            assert all(len(calls) <= 8 * WIDTH for calls in (rec.columns.index, rec.columns.slice, rec.columns.tuple))
    assert rec.most_buffered <= 3 * 8 and len(rec.blocks) >= 10
    keys = rec.keys()
    assert sorted(k[0] if type(k[0]) is int else k[0].start for k in keys) == list(range(100))


PROGRAM = textwrap.dedent("""
    import sys
    import h5py, numpy as np
    from h5py._hl.dataset import Dataset
    ONE = [3, -1, np.int64(7), np.uint16(9), np.int8(-2), slice(2, 5), slice(None), slice(5, 5), slice(-3, None),
           slice(0, 10, 3), slice(None, 4), Ellipsis, [1, 2], [np.int64(2), 5], np.array([0, 4, 9]), [-1]]
    TWO = [2, np.int64(1), slice(1, 3), (2, slice(1, 4)), (np.int32(1), np.int64(2)), (Ellipsis, 3), (slice(None), 0),
           ([1, 3], 2), (np.int64(1), [0, 5]), (np.array([0, 2], np.uint8), slice(1, 4))]
    with h5py.File(sys.argv[1], "w") as f:
        f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        f.create_dataset("y", data=np.arange(60, dtype="i2").reshape(6, 10))

    def reads():
        with h5py.File(sys.argv[1], "r") as f:
            x, y = f["x"], f["y"]
            for k in ONE:
                x[k]
            for k in TWO:
                y[k]
            for i in range(40):         # more than one part-file write (CCP_TRACE_TEST_CAPACITY)
                x[i]
                x[np.int64(i)]
                x[i:i + 2]

    reads()
    Dataset.__getitem__ = Dataset.__getitem__.__wrapped__     # the recorder's full path
    reads()
""")


def test_every_fast_key_gives_the_rows_of_the_full_path(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", tmp_path / "t", "--", sys.executable, prog,
                        tmp_path / "d.h5"], capture_output=True, text=True, timeout=600,
                       env={**env, "PYTHONPATH": str(ROOT), "CCP_TRACE_TEST_CAPACITY": "16"})
    assert r.returncode == 0, r.stderr
    t = pd.read_parquet(tmp_path / "t" / "calls.parquet")
    t = t[(t["kind"] == "call") & t["api"].isin(["Dataset.__getitem__", "fast_reader"])].reset_index(drop=True)
    half = len(t) // 2
    assert half == 2 * (16 + 10 + 120)
    parent_at = {s: i for i, s in enumerate(t["seq"])}
    t["parent_row"] = [parent_at.get(p, -1) - (i >= half) * half if d else -1
                       for i, (p, d) in enumerate(zip(t["parent"], t["depth"]))]
    same = t.drop(columns=["seq", "parent", "t0_ns", "wall_s", "hdf5_s"]).astype(str)
    fast, full = same.iloc[:half].reset_index(drop=True), same.iloc[half:].reset_index(drop=True)
    pd.testing.assert_frame_equal(fast, full)
    assert (t["wall_s"] > 0).all() and (t["hdf5_s"] > 0).all()
