"""Paged file-space aggregation, the page buffer and cloud-optimized copies (local files, no server)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from ccp.errors import ConfigError
from ccp.remote.layout import (
    FileSpace,
    cloud_optimized_copy,
    create_file,
    file_page_size,
    page_buffer_kwargs,
    parse_file_space,
    parse_page_buffer,
)

TABLES = Path(h5py.__file__).parents[1] / "tables" / "tests"


def test_paged_file_reads_back_equal(tmp_path):
    data = np.arange(60 * 30 * 9 * 17, dtype=">f4").reshape(60, 30, 9, 17)
    path = tmp_path / "paged.h5"
    with create_file(path, parse_file_space({"strategy": "page", "page_size": "64KiB"})) as f:
        f.create_dataset("x", data=data, chunks=(4, 30, 9, 17), compression="gzip")
        f.attrs["title"] = "paged"
    assert file_page_size(path) == 65536
    with h5py.File(path, "r", **page_buffer_kwargs(parse_page_buffer("1MiB"), 65536)) as f:
        np.testing.assert_array_equal(f["x"][()], data)
        assert f.attrs["title"] == "paged"
        fcpl = f.id.get_create_plist()
        assert fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE


def test_default_file_is_not_paged(tmp_path):
    with create_file(tmp_path / "plain.h5", None) as f:
        f["x"] = np.arange(3)
    assert file_page_size(tmp_path / "plain.h5") is None


@pytest.mark.parametrize(("value", "where"), [
    ({"strategy": "pages"}, "file_space.strategy"), ({"page_size": 100}, "file_space.page_size"),
    ({"strategy": "none", "page_size": "4MiB"}, "file_space.page_size"), ({"pagesize": 1}, "file_space.pagesize"),
    ({"persist": "yes"}, "file_space.persist"), ("paged", "file_space"),
], ids=["strategy", "too-small", "page-without-paging", "typo", "persist", "not-a-mapping"])
def test_file_space_errors(value, where):
    with pytest.raises(ConfigError) as info:
        parse_file_space(value)
    assert str(info.value).startswith(where + ":")


def test_page_buffer_needs_a_paged_file():
    with pytest.raises(ConfigError, match="^page_buffer: a page buffer needs a paged file"):
        page_buffer_kwargs(16 * 2**20, None)
    with pytest.raises(ConfigError, match="smaller than the file's page"):
        page_buffer_kwargs(4096, 65536)
    assert page_buffer_kwargs(0, None) == {}


def _same_datasets(a_path, b_path):
    """Every dataset's stored chunks (or values) and attributes equal."""
    seen = 0
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        def visit(name, obj):
            nonlocal seen
            other = b[name]
            assert sorted(obj.attrs) == sorted(other.attrs)
            if not isinstance(obj, h5py.Dataset):
                return
            seen += 1
            assert obj.shape == other.shape and obj.dtype == other.dtype
            if obj.dtype.kind == "O":                  # vlen: chunks hold heap ids, which move; compare values
                a_vals, b_vals = obj[()], other[()]
                assert all(np.array_equal(x, y) for x, y in zip(np.ravel(a_vals), np.ravel(b_vals)))
            elif obj.chunks is not None and obj.id.get_num_chunks():
                for i in range(obj.id.get_num_chunks()):
                    off = obj.id.get_chunk_info(i).chunk_offset
                    assert obj.id.read_direct_chunk(off) == other.id.read_direct_chunk(off)
            elif obj.dtype.kind not in "OV" and obj.id.get_storage_size():
                np.testing.assert_array_equal(obj[()], other[()])
        a.visititems(visit)
    return seen


@pytest.mark.parametrize("name", ["blosc_bigendian.h5", "Tables_lzo1_shuffle.h5", "zerodim-attrs-1.3.h5",
                                  "flavored_vlarrays-format1.6.h5", "indexes_2_1.h5"])
def test_cloud_optimized_copy_of_pytables_files(tmp_path, name):
    src = TABLES / name
    if not src.exists():
        pytest.skip(f"{name} is not in this PyTables")
    before = src.read_bytes()
    out = cloud_optimized_copy(src, tmp_path / "paged.h5", FileSpace(page_size=65536))
    assert src.read_bytes() == before              # the source is only read
    assert file_page_size(out) == 65536
    _same_datasets(src, out)


