"""A dataset no chunk of which was ever written (an extendible 2**40 x 2**20 array, a file of 2 KiB): repack,
--plan and a new filter finish at once, create it with its new layout and move nothing, where the plan walked
2**30 chunk positions for minutes."""

import json
import subprocess
import sys

import h5py
import numpy as np
import pytest


@pytest.fixture
def empty_huge(tmp_path):
    path = tmp_path / "h.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("huge", shape=(2**40, 2**20), maxshape=(None, None), chunks=(1024, 1024), dtype="u1",
                         fillvalue=7)
        f.create_dataset("small", data=np.arange(6, dtype="i4"))
    return path


def _ccp(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("options, chunks, gzip", [
    (["-l", "/huge:CHUNK=2048x1024"], (2048, 1024), False),
    (["-f", "/huge:GZIP=1"], (1024, 1024), True),
], ids=["new-chunks", "new-filter"])
def test_a_never_written_dataset_is_created_anew_and_nothing_moves(empty_huge, tmp_path, options, chunks, gzip):
    out = tmp_path / "out.h5"
    r = _ccp("repack", "-q", *options, empty_huge, out)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        d = f["huge"]
        assert d.shape == (2**40, 2**20) and d.maxshape == (None, None) and d.chunks == chunks
        assert (d.compression == "gzip") is gzip and d.fillvalue == 7 and d.id.get_num_chunks() == 0
        assert d[2**39, 5] == 7 and list(f["small"][:]) == list(range(6))


def test_its_plan_moves_nothing(empty_huge, tmp_path):
    r = _ccp("repack", "-l", "/huge:CHUNK=2048x1024", "--plan", "--json", empty_huge, tmp_path / "out.h5")
    assert r.returncode == 0, r.stderr
    huge = next(d for d in json.loads(r.stdout)["datasets"] if d["path"] == "/huge")
    assert huge["bytes_read"] == 0 and huge["bytes_written"] == 0 and huge["method"] == "create"
    assert not (tmp_path / "out.h5").exists()
