"""The band path of a rechunking copy (:mod:`ccp.repack.band`): target chunks of many small pieces are cut
out of one dense band with values exact, the plan picks it only then, its memory counts the band; and the
pipeline's piece finder (per axis, arithmetic) equals a scan over every source chunk."""

from __future__ import annotations

import itertools
import math

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccp.repack import chunks as chunks_mod
from ccp.repack.copy import repack
from ccp.repack.pipeline import ChunkPipeline
from ccp.repack.rechunk import band_wanted, plan_pass

CASES = [
    # shape, source chunks, target chunks, filters, unallocated source chunks (every k-th, 0: none)
    ((73, 12, 18), (1, 12, 18), (73, 1, 1), "shuffle+gzip", 0),     # daily maps to time series
    ((73, 12, 18), (1, 5, 7), (73, 2, 3), "gzip", 0),               # edge chunks on both grids
    ((50, 9, 11), (1, 9, 11), (50, 1, 1), "gzip", 3),               # a sparse source: fill value read back
    ((400, 30), (400, 1), (1, 30), "none", 0),                      # columns to rows, unfiltered
    ((73, 12, 18), (1, 5, 7), (73, 2, 3), "shuffle+gzip", 4),       # unshuffled into the band, partial chunks
    ((73, 12, 18), (1, 12, 18), (73, 1, 1), "shuffle+gzip+fletcher32", 0),   # the group's checksums: HDF5 checks them
    ((73, 12, 18), (1, 5, 7), (73, 1, 1), "fletcher32", 5),          # fletcher32 alone on tiny chunks, a sparse source
]
IDS = ["daily-maps", "edges", "sparse", "2d-unfiltered", "edges-shuffled-sparse", "fletcher32-shuffle-gzip",
       "fletcher32-alone"]


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """The process holds what a fresh ``ccp repack`` does, whatever ran before in this test worker."""
    from ccp.repack import forecast, rechunk

    monkeypatch.setattr(rechunk, "process_rss", lambda: 150 * 2**20)
    monkeypatch.setattr(forecast, "process_rss", lambda: 150 * 2**20)


def _make(path, shape, chunks, filters, every: int) -> np.ndarray:
    data = np.random.default_rng(7).standard_normal(shape).astype("f4").round(2)
    kw: dict = {"fillvalue": -9.0}
    if "gzip" in filters:
        kw.update(compression="gzip", compression_opts=4)
    kw.update(shuffle="shuffle" in filters, fletcher32="fletcher32" in filters)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("data", shape=shape, dtype="f4", chunks=chunks, **kw)
        grid = [range(0, n, c) for n, c in zip(shape, chunks)]
        for k, off in enumerate(itertools.product(*grid)):
            sl = tuple(slice(o, o + c) for o, c in zip(off, chunks))
            if every and k % every == 0:
                data[sl] = -9.0      # never written: reads as the fill value
            else:
                d[sl] = data[sl]
    return data


@pytest.mark.parametrize(("shape", "src", "dst", "filters", "every"), CASES, ids=IDS)
def test_a_transposing_rechunk_to_tiny_chunks_goes_through_bands_with_equal_values(
        tmp_path, monkeypatch, shape, src, dst, filters, every):
    data = _make(tmp_path / "in.h5", shape, src, filters, every)
    assert band_wanted(shape, src, dst, 4)
    bands: list = []
    run_bands = chunks_mod.run_bands
    monkeypatch.setattr(chunks_mod, "run_bands", lambda *a, **k: bands.append(run_bands(*a, **k)) or bands[-1])
    spec = "none" if filters == "none" else filters.replace("gzip", "gzip:4")
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": dst}, {"/data": spec}, memory_bytes=512 * 2**20)
    assert bands and bands[0] >= 1
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["data"].chunks == dst
        np.testing.assert_array_equal(f["data"][...], data)


