"""The storage axes: parsing with one-line errors, labels (cells.csv columns), and the expansion rule."""

from __future__ import annotations

import pytest

from ccp.errors import ConfigError
from ccp.storage.axes import (
    StorageAxes,
    StorageSetting,
    parse_storage_axes,
    parse_sweep_s3,
    size_label,
    storage_cells,
)
from ccp.storage.layout import FileSpace
from ccp.storage.s3 import FsspecOptions

ISSUE_MATRIX = {          # the names of issue 15, as a user writes them
    "storage": ["local", "s3"],
    "fsspec": [{"cache_type": "readahead", "block_size": "4MiB"}, {"cache_type": "none"}],
    "latency": ["0ms", "20ms"],
    "bandwidth": ["100MB/s"],
    "file_space": ["default", {"strategy": "page", "page_size": "4MiB"}],
    "page_buffer": ["none", "16MiB"],
}


def test_issue_names_parse():
    axes = parse_storage_axes(ISSUE_MATRIX)
    assert axes.storage == ("local", "s3")
    assert axes.fsspec == (FsspecOptions("readahead", 4 * 2**20), FsspecOptions("none"))
    assert axes.latency == (0.0, 0.02)
    assert axes.bandwidth == (1e8,)
    assert axes.file_space == (None, FileSpace("page", 4 * 2**20))
    assert axes.page_buffer == (0, 16 * 2**20)


def test_default_matrix_is_one_default_setting_with_no_key():
    """A sweep without storage axes keeps its cell ids: one setting, adding nothing to the key."""
    axes = parse_storage_axes({"chunks": [[1, 2]]})
    for op in ("read", "write", "copy"):
        cells = storage_cells(op, axes)
        assert cells == [StorageSetting()]
        assert cells[0].key_parts == [] and cells[0].label() == ""


def test_expansion_rule_for_reads():
    """local x file_space x page_buffer(paged only) + s3 x fsspec x latency x bandwidth x the same."""
    cells = storage_cells("read", parse_storage_axes(ISSUE_MATRIX))
    local = [c for c in cells if c.storage == "local"]
    remote = [c for c in cells if c.storage == "s3"]
    # file_space default: page buffer none only; paged: none and 16MiB -> 3 file settings
    assert len(local) == 3
    assert len(remote) == 3 * 2 * 2 * 1
    assert all(c.fsspec is None and c.latency_s is None and c.bandwidth_bps is None for c in local)
    assert not any(c.page_buffer and c.file_space is None for c in cells)
    assert len({tuple(c.key_parts) for c in cells}) == len(cells)


def test_writes_are_local_and_unbuffered():
    cells = storage_cells("write", parse_storage_axes(ISSUE_MATRIX))
    assert [(c.storage, c.file_space, c.page_buffer) for c in cells] == [
        ("local", None, 0), ("local", FileSpace("page", 4 * 2**20), 0)]


def test_stored_paged_file_takes_a_page_buffer():
    """A user's file that is already paged, read as stored (file_space default), can have a page buffer."""
    axes = parse_storage_axes({"page_buffer": ["16MiB"]})
    assert [c.page_buffer for c in storage_cells("read", axes, stored_page_size=4 * 2**20)] == [16 * 2**20]
    with pytest.raises(ConfigError, match=r"^matrix\.page_buffer: a page buffer needs a paged file"):
        storage_cells("read", axes, stored_page_size=None)
    with pytest.raises(ConfigError, match=r"^matrix\.page_buffer: 16MiB is smaller than the file's page \(32MiB\)"):
        storage_cells("read", axes, stored_page_size=32 * 2**20)


def test_labels_are_the_columns():
    cells = storage_cells("read", parse_storage_axes(ISSUE_MATRIX))
    remote = next(c for c in cells if c.storage == "s3" and c.page_buffer and c.latency_s)
    assert remote.labels() == {"storage": "s3", "fsspec": "readahead/4MiB", "latency": "20ms",
                               "bandwidth": "100MB/s", "file_space": "page/4MiB", "page_buffer": "16MiB"}
    assert "emulated" in remote.label() and "emulated: 20ms per GET, 100MB/s" == remote.network.label
    local = cells[0]
    assert local.labels() == {"storage": "local", "fsspec": "", "latency": "", "bandwidth": "",
                              "file_space": "default", "page_buffer": "none"}
    assert local.network is None


