"""Python encoders produce what HDF5's filters store, byte for byte."""

import zlib

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.hdf5.filters import codecs, pipeline_from_dcpl, stored_step


@pytest.mark.parametrize("shape,chunks,dtype", [
    ((1000,), (777,), "u1"), ((50, 33), (7, 9), ">f4"), ((5000,), (3001,), "<i2"), ((13,), (13,), "u1"),
    ((1,), (1,), "u1"), ((3,), (3,), "u1"), ((7,), (3,), "S3"), ((4, 5), (3, 3), "<f8"), ((721 * 3,), (721,), "u1"),
])
@pytest.mark.parametrize("kw", [{"fletcher32": True}, {"shuffle": True, "fletcher32": True},
                                {"shuffle": True, "compression": "gzip"}, {"fletcher32": True, "compression": "gzip",
                                                                               "shuffle": True}])
def test_encoder_matches_hdf5(tmp_path, shape, chunks, dtype, kw):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal(shape) * 1000).astype(dtype)
    fill = np.array(7).astype(dtype)
    with h5py.File(tmp_path / "t.h5", "w") as f:
        ds = f.create_dataset("a", data=data, chunks=chunks, fillvalue=fill, **kw)
        flt = pipeline_from_dcpl(ds.id.get_create_plist()).steps
        enc, why = codecs.encoder(flt, data.itemsize)
        dec, _ = codecs.decoder(flt, data.itemsize)
        assert why == ""
        last = tuple((s - 1) // c * c for s, c in zip(shape, chunks))
        for off in {(0,) * len(shape), last}:
            mask, raw = ds.id.read_direct_chunk(off)
            assert mask == 0
            part = data[tuple(slice(o, o + c) for o, c in zip(off, chunks))]
            full = np.full(chunks, fill, dtype=dtype)  # HDF5 pads edge chunks with the fill value
            full[tuple(slice(0, n) for n in part.shape)] = part
            mine = enc(full.tobytes())
            assert dec(raw) == full.tobytes()
            assert dec(mine) == full.tobytes()
            if "compression" not in kw:
                assert mine == raw
            else:  # same bytes before deflate; the zlib streams match when both use one zlib build
                body = slice(0, -4) if kw.get("fletcher32") else slice(None)
                assert zlib.decompress(mine[body]) == zlib.decompress(raw[body])


def test_fletcher32_reference_values():
    # H5_checksum_fletcher32 of "abcde" worked by hand: words 0x6162, 0x6364, odd byte 0x65 << 8
    assert codecs.fletcher32(b"") == 0
    assert codecs.fletcher32(b"abcde") == 0x4FF029C7
    big = b"\xff" * (1 << 20)
    assert codecs.fletcher32_strip(codecs.fletcher32_append(big)) == big
    with pytest.raises(ValueError, match="checksum"):
        codecs.fletcher32_strip(b"\x00" * 8 + b"\x01\x02\x03\x04")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=2000), st.integers(0, 1500).map(lambda n: b"\xff" * n)), max_size=40))
def test_fletcher32_of_many_buffers_equals_each_ones(bufs):
    """The group checksum (the band path's tiny chunks) equals the one-buffer one, which equals HDF5's:
    empty, odd-length, all-0xff (the reductions' worst case) and 360-word-boundary buffers."""
    assert codecs.fletcher32_many(bufs) == [codecs.fletcher32(b) for b in bufs]


@pytest.mark.parametrize("sizes", [[0, 1, 719, 720, 721, 722], [70_000, 3, 100_000], [1440] * 50],
                         ids=["block-edges", "past-the-group-size", "many-equal"])
def test_fletcher32_of_many_buffers_at_the_edges(sizes, monkeypatch):
    monkeypatch.setattr(codecs, "FLETCHER_GROUP_WORDS", 2000)     # groups split too
    bufs = [b"\xff" * n if k % 2 else bytes(range(256)) * (n // 256) + bytes(n % 256) for k, n in enumerate(sizes)]
    assert codecs.fletcher32_many(bufs) == [codecs.fletcher32(b) for b in bufs]


def test_shuffle_roundtrip_with_trailing_bytes():
    data = bytes(range(23))
    assert codecs.unshuffle(codecs.shuffle(data, 4), 4) == data
    assert codecs.shuffle(data[:4], 4) == data[:4]  # one element: unchanged, as HDF5 does
    assert codecs.shuffle(data, 1) == data


def test_decoder_honours_filter_mask():
    flt = (stored_step(2, (4,)), stored_step(1, (6,)))
    dec, _ = codecs.decoder(flt, 4)
    data = np.arange(100, dtype="<i4").tobytes()
    assert dec(codecs.shuffle(data, 4), 0b10) == data  # deflate skipped for this chunk
    assert dec(zlib.compress(data), 0b01) == data      # shuffle skipped


def test_unsupported_filters_have_reasons():
    enc, why = codecs.encoder((stored_step(4, (4, 8)),), 4)
    assert enc is None and "szip" in why
    dec, why = codecs.decoder((stored_step(32000, ()),), 4)
    assert dec is None and "lzf" in why


def test_bzip2_matches_plugin(tmp_path):
    hdf5plugin = pytest.importorskip("hdf5plugin")
    data = np.arange(5000, dtype="<f8")
    with h5py.File(tmp_path / "b.h5", "w") as f:
        ds = f.create_dataset("a", data=data, chunks=(1000,), **hdf5plugin.BZip2(blocksize=5))
        flt = pipeline_from_dcpl(ds.id.get_create_plist()).steps
        enc, _ = codecs.encoder(flt, 8)
        dec, _ = codecs.decoder(flt, 8)
        _mask, raw = ds.id.read_direct_chunk((1000,))
        assert dec(raw) == data[1000:2000].tobytes()
        assert enc(data[1000:2000].tobytes()) == raw


def _transposed(data: bytes, elsize: int, forward: bool) -> bytes:
    """HDF5's shuffle as its definition reads: the (n, elsize) byte matrix transposed, a ragged tail kept."""
    buf = np.frombuffer(data, dtype=np.uint8)
    if elsize <= 1 or buf.size <= elsize:
        return data
    nel = buf.size // elsize
    body = buf[: nel * elsize].reshape((nel, elsize) if forward else (elsize, nel))
    return np.ascontiguousarray(body.T).tobytes() + buf[nel * elsize:].tobytes()


@given(data=st.binary(max_size=3000), elsize=st.sampled_from([1, 2, 3, 4, 8, 16, 32, 33, 100]))
@settings(max_examples=200, deadline=None)
def test_shuffle_is_the_byte_transpose_both_ways(data, elsize):
    """The plane-by-plane copy (element sizes up to 32) and the transpose past it give the definition's bytes,
    odd lengths (a ragged tail) included, and unshuffle undoes shuffle."""
    assert codecs.shuffle(data, elsize) == _transposed(data, elsize, True)
    assert codecs.unshuffle(data, elsize) == _transposed(data, elsize, False)
    assert codecs.unshuffle(codecs.shuffle(data, elsize), elsize) == data
