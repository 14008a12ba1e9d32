"""The fast path keeps a numpy integer index as an int: pickled as a numpy scalar, each one cost more than the read
it described (issue 23, F7; the cost is measured by ``benchmarks/trace_overhead.py --inprocess --key np.int64``)."""

import h5py
import numpy as np
import pytest
from h5py import _selector
from h5py._hl.dataset import Dataset

from ccp.trace.fastpath import fast_getitem


class KeptKeys:
    stopped = None

    def __init__(self):
        self.keys = []

    def fast_call(self, _dsid, _t0, _t1, key):
        self.keys.append(key)

    def failed(self, exc):
        raise exc


@pytest.mark.parametrize("index,kept", [
    (np.int64(3), (3,)),
    ((np.int32(2), slice(1, 4)), (2, slice(1, 4))),
    ((np.uint8(1), np.int16(0)), (1, 0)),
    (5, (5,)),
], ids=["np.int64", "np.int32+slice", "two-numpy-ints", "int"])
def test_numpy_integer_keys_are_kept_as_ints(tmp_path, index, kept):
    rec = KeptKeys()
    getitem = fast_getitem(rec, Dataset.__getitem__, _selector.Reader.__dict__["read"])
    with h5py.File(tmp_path / "x.h5", "w") as f:
        d = f.create_dataset("x", data=np.arange(60.0).reshape(6, 10))
        assert np.array_equal(getitem(d, index), d[index])
    assert rec.keys == [kept] and all(type(a) in (int, slice) for a in rec.keys[0])
