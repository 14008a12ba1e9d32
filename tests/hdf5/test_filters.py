"""Every registered filter, round trip: spec -> dcpl -> a dataset HDF5 writes -> the stored filter read
back -> the same spec; its Python codec (where it has one) decodes what HDF5 wrote, byte for byte; its
h5repack ``-f`` keyword (where h5repack has one) means what h5repack itself writes."""

import shutil
import subprocess
import zlib

import h5py
import numpy as np
import pytest
from h5py import h5p

from ccp.errors import ConfigError
from ccp.hdf5.filters import (
    FILTER_HELP,
    FilterPipeline,
    codecs,
    filter_class,
    parse_filters,
    parse_h5repack_filter,
    pipeline_from_dcpl,
    registered,
)

pytest.importorskip("hdf5plugin")

INTS = np.arange(32 * 50, dtype="<i4").reshape(32, 50) % 1000
FLOATS = (np.arange(32 * 50, dtype="<f8").reshape(32, 50) / 7.0)

# (id, spec as a user writes it, the spec read back from the file, data); every registered name at least once
ROUND_TRIPS = [
    ("gzip", "gzip", "gzip:6", FLOATS),
    ("gzip-0", "gzip:0", "gzip:0", FLOATS),
    ("shuffle", "shuffle", "shuffle", FLOATS),
    ("fletcher32", "fletcher32", "fletcher32", FLOATS),
    ("szip-nn", "szip", "szip:nn:8", INTS),
    ("szip-ec", "szip:ec:16", "szip:ec:16", FLOATS),
    ("nbit", "nbit", "nbit", INTS),
    ("scaleoffset-int", "scaleoffset", "scaleoffset:0", INTS),
    ("scaleoffset-float", "scaleoffset:3", "scaleoffset:3", FLOATS),
    ("lzf", "lzf", "lzf", FLOATS),
    ("blosc", "blosc", "blosc:lz4:5:shuffle", FLOATS),
    ("blosc-zstd-bitshuffle", "blosc:zstd:3:2", "blosc:zstd:3:bitshuffle", FLOATS),
    ("blosc2", "blosc2", "blosc2:blosclz:5:shuffle", FLOATS),
    ("blosc2-lz4-nofilter", "blosc2:lz4:7:nofilter", "blosc2:lz4:7:nofilter", INTS),
    ("zstd", "zstd", "zstd:3", FLOATS),
    ("zstd-negative", "zstd:-5", "zstd:-5", FLOATS),
    ("lz4", "lz4:1024", "lz4:1024", FLOATS),
    ("bitshuffle-lz4", "bitshuffle", "bitshuffle:lz4", FLOATS),
    ("bitshuffle-zstd", "bitshuffle:zstd:4", "bitshuffle:zstd:4", INTS),
    ("bitshuffle-none", "bitshuffle:none", "bitshuffle:none", INTS),
    ("bzip2", "bzip2:5", "bzip2:5", FLOATS),
    ("pipeline", "shuffle+gzip:2+fletcher32", "shuffle+gzip:2+fletcher32", INTS),
    # the generic step by id: what HDF5 stored is recognised by the filter's own class
    ("generic-lz4", "id32004:2048", "lz4:2048", FLOATS),
    ("generic-fletcher32", "id3", "fletcher32", INTS),
]


def test_every_registered_filter_has_a_round_trip_case():
    named = {step.name for _id, spec, _back, _d in ROUND_TRIPS for step in parse_filters(spec).steps}
    assert set(registered()) <= named
    assert set(FILTER_HELP) - {"none"} == set(registered())


def _write(path, spec, data, chunks=(8, 25)):
    """A dataset made through ccp's own dcpl builder path: the pipeline applied to a fresh dcpl."""
    pipeline = parse_filters(spec)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    pipeline.apply(dcpl, data.dtype)
    with h5py.File(path, "w") as f:
        dsid = h5py.h5d.create(f.id, b"d", h5py.h5t.py_create(data.dtype), h5py.h5s.create_simple(data.shape), dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))
    return path


@pytest.mark.parametrize(("case", "spec", "back", "data"), ROUND_TRIPS, ids=[r[0] for r in ROUND_TRIPS])
def test_spec_dcpl_stored_spec(tmp_path, case, spec, back, data):
    path = _write(tmp_path / "f.h5", spec, data)
    with h5py.File(path, "r") as f:
        stored = pipeline_from_dcpl(f["d"].id.get_create_plist())
        assert stored.spec == back
        assert parse_filters(stored.spec) == stored                  # what it reads back, a sweep file can say
        assert all(s.cd_values is not None for s in stored.steps)    # the stored values travel with the steps
        lossy = any(s.name == "scaleoffset" for s in stored.steps) and data.dtype.kind == "f"
        if not lossy:
            np.testing.assert_array_equal(f["d"][...], data)


def test_generic_step_keeps_a_filter_no_spec_of_ours_says():
    # bitshuffle with a fixed block size: only the generic step keeps the block size
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((10,))
    dcpl.set_filter(32008, 1, (0, 0, 0, 256, 2))
    stored = pipeline_from_dcpl(dcpl)
    assert stored.spec == "id32008:0:0:0:256:2"
    again = h5p.create(h5p.DATASET_CREATE)
    again.set_chunk((10,))
    parse_filters(stored.spec).apply(again, np.dtype("f4"))
    assert tuple(again.get_filter(0)[2]) == (0, 0, 0, 256, 2)


