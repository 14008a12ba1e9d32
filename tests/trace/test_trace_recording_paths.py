"""The recorder's slower paths (a mask, ``astype``, ``read_direct``, fields, ``write_direct``, ``d[...] = ...``)
record what they did before their recording was made cheaper (issue 23): the same rows, callers and selections.
The expected rows are the ones the recorder wrote before (main at affbc7d)."""

import textwrap

import numpy as np
import pandas as pd
import pytest
from traced_program import trace_program

PROGRAM = textwrap.dedent("""
    import sys, h5py, numpy as np
    p = sys.argv[1]
    with h5py.File(p, "w") as f:
        for name in "marw":
            f.create_dataset(name, data=np.arange(100, dtype="f4"), chunks=(10,))
        f.create_dataset("c", data=np.zeros(100, [("a", "f4"), ("b", "i4")]), chunks=(10,))
        f.create_dataset("s", shape=(100,), dtype="f4", chunks=(10,))
    with h5py.File(p, "r+") as f:
        m = np.zeros(100, bool)
        m[[3, 50]] = True
        f["m"][m]
        f["a"].astype("f8")[10:14]
        buf = np.empty(3, "f4")
        f["r"].read_direct(buf, np.s_[20:23])
        f["c"].fields("a")[30:35]
        f["w"].write_direct(np.ones(4, "f4"), np.s_[0:4], np.s_[40:44])
        f["s"][60:65] = 1
    print("ok")
""")

# (depth, api, op, nlow, sel, start, count, nelems, bytes, points) of each row, outermost call first
PATHS = {
    "mask": ("/m", [(0, "Dataset.__getitem__", "read", 1, None, None, None, None, 8, None),
                    (1, "DatasetID.read", "read", 0, "points", [3], [48], 2, 8, [3, 50])]),
    "astype": ("/a", [(0, "astype.__getitem__", "read", 1, None, None, None, None, 16, None),
                      (1, "Dataset.__getitem__", "read", 1, None, None, None, None, 16, None),
                      (2, "DatasetID.read", "read", 0, "box", [10], [4], 4, 16, None)]),
    "read_direct": ("/r", [(0, "Dataset.read_direct", "read", 1, None, None, None, None, 12, None),
                           (1, "DatasetID.read", "read", 0, "box", [20], [3], 3, 12, None)]),
    "fields": ("/c", [(0, "fields.__getitem__", "read", 1, None, None, None, None, 40, None),
                      (1, "Dataset.__getitem__", "read", 1, None, None, None, None, 40, None),
                      (2, "DatasetID.read", "read", 0, "box", [30], [5], 5, 40, None)]),
    "write_direct": ("/w", [(0, "Dataset.write_direct", "write", 1, None, None, None, None, 16, None),
                            (1, "DatasetID.write", "write", 0, "box", [40], [4], 4, 16, None)]),
    "setitem": ("/s", [(0, "Dataset.__setitem__", "write", 1, None, None, None, None, 20, None),
                       (1, "DatasetID.write", "write", 0, "box", [60], [5], 5, 20, None)]),
}


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    out = trace_program(tmp_path_factory.mktemp("paths"), PROGRAM)
    table = pd.read_parquet(out / "calls.parquet")
    return table[table["kind"] == "call"]


def _plain(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if v is None or v is pd.NA or (np.isscalar(v) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") else v


@pytest.mark.parametrize("path", list(PATHS), ids=list(PATHS))
def test_each_path_records_the_rows_it_did_before(calls, path):
    dataset, expected = PATHS[path]
    rows = calls[calls["dataset"] == dataset].sort_values("seq")
    # the second session's calls (the first wrote the datasets by create_dataset(data=...))
    rows = rows[rows["api"] != "Group.create_dataset"]
    rows = rows[~((rows["api"] == "DatasetID.write") & (rows["depth"] == 1) & (rows["parent"].isin(
        calls.loc[calls["api"] == "Group.create_dataset", "seq"])))]
    cols = ["depth", "api", "op", "nlow", "sel", "start", "count", "nelems", "bytes", "points"]
    got = [tuple(_plain(v) for v in r) for r in rows[cols].itertuples(index=False)]
    assert got == expected
    seqs, parents = rows["seq"].tolist(), rows["parent"].tolist()
    assert parents == [0, *seqs[:-1]]                 # each call inside the one before it
    hdf5 = rows["hdf5_s"].tolist()
    assert hdf5[0] >= hdf5[-1] > 0 and rows["wall_s"].iloc[0] >= hdf5[-1]
