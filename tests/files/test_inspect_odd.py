"""`ccp inspect` describes every object HDF5 stores, numpy equivalent or not; one odd object never costs the file."""

import json

import h5py
import pytest
from oddfiles import make_odd_file

from ccp.inspect import inspect_file


@pytest.fixture
def odd(tmp_path):
    return make_odd_file(tmp_path / "odd.h5")


def test_whole_file_inspect_describes_every_dataset(odd, cli):
    result = cli("inspect", str(odd))
    assert result.exit_code == 0, result.output
    out = result.output
    for name in ("/plain", "/quad", "/time", "/nofill", "/compound", "/vlen_str", "/vlen_u4be", "/enum", "/opaque",
                 "/scalar", "/null"):
        assert f"\n{name}\n" in "\n" + out, name
    assert "128-bit float" in out and "32-bit time" in out and "signed 128-bit integer" in out
    assert "array 3 of unsigned 16-bit integer big-endian" in out
    assert "H5D_FILL_VALUE_UNDEFINED" in out and "NOT DESCRIBED" not in out


EXPECT = {
    "/quad": {"type": "128-bit float little-endian", "dtype": None, "itemsize": 16, "chunks_allocated": 3},
    "/time": {"type": "32-bit time", "dtype": None, "storage_bytes": 0},
    "/nofill": {"fillvalue": "undefined (H5D_FILL_VALUE_UNDEFINED: unwritten parts cannot be read)", "chunks_allocated": 0},
    "/vlen_str": {"type_class": "string", "itemsize": 16},
    "/vlen_u4be": {"type": "variable-length sequence of unsigned 32-bit integer big-endian", "itemsize": 16},
    "/compound": {"type_class": "compound", "itemsize": 25, "filters": "gzip:4"},
    "/null": {"shape": None, "logical_bytes": 0},
    "/scalar": {"shape": []},
    "/soft": {"path": "/soft"},
}


@pytest.mark.parametrize("path", sorted(EXPECT), ids=[p.strip("/") for p in sorted(EXPECT)])
def test_one_dataset_described_from_hdf5s_own_type(odd, path, cli):
    result = cli("inspect", str(odd), path, "--json")
    assert result.exit_code == 0, result.output
    (info,) = json.loads(result.output)
    for key, want in EXPECT[path].items():
        assert info[key] == want, (key, info[key])


def test_itemsize_on_disk_matches_the_stored_bytes(odd):
    """Unfiltered, fully written datasets store exactly shape x itemsize: the disk size of vlen and compound types."""
    infos = {i["path"]: i for i in inspect_file(odd) if "error" not in i}
    for name in ("/vlen_str", "/vlen_u4be", "/enum", "/opaque"):
        info = infos[name]
        if info["chunks_allocated"] == info["nchunks"] and info["filters"] == "none":
            assert info["storage_bytes"] == info["logical_bytes"], name


def test_attributes_listed_by_type_without_reading_them(odd):
    (info,) = inspect_file(odd, "/plain")
    types = {a["name"]: a for a in info["attributes"]}
    assert types["int128"]["type"] == "signed 128-bit integer little-endian" and not types["int128"]["numpy"]
    assert types["u16be_array"]["type"].startswith("array 3 of unsigned 16-bit integer big-endian")


@pytest.mark.parametrize(("path", "words"), [
    ("/dangling", ["'/dangling'", "cannot be opened"]),
    ("/nope", ["no dataset '/nope'"]),
    ("/", ["'/'", "group"]),
], ids=["dangling", "missing", "group"])
def test_one_dataset_that_cannot_be_inspected_is_one_line(odd, path, words, cli):
    result = cli("inspect", str(odd), path)
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and "internal error" not in line and all(w in line for w in words), line


def test_an_object_that_cannot_be_described_costs_only_itself(odd, monkeypatch):
    import ccp.inspect as insp

    real = insp.describe_dataset

    def flaky(dset):
        if dset.name == "/quad":
            raise RuntimeError("simulated failure")
        return real(dset)

    monkeypatch.setattr(insp, "describe_dataset", flaky)
    infos = inspect_file(odd)
    bad = [i for i in infos if "error" in i]
    assert [b["path"] for b in bad] == ["/quad"] and "simulated failure" in bad[0]["error"]
    assert len(infos) > 5
    assert "NOT DESCRIBED" in insp.format_info(bad[0])
    with h5py.File(odd, "r"):
        pass
