"""`ccp advise` explains a slow pattern, recommends a cache that holds a chunk, and measures the cure.

The ranking and the cures' filters are tested on the model alone (no timing): which cure leads must not depend on
the calibration's per-request constant, no cure is listed that its own prediction does not call faster, and no
cache is larger than the dataset's chunks.
"""

import re

import h5py
import numpy as np
import pytest

from ccp.advise import (
    MIN_SPEEDUP,
    Option,
    cure_code,
    fmt_speedup,
    next_prime,
    passed_over,
    rank,
    shrink_chunks,
)


def _file(tmp_path, shape=(8, 10, 400), chunks=(4, 10, 400)):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/g/d", data=np.random.default_rng(0).standard_normal(shape).astype(">f4"),
                         chunks=chunks, compression="gzip", compression_opts=6, maxshape=(None,) * len(shape))
    return path


@pytest.mark.slow   # measures: make test-slow (CI); the --no-measure advice is tested fast
def test_advise_recommends_a_cache_that_holds_a_chunk(tmp_path, cli):
    path = _file(tmp_path)
    before = path.read_bytes()
    result = cli("advise", str(path), "/g/d", "--access", "1x1x400", "--cache", "16KiB", "--budget", "2s")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "1 chunk loads per request" in out and "decompresses its chunk again" in out
    first = out.split("Cures, best first")[1].splitlines()[1]
    assert "set the chunk cache to" in first and "(1 chunk)" in first
    # in the user's own API, with the real file and dataset names and numbers, no placeholders
    assert f'h5py.File("{path}", "r", rdcc_nbytes=65024, rdcc_nslots=101' in out
    assert "set_var_chunk_cache(size=65024, nelems=101, preemption=0.75)" in out
    assert "H5Pset_chunk_cache(dapl, 101, 65024, 0.75)" in out and 'H5Dopen2(file, "/g/d", dapl)' in out
    assert f"ccp repack -l /g/d:CHUNK=1x10x400 {path} " in out and f"h5repack -l /g/d:CHUNK=1x10x400 {path} " in out
    assert "chunks=(1, 10, 400)" in out and "chunksizes=(1, 10, 400)" in out
    assert "DSET" not in out and " IN " not in out and "H5Pset_chunk_cache(dapl, ...)" not in out
    assert "measured speed-up" in out
    assert path.read_bytes() == before


def _opt(kind, time_s, request_s, loads=2):
    return Option(kind, kind, None, loads, loads, 0, 80, time_s, request_s)


@pytest.mark.parametrize("per_request_s", [1e-6, 1e-5, 3e-5, 1e-4], ids=["1us", "10us", "30us", "100us"])
def test_rank_is_least_invasive_within_2x_as_stated(per_request_s):
    """The cache cure (80 requests) and the block cure (2 requests) load the same 2 chunks. The cache, the least
    invasive, leads while its whole prediction is within 2x of the block's; beyond (issue 22: a cache cure 11.6x
    slower than aligned reads ranked first), the block cure leads and the cache is named as passed over."""
    io = 5e-4
    cache = _opt("cache", io + 80 * per_request_s, 80 * per_request_s)
    block = _opt("block", io + 2 * per_request_s, 2 * per_request_s)
    repack = _opt("repack", io * 1.1 + 80 * per_request_s, 80 * per_request_s, loads=8)
    ranked = rank([block, repack, cache])
    within = cache.time_s <= 2 * block.time_s
    assert ranked[0] is (cache if within else block)
    assert passed_over(ranked) is (None if within else cache)
    assert ranked[0].time_s <= 2 * min(o.time_s for o in ranked)       # never a lead over 2x the best


def test_rank_within_2x_of_the_whole_prediction():
    """A cache cure 1.15x the repack's time leads even when its decompression alone is 4x (a chunk padded past the data)."""
    cache = _opt("cache", 15.2e-3, 10e-3)
    repack = _opt("repack", 13.3e-3, 12e-3)
    assert rank([repack, cache])[0] is cache


def test_rank_prefers_a_much_faster_cure_over_a_cheap_one():
    cache = _opt("cache", 1.0, 0.01)       # still decompresses too much: 99x the repack's I/O
    repack = _opt("repack", 0.02, 0.01)
    assert rank([cache, repack])[0] is repack


def test_fmt_speedup_never_says_1x_or_0x():
    assert fmt_speedup(1.3) == "1.3x" and fmt_speedup(37.2) == "37x" and fmt_speedup(12670) == "12,670x"
    assert fmt_speedup(1080.4) == "1,080x" and fmt_speedup(155.2) == "155x"     # never "1.1e+03x" (audit22 F9)


def _cures(output: str) -> list[tuple[str, float]]:
    found = re.findall(r"^\s+\d+\. (.*)\n\s+.*predicted .*\(([\d.,]+)x faster than now\)", output, re.MULTILINE)
    return [(what, float(x.replace(",", ""))) for what, x in found]