@pytest.mark.parametrize(("n", "label"), [(4 * 2**20, "4MiB"), (1536, "1536B"), (10**8, "100MB"), (2**30, "1GiB"),
                                          (8192, "8KiB"), (1000, "1kB")])
def test_size_label(n, label):
    assert size_label(n) == label


@pytest.mark.parametrize(("matrix", "where"), [
    ({"storage": ["local", "S4"]}, "matrix.storage[1]"),
    ({"storage": "s3", "fsspec": [{"cache_type": "mmap"}]}, "matrix.fsspec[0].cache_type"),
    ({"storage": "s3", "fsspec": [{"block_size": "big"}]}, "matrix.fsspec[0].block_size"),
    ({"storage": "s3", "fsspec": [{"blocksize": "4MiB"}]}, "matrix.fsspec[0].blocksize"),
    ({"storage": "s3", "latency": ["20 parsecs"]}, "matrix.latency[0]"),
    ({"storage": "s3", "bandwidth": ["fast"]}, "matrix.bandwidth[0]"),
    ({"file_space": [{"strategy": "paged"}]}, "matrix.file_space[0].strategy"),
    ({"file_space": [{"page_size": 100}]}, "matrix.file_space[0].page_size"),
    ({"page_buffer": ["lots"]}, "matrix.page_buffer[0]"),
    ({"storage": []}, "matrix.storage"),
    ({"latency": ["20ms"]}, "matrix.latency"),
    ({"fsspec": [{"cache_type": "none"}]}, "matrix.fsspec"),
    ({"file_space": [{"page_size": "4MiB"}], "page_buffer": ["1MiB"]}, "matrix.page_buffer[0]"),
], ids=["storage", "cache-type", "block-size", "typo", "latency", "bandwidth", "strategy", "small-page",
        "page-buffer", "empty", "latency-without-s3", "fsspec-without-s3", "buffer-below-page"])
def test_errors_are_one_line_naming_the_key(matrix, where):
    with pytest.raises(ConfigError) as info:
        parse_storage_axes(matrix)
    msg = str(info.value)
    assert msg.startswith(where + ":") and "\n" not in msg
    assert info.value.exit_code == 2


def test_s3_setting_only_with_s3_cells():
    assert parse_sweep_s3({"s3": "local"}, StorageAxes()) is None
    axes = parse_storage_axes({"storage": ["s3"]})
    assert parse_sweep_s3({}, axes).local                      # s3 cells and no s3 key: the loopback server
    s = parse_sweep_s3({"s3": {"endpoint": "https://s3.example.org", "bucket": "b"}}, axes)
    assert (s.endpoint, s.bucket) == ("https://s3.example.org", "b")
    with pytest.raises(ConfigError, match=r"^s3\.bucket:"):
        parse_sweep_s3({"s3": {"endpoint": "https://s3.example.org"}}, axes)


def test_duplicates_collapse():
    axes = parse_storage_axes({"storage": ["s3", "s3"], "latency": ["20ms", 0.02]})
    assert axes.storage == ("s3",) and axes.latency == (0.02,)
    assert len(storage_cells("read", axes)) == 1


def test_exclude_rules_on_storage_axes():
    from ccp.storage.axes import matches_storage, parse_storage_exclude

    rule = parse_storage_exclude({"storage": "s3", "latency": "20ms", "chunks": [1, 2]}, "exclude[0]")
    assert rule == {"storage": "s3", "latency": 0.02}
    cells = storage_cells("read", parse_storage_axes(ISSUE_MATRIX))
    dropped = [c for c in cells if matches_storage(rule, c)]
    assert len(dropped) == 6 and all(c.remote and c.latency_s == 0.02 for c in dropped)
    assert all(matches_storage({}, c) for c in cells)
    assert matches_storage(parse_storage_exclude({"file_space": "default", "page_buffer": "none"}, "e"), cells[0])
    with pytest.raises(ConfigError, match=r"^exclude\[2\]\.latency:"):
        parse_storage_exclude({"latency": "soon"}, "exclude[2]")