@pytest.mark.parametrize(("shape", "src", "dst", "band"), [
    ((365, 96, 144), (1, 96, 144), (365, 1, 1), True),          # 365 pieces of 4 bytes
    ((200000, 100), (2000, 1), (500, 100), True),               # 100 pieces of 2 KB
    ((200000, 100), (2000, 1), (20000, 10), False),             # 100 pieces of 8 KB: the pipeline
    ((200000, 100), (2000, 1), (2000, 1), False),               # the same grid
], ids=["daily-maps", "transpose", "6458", "same-grid"])
def test_the_plan_takes_bands_for_many_small_pieces_and_counts_the_band(shape, src, dst, band):
    pp = plan_pass(shape, src, dst, 4, 512 * 2**20, threads=2)
    assert pp.band is band
    if band:
        assert pp.band_bytes == math.prod(min(b, d) for b, d in zip(pp.block, shape)) * 4
        assert pp.memory_bytes >= pp.band_bytes + pp.inflight_bytes + pp.count.peak_cache_bytes
        assert pp.memory_bytes <= 512 * 2**20


def test_a_band_under_a_small_budget_fits_it_or_the_pipeline_copies():
    pp = plan_pass((365, 96, 144), (1, 96, 144), (365, 1, 1), 4, 8 * 2**20, threads=2)
    assert not pp.band or pp.memory_bytes <= 8 * 2**20


class _Reader:
    def __init__(self, shape, chunks):
        self.shape, self.chunks = shape, chunks


def _scanned(shape, src, off, count):
    """The pieces of the target box ``off``/``count``: every source chunk of the grid tested for overlap."""
    out = set()
    for s in itertools.product(*(range(0, d, c) for d, c in zip(shape, src))):
        lo = [max(a, o) for a, o in zip(s, off)]
        hi = [min(a + c, o + n, d) for a, c, o, n, d in zip(s, src, off, count, shape)]
        if all(a < b for a, b in zip(lo, hi)):
            out.add((s, tuple((a - o, b - o) for a, b, o in zip(lo, hi, off)),
                     tuple((a - x, b - x) for a, b, x in zip(lo, hi, s))))
    return out


