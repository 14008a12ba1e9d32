"""The library's defaults per HDF5 version: one definition, checked against the HDF5 in this process."""

import h5py
import pytest

from ccp.chunkcache import HDF5_1X, HDF5_2X
from ccp.hdf5.defaults import chunk_cache_default, hdf5_version


@pytest.mark.parametrize(("version", "nbytes", "nslots", "w0"), [
    ((1, 8, 23), 1024 * 1024, 521, 0.75),
    ((1, 10, 8), 1024 * 1024, 521, 0.75),
    ((1, 14, 6), 1024 * 1024, 521, 0.75),
    ((2, 0, 0), 8 * 1024 * 1024, 8191, 0.75),
    ((2, 1), 8 * 1024 * 1024, 8191, 0.75),
], ids=["1.8", "1.10", "1.14", "2.0", "2.1"])
def test_chunk_cache_default_per_version(version, nbytes, nslots, w0):
    cache = chunk_cache_default(version)
    assert (cache.nbytes, cache.nslots, cache.w0) == (nbytes, nslots, w0)


def test_the_default_is_what_this_hdf5_gives_a_dataset(tmp_path):
    with h5py.File(tmp_path / "d.h5", "w") as f:
        ds = f.create_dataset("d", shape=(10,), dtype="f4", chunks=(5,))
        nslots, nbytes, w0 = ds.id.get_access_plist().get_chunk_cache()
    expected = chunk_cache_default()
    assert (nslots, nbytes, w0) == (expected.nslots, expected.nbytes, expected.w0)
    assert expected == (HDF5_2X if hdf5_version() >= (2, 0, 0) else HDF5_1X)


def test_library_cache_is_what_the_library_gives_a_fresh_list():
    from h5py import h5p

    from ccp.hdf5.defaults import library_cache

    nslots, nbytes, w0 = h5p.create(h5p.DATASET_ACCESS).get_chunk_cache()
    assert library_cache() == library_cache("dataset")
    assert (library_cache().nslots, library_cache().nbytes, library_cache().w0) == (nslots, nbytes, w0)
    _mdc, fslots, fbytes, fw0 = h5p.create(h5p.FILE_ACCESS).get_cache()
    assert (library_cache("file").nslots, library_cache("file").nbytes, library_cache("file").w0) == (fslots, fbytes, fw0)
    assert library_cache() == chunk_cache_default()   # the probe agrees with the per-version table
    with pytest.raises(ValueError, match="level"):
        library_cache("group")