@pytest.mark.slow   # measures: make test-slow (CI)
def test_no_cure_that_is_not_faster(tmp_path, cli):
    """Issue 10: a cure its own prediction called 186x slower was listed ("0x faster"). With a cache that already
    holds the chunk, a bigger cache is no cure; what is listed must be at least MIN_SPEEDUP faster."""
    path = _file(tmp_path)
    result = cli("advise", str(path), "/g/d", "--access", "1x1x400", "--cache", "1MiB", "--no-measure")
    assert result.exit_code == 0, result.output
    cures = _cures(result.output)
    assert all(x >= MIN_SPEEDUP for _, x in cures), result.output
    assert not any("chunk cache" in what for what, _ in cures), result.output
    assert " 0x faster" not in result.output and " 1x faster" not in result.output


@pytest.mark.slow   # calibrates: make test-slow (CI)
def test_a_large_amplification_reads_without_an_exponent(tmp_path, cli):
    """audit22 F9: '1.08e+03 bytes decoded per byte delivered'. One 469 KiB chunk decoded for every 400-byte request."""
    path = _file(tmp_path, shape=(8, 30, 500), chunks=(8, 30, 500))
    result = cli("advise", str(path), "/g/d", "--access", "1x1x100", "--cache", "64KiB", "--no-measure")
    assert result.exit_code == 0, result.output
    assert "; 1,200 bytes decoded per byte delivered;" in result.output, result.output
    assert "e+0" not in result.output and "1 chunk loads per request" in result.output


@pytest.mark.slow           # 12 s of make test; make test-slow (CI) runs it
def test_cache_never_larger_than_the_dataset_needs(tmp_path, cli):
    """Issue 16: a 756 MiB cache was listed for a 44 MiB dataset. Every request here spans both chunks along the first
    dimension; the dataset has 2 chunks, so no cache cure may hold more than 2 (plus HDF5's slack)."""
    path = _file(tmp_path)
    result = cli("advise", str(path), "/g/d", "--access", "8x1x1", "--cache", "16KiB", "--memory", "1GiB",
                 "--no-measure")
    assert result.exit_code == 0, result.output
    sizes = [int(n) for n in re.findall(r"rdcc_nbytes=(\d+)", result.output)]
    assert sizes and max(sizes) <= 2 * 4 * 10 * 400 * 4 + 1024, result.output


def test_cure_code_names_the_file_and_dataset(tmp_path):
    from ccp.advise import _source
    from ccp.chunkcache import ChunkCache
    from ccp.config.sweep import AccessSpec
    from ccp.hdf5.filters import parse_filters
    from ccp.matrix.cells import Cell

    path = _file(tmp_path)
    source = _source(path, "/g/d")
    cell = Cell((1, 10, 400), parse_filters("gzip:6", "f"), ChunkCache(16384, 521, 0.75), AccessSpec("read", (1, 1, 400)))
    code = dict(cure_code(Option("repack", "", cell, 8, 8, 0, 80, 1.0), path, "/g/d", source))
    assert code["command"].startswith(f"ccp repack -l /g/d:CHUNK=1x10x400 {path} {tmp_path / 'f-rechunked.h5'}")
    assert 'compression="gzip", compression_opts=6' in code["h5py"] and 'endian="big"' in code["netCDF4"]
    # netCDF4 shuffles a compressed variable unless told not to: the file has no shuffle, so neither may the cure
    assert "zlib=True, complevel=6, shuffle=False" in code["netCDF4"]
    assert "H5Pset_chunk(dcpl, 3, chunk)" in code["C"]


def test_helpers():
    assert next_prime(100) == 101 and next_prime(521) == 521
    assert shrink_chunks((4, 30, 9, 717), (1, 1, 1, 717), 4, 1024 * 1024) == (1, 30, 9, 717)
    assert shrink_chunks((8125, 8), (1, 8), 1, 16384, shape=(256, 8)) == (256, 8)     # PyTables: a chunk past the data


def test_advise_errors_are_one_line(tmp_path, cli):
    result = cli("advise", str(tmp_path / "nope.h5"), "/d", "--access", "1x2")
    assert result.exit_code == 2 and "file not found" in result.output


def test_advise_on_a_pytables_file_with_an_undefined_fill_value(cli):
    """A real file written by PyTables: its fill value is undefined (h5py raises on .fillvalue); advise still explains
    it, and never offers a chunk larger than the 256-row dataset."""
    from pathlib import Path

    import tables

    path = Path(tables.__file__).parent / "tests" / "attr-u16.h5"
    before = path.read_bytes()
    result = cli("advise", str(path), "wfm_group0/axes/axis1/data_vector/data", "--access", "1x8",
                 "--cache", "16KiB", "--no-measure")
    assert result.exit_code == 0, result.output
    assert "Cures, best first" in result.output and "CHUNK=8125" not in result.output and "CHUNK=256x8" in result.output
    assert "set the chunk cache to 64.5 KiB (1 chunk)" in result.output
    assert path.read_bytes() == before
