"""Repacked files: values, filters and properties equal the input's, except what was asked."""

import h5py
import numpy as np
import pytest
from repack_helpers import CRIS, assert_same_file

from ccp.errors import CcpError, ConfigError
from ccp.repack import repack, repack_dataset
from ccp.repack.options import parse_options


def run(src, dst, layouts=(), filters=(), **kw):
    o = parse_options(layouts, filters)
    return repack(src, dst, o.layouts, o.filters, **kw)


def test_plain_copy_keeps_everything(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out)
    assert not res.repacked
    assert_same_file(rich, out)
    with h5py.File(out, "r") as f:
        assert f["hard_alias"].id == f[CRIS].id  # still one object with two links
        assert f["typed"].dtype == np.dtype("<i8")


def test_cris_rechunk_fast_path(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, [f"{CRIS}:CHUNK=1x6x3x17"], [f"{CRIS}:GZIP=6"])
    d = res.dataset(CRIS)
    assert d.changed and d.method == "fast", d
    assert (d.old_layout, d.new_layout, d.new_filters) == ("4x30x9x717".replace("30x9x717", "6x3x17"), "1x6x3x17",
                                                           "gzip:6")
    assert_same_file(rich, out, {CRIS: ((1, 6, 3, 17), "gzip:6")})
    with h5py.File(out, "r") as f:
        ds = f[CRIS]
        assert ds.dtype.str == ">f4" and ds.maxshape == (None,) * 4
        assert ds.fillvalue == np.float32(-999.3)
        assert ds.id.get_num_chunks() == 12
        assert f["hard_alias"].id == ds.id


@pytest.mark.parametrize("buffer_bytes,threads", [(3 * 2448, 1), (5 * 2448, 3), (2448, 2), (10**9, 2)])
def test_fast_path_buffers_and_threads(rich, tmp_path, buffer_bytes, threads):
    # chunks that straddle the source chunks, hyperslabs of 1..many destination chunks
    out = tmp_path / "out.h5"
    res = run(rich, out, [f"{CRIS}:CHUNK=3x6x2x17"], [f"{CRIS}:SHUF", f"{CRIS}:GZIP=1"], buffer_bytes=buffer_bytes,
              threads=threads)
    d = res.dataset(CRIS)
    assert d.method == "fast"
    assert d.hyperslabs >= (2 if buffer_bytes < 10**6 else 1)
    assert_same_file(rich, out, {CRIS: ((3, 6, 2, 17), "shuffle+gzip:1")})


def test_fast_output_chunks_are_what_hdf5_writes(rich, tmp_path):
    out = tmp_path / "out.h5"
    run(rich, out, [f"{CRIS}:CHUNK=5x6x2x10"], [f"{CRIS}:SHUF", f"{CRIS}:FLET"])
    lib = tmp_path / "lib.h5"
    with h5py.File(rich, "r") as f, h5py.File(lib, "w") as g:
        src = f[CRIS]
        g.create_dataset("x", data=src[()], chunks=(5, 6, 2, 10), maxshape=(None,) * 4, shuffle=True,
                         fletcher32=True, fillvalue=src.fillvalue, dtype=src.dtype)
    with h5py.File(out, "r") as f, h5py.File(lib, "r") as g:
        a, b = f[CRIS], g["x"]
        n = 0
        for off in [(0, 0, 0, 0), (10, 0, 2, 10), (5, 0, 0, 0)]:  # inner, corner edge, middle
            assert a.id.read_direct_chunk(off) == b.id.read_direct_chunk(off), off
            n += 1
        assert a.id.get_num_chunks() == b.id.get_num_chunks()
        assert n == 3


