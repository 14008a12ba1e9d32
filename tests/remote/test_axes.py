"""The storage axes: parsing with one-line errors, labels (cells.csv columns), and the expansion rule."""

from __future__ import annotations

import pytest

from ccp.errors import ConfigError
from ccp.remote.axes import (
    StorageAxes,
    StorageSetting,
    parse_storage_axes,
    parse_sweep_s3,
    size_label,
    storage_cells,
)
from ccp.remote.layout import FileSpace
from ccp.remote.s3 import FsspecOptions

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
    from ccp.remote.axes import matches_storage, parse_storage_exclude

    rule = parse_storage_exclude({"storage": "s3", "latency": "20ms", "chunks": [1, 2]}, "exclude[0]")
    assert rule == {"storage": "s3", "latency": 0.02}
    cells = storage_cells("read", parse_storage_axes(ISSUE_MATRIX))
    dropped = [c for c in cells if matches_storage(rule, c)]
    assert len(dropped) == 6 and all(c.remote and c.latency_s == 0.02 for c in dropped)
    assert all(matches_storage({}, c) for c in cells)
    assert matches_storage(parse_storage_exclude({"file_space": "default", "page_buffer": "none"}, "e"), cells[0])
    with pytest.raises(ConfigError, match=r"^exclude\[2\]\.latency:"):
        parse_storage_exclude({"latency": "soon"}, "exclude[2]")


# ---- what `ccp check` accepts, `ccp run` runs (issue 21): every axis has a range, named when refused ----

@pytest.mark.parametrize(("matrix", "where", "allowed"), [
    ({"storage": "s3", "latency": [1e9]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "latency": [float("inf")]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "latency": [float("nan")]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "latency": [-0.001]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "latency": ["1e400ms"]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "latency": ["1001ms"]}, "matrix.latency[0]", "from 0ms to 1s"),
    ({"storage": "s3", "bandwidth": ["1B/s"]}, "matrix.bandwidth[0]", "from 100kB/s to 1TB/s"),
    ({"storage": "s3", "bandwidth": [1e-300]}, "matrix.bandwidth[0]", "from 100kB/s to 1TB/s"),
    ({"storage": "s3", "bandwidth": [float("nan")]}, "matrix.bandwidth[0]", "from 100kB/s to 1TB/s"),
    ({"storage": "s3", "bandwidth": [float("-inf")]}, "matrix.bandwidth[0]", "from 100kB/s to 1TB/s"),
    ({"storage": "s3", "bandwidth": ["2TB/s"]}, "matrix.bandwidth[0]", "from 100kB/s to 1TB/s"),
    ({"storage": "s3", "bandwidth": [True]}, "matrix.bandwidth[0]", "unlimited"),
    ({"file_space": ["page"], "page_buffer": [10**30]}, "matrix.page_buffer[0]", "up to 1TiB"),
    ({"file_space": ["page"], "page_buffer": [False]}, "matrix.page_buffer[0]", "16MiB or none"),
    ({"file_space": [{"page_size": 10**30}]}, "matrix.file_space[0].page_size", "largest page is 1GiB"),
    ({"file_space": [{"page_size": "2GiB"}]}, "matrix.file_space[0].page_size", "largest page is 1GiB"),
    ({"file_space": [{"strategy": "none", "threshold": 2**64}]}, "matrix.file_space[0].threshold", "2**63-1"),
    ({"storage": "s3", "fsspec": [{"block_size": 10**30}]}, "matrix.fsspec[0].block_size", "from 4KiB to 1TiB"),
    ({"storage": "s3", "fsspec": [{"block_size": 1}]}, "matrix.fsspec[0].block_size", "from 4KiB to 1TiB"),
], ids=["latency-1e9", "latency-inf", "latency-nan", "latency-negative", "latency-overflow", "latency-1001ms",
        "bandwidth-1B", "bandwidth-tiny", "bandwidth-nan", "bandwidth-minus-inf", "bandwidth-2TB", "bandwidth-bool",
        "page-buffer-1e30", "page-buffer-bool", "page-size-1e30", "page-size-2GiB", "threshold-2**64",
        "block-size-1e30", "block-size-1"])
def test_values_run_cannot_run_are_refused_naming_the_range(matrix, where, allowed):
    with pytest.raises(ConfigError) as info:
        parse_storage_axes(matrix)
    msg = str(info.value)
    assert msg.startswith(where + ":") and allowed in msg and "\n" not in msg


