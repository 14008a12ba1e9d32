"""h5repack -l / -f syntax and ccp filter specs."""

import pytest

from ccp.errors import ConfigError
from ccp.repack.options import (
    COMPACT,
    CONTIGUOUS,
    Layout,
    parse_filter_option,
    parse_layout_option,
    parse_options,
)

D = "/All_Data/CrIS-SDR_All/ES_ImaginaryLW"


def spec(steps):
    return "+".join(s.spec for s in steps) or "none"


def test_layouts():
    assert parse_layout_option(f"{D}:CHUNK=1x30x9x717") == ((D,), Layout("chunked", (1, 30, 9, 717)))
    assert parse_layout_option("CHUNK=10X20") == ((None,), Layout("chunked", (10, 20)))
    assert parse_layout_option("dset:CONTI") == (("/dset",), CONTIGUOUS)
    assert parse_layout_option("a,/b/c:compa") == (("/a", "/b/c"), COMPACT)
    assert parse_layout_option("CONTI") == ((None,), CONTIGUOUS)
    assert parse_layout_option("/weird:name:CHUNK=4") == (("/weird:name",), Layout("chunked", (4,)))


@pytest.mark.parametrize("text,needle", [
    (f"{D}:CHUNK=1x0x9x717", "> 0"),
    (f"{D}:CHUNK=1xax9", "not integers"),
    (f"{D}:CHUNK=", "needs dimensions"),
    (f"{D}:CHUNK", "needs dimensions"),
    (f"{D}:CHUNKY=3", "unknown layout"),
    (f"{D}:BLOB", "unknown layout"),
    (":CONTI", "no dataset name"),
    ("", "empty"),
    (f"{D}:CHUNK=-1x3", "> 0"),
])
def test_bad_layouts_name_the_option(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_layout_option(text)
    assert needle in str(e.value)
    assert str(e.value).startswith("-l")


def test_filters_h5repack_syntax():
    assert parse_filter_option(f"{D}:GZIP=6") == ((D,), parse_filter_option("gzip:6")[1])
    assert spec(parse_filter_option("GZIP=6")[1]) == "gzip:6"
    assert parse_filter_option("GZIP=6")[0] == (None,)
    assert spec(parse_filter_option("d:SHUF")[1]) == "shuffle"
    assert spec(parse_filter_option("d:FLET")[1]) == "fletcher32"
    assert spec(parse_filter_option("d:NBIT")[1]) == "nbit"
    assert spec(parse_filter_option("d:SZIP=8,NN")[1]) == "szip:nn:8"
    assert spec(parse_filter_option("d:SZIP=16,EC")[1]) == "szip:ec:16"
    assert spec(parse_filter_option("d:SOFF=3,DS")[1]) == "scaleoffset:3"
    assert spec(parse_filter_option("d:SOFF=0,IN")[1]) == "scaleoffset:0"
    assert parse_filter_option("d:NONE") == (("/d",), ())
    assert parse_filter_option("a,b:shuf")[0] == ("/a", "/b")


def test_filters_ccp_specs():
    assert parse_filter_option(f"{D}:zstd:3") == ((D,), parse_filter_option("zstd:3")[1])
    assert parse_filter_option("zstd:3")[0] == (None,)
    assert spec(parse_filter_option("/x:shuffle+gzip:6")[1]) == "shuffle+gzip:6"
    assert parse_filter_option("/x:shuffle+gzip:6")[0] == ("/x",)
    # a dataset called gzip is still a dataset name when the rest is a filter
    assert parse_filter_option("gzip:SHUF")[0] == ("/gzip",)


@pytest.mark.parametrize("text,needle", [
    ("d:GZIP=12", "0-9"),
    ("d:GZIP", "needs a parameter"),
    ("d:GZIP=x", "0-9"),
    ("d:SZIP=7,NN", "even"),
    ("d:SZIP=8,XX", "NN or EC"),
    ("d:SOFF=3", "IN"),
    ("d:SOFF=3,XX", "IN"),
    ("d:SHUF=2", "no parameter"),
    ("d:UD=32015,0,1,3", "not supported"),
    ("d:WHATEVER", "unknown filter"),
    ("d:zstd:99", "out of range"),
    ("d:gzp:6", "unknown filter"),
    ("", "empty"),
])
def test_bad_filters_name_the_option(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_filter_option(text)
    assert needle in str(e.value), str(e.value)
    assert str(e.value).startswith("-f")


def test_filters_accumulate_in_order_and_none_resets():
    opts = parse_options([], ["SHUF", "GZIP=6"])
    assert opts.filters[None].spec == "shuffle+gzip:6"
    opts = parse_options([], ["/d:SHUF", "/d:GZIP=6", "/e:FLET", "/d:GZIP=1"])
    assert opts.filters["/d"].spec == "shuffle+gzip:1"
    assert opts.filters["/e"].spec == "fletcher32"
    opts = parse_options([], ["/d:GZIP=6", "/d:NONE"])
    assert opts.filters["/d"].is_none
    opts = parse_options([], ["/d:NONE", "/d:SHUF"])
    assert opts.filters["/d"].spec == "shuffle"
    opts = parse_options([], ["/d:zstd:3", "/d:FLET"])
    assert opts.filters["/d"].spec == "zstd:3+fletcher32"


def test_layout_options_last_wins_per_target():
    opts = parse_options([f"{D}:CHUNK=4x30x9x717", f"{D}:CHUNK=1x30x9x717", "CONTI"], [])
    assert opts.layouts[D] == Layout("chunked", (1, 30, 9, 717))
    assert opts.layouts[None] == CONTIGUOUS
    assert not opts.is_empty
    assert parse_options().is_empty
