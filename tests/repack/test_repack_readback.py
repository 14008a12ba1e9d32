"""The read-back of the fast path's chunks (ccp.repack.readback): every chunk is decoded as it is encoded
and checked against the bytes it was made from, every stored chunk of the output is read back and checked
against what was encoded, a few are compared with the input through HDF5; a copy that reads back wrong is
refused (one line, no OUT) however it went wrong."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from ccp.errors import CcpError
from ccp.repack import chunks as chunks_mod
from ccp.repack import readback
from ccp.repack.copy import repack


def make(path, shape=(600, 40), chunks=(50, 1)):
    data = np.random.default_rng(3).standard_normal(shape).astype("f4").round(2)
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=chunks, compression="gzip", compression_opts=1)
    return data


def test_clean_copy_checks_every_chunk_and_samples_through_hdf5(tmp_path, monkeypatch):
    data = make(tmp_path / "in.h5")
    seen: dict = {}
    check = readback.check_written

    def spying(db, written, itemsize, threads, same_regions, path=None):
        calls = []
        out = check(db, written, itemsize, threads, lambda regions: calls.append(regions) or same_regions(regions), path)
        seen.update(chunks=len(written.crc), sampled=calls, result=out)
        return out

    monkeypatch.setattr("ccp.repack.compare.check_written", spying)
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (200, 10)}, {"/data": "gzip:1"})
    assert seen["result"] is None and seen["chunks"] == 12
    assert len(seen["sampled"]) == 1 and len(seen["sampled"][0]) == readback.SAMPLED_CHUNKS    # one read
    assert seen["sampled"][0] == [(slice(0, 200), slice(0, 10)), (slice(0, 200), slice(10, 20)),
                                   (slice(400, 600), slice(20, 30)), (slice(400, 600), slice(30, 40))]
    with h5py.File(tmp_path / "out.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], data)


def _corrupt_recorded(monkeypatch):
    """One chunk's encoded bytes decode to other bytes than it was made from (a bug in the encoder)."""
    record = readback.WrittenChunks.record

    def wrong(self, offset, data, encoded):
        if offset == (200, 10):
            data = data.copy()
            data[0] ^= 1
        record(self, offset, data, encoded)

    monkeypatch.setattr(readback.WrittenChunks, "record", wrong)


def _store_other_bytes(monkeypatch):
    """One chunk is stored with other bytes than were encoded (a bug in writing it, or the file changed)."""
    record = readback.WrittenChunks.record

    def wrong(self, offset, data, encoded):
        record(self, offset, data, encoded)
        if offset == (200, 10):
            self.crc[tuple(offset)] ^= 1

    monkeypatch.setattr(readback.WrittenChunks, "record", wrong)


def _drop_a_chunk(monkeypatch):
    """A chunk is never written (e.g. a skipped write): the output reads the fill value there."""
    class Skipping:
        def __init__(self, dsid):
            self._dsid = dsid

        def __getattr__(self, name):
            return getattr(self._dsid, name)

        def write_direct_chunk(self, off, data, mask=0):
            if tuple(off) != (0, 0):
                self._dsid.write_direct_chunk(off, data, mask)

    run_fast = chunks_mod.DatasetWriter.run_fast

    def patched(self):
        self.dsid = Skipping(self.dsid)
        return run_fast(self)

    monkeypatch.setattr(chunks_mod.DatasetWriter, "run_fast", patched)


def _encode_other_values(monkeypatch):
    """Every source chunk the pipeline places is shifted by one element: the recorded bytes are the wrong
    ones too, so only the comparison with the input through HDF5 sees it."""
    decoded = chunks_mod._SourceReader.decoded

    def shifted(self, off):
        return np.roll(decoded(self, off), 1)

    monkeypatch.setattr(chunks_mod._SourceReader, "decoded", shifted)


@pytest.mark.parametrize(("fault", "words"), [
    (_corrupt_recorded, "reads back other values than were written"),
    (_store_other_bytes, "stored with other bytes than were written"),
    (_drop_a_chunk, "not stored"),
    (_encode_other_values, "read through HDF5 from both files"),
], ids=["chunk-decodes-wrong", "chunk-stored-wrong", "chunk-missing", "values-shifted"])
def test_a_wrong_copy_is_refused(tmp_path, monkeypatch, fault, words):
    make(tmp_path / "in.h5")
    fault(monkeypatch)
    with pytest.raises(CcpError, match="read back differs") as err:
        repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (200, 10)}, {"/data": "gzip:1"})
    assert words in str(err.value) and "nothing written" in str(err.value)
    assert not (tmp_path / "out.h5").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.h5"]


def test_same_grid_recode_is_checked_too(tmp_path, monkeypatch):
    make(tmp_path / "in.h5", chunks=(200, 10))
    _corrupt_recorded(monkeypatch)
    with pytest.raises(CcpError, match="reads back other values"):
        repack(tmp_path / "in.h5", tmp_path / "out.h5", {}, {"/data": "gzip:6"})