@pytest.mark.parametrize(("matrix", "axis", "value"), [
    ({"storage": "s3", "latency": ["1s"]}, "latency", (1.0,)),
    ({"storage": "s3", "latency": [0]}, "latency", (0.0,)),
    ({"storage": "s3", "bandwidth": ["100kB/s"]}, "bandwidth", (1e5,)),
    ({"storage": "s3", "bandwidth": ["1TB/s"]}, "bandwidth", (1e12,)),
    ({"storage": "s3", "bandwidth": [float("inf")]}, "bandwidth", (None,)),
    ({"storage": "s3", "bandwidth": ["unlimited"]}, "bandwidth", (None,)),
    ({"file_space": ["page"], "page_buffer": ["1TiB"]}, "page_buffer", (2**40,)),
    ({"file_space": [{"page_size": "1GiB"}]}, "file_space", (FileSpace("page", 2**30),)),
    ({"storage": "s3", "fsspec": [{"block_size": "4KiB"}]}, "fsspec", (FsspecOptions("readahead", 4096),)),
    ({"storage": "s3", "fsspec": [{"block_size": "1TiB"}]}, "fsspec", (FsspecOptions("readahead", 2**40),)),
], ids=["latency-1s", "latency-0", "bandwidth-100kB", "bandwidth-1TB", "bandwidth-inf-is-unlimited",
        "bandwidth-unlimited", "page-buffer-1TiB", "page-size-1GiB", "block-size-4KiB", "block-size-1TiB"])
def test_range_ends_are_accepted(matrix, axis, value):
    assert getattr(parse_storage_axes(matrix), axis) == value


@pytest.mark.parametrize(("s3", "where"), [
    ({"endpoint": "http://127.0.0.1:99999", "bucket": "b-1"}, "s3.endpoint"),
    ({"endpoint": "http://host\n.example", "bucket": "b-1"}, "s3.endpoint"),
    ({"endpoint": "https://s3.example.org", "bucket": "a/b"}, "s3.bucket"),
    ({"endpoint": "https://s3.example.org", "bucket": "a\tb"}, "s3.bucket"),
    ({"endpoint": "https://s3.example.org", "bucket": "b-1", "prefix": "a\0b"}, "s3.prefix"),
    ({"endpoint": "https://s3.example.org", "bucket": "b-1", "prefix": 7}, "s3.prefix"),
], ids=["port", "newline", "bucket-slash", "bucket-tab", "prefix-nul", "prefix-number"])
def test_bad_s3_settings_are_one_line(s3, where):
    with pytest.raises(ConfigError) as info:
        parse_sweep_s3({"s3": s3}, parse_storage_axes({"storage": ["s3"]}))
    assert str(info.value).startswith(where + ":") and "\n" not in str(info.value)


RANGE_ENDS = [
    # the slowest corner: every GET waits 1 s and crawls at 100kB/s, fsspec asks for each read on its own
    ("slow", True, {"storage": ["s3"], "latency": ["1s"], "bandwidth": ["100kB/s"], "fsspec": [{"cache_type": "none"}]}),
    # the other ends: 4KiB and 1TiB blocks, 1TB/s and unlimited, 512B pages with a 1TiB page buffer
    ("fast", True, {"storage": ["s3"], "bandwidth": ["1TB/s", float("inf")],
                    "fsspec": [{"cache_type": "readahead", "block_size": "4KiB"}, {"block_size": "1TiB"}],
                    "file_space": [{"strategy": "page", "page_size": 512}], "page_buffer": ["1TiB"]}),
    # HDF5's largest page (a sparse 2GiB work file) with the largest page buffer, read locally
    ("big-page", False, {"file_space": [{"strategy": "page", "page_size": "1GiB"}], "page_buffer": ["1TiB"]}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "remote", "axes"), RANGE_ENDS, ids=[r[0] for r in RANGE_ENDS])
def test_every_range_end_check_accepts_runs_a_tiny_cell(tmp_path, name, remote, axes):
    """`ccp check` accepts the ends of every range, and `ccp run` runs them: no hang, no failed cell."""
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    from tests.remote.conftest import NEEDS_S3

    if remote and NEEDS_S3.args[0]:
        pytest.skip(NEEDS_S3.kwargs["reason"])
    sweep = {"name": f"ends-{name}", "dataset": {"path": "/x", "generate": {"shape": [8, 16], "dtype": "<f4",
                                                                            "data": "normal", "seed": 0}},
             "matrix": {"chunks": [[4, 16]], "cache": ["1MiB"], "access": [{"op": "read", "block": [1, 16]}], **axes},
             "repeats": 1}
    if remote:
        sweep["s3"] = "local"
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    root = str(Path(__file__).resolve().parents[2])

    def ccp(*args):
        return subprocess.run([sys.executable, "-m", "ccp.cli", *args], capture_output=True, text=True, timeout=300,
                              check=False, env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    checked = ccp("check", str(path))
    assert checked.returncode == 0, checked.stderr
    cells = int(checked.stdout.split(";")[-1].split()[0])
    run = ccp("run", str(path), "--quick", "--no-report", "--out", str(tmp_path / "run"), "--work", str(tmp_path / "w"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{cells} cell(s) run, 0 already done, 0 failed" in run.stdout
