"""Filters written by other software: decoded, kept on untouched datasets, re-encodable; a missing one named."""

import subprocess
import sys

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.repack.compare import differences

hdf5plugin = pytest.importorskip("hdf5plugin")

FILTERS = {
    "blosc-lz4": (32001, lambda: hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
    "blosc-zstd": (32001, lambda: hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE)),
    "blosc2": (32026, lambda: hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)),
    "zstd": (32015, lambda: hdf5plugin.Zstd(clevel=4)),
    "lz4": (32004, lambda: hdf5plugin.LZ4()),
    "bitshuffle": (32008, lambda: hdf5plugin.Bitshuffle(cname="lz4")),
    "bzip2": (307, lambda: hdf5plugin.BZip2(blocksize=5)),
    "zfp-reversible": (32013, lambda: hdf5plugin.Zfp(reversible=True)),   # its stored values hold the chunk shape
    "lzf": (32000, lambda: {"compression": "lzf"}),
    "szip": (4, lambda: {"compression": "szip", "compression_opts": ("nn", 8)}),
}


def make(path, kind):
    fid, make_filter = FILTERS[kind]
    kw = make_filter()
    kw = kw if isinstance(kw, dict) else dict(kw)
    with h5py.File(path, "w") as f:
        data = (np.arange(40 * 30, dtype="<f4").reshape(40, 30) % 17) * 0.5
        f.create_dataset("x", data=data, chunks=(16, 30), **kw)
        f.create_dataset("i", data=np.arange(500, dtype=">i4"), chunks=(64,), **kw)
        f.create_dataset("plain", data=np.arange(5))
    return fid


def filter_ids(path, name):
    with h5py.File(path, "r") as f:
        dcpl = f[name].id.get_create_plist()
        return [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())], dcpl


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


@pytest.mark.parametrize("kind", FILTERS)
def test_other_writers_filters(tmp_path, kind):
    src = tmp_path / "in.h5"
    fid = make(src, kind)
    # untouched: the filter and its parameters stay as the writer set them
    out = tmp_path / "plain.h5"
    assert cli(src, out).exit_code == 0
    assert differences(src, out) == []
    ids, dcpl = filter_ids(out, "x")
    assert ids == [fid]
    assert filter_ids(src, "x")[1].get_filter(0)[2] == dcpl.get_filter(0)[2]  # same cd_values
    # re-encoded as asked
    out = tmp_path / "gzip.h5"
    r = cli("-f", "GZIP=6", src, out)
    assert r.exit_code == 0, r.output
    assert differences(src, out, layouts_may_differ=True) == []
    assert filter_ids(out, "x")[0] == [1]
    # rechunked: the writer's filter is kept
    out = tmp_path / "chunk.h5"
    r = cli("-l", "/x:CHUNK=8x10", src, out)
    assert r.exit_code == 0, r.output
    assert differences(src, out, layouts_may_differ=True) == []
    assert filter_ids(out, "x")[0] == [fid]


SCRIPT = """
import sys
sys.modules["hdf5plugin"] = None  # as if it were not installed
sys.argv = ["ccp", "repack", *sys.argv[1:]]
from ccp.cli import main
main()
"""


