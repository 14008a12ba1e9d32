"""`ccp advise` explains a slow pattern, recommends a cache that holds a chunk, and measures the cure."""

import h5py
import numpy as np
from click.testing import CliRunner

from ccp.advise import next_prime, shrink_chunks
from ccp.cli import main


def test_advise_recommends_a_cache_that_holds_a_chunk(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/g/d", data=np.random.default_rng(0).standard_normal((8, 10, 400)).astype(">f4"),
                         chunks=(4, 10, 400), compression="gzip", compression_opts=6, maxshape=(None, None, None))
    before = path.read_bytes()
    result = CliRunner().invoke(main, ["advise", str(path), "/g/d", "--access", "1x1x400", "--cache", "16KiB", "--budget", "2s"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "1 chunk loads per request" in out and "decompresses its chunk again" in out
    first = out.split("Cures, best first")[1].splitlines()[1]
    assert "set the chunk cache to" in first and "(1 chunk)" in first
    assert "measured speed-up" in out
    assert path.read_bytes() == before


def test_helpers():
    assert next_prime(100) == 101 and next_prime(521) == 521
    assert shrink_chunks((4, 30, 9, 717), (1, 1, 1, 717), 4, 1024 * 1024) == (1, 30, 9, 717)


def test_advise_errors_are_one_line(tmp_path):
    result = CliRunner().invoke(main, ["advise", str(tmp_path / "nope.h5"), "/d", "--access", "1x2"])
    assert result.exit_code == 2 and "file not found" in result.output
