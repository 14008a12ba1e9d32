"""The builders for probe and scratch datasets (calibration, tune's and trace's costs): what they set is
what HDF5 stores."""

import h5py
import numpy as np
import pytest

from ccp.hdf5 import plists
from ccp.hdf5.filters import parse_filters, pipeline_from_dcpl


@pytest.mark.parametrize(("spec", "dtype"), [("none", "f4"), ("shuffle+gzip:4", "f8"), ("scaleoffset:0", "i4")],
                         ids=["none", "shuffle-gzip", "scaleoffset"])
def test_chunked_dcpl_is_chunked_with_the_pipeline(tmp_path, spec, dtype):
    pipeline = parse_filters(spec)
    dcpl = plists.chunked_dcpl((4, 5), pipeline if spec != "none" else None, dtype)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        dsid = h5py.h5d.create(f.id, b"d", h5py.h5t.py_create(np.dtype(dtype)), h5py.h5s.create_simple((8, 10)), dcpl=dcpl)
        stored = dsid.get_create_plist()
        assert stored.get_chunk() == (4, 5)
        assert pipeline_from_dcpl(stored) == pipeline


def test_relaid_dcpl_keeps_a_datasets_own_filters_with_new_chunks(tmp_path):
    """What trace's cost probe and verify copy: the dataset's own filters and fill, new chunks."""
    with h5py.File(tmp_path / "f.h5", "w") as f:
        src = f.create_dataset("s", shape=(8, 10), dtype="i4", chunks=(2, 10), shuffle=True, compression="gzip",
                               compression_opts=2, fillvalue=-7)
        dcpl = plists.relaid_dcpl(src.id, "chunked", (8, 5), None)
        dsid = h5py.h5d.create(f.id, b"d", src.id.get_type(), h5py.h5s.create_simple((8, 10)), dcpl=dcpl)
        assert dsid.get_create_plist().get_chunk() == (8, 5)
        assert pipeline_from_dcpl(dsid.get_create_plist()).spec == "shuffle+gzip:2"
        assert f["d"].fillvalue == -7