CODECS = [("gzip", "gzip:4", FLOATS), ("shuffle", "shuffle", FLOATS), ("fletcher32", "fletcher32", INTS),
          ("bzip2", "bzip2:7", FLOATS), ("zstd", "zstd:5", FLOATS),
          ("shuffle+gzip+fletcher32", "shuffle+gzip:1+fletcher32", INTS)]


@pytest.mark.parametrize(("case", "spec", "data"), CODECS, ids=[c[0] for c in CODECS])
def test_python_codec_decodes_what_hdf5_wrote(tmp_path, case, spec, data):
    if "zstd" in spec and codecs.zstd_module() is None:
        pytest.skip("no zstandard package: zstd has no Python codec here")
    chunks = (8, 25)
    path = _write(tmp_path / "c.h5", spec, data, chunks)
    with h5py.File(path, "r") as f:
        ds = f["d"]
        steps = pipeline_from_dcpl(ds.id.get_create_plist()).steps
        assert all(s.filter.codec_missing(s) == "" for s in steps)
        dec, why = codecs.decoder(steps, data.itemsize, int(np.prod(chunks)) * data.itemsize)
        enc, why_enc = codecs.encoder(steps, data.itemsize)
        assert why == why_enc == ""
        for off in [(0, 0), (8, 25), (24, 25)]:
            mask, raw = ds.id.read_direct_chunk(off)
            assert mask == 0
            chunk = np.ascontiguousarray(data[off[0]:off[0] + 8, off[1]:off[1] + 25]).tobytes()
            assert dec(raw) == chunk                                  # byte-exact decode of HDF5's chunk
            mine = enc(chunk)
            assert dec(mine) == chunk
            if not any(s.name in ("gzip", "zstd") for s in steps):    # no library version in the stream
                assert mine == raw
            elif [s.name for s in steps] == ["gzip"]:
                assert zlib.decompress(mine) == zlib.decompress(raw)


def test_filters_without_a_python_codec_say_so():
    for name in ("szip", "nbit", "scaleoffset", "lzf", "blosc", "blosc2", "lz4", "bitshuffle"):
        step = parse_filters(name).steps[0]
        assert step.filter.codec_missing(step) == f"{name} has no Python encoder"
        enc, why = codecs.encoder((step,), 4)
        assert enc is None and name in why


# h5repack's -f keywords: h5repack (Debian's 1.10) writes the file; ccp reads back what it means
H5REPACK = [("GZIP=6", INTS, "gzip:6"), ("GZIP=0", INTS, "gzip:0"), ("SHUF", INTS, "shuffle"), ("FLET", INTS, "fletcher32"),
            ("SZIP=8,NN", INTS, "szip:nn:8"), ("SZIP=16,EC", FLOATS, "szip:ec:16"), ("NBIT", INTS, "nbit"),
            ("SOFF=2,IN", INTS, "scaleoffset:2"), ("SOFF=3,DS", FLOATS, "scaleoffset:3")]


@pytest.mark.parametrize(("option", "data", "spec"), H5REPACK, ids=[h[0] for h in H5REPACK])
def test_h5repack_keyword_means_what_h5repack_writes(tmp_path, option, data, spec):
    steps = parse_h5repack_filter(option, "-f")
    assert FilterPipeline(steps).spec == spec
    assert filter_class(steps[0].name).h5repack == option.split("=")[0]
    if shutil.which("h5repack") is None:
        pytest.skip("h5repack is not installed")
    src, dst = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w", libver="earliest") as f:
        f.create_dataset("d", data=data, chunks=(8, 25))
    done = subprocess.run(["h5repack", "-f", f"d:{option}", str(src), str(dst)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this h5repack cannot write {option}: {done.stderr.strip()[:200]}")
    with h5py.File(dst, "r") as f:
        assert pipeline_from_dcpl(f["d"].id.get_create_plist()).spec == spec


@pytest.mark.parametrize(("option", "words"), [
    ("SHUF=1", ["SHUF takes no parameter"]), ("GZIP", ["GZIP needs a parameter", "GZIP=6"]),
    ("GZIP=10", ["0-9"]), ("SZIP=7,NN", ["even"]), ("SOFF=2", ["IN", "DS"]), ("UD=307,1,9", ["not supported"]),
], ids=["shuf-arg", "gzip-no-arg", "gzip-range", "szip-odd", "soff-no-type", "ud"])
def test_bad_h5repack_filter_is_one_line(option, words):
    with pytest.raises(ConfigError) as err:
        parse_h5repack_filter(option, "-f")
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_not_h5repack_syntax_is_left_to_the_spec_parser():
    assert parse_h5repack_filter("zstd:3", "-f") is None
    assert parse_h5repack_filter("NONE", "-f") == ()


@pytest.mark.parametrize(("spec", "dtype", "numeric", "words"), [
    ("scaleoffset", "S4", True, "scaleoffset needs an integer or float dataset, not |S4"),
    ("scaleoffset", "V8", False, "not |V8 records"),
    ("scaleoffset:2", "<f8", True, ""),
    ("shuffle+gzip:6", "V8", False, ""),
], ids=["so-strings", "so-records", "so-floats", "others-take-anything"])
def test_a_filter_refuses_types_hdf5_would_refuse(spec, dtype, numeric, words):
    from ccp.hdf5.filters import check_for_type

    if not words:
        check_for_type(parse_filters(spec), np.dtype(dtype), numeric)
        return
    with pytest.raises(ConfigError) as err:
        check_for_type(parse_filters(spec), np.dtype(dtype), numeric)
    assert words in str(err.value)
