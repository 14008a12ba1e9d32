"""``ccp repack -S/-G`` at its limits (issue 21): a page size HDF5 refuses is one line naming -G, nothing
written; a page far larger than the file is written as h5repack writes it, and the summary says how big."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ccp.cli", "repack", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "in.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(1000.0), chunks=(100,))
    return path


@pytest.mark.parametrize(("page", "words"), [
    (str(10**30), ["-G", "largest page is 1GiB"]),
    ("16GiB", ["-G", "largest page is 1GiB", "17179869184"]),
    ("100", ["-G", "smallest page is 512"]),
    ("-4MiB", ["-G"]),
    ("lots", ["-G"]),
], ids=["1e30", "16GiB", "100B", "negative", "not-a-size"])
def test_page_sizes_hdf5_refuses_are_one_line(small, tmp_path, page, words):
    out = tmp_path / "out.h5"
    done = cli("-G", page, small, out)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccp: error: -G"), done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert sorted(os.listdir(tmp_path)) == ["in.h5"]


def test_a_page_far_larger_than_the_file_is_written_and_said(small, tmp_path):
    out = tmp_path / "out.h5"
    done = cli("-G", "1GiB", small, out)
    assert done.returncode == 0, done.stderr
    size = os.path.getsize(out)
    assert size >= 2 * 2**30        # one metadata page and one raw data page, as h5repack writes it
    note = [line for line in done.stdout.splitlines() if line.startswith("note: -G 1 GiB")]
    assert note and "the copy is 2 GiB" in note[0] and "h5repack writes the same" in note[0], done.stdout
    with h5py.File(out, "r") as f:
        assert f.id.get_create_plist().get_file_space_page_size() == 2**30
        assert (f["d"][:] == np.arange(1000.0)).all()


def test_a_fitting_page_says_nothing_more(small, tmp_path):
    done = cli("-G", "4KiB", small, tmp_path / "out.h5")
    assert done.returncode == 0, done.stderr
    assert "note: -G" not in done.stdout