def test_cloud_copy_with_rechunking(tmp_path):
    data = np.arange(60 * 30 * 9 * 7, dtype=">f4").reshape(60, 30, 9, 7)
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=data, chunks=(60, 30, 9, 7), compression="gzip")
    out = cloud_optimized_copy(src, tmp_path / "out.h5", FileSpace(page_size=16384), layouts={"/x": (4, 30, 9, 7)})
    with h5py.File(out, "r") as f:
        assert f["x"].chunks == (4, 30, 9, 7)
        np.testing.assert_array_equal(f["x"][()], data)
    assert file_page_size(out) == 16384
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5", "out.h5"]     # no staging file left


def test_cloud_copy_command(tmp_path, cli):

    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(10)
    res = cli("s3", "cloud-copy", "--page-size", "8KiB", str(src), str(tmp_path / "o.h5"))
    assert res.exit_code == 0, res.output
    assert file_page_size(tmp_path / "o.h5") == 8192
    bad = cli("s3", "cloud-copy", "--page-size", "12", str(src), str(tmp_path / "p.h5"))
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "--page-size" in bad.output
    assert not (tmp_path / "p.h5").exists()


@pytest.mark.parametrize(("strategy", "page", "expect"), [
    ("PAGE", "64KiB", FileSpace("page", 65536, False, 1)), (None, 8192, FileSpace("page", 8192, False, 1)),
    ("FSM_AGGR", None, FileSpace("fsm_aggr", 4 * 2**20, False, 1)), ("none", None, FileSpace("none", 4 * 2**20, False, 1)),
    (None, None, None),
], ids=["page", "G-alone", "fsm-aggr", "lower-case", "neither"])
def test_repack_options(strategy, page, expect):
    from ccp.remote.layout import parse_repack_file_space

    assert parse_repack_file_space(strategy, page) == expect


@pytest.mark.parametrize(("strategy", "page", "where"), [("PAGES", None, "-S"), ("AGGR", "4MiB", "-G"),
                                                         ("PAGE", 100, "-G")], ids=["typo", "G-without-page", "tiny"])
def test_repack_option_errors(strategy, page, where):
    from ccp.remote.layout import parse_repack_file_space

    with pytest.raises(ConfigError) as info:
        parse_repack_file_space(strategy, page)
    assert str(info.value).startswith(where + ":")


@pytest.mark.parametrize("fs", [FileSpace("page", 16384), FileSpace("fsm_aggr"), None], ids=["page", "fsm-aggr", "none"])
def test_apply_file_space_on_a_low_level_create(tmp_path, fs):
    """What the write pass and repack will do: h5f.create with the fcpl, then read the strategy back."""
    from h5py import h5f

    from ccp.remote.layout import apply_file_space

    path = tmp_path / "w.h5"
    fcpl = apply_file_space(None, fs)
    fid = h5f.create(str(path).encode(), h5f.ACC_TRUNC, fcpl=fcpl) if fcpl is not None else \
        h5f.create(str(path).encode(), h5f.ACC_TRUNC)
    fid.close()
    assert file_page_size(path) == (16384 if fs is not None and fs.strategy == "page" else None)
    with h5py.File(path, "r") as f:
        got = f.id.get_create_plist().get_file_space_strategy()[0]
    want = {None: h5py.h5f.FSPACE_STRATEGY_FSM_AGGR, "page": h5py.h5f.FSPACE_STRATEGY_PAGE,
            "fsm_aggr": h5py.h5f.FSPACE_STRATEGY_FSM_AGGR}[fs.strategy if fs else None]
    assert got == want


def test_hdf5_behaviour_the_page_buffer_checks_rely_on(tmp_path):
    """HDF5 2.0 refuses neither mistake: a page buffer on a file that is not paged is dropped (the access list
    reports 0), one smaller than the page is rounded up to a page. ccp refuses both itself
    (ccp.remote.axes); if HDF5 starts raising, these checks become a second line of defence."""
    from ccp.remote.sweep_cell import lowlevel_fapl

    plain, paged = tmp_path / "plain.h5", tmp_path / "paged.h5"
    with create_file(plain, None) as f:
        f["x"] = np.arange(10)
    with create_file(paged, FileSpace(page_size=65536)) as f:
        f["x"] = np.arange(10)
    for path, asked, got in ((plain, 1 << 20, 0), (paged, 4096, 65536), (paged, 1 << 20, 1 << 20)):
        fid = h5py.h5f.open(str(path).encode(), h5py.h5f.ACC_RDONLY, lowlevel_fapl(None, asked))
        try:
            assert fid.get_access_plist().get_page_buffer_size()[0] == got, (path.name, asked)
        finally:
            fid.close()
