"""Every registered filter as other tools spell it, round trip: the registry's h5py ``create_dataset``
keywords, netCDF4 ``createVariable`` keywords and h5repack ``-f`` text each write (or parse back to) the
same spec; where a tool has no spelling, the registry says so instead of guessing."""

import h5py
import numpy as np
import pytest
from h5py import h5p

from ccp.hdf5.filters import (
    FilterPipeline,
    FilterStep,
    missing_decoder,
    parse_filters,
    parse_h5repack_filter,
    pipeline_from_dcpl,
    provider,
    registered,
)

hdf5plugin = pytest.importorskip("hdf5plugin")

INTS = np.arange(32 * 50, dtype="<i4").reshape(32, 50) % 1000
FLOATS = np.arange(32 * 50, dtype="<f8").reshape(32, 50) / 7.0
SMOOTH = np.arange(32 * 50, dtype="<i4").reshape(32, 50) // 64   # netCDF-C's blosc is not optional: it must shrink

# (id, spec, data); every registered name at least once, with non-default arguments where it has them
SPECS = [
    ("gzip", "gzip:2", FLOATS),
    ("gzip-0", "gzip:0", FLOATS),
    ("shuffle", "shuffle", FLOATS),
    ("fletcher32", "fletcher32", INTS),
    ("szip-nn", "szip:nn:8", INTS),
    ("szip-ec", "szip:ec:16", FLOATS),
    ("nbit", "nbit", INTS),
    ("scaleoffset-int", "scaleoffset:0", INTS),
    ("scaleoffset-float", "scaleoffset:3", FLOATS),
    ("lzf", "lzf", FLOATS),
    ("blosc", "blosc:lz4:5:shuffle", FLOATS),
    ("blosc-zstd-bitshuffle", "blosc:zstd:3:bitshuffle", FLOATS),
    ("blosc-blosclz-noshuffle", "blosc:blosclz:7:noshuffle", SMOOTH),
    ("blosc2", "blosc2:lz4:7:nofilter", INTS),
    ("zstd", "zstd:5", FLOATS),
    ("zstd-negative", "zstd:-5", FLOATS),
    ("lz4", "lz4:1024", FLOATS),
    ("bitshuffle-lz4", "bitshuffle:lz4", FLOATS),
    ("bitshuffle-zstd", "bitshuffle:zstd:4", INTS),
    ("bitshuffle-none", "bitshuffle:none", INTS),
    ("bzip2", "bzip2:5", FLOATS),
    ("pipeline", "shuffle+gzip:2+fletcher32", INTS),
    ("generic", "id32004:2048", FLOATS),
]
IDS = [s[0] for s in SPECS]


def test_every_registered_filter_has_a_spelling_case():
    named = {step.name for _id, spec, _d in SPECS for step in parse_filters(spec).steps}
    assert set(registered()) <= named
    assert any(step.filter.generic for _id, spec, _d in SPECS for step in parse_filters(spec).steps)


def _stored(path, name="d") -> FilterPipeline:
    with h5py.File(path, "r") as f:
        return pipeline_from_dcpl(f[name].id.get_create_plist())


@pytest.mark.parametrize(("case", "spec", "data"), SPECS, ids=IDS)
def test_h5py_keywords_write_the_same_filters(tmp_path, case, spec, data):
    pipeline = parse_filters(spec)
    said, unsaid = pipeline.h5py_code()
    if unsaid:      # only nbit: h5py has no keyword for it (and no integer id: 5 means gzip level 5)
        assert [s.name for s in unsaid] == ["nbit"] and not said
        return
    kwargs = eval(f"dict({', '.join(said)})", {"hdf5plugin": hdf5plugin})   # the code a user is shown
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(8, 25), **kwargs)
    back = _stored(tmp_path / "f.h5")
    assert back == parse_filters(back.spec)
    expect = parse_filters(spec)
    if case == "generic":           # what HDF5 stored is recognised by the filter's own class
        expect = parse_filters("lz4:2048")
    assert back == expect


@pytest.mark.parametrize(("spec", "said", "unsaid"), [
    ("gzip:6+shuffle", ['compression="gzip", compression_opts=6'], ["shuffle"]),   # h5py shuffles first, always
    ("zstd:3+gzip:1", ["**hdf5plugin.Zstd(clevel=3)"], ["gzip:1"]),              # one compressor per keyword set
    ("shuffle+nbit+fletcher32", ["shuffle=True", "fletcher32=True"], ["nbit"]),
    ("id7:1", [], ["id7:1"]),                                                      # compression=7 would be gzip level 7
], ids=["order", "two-compressors", "nbit", "generic-low-id"])
def test_h5py_keywords_name_what_they_cannot_say(spec, said, unsaid):
    pipeline = FilterPipeline(tuple(FilterStep(*step.split(":", 1)[:1], tuple(step.split(":")[1:])) for step in spec.split("+")))
    got_said, got_unsaid = pipeline.h5py_code()
    assert list(got_said) == said and [s.spec for s in got_unsaid] == unsaid