@st.composite
def _boxes(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(ndim))
    src = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    dst = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    off = tuple(draw(st.integers(0, -(-d // t) - 1)) * t for d, t in zip(shape, dst))
    return shape, src, dst, off


@settings(max_examples=200, deadline=None)
@given(_boxes())
def test_the_piece_finder_equals_a_scan_of_every_source_chunk(box):
    shape, src, dst, off = box
    count = tuple(min(t, d - o) for t, d, o in zip(dst, shape, off))
    pipe = ChunkPipeline(_Reader(shape, src), None, None, dst, None, None, None, 1)
    axes = [pipe._axis_pieces(k, o, n) for k, (o, n) in enumerate(zip(off, count))]
    found = set()
    for combo in itertools.product(*axes):
        src_off = tuple(a[0] for a in combo)
        dst_sl = tuple((a[1].start, a[1].stop) for a in combo)
        src_sl = tuple((a[2].start, a[2].stop) for a in combo)
        found.add((src_off, dst_sl, src_sl))
    assert found == _scanned(shape, src, off, count)


@pytest.mark.parametrize(("shape", "chunks", "box_start", "box_grid"), [
    ((7, 6, 5), (7, 1, 1), (0, 0, 0), (1, 6, 5)),       # daily maps to series: the whole band
    ((7, 6, 5), (3, 4, 2), (0, 0, 0), (3, 2, 3)),       # edge chunks on every axis: padded with the fill value
    ((7, 6, 5), (3, 4, 2), (3, 4, 0), (2, 1, 3)),       # a box inside the band, ending at its edges
], ids=["whole-band", "edges", "inner-box"])
def test_box_rows_are_the_target_chunks_in_c_order_padded_with_the_fill(shape, chunks, box_start, box_grid):
    from ccp.repack.band import box_rows

    arr = np.arange(math.prod(shape), dtype="u4").reshape(shape)
    fill = np.array(7777, dtype="u4")
    rows = box_rows(arr, (0, 0, 0), box_start, box_grid, chunks, fill)
    assert rows.shape == (math.prod(box_grid), math.prod(chunks) * 4)
    for k, idx in enumerate(itertools.product(*(range(n) for n in box_grid))):
        off = [s + i * c for s, i, c in zip(box_start, idx, chunks)]
        want = np.full(chunks, 7777, dtype="u4")
        part = arr[tuple(slice(o, o + c) for o, c in zip(off, chunks))]
        want[tuple(slice(0, n) for n in part.shape)] = part
        assert rows[k].tobytes() == want.tobytes()


def test_a_band_chunk_whose_encoding_decodes_wrong_is_refused(tmp_path, monkeypatch):
    """The band path decodes each encoding again as it makes it: an encoder bug is caught there."""
    from ccp.errors import CcpError
    from ccp.repack import band as band_mod

    _make(tmp_path / "in.h5", (73, 12, 18), (1, 12, 18), "shuffle+gzip", 0)
    init = band_mod.GroupCodec.__init__

    def wrong_encoder(self, *args, **kwargs):
        init(self, *args, **kwargs)
        encode, calls = self.encode, []

        def flipping(row):
            calls.append(1)
            if len(calls) == 5:      # the fifth chunk is encoded from other bytes than it holds
                flipped = bytearray(row)
                flipped[0] ^= 1
                return encode(bytes(flipped))
            return encode(row)

        self.encode = flipping

    monkeypatch.setattr(band_mod.GroupCodec, "__init__", wrong_encoder)
    with pytest.raises(CcpError, match="reads back other values than were written"):
        repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": (73, 1, 1)}, {"/data": "shuffle+gzip:4"},
               memory_bytes=512 * 2**20)
    assert not (tmp_path / "out.h5").exists()


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16], ids=lambda n: f"itemsize-{n}")
@pytest.mark.parametrize(("shape", "chunks", "box_start", "box_grid"), [
    ((7, 6, 5), (7, 1, 1), (0, 0, 0), (1, 6, 5)),       # daily maps to series: tiny chunks, the whole band
    ((7, 6, 5), (3, 4, 2), (0, 0, 0), (3, 2, 3)),       # partial edge chunks on every axis
    ((7, 6, 5), (3, 4, 2), (3, 4, 0), (2, 1, 3)),       # a box inside the band, ending at its edges
], ids=["tiny", "edges", "inner-box"])
def test_box_rows_shuffled_in_the_same_copy_are_hdf5s_shuffle_of_each_row(itemsize, shape, chunks, box_start,
                                                                           box_grid):
    """:func:`box_rows` with ``shuffle`` gives each target chunk's bytes as HDF5's shuffle filter stores them
    (the codecs' shuffle, held to HDF5's by tests/hdf5), edge chunks padded with the fill value first."""
    from ccp.hdf5.filters.codecs import shuffle
    from ccp.repack.band import box_rows

    dtype = np.dtype(f"u{itemsize}" if itemsize <= 8 else f"V{itemsize}")
    raw = np.random.default_rng(itemsize).integers(0, 256, math.prod(shape) * itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape)
    fill = np.frombuffer(bytes(range(1, itemsize + 1)), dtype=dtype).reshape(())
    plain = box_rows(arr, (0, 0, 0), box_start, box_grid, chunks, fill)
    fused = box_rows(arr, (0, 0, 0), box_start, box_grid, chunks, fill, shuffle=itemsize)
    assert fused.shape == plain.shape == (math.prod(box_grid), math.prod(chunks) * itemsize)
    for k in range(len(plain)):
        assert fused[k].tobytes() == shuffle(plain[k].tobytes(), itemsize)


@settings(max_examples=25, deadline=None)
@given(itemsize=st.sampled_from([1, 2, 4, 8, 16]), shape=st.tuples(st.integers(1, 9), st.integers(1, 7)),
       chunks=st.tuples(st.integers(1, 9), st.integers(1, 7)), level=st.sampled_from([0, 1, 9]),
       fletcher=st.booleans())
def test_group_encoding_round_trips_each_chunk_for_any_itemsize_and_edge(itemsize, shape, chunks, level, fletcher):
    """The band path's group encoding (shuffle fused into the cut, then gzip and fletcher32 chunk by chunk) gives
    each target chunk back, byte for byte, through the codecs' own decoder; every chunk is recorded with its
    CRC and none is refused."""
    from ccp.hdf5.filters import FilterStep
    from ccp.hdf5.filters.codecs import decoder
    from ccp.repack.band import GroupCodec, box_rows
    from ccp.repack.readback import WrittenChunks, crc32

    dtype = np.dtype(f"u{itemsize}" if itemsize <= 8 else f"V{itemsize}")
    raw = np.random.default_rng(sum(shape) + itemsize).integers(0, 4, math.prod(shape) * itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape)
    fill = np.zeros((), dtype=dtype)
    steps = [FilterStep("shuffle", (), cd_values=(itemsize,))]
    if level:
        steps.append(FilterStep("gzip", (str(level),), cd_values=(level,)))
    if fletcher:
        steps.append(FilterStep("fletcher32", (), cd_values=()))
    chunk_bytes = math.prod(chunks) * itemsize
    codec = GroupCodec(steps, itemsize, chunk_bytes, "auto")
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    offsets = list(itertools.product(*(range(0, g * c, c) for g, c in zip(grid, chunks))))
    fused = codec.fused_shuffle(itemsize)
    rows = box_rows(arr, (0, 0), (0, 0), grid, chunks, fill, fused)
    written = WrittenChunks()
    out = codec.encode_rows(rows, offsets, [True] * len(offsets), written, shuffled=fused > 1)
    decode, _ = decoder(steps, itemsize, chunk_bytes)
    assert decode is not None
    plain = box_rows(arr, (0, 0), (0, 0), grid, chunks, fill)
    assert [off for off, _ in out] == offsets and not written.wrong
    for k, (off, data) in enumerate(out):
        assert bytes(decode(data, 0)) == plain[k].tobytes()
        assert written.crc[off] == crc32(data)


@pytest.mark.parametrize("dtype", ["u1", "<i2", "<f8", "<c16"], ids=["itemsize-1", "itemsize-2", "itemsize-8",
                                                                   "itemsize-16"])
@pytest.mark.parametrize("filters", ["shuffle+gzip:1", "shuffle+gzip:1+fletcher32", "gzip:1"],
                         ids=["shuffle-gzip", "shuffle-gzip-fletcher32", "gzip"])
def test_a_band_copy_to_tiny_chunks_keeps_every_value_for_any_itemsize(tmp_path, monkeypatch, dtype, filters):
    """Daily maps of 1, 2, 8 and 16-byte elements to time series (tiny target chunks, partial edge chunks on the
    map axes), through the band path with the shuffle fused into the cut and fletcher32 summed per group:
    values equal, read back through HDF5 (which verifies each chunk's checksum)."""
    shape, src, dst = (37, 5, 7), (1, 5, 7), (37, 2, 3)
    rng = np.random.default_rng(37)
    data = rng.integers(0, 200, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.integers(0, 9, size=shape)
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", data=data, chunks=src, compression="gzip", shuffle=True)
    assert band_wanted(shape, src, dst, np.dtype(dtype).itemsize)
    bands: list = []
    run_bands = chunks_mod.run_bands
    monkeypatch.setattr(chunks_mod, "run_bands", lambda *a, **k: bands.append(run_bands(*a, **k)) or bands[-1])
    repack(tmp_path / "in.h5", tmp_path / "out.h5", {"/data": dst}, {"/data": filters}, memory_bytes=512 * 2**20)
    assert bands and bands[0] >= 1
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["data"].chunks == dst
        assert f["data"].fletcher32 == ("fletcher32" in filters)
        np.testing.assert_array_equal(f["data"][...], data)
