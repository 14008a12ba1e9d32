"""gzip engines of the fast path: ISA-L for level 1 when installed, libdeflate or zlib otherwise; every
engine writes streams HDF5 (and h5diff) read back to the input's values."""

import shutil
import subprocess

import h5py
import numpy as np
import pytest
from repack_helpers import CRIS, assert_same_file

from ccp.errors import ConfigError
from ccp.hdf5.filters import codecs
from ccp.repack import repack
from ccp.repack.options import parse_options


def run(src, dst, layouts=(), filters=(), **kw):
    o = parse_options(layouts, filters)
    return repack(src, dst, o.layouts, o.filters, **kw)


@pytest.fixture
def no_isal(monkeypatch):
    """The isal package as if it were not installed."""
    monkeypatch.setattr(codecs, "_isal", lambda: None)


@pytest.fixture
def walk(tmp_path):
    """Issue 6458's shape of data, small: a rounded random walk in column chunks, gzip:1."""
    path = tmp_path / "walk.h5"
    rng = np.random.default_rng(6458)
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.round(np.cumsum(rng.standard_normal((4000, 20)), axis=0) * 0.01, 3)
                         .astype("f4"), chunks=(400, 1), compression="gzip", compression_opts=1)
    return path


@pytest.mark.parametrize(("engine", "level", "used"), [
    ("isal", 1, "isal"),
    ("isal", 6, "libdeflate"),
    ("isal", 0, "zlib"),
    ("libdeflate", 1, "libdeflate"),
    ("libdeflate", 0, "zlib"),
    ("zlib", 1, "zlib"),
], ids=["isal-level1", "isal-level6-to-libdeflate", "isal-level0-to-zlib", "libdeflate", "libdeflate-level0",
        "zlib"])
def test_engine_used_at_each_level(engine, level, used):
    pytest.importorskip("isal")
    assert codecs.deflate_engine_at(engine, level) == used


def test_isal_level1_writes_zlib_streams_of_the_input_values(walk, tmp_path):
    pytest.importorskip("isal")
    out = tmp_path / "out.h5"
    res = run(walk, out, ["data:CHUNK=2000x5"], ["data:GZIP=1"], deflate="auto")
    d = res.dataset("/data")
    assert d.method == "fast" and d.deflate == "isal", d
    assert_same_file(walk, out, {"/data": ((2000, 5), "gzip:1")})
    with h5py.File(out, "r") as f:
        _, raw = f["data"].id.read_direct_chunk((0, 0))
    assert raw[:1] == b"\x78"      # a zlib header, as HDF5's deflate filter writes and reads
    if shutil.which("h5diff"):
        r = subprocess.run(["h5diff", str(walk), str(out), "/data"], capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stdout + r.stderr


def test_isal_ratio_stays_near_zlib_level1(walk):
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    import zlib

    with h5py.File(walk, "r") as f:
        raw = np.ascontiguousarray(f["data"][:2000, :10]).tobytes()
    assert len(isal_zlib.compress(raw, codecs.ISAL_LEVEL_FOR_GZIP_1)) <= 1.08 * len(zlib.compress(raw, 1))


def test_without_isal_auto_falls_back_to_libdeflate(walk, tmp_path, no_isal):
    pytest.importorskip("deflate")
    assert codecs.resolve_deflate_engine("auto") == "libdeflate"
    out = tmp_path / "out.h5"
    res = run(walk, out, ["data:CHUNK=2000x5"], ["data:GZIP=1"], deflate="auto")
    assert res.dataset("/data").deflate == "libdeflate"
    assert_same_file(walk, out, {"/data": ((2000, 5), "gzip:1")})


def test_isal_asked_but_absent_is_one_config_error(walk, tmp_path, no_isal):
    with pytest.raises(ConfigError, match="--deflate.*isal"):
        run(walk, tmp_path / "out.h5", ["data:CHUNK=2000x5"], ["data:GZIP=1"], deflate="isal")


def test_isal_engine_reports_libdeflate_at_other_levels(rich, tmp_path):
    pytest.importorskip("isal")
    out = tmp_path / "out.h5"
    res = run(rich, out, [f"{CRIS}:CHUNK=5x6x3x7"], [f"{CRIS}:SHUF", f"{CRIS}:GZIP=5"], deflate="isal")
    assert res.dataset(CRIS).deflate == "libdeflate"
    assert_same_file(rich, out, {CRIS: ((5, 6, 3, 7), "shuffle+gzip:5")})