@pytest.mark.parametrize(("case", "spec", "data"), SPECS, ids=IDS)
def test_netcdf_keywords_write_the_same_filters(tmp_path, case, spec, data):
    netCDF4 = pytest.importorskip("netCDF4")
    pipeline = parse_filters(spec)
    said, unsaid = pipeline.netcdf_code()
    if case in ("gzip-0", "shuffle"):      # netCDF-C writes no deflate at level 0, and shuffles only what it compresses
        assert [s.spec for s in unsaid] == [spec]
    if unsaid:
        # filters netCDF4's createVariable has no keyword for
        assert {s.spec for s in unsaid} <= {"nbit", "scaleoffset:0", "scaleoffset:3", "lzf", "blosc2:lz4:7:nofilter", "lz4:1024",
                                             "bitshuffle:lz4", "bitshuffle:zstd:4", "bitshuffle:none", "id32004:2048",
                                             "gzip:0", "shuffle"}, unsaid
        return
    kwargs = eval(f"dict({', '.join(said)})")   # the code a user is shown
    path = tmp_path / "f.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("y", data.shape[0])
        nc.createDimension("x", data.shape[1])
        v = nc.createVariable("d", data.dtype, ("y", "x"), chunksizes=(8, 25), **kwargs)
        v[...] = data
    back = _stored(path)
    # netCDF-C writes fletcher32 first, then shuffle, then the compressor, whatever the keyword order
    assert sorted(s.spec for s in back.steps) == sorted(s.spec for s in parse_filters(spec).steps)


@pytest.mark.parametrize(("case", "spec", "data"), SPECS, ids=IDS)
def test_h5repack_option_parses_back_to_the_spec(case, spec, data):
    pipeline = parse_filters(spec)
    texts = pipeline.h5repack_options()
    if texts is None:
        assert all(s.filter.h5repack is None or s.spec in ("gzip:0",) or s.name == "scaleoffset" for s in pipeline.steps
                   if s.filter.h5repack_option(s) is None)
        return
    steps = tuple(step for text in texts for step in parse_h5repack_filter(text, "-f"))
    assert FilterPipeline(steps) == pipeline


def test_no_filter_is_h5repack_none():
    assert parse_filters("none").h5repack_options() == ("NONE",)
    assert parse_h5repack_filter("NONE", "-f") == ()


def test_missing_decoder_names_the_filter_and_its_provider():
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((10,))
    dcpl.set_deflate(6)
    assert missing_decoder(dcpl) == ""
    dcpl.set_filter(40000, 1, ())
    dcpl.set_filter(305, 1, ())
    why = missing_decoder(dcpl)
    assert "id 40000" in why and provider(40000) in why and "HDF5_PLUGIN_PATH" in why and "\n" not in why


def test_hdf5plugin_filters_name_hdf5plugins_class():
    for cls in registered().values():
        if cls.needs_hdf5plugin:
            assert hasattr(hdf5plugin, cls.plugin_class)
            assert f"hdf5plugin ({cls.plugin_class})" in provider(cls.id)


def test_trace_and_inspect_records_are_built_from_the_stored_pipeline(tmp_path):
    from ccp.hdf5.filters import describe_filters, trace_filters

    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("d", data=INTS, chunks=(8, 25), shuffle=True, compression="gzip", compression_opts=3)
        dcpl = f["d"].id.get_create_plist()
        raw = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
        pipeline = pipeline_from_dcpl(dcpl)
        # the trace folder's format: the writer's own name and its cd_values, as stored
        assert trace_filters(pipeline) == [{"id": int(c), "name": n.decode(), "values": [int(v) for v in vals]}
                                           for c, _fl, vals, n in raw]
        details = describe_filters(pipeline)
        assert describe_filters(dcpl) == details
    assert [d["step"] for d in details] == ["shuffle", "gzip:3"]
    assert [d["optional"] for d in details] == [bool(fl & 1) for _c, fl, _v, _n in raw]
    assert [d["cd_values"] for d in details] == [[int(v) for v in vals] for _c, _fl, vals, _n in raw]
    assert all(d["available"] and d["provider"] is None for d in details)
