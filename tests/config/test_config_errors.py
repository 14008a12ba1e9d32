"""Every bad input is one clear line naming the key or value, exit status 2, no traceback, no results."""

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

GOOD = """
name: t
dataset:
  generate: {shape: [8, 6], dtype: "<f4"}
matrix:
  chunks: [[4, 6]]
  filters: ["gzip:1"]
  cache: ["1MiB"]
  access: [{op: read, block: [1, 6]}]
repeats: 1
"""

CASES = [
    # (id, text replacement (old, new), expected substrings in the message)
    ("unknown-top-key", ("repeats: 1", "repeat: 1"), ["repeat", "did you mean 'repeats'"]),
    ("unknown-matrix-key", ("  cache:", "  caches:"), ["matrix.caches", "did you mean 'cache'"]),
    ("unknown-client", ("  cache:", "  client: [fortran]\n  cache:"), ["matrix.client[0]", "native, h5py-lowlevel, h5py"]),
    ("client-number", ("  cache:", "  client: [3]\n  cache:"), ["matrix.client[0]"]),
    ("unknown-access-key", ("block: [1, 6]}", "block: [1, 6], ordr: [0, 1]}"), ["ordr", "did you mean 'order'"]),
    ("rank-mismatch-block", ("block: [1, 6]", "block: [1, 6, 1]"), ["matrix.access[0].block", "rank 3"]),
    ("rank-mismatch-chunks", ("[[4, 6]]", "[[4, 6, 2]]"), ["matrix.chunks[0]", "rank 3"]),
    ("chunk-dim-zero", ("[[4, 6]]", "[[0, 6]]"), ["matrix.chunks[0][0]", ">= 1"]),
    ("chunk-beyond-fixed-dim", ("[[4, 6]]", "[[4, 7]]"), ["matrix.chunks[0][1]", "exceeds the fixed dimension"]),
    ("bad-size", ('["1MiB"]', '["1MeB"]'), ["matrix.cache[0]", "1MeB"]),
    ("negative-w0", ('["1MiB"]', '[{nbytes: 1MiB, w0: 1.5}]'), ["matrix.cache[0].w0"]),
    ("unknown-filter", ('"gzip:1"', '"gzp:1"'), ["unknown filter 'gzp'", "did you mean 'gzip'"]),
    ("bad-filter-arg", ('"gzip:1"', '"gzip:12"'), ["gzip argument 12", "0-9"]),
    ("bad-dtype", ('"<f4"', '"float99"'), ["dataset.generate.dtype", "float99"]),
    ("bad-op", ("op: read", "op: reed"), ["matrix.access[0].op", "did you mean 'read'"]),
    ("bad-order", ("block: [1, 6]}", "block: [1, 6], order: [0, 0]}"), ["matrix.access[0].order"]),
    ("filter-on-contiguous", ("[[4, 6]]", "[contiguous]"), ["contiguous", "exclude"]),
    ("block-too-big", ("block: [1, 6]", "block: [1, 7]"), ["matrix.access[0].block[1]", "exceeds"]),
    ("missing-shape", ("{shape: [8, 6], ", "{"), ["dataset.generate.shape", "missing"]),
    ("yaml-syntax", ("name: t", "name: [t"), ["YAML syntax error", "sweep.yaml:"]),
    ("bad-data-kind", ('dtype: "<f4"}', 'dtype: "<f4", data: gaussian}'), ["dataset.generate.data", "gaussian"]),
    ("duplicate-key", ("repeats: 1", "repeats: 1\nrepeats: 2"), ["duplicate key 'repeats'", "sweep.yaml:"]),
    ("copy-random", ("op: read, block: [1, 6]}", "op: copy, block: [1, 6], random: 3}"), ["matrix.access[0].random", "copy"]),
    ("bad-generate-chunks", ('dtype: "<f4"}', 'dtype: "<f4", chunks: [9, 6]}'), ["dataset.generate.chunks[0]"]),
    ("repeats-zero", ("repeats: 1", "repeats: 0"), ["repeats", ">= 1"]),
    ("source-without-file", ("[[4, 6]]", "[source]"), ["matrix.chunks[0]", "source"]),
]


@pytest.mark.parametrize("old,new,expected", [c[1] + (c[2],) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_sweep_is_one_line_exit_2(write_sweep, tmp_path, old, new, expected, cli):
    assert old in GOOD
    sweep = write_sweep(GOOD.replace(old, new, 1))
    out = tmp_path / "run"
    result = cli("run", str(sweep), "--out", str(out), "--work", str(tmp_path / "work"))
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("ccp: error:")
    assert "Traceback" not in result.output
    for piece in expected:
        assert piece in lines[0]
    assert not out.exists(), "nothing may be written that looks like a result"


def test_good_sweep_is_valid(write_sweep, cli):
    result = cli("check", str(write_sweep(GOOD)))
    assert result.exit_code == 0, result.output
    assert "1 cells" in result.output


def user_file_sweep(path, dset="/g/x"):
    return f"""
name: u
dataset:
  path: {dset}
  file: {path}
matrix:
  access: [{{op: read, block: [2, 3]}}]
repeats: 1
"""


def test_missing_file(write_sweep, tmp_path, cli):
    result = cli("check", str(write_sweep(user_file_sweep("nope.h5"))))
    assert result.exit_code == 2
    assert "dataset.file" in result.output and "not found" in result.output


def test_missing_dataset_lists_the_ones_there(write_sweep, tmp_path, cli):
    with h5py.File(tmp_path / "u.h5", "w") as f:
        f.create_dataset("/g/y", data=np.zeros((4, 6)))
    result = cli("check", str(write_sweep(user_file_sweep("u.h5"))))
    assert result.exit_code == 2
    assert "no dataset '/g/x'" in result.output and "/g/y" in result.output


def test_relative_file_resolves_against_the_sweep_folder(write_sweep, tmp_path, monkeypatch, cli):
    with h5py.File(tmp_path / "u.h5", "w") as f:
        f.create_dataset("/g/x", data=np.zeros((4, 6)), chunks=(2, 6), compression="gzip")
    monkeypatch.chdir("/")
    result = cli("check", str(write_sweep(user_file_sweep("u.h5"))))
    assert result.exit_code == 0, result.output


def test_missing_sweep_file(tmp_path, cli):
    result = cli("run", str(tmp_path / "none.yaml"))
    assert result.exit_code == 2
    assert "sweep file not found" in result.output


def test_every_command_has_help_with_an_example():
    from ccp.cli import main as group

    names = group.list_commands(None)          # the lazily imported ones (repack, trace, ...) too
    assert {"run", "repack", "trace", "diagnose"} <= set(names)
    for name in names:
        result = CliRunner().invoke(group, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Example" in result.output, f"`ccp {name} --help` shows no example"