def test_sparse_source_stays_sparse(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/All_Data/CrIS-SDR_All/ints:CHUNK=10x40"], ["/All_Data/CrIS-SDR_All/ints:GZIP=2"])
    assert res.dataset("/All_Data/CrIS-SDR_All/ints").method == "fast"
    assert_same_file(rich, out, {"/All_Data/CrIS-SDR_All/ints": ((10, 40), "gzip:2")})
    with h5py.File(out, "r") as f:
        ds = f["All_Data/CrIS-SDR_All/ints"]
        assert ds.id.get_num_chunks() == 4  # over source chunks of rows 0-20 and the one with row 45
        assert ds[30, 0] == -1


def test_same_chunks_new_filters_recode(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, [], ["/All_Data/CrIS-SDR_All/ints:FLET", "/floats:shuffle+gzip:9"])
    assert res.dataset("/floats").method == "fast"
    assert res.dataset("/All_Data/CrIS-SDR_All/ints").method == "fast"
    assert_same_file(rich, out, {"/All_Data/CrIS-SDR_All/ints": ((7, 9), "fletcher32"),
                                 "/floats": ((16, 16), "shuffle+gzip:9")})


def test_global_options_reach_every_dataset_that_can_take_them(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, [], ["SHUF", "GZIP=4"])
    changed = {d.path: d for d in res.repacked}
    assert "/strings" in changed and changed["/strings"].method == "library"
    assert "/compound" in changed and changed["/compound"].method == "fast"  # fixed-size: its bytes move as they are
    assert changed[CRIS].method == "fast"
    assert "/scalar" not in changed and "/null" not in changed
    assert "/contig" in changed and changed["/contig"].new_layout == "33x21"  # chunked to take the filters
    expected = {}
    with h5py.File(out, "r") as f:
        for path in changed:
            expected[path] = (f[path].chunks, "shuffle+gzip:4")
    assert_same_file(rich, out, expected)


def test_contiguous_and_compact_destinations(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/floats:CONTI", "/counts:COMPA"], [])
    assert res.dataset("/floats").method == "library"
    assert "contiguous" in res.dataset("/floats").reason
    assert_same_file(rich, out, {"/floats": (None, "none"), "/counts": (None, "none")})
    with h5py.File(out, "r") as f:
        assert f["floats"].id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
        assert f["counts"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT


def test_library_fallbacks_say_why(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/counts:CHUNK=8x48", "/contig:CHUNK=8x8"], ["/floats:SZIP=8,NN", "/counts:SOFF=0,IN",
                                                                     "/contig:lzf"])
    assert res.dataset("/contig").method == "library" and "lzf" in res.dataset("/contig").reason
    assert res.dataset("/floats").method == "library" and "szip" in res.dataset("/floats").reason
    assert res.dataset("/counts").method == "library" and "scaleoffset" in res.dataset("/counts").reason
    assert_same_file(rich, out, {"/floats": ((16, 16), "szip:nn:8"), "/counts": ((8, 48), "scaleoffset:0"),
                                 "/contig": ((8, 8), "lzf")})


def test_szip_source_is_read_through_the_library(rich, tmp_path):
    mid = tmp_path / "mid.h5"
    run(rich, mid, [], ["/floats:SZIP=8,NN"])
    out = tmp_path / "out.h5"
    res = run(mid, out, ["/floats:CHUNK=32x48"], ["/floats:GZIP=1"])
    d = res.dataset("/floats")
    assert d.method == "fast" and any("library" in n for n in d.notes)
    assert_same_file(mid, out, {"/floats": ((32, 48), "gzip:1")})


def test_chunk_larger_than_buffer_uses_element_blocks(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, [f"{CRIS}:CHUNK=12x6x3x17"], [f"{CRIS}:GZIP=3"], buffer_bytes=1000)
    d = res.dataset(CRIS)
    assert d.method == "library" and "larger than" in d.reason and d.hyperslabs > 10
    assert_same_file(rich, out, {CRIS: ((12, 6, 3, 17), "gzip:3")})


def test_bzip2_plugin_fast_path(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, [], ["/floats:bzip2:5"])
    assert res.dataset("/floats").method == "fast"
    assert_same_file(rich, out, {"/floats": ((16, 16), "bzip2:5")})


def test_plugin_without_python_encoder_falls_back(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/floats:CHUNK=64x8"], ["/floats:blosc:lz4:5:shuffle"])
    d = res.dataset("/floats")
    assert d.method == "library" and "blosc" in d.reason
    assert_same_file(rich, out, {"/floats": ((64, 8), "blosc:lz4:5:shuffle")})


def test_contiguous_source_to_chunked(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/contig:CHUNK=10x7"], ["/contig:FLET"], buffer_bytes=200)
    assert res.dataset("/contig").method == "fast"
    assert_same_file(rich, out, {"/contig": ((10, 7), "fletcher32")})


def test_fixed_strings_fast_and_unchanged_nothing(rich, tmp_path):
    out = tmp_path / "out.h5"
    res = run(rich, out, ["/fixed_strings:CHUNK=7", "/ordered/alpha:CHUNK=3"], [f"{CRIS}:GZIP=6"])
    assert res.dataset("/fixed_strings").method == "fast"
    assert not res.dataset(CRIS).changed  # already gzip:6 in 4x6x3x17
    assert_same_file(rich, out, {"/fixed_strings": ((7,), "gzip:4"), "/ordered/alpha": ((3,), "none")})


def test_repack_dataset_for_the_sweep(rich, tmp_path):
    out = tmp_path / "cell.h5"
    seconds = repack_dataset(rich, CRIS, out, (2, 6, 3, 17), "shuffle+gzip:3")
    assert isinstance(seconds, float) and seconds > 0
    with h5py.File(out, "r") as f, h5py.File(rich, "r") as g:
        assert list(f) == ["All_Data"] and list(f["All_Data/CrIS-SDR_All"]) == ["ES_ImaginaryLW"]
        ds = f[CRIS]
        assert ds.chunks == (2, 6, 3, 17) and ds.compression == "gzip" and ds.shuffle
        assert ds.attrs["units"] == g[CRIS].attrs["units"]
        assert np.array_equal(ds[()], g[CRIS][()]) and ds.dtype.str == ">f4"
    repack_dataset(rich, "/floats", out, None, "none")
    with h5py.File(out, "r") as f:
        assert list(f) == ["floats"] and f["floats"].chunks is None
    with pytest.raises(ConfigError):
        repack_dataset(rich, "/floats", out, None, "gzip:6")


def test_big_endian_and_unlimited_dims_survive_contiguous_round_trip(tmp_path):
    src = tmp_path / "be.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.arange(24, dtype=">i4").reshape(4, 6), fillvalue=np.int32(-5))
    mid, out = tmp_path / "mid.h5", tmp_path / "out.h5"
    run(src, mid, ["x:CHUNK=3x4"], ["x:GZIP=1"])
    run(mid, out, ["x:CONTI"], ["x:NONE"])
    with h5py.File(out, "r") as f:
        assert f["x"].dtype.str == ">i4" and f["x"].fillvalue == -5 and f["x"].chunks is None
        assert np.array_equal(f["x"][()], np.arange(24).reshape(4, 6))


@pytest.mark.parametrize("layouts,filters,needle", [
    ([f"{CRIS}:CHUNK=1x6x3"], [], "rank 3"),
    (["/nope:CHUNK=3"], [], "no dataset /nope"),
    (["/All_Data:CHUNK=3"], [], "group, not a dataset"),
    ([], ["/nope:GZIP=1"], "no dataset"),
    ([f"{CRIS}:CONTI"], [], "cannot be extended"),
    (["/floats:CONTI"], ["/floats:GZIP=1"], "need a chunked layout"),
    (["/scalar:CHUNK=1"], [], "scalar"),
    (["/contig:CHUNK=40x3"], [], "larger than the fixed maximum"),
    ([], ["/compound:SZIP=8,NN"], "HDF5 cannot create"),
    ([], ["/strings:SOFF=2,DS"], "scaleoffset:2: takes only"),
])
def test_bad_requests_are_config_errors(rich, tmp_path, layouts, filters, needle):
    out = tmp_path / "out.h5"
    with pytest.raises(ConfigError, match=needle):
        run(rich, out, layouts, filters)
    assert not out.exists()


@pytest.mark.parametrize("option", [("-l", "e:CHUNK=10"), ("-f", "e:GZIP=1")], ids=["layout", "filter"])
def test_a_dataset_behind_an_external_link_named_in_an_option_is_refused(tmp_path, option):
    """The copy keeps the external link, so a layout asked for the linked dataset would change nothing."""
    src, other, out = tmp_path / "t.h5", tmp_path / "o.h5", tmp_path / "out.h5"
    with h5py.File(other, "w") as f:
        f.create_dataset("x", data=np.arange(100), chunks=(50,))
    with h5py.File(src, "w") as f:
        f["e"] = h5py.ExternalLink("o.h5", "/x")
    layouts, filters = ([option[1]], []) if option[0] == "-l" else ([], [option[1]])
    with pytest.raises(ConfigError, match="through an external link.*repack .*o.h5 itself"):
        run(src, out, layouts, filters)
    assert not out.exists()


def test_path_errors(rich, tmp_path):
    with pytest.raises(CcpError, match="does not exist"):
        run(tmp_path / "missing.h5", tmp_path / "out.h5")
    with pytest.raises(ConfigError, match="is the input"):
        run(rich, rich)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(CcpError, match="not an HDF5 file"):
        run(tmp_path / "text.h5", tmp_path / "out.h5")
    with pytest.raises(ConfigError, match="does not exist"):
        run(rich, tmp_path / "no" / "dir" / "out.h5")


@pytest.mark.parametrize("engine", ["zlib", "libdeflate"])
def test_deflate_engines_write_valid_gzip_chunks(rich, tmp_path, engine):
    if engine == "libdeflate":
        pytest.importorskip("deflate")
    out = tmp_path / "out.h5"
    res = run(rich, out, [f"{CRIS}:CHUNK=5x6x3x7"], [f"{CRIS}:SHUF", f"{CRIS}:GZIP=5", f"{CRIS}:FLET"], deflate=engine)
    d = res.dataset(CRIS)
    assert d.method == "fast" and d.deflate == engine
    # HDF5 itself decodes (and checks the fletcher32 sums of) every chunk
    assert_same_file(rich, out, {CRIS: ((5, 6, 3, 7), "shuffle+gzip:5+fletcher32")})


def test_unknown_deflate_engine(rich, tmp_path):
    with pytest.raises(ConfigError, match="--deflate"):
        run(rich, tmp_path / "out.h5", deflate="zopfli")


@pytest.mark.parametrize("filters", [[], ["GZIP=1"]])
def test_object_and_region_references_point_at_the_copies(tmp_path, filters):
    src = tmp_path / "refs.h5"
    with h5py.File(src, "w") as f:
        a = f.create_dataset("a", data=np.arange(10))
        b = f.create_dataset("g/b", data=np.arange(5.0))
        f.create_dataset("refs", data=[a.ref, b.ref, h5py.Reference()], dtype=h5py.ref_dtype)
        f.create_dataset("rrefs", data=[a.regionref[2:5]], dtype=h5py.regionref_dtype)
        a.attrs["other"] = b.ref
        f.attrs["rootref"] = a.ref
    out = tmp_path / "out.h5"
    run(src, out, [], filters)
    with h5py.File(out, "r") as g:
        assert [g[r].name if r else None for r in g["refs"][()]] == ["/a", "/g/b", None]
        assert g[g["a"].attrs["other"]].name == "/g/b" and g[g.attrs["rootref"]].name == "/a"
        rr = g["rrefs"][0]
        assert g[rr].name == "/a" and list(g[rr][rr]) == [2, 3, 4]


def test_unfiltered_partial_edge_chunks_use_the_library(tmp_path):
    import ctypes

    from ccp.hdf5.lowlevel import library as _hdf5_library

    lib = _hdf5_library()
    if lib is None:
        pytest.skip("libhdf5 not found in the process maps")
    src = tmp_path / "edges.h5"
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4, 3))
    dcpl.set_deflate(6)
    assert lib.H5Pset_chunk_opts(ctypes.c_int64(dcpl.id), ctypes.c_uint(2)) >= 0
    data = np.arange(10 * 7, dtype="<f8").reshape(10, 7)
    with h5py.File(src, "w") as f:
        sid = h5py.h5s.create_simple((10, 7), (h5py.h5s.UNLIMITED, 7))
        ds = h5py.Dataset(h5py.h5d.create(f.id, b"x", h5py.h5t.py_create(data.dtype), sid, dcpl=dcpl))
        ds[...] = data
    out = tmp_path / "out.h5"
    res = run(src, out, ["x:CHUNK=3x2"], ["x:GZIP=1"])  # source read through the library
    d = res.dataset("/x")
    assert d.method == "library" and "unfiltered" in d.reason
    res = run(src, tmp_path / "out2.h5", [], ["x:SHUF", "x:GZIP=2"])  # same chunks, new filters
    assert res.dataset("/x").method == "library"
    from ccp.hdf5.lowlevel import unfiltered_edges as _unfiltered_edges

    for path in (out, tmp_path / "out2.h5"):
        with h5py.File(path, "r") as f:
            assert np.array_equal(f["x"][()], data)
            assert _unfiltered_edges(f["x"].id.get_create_plist())  # the property is kept


def test_userblock_and_root_creation_order_are_kept(tmp_path):
    src = tmp_path / "ub.h5"
    with h5py.File(src, "w", userblock_size=512, track_order=True) as f:
        f.create_dataset("z", data=np.arange(100, dtype="<i4"), chunks=(10,))
        f.create_dataset("a", data=np.arange(5.0))
        f.attrs["second"] = 2
        f.attrs["first"] = 1
    with open(src, "r+b") as fh:
        fh.write(b"my user block")
    out = tmp_path / "out.h5"
    run(src, out, ["z:CHUNK=25"], ["z:GZIP=3"])
    with open(out, "rb") as fh:
        assert fh.read(13) == b"my user block"
    with h5py.File(out, "r") as f:
        assert f.userblock_size == 512
        assert list(f) == ["z", "a"] and list(f.attrs) == ["second", "first"]
        assert f["z"].chunks == (25,) and np.array_equal(f["z"][()], np.arange(100))


def test_h5diff_agrees(rich, tmp_path):
    import shutil
    import subprocess

    h5diff = shutil.which("h5diff")
    if h5diff is None:
        pytest.skip("h5diff not installed (apt-get install hdf5-tools)")
    out = tmp_path / "out.h5"
    run(rich, out, [f"{CRIS}:CHUNK=1x6x3x17", "/contig:CHUNK=8x8"], [f"{CRIS}:GZIP=6", "/floats:shuffle+gzip:1"])
    for path in (CRIS, "/contig", "/floats", "/All_Data/CrIS-SDR_All/ints"):
        r = subprocess.run([h5diff, str(rich), str(out), path, path], check=False, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def test_a_copied_dataset_keeps_sharing_its_named_datatype(tmp_path):
    """H5Ocopy alone gives a dataset an anonymous copy of its named datatype: `h5dump` then names
    "/#1313", not "/b_type" (h5repack keeps it). Two equal named types each keep their own datasets."""
    from h5py import h5o

    src, out = tmp_path / "types.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        f["a_type"], f["b_type"] = np.dtype("i4"), np.dtype("i4")
        f.create_dataset("x_data", data=np.arange(5, dtype="i4"), dtype=f["b_type"])
        f.create_dataset("y_data", data=np.arange(5, dtype="i4"), dtype=f["a_type"])
    run(src, out)
    with h5py.File(out, "r") as f:
        addr = {n: h5o.get_info(f[n].id).addr for n in ("a_type", "b_type")}
        assert h5o.get_info(f["x_data"].id.get_type()).addr == addr["b_type"]
        assert h5o.get_info(f["y_data"].id.get_type()).addr == addr["a_type"]
        assert addr["a_type"] != addr["b_type"]
        assert np.array_equal(f["x_data"][()], np.arange(5))


def test_datasets_before_their_named_datatype_in_link_order_share_it(tmp_path):
    """A named datatype linked after the datasets using it (here "z_type" after "a_data", "b_data"): both copies
    share the output's "z_type", and no temporary link is left."""
    from h5py import h5o

    src, out = tmp_path / "types.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        f["z_type"] = np.dtype("<f8")
        f["z_type"].attrs["units"] = "m"
        for name in ("a_data", "b_data"):
            f.create_dataset(name, data=np.arange(4.0), dtype=f["z_type"])
        f.create_dataset("c_plain", data=np.arange(3))
    run(src, out)
    with h5py.File(out, "r") as f:
        assert sorted(f) == ["a_data", "b_data", "c_plain", "z_type"]
        addr = h5o.get_info(f["z_type"].id).addr
        assert [h5o.get_info(f[n].id.get_type()).addr for n in ("a_data", "b_data")] == [addr, addr]
        assert dict(f["z_type"].attrs) == {"units": "m"}
        assert np.array_equal(f["b_data"][()], np.arange(4.0))
