"""The trace merge streams: any chunk size gives the same calls.parquet and trace.json as one chunk."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from ccp.trace.fastpath import FastColumns
from ccp.trace.store import PARTS, merge

KEYS = [(3,), (slice(0, 10),), (Ellipsis,), (np.int64(7), slice(2, 20, 3)), (slice(None), 5), (-1,), (slice(5, 5),),
        (np.int32(2), slice(1, 4)), (3, slice(0, 40, 2)), (slice(None, 4), Ellipsis)]


def _as_columns(batch: list) -> list:
    """A batch's fast-path tuples as the recorder's column blocks (ccp.trace.fastpath), after its other records."""
    columns, rest = FastColumns(), []
    for r in batch:
        if type(r) is not tuple:
            rest.append(r)
        elif len(r[4]) == 1 and type(r[4][0]) in (int, slice):
            (columns.slice if type(r[4][0]) is slice else columns.index).extend((*r[:4], r[4][0]))
        else:
            columns.tuple.extend(r)
    return rest + columns.take()


def _write_parts(parts: Path, calls: int, late: bool, seed: int = 1, columns: bool = False) -> None:
    """Two processes' part files as the recorder writes them: fast-path tuples (``columns``: column blocks) of many
    kinds of key, slow-path calls (the nested row before the user row, as they end), events; one part with a torn
    tail."""
    rng = np.random.default_rng(seed)
    parts.mkdir(parents=True)
    for pid in (101, 202):
        recs: list = [
            {"kind": "handle", "token": 1, "file": "/d/x.h5", "dataset": "/x", "itemsize": 4, "shape": [50, 40]},
            {"kind": "handle", "token": 2, "file": "/d/y.h5", "dataset": "/y", "itemsize": 8, "shape": [30]},
            {"kind": "layout", "pid": pid, "file": "/d/x.h5", "dataset": "/x", "shape": [50, 40], "dtype": "<f4",
             "itemsize": 4, "chunks": [10, 10], "filters": [], "fill_value": 0, "layout": "chunked", "storage_size": 8},
            {"kind": "event", "seq": 2, "pid": pid, "t0_ns": 5, "op": "dataset_open", "file": "/d/x.h5", "dataset": "/x",
             "cache_nbytes": 1 << 20, "cache_nslots": 521, "cache_w0": 0.75}]
        seq = 4
        for i in range(calls):
            r = rng.random()
            if r < 0.6:
                if rng.random() < 0.2:
                    recs.append((seq, 1000 * i, 1000 * i + 300, 2, (int(rng.integers(30)),)))
                else:
                    key = (KEYS[rng.integers(len(KEYS))] if rng.random() < 0.5
                           else (int(rng.integers(50)), slice(0, int(rng.integers(1, 40)))))
                    recs.append((seq, 1000 * i, 1000 * i + 300, 1, key))
            elif r < 0.9:
                common = {"kind": "call", "pid": pid, "op": "read", "t0_ns": 1000 * i, "file": "/d/x.h5",
                          "dataset": "/x", "bytes": 8}
                recs.append({**common, "seq": seq + 2, "depth": 1, "parent": seq, "api": "DatasetID.read",
                             "hdf5_ns": 200, "nlow": 0, "wall_ns": 200, "sel": "points", "start": [1, 2], "count": [3, 4],
                             "nelems": 2, "points": [1, 2, 3, 5]})
                recs.append({**common, "seq": seq, "depth": 0, "parent": 0, "api": "Dataset.__getitem__",
                             "hdf5_ns": 200, "nlow": 1, "wall_ns": 400})
                seq += 2
            else:
                recs.append({"kind": "event", "seq": seq, "pid": pid, "t0_ns": 1000 * i, "op": "dataset_close",
                             "file": "/d/x.h5", "dataset": "/x", "reason": "handle"})
            seq += 2
        if late:        # a call that began first and ended last (another thread's): sorted far back
            recs.append({"kind": "call", "seq": 3, "pid": pid, "depth": 0, "parent": 0, "api": "Dataset.__setitem__",
                         "op": "write", "hdf5_ns": 1, "nlow": 1, "t0_ns": 1, "wall_ns": 9, "file": "/d/x.h5",
                         "dataset": "/x", "bytes": 8})
        with open(parts / f"{pid}-1.part", "wb") as f:
            for a in range(0, len(recs), 777):
                pickle.dump(_as_columns(recs[a:a + 777]) if columns else recs[a:a + 777], f)
        if pid == 202:
            with open(parts / f"{pid}-1.part", "ab") as f:
                f.write(b"\x80\x05torn")


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "a-call-ends-late"])
@pytest.mark.parametrize("batch_rows", [40, 1000], ids=["40-rows", "1000-rows"])
def test_merge_in_small_batches_gives_the_same_trace(tmp_path, batch_rows, late):
    one, many = tmp_path / "one", tmp_path / "many"
    _write_parts(one / PARTS, 1500, late)
    shutil.copytree(one, many)
    head_one = merge(one, ["prog"], 0, 1.0, checksum=False)
    head_many = merge(many, ["prog"], 0, 1.0, checksum=False, batch_rows=batch_rows)
    a, b = pq.read_table(one / "calls.parquet"), pq.read_table(many / "calls.parquet")
    assert a.num_rows > 4000
    assert a.schema.equals(b.schema, check_metadata=True)
    assert a.equals(b)
    assert head_one == head_many
    assert head_one["completeness"]["complete"] is None
    order = a.select(["pid", "seq"]).to_pandas()
    assert order.equals(order.sort_values(["pid", "seq"], kind="stable").reset_index(drop=True))
    assert not [p.name for p in many.iterdir() if p.name.startswith(".merge-")]     # run files cleaned up


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "a-call-ends-late"])
def test_column_blocks_merge_to_the_trace_of_per_call_tuples(tmp_path, late):
    """The fast path's column blocks (index, slice and tuple keys) give the calls.parquet its per-call tuples gave."""
    tuples, columns = tmp_path / "tuples", tmp_path / "columns"
    _write_parts(tuples / PARTS, 1500, late)
    _write_parts(columns / PARTS, 1500, late, columns=True)
    with open(columns / PARTS / "101-1.part", "rb") as f:
        batch = pickle.load(f)
    assert {r["key"] for r in batch if type(r) is dict and r["kind"] == "fast"} == {"index", "slice", "tuple"}
    assert not [r for r in batch if type(r) is tuple]
    head_tuples = merge(tuples, ["prog"], 0, 1.0, checksum=False)
    head_columns = merge(columns, ["prog"], 0, 1.0, checksum=False, batch_rows=1000)
    a, b = pq.read_table(tuples / "calls.parquet"), pq.read_table(columns / "calls.parquet")
    assert a.num_rows > 4000 and a.equals(b)
    assert head_tuples == head_columns