def test_unavailable_filter_is_named_with_its_plugin(tmp_path):
    src = tmp_path / "in.h5"
    make(src, "blosc2")
    env_cmd = [sys.executable, "-c", SCRIPT]
    out = tmp_path / "out.h5"
    r = subprocess.run([*env_cmd, "-f", "/x:GZIP=6", str(src), str(out)], check=False, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stdout + r.stderr
    assert "/x" in lines[0] and "32026" in lines[0] and "hdf5plugin" in lines[0]
    assert not out.exists()
    # untouched, or under an all-dataset option: copied as it is, with a note naming the plugin
    r = subprocess.run([*env_cmd, "-f", "GZIP=6", str(src), str(out)], check=False, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "hdf5plugin (Blosc2)" in r.stdout and "internal error" not in r.stderr
    assert filter_ids(out, "x")[0] == [32026]
    assert differences(src, out, layouts_may_differ=True) == []


PATH_SCRIPT = """
import sys
sys.argv = ["ccp", "repack", *sys.argv[1:]]
from ccp.cli import main
main()
"""


@pytest.mark.parametrize("kind", ["blosc-lz4", "blosc2", "bitshuffle", "zstd", "zfp-reversible"])
def test_rechunk_with_hdf5plugin_folder_on_the_plugin_path(tmp_path, kind):
    """HDF5_PLUGIN_PATH naming hdf5plugin's folder (as hdf5plugin tells other tools to set it): HDF5 then
    loaded Blosc/Bitshuffle from there, their set_local failed and the rechunk was silently skipped (F2)."""
    src = tmp_path / "in.h5"
    fid = make(src, kind)
    out = tmp_path / "out.h5"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path), "HDF5_PLUGIN_PATH": hdf5plugin.PLUGIN_PATH}
    r = subprocess.run([sys.executable, "-c", PATH_SCRIPT, "-l", "/x:CHUNK=8x10", "-l", "/i:CHUNK=100", str(src), str(out)],
                       check=False, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kept as it is" not in r.stdout + r.stderr
    assert differences(src, out, layouts_may_differ=True) == []
    with h5py.File(out, "r") as f:
        assert f["x"].chunks == (8, 10) and f["i"].chunks == (100,)
    assert filter_ids(out, "x")[0] == [fid]


LOSSY = {
    "zfp-rate": (lambda: hdf5plugin.Zfp(rate=16), "ZFP"),
    "zfp-precision": (lambda: hdf5plugin.Zfp(precision=20), "ZFP"),
    "zfp-accuracy": (lambda: hdf5plugin.Zfp(accuracy=1e-3), "ZFP"),
    "sz": (lambda: hdf5plugin.SZ(absolute=1e-3), "SZ"),
    "sz3": (lambda: hdf5plugin.SZ3(absolute=1e-3), "SZ3"),
    "sperr": (lambda: hdf5plugin.Sperr(), "SPERR"),
}


@pytest.mark.parametrize("kind", LOSSY)
def test_rechunk_of_lossy_plugin_data_is_refused_in_one_line(tmp_path, kind):
    """A lossy filter re-encodes for the new chunk and the values move: refused up front (F3), not by the
    read-back; under an all-dataset -l kept with a note; new filters (-f) with new chunks still work."""
    make_filter, name = LOSSY[kind]
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.linspace(0, 1, 40 * 30, dtype="f4").reshape(40, 30), chunks=(10, 30), **make_filter())
        f.create_dataset("plain", data=np.arange(5.0), chunks=(5,))
    out = tmp_path / "out.h5"
    r = cli("-l", "/x:CHUNK=40x30", src, out)
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert f"/x is compressed by {name}" in lines[0] and "lossy" in lines[0] and not out.exists()
    r = cli("-l", "CHUNK=20x30", src, out)
    assert r.exit_code == 0 and "/x: kept as it is" in r.output, r.output
    assert differences(src, out) == []
    r = cli("-l", "/x:CHUNK=40x30", "-f", "/x:GZIP=1", src, tmp_path / "gzip.h5")
    assert r.exit_code == 0, r.output
    assert differences(src, tmp_path / "gzip.h5", layouts_may_differ=True) == []


CHUNK_SHAPED = {   # lossless filters whose stored values hold the chunk shape, on the integers they take
    "htj2k": (lambda: hdf5plugin.Htj2k(), "u2"),
    "fcidecomp": (lambda: hdf5plugin.FciDecomp(), "u2"),
    "zfp-reversible": (lambda: hdf5plugin.Zfp(reversible=True), "i4"),
}


@pytest.mark.parametrize("kind", CHUNK_SHAPED)
def test_rechunk_of_chunk_shaped_lossless_plugin(tmp_path, kind):
    make_filter, dtype = CHUNK_SHAPED[kind]
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        # breaker4's F3 geometry: 10x30 chunks -> 40x30 (ZFP decoded the copy with the old chunk's header)
        f.create_dataset("x", data=(np.arange(40 * 30) % 1000).astype(dtype).reshape(40, 30), chunks=(10, 30),
                         **make_filter())
    r = cli("-l", "/x:CHUNK=40x30", src, out)
    assert r.exit_code == 0, r.output
    assert differences(src, out, layouts_may_differ=True) == []
    with h5py.File(out, "r") as f:
        assert f["x"].chunks == (40, 30)
