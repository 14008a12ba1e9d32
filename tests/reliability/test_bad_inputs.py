"""Every key of the sweep file and every option of every command, given bad values: one line, exit 2.

Each sweep case is also given to `ccp check`, which must refuse it the same way (what check accepts,
run runs), and nothing may be written into --out. The README's bad-input table lists these rows.
"""

import os
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

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

# (id, (old, new) replacement in GOOD, substrings of the one line)
SWEEP_CASES = [
    # top level
    ("name-missing", ("name: t\n", ""), ["name"]),
    ("name-null", ("name: t", "name: null"), ["name"]),
    ("name-number", ("name: t", "name: 5"), ["name"]),
    ("name-empty", ("name: t", "name: ''"), ["name"]),
    ("name-dotdot", ("name: t", "name: '..'"), ["name", "'..'"]),
    ("name-dot", ("name: t", "name: '.'"), ["name"]),
    ("name-slash", ("name: t", "name: a/b"), ["name"]),
    ("name-nul", ("name: t", 'name: "a\\0b"'), ["name"]),
    ("name-newline", ("name: t", 'name: "a\\nb"'), ["name"]),
    ("name-too-long", ("name: t", "name: " + "x" * 300), ["name"]),
    ("repeats-zero", ("repeats: 1", "repeats: 0"), ["repeats", ">= 1"]),
    ("repeats-negative", ("repeats: 1", "repeats: -3"), ["repeats"]),
    ("repeats-float", ("repeats: 1", "repeats: 1.5"), ["repeats", "integer"]),
    ("repeats-string", ("repeats: 1", "repeats: three"), ["repeats"]),
    ("repeats-huge", ("repeats: 1", "repeats: 1000000000000"), ["repeats"]),
    ("repeats-bool", ("repeats: 1", "repeats: true"), ["repeats"]),
    ("cold-string", ("repeats: 1", "repeats: 1\ncold: maybe"), ["cold"]),
    ("cold-number", ("repeats: 1", "repeats: 1\ncold: 2"), ["cold"]),
    ("time-budget-negative", ("repeats: 1", "repeats: 1\ntime_budget: -5"), ["time_budget"]),
    ("time-budget-zero", ("repeats: 1", "repeats: 1\ntime_budget: 0"), ["time_budget"]),
    ("time-budget-nan", ("repeats: 1", "repeats: 1\ntime_budget: .nan"), ["time_budget"]),
    ("time-budget-inf", ("repeats: 1", "repeats: 1\ntime_budget: .inf"), ["time_budget"]),
    ("time-budget-unit", ("repeats: 1", "repeats: 1\ntime_budget: 5parsecs"), ["time_budget"]),
    ("exclude-number", ("repeats: 1", "repeats: 1\nexclude: 5"), ["exclude"]),
    ("exclude-string", ("repeats: 1", "repeats: 1\nexclude: contiguous"), ["exclude"]),
    ("exclude-entry-number", ("repeats: 1", "repeats: 1\nexclude: [5]"), ["exclude[0]"]),
    ("exclude-unknown-key", ("repeats: 1", "repeats: 1\nexclude: [{chunk: contiguous}]"), ["exclude[0].chunk"]),
    ("exclude-bad-op", ("repeats: 1", "repeats: 1\nexclude: [{access: {op: 5}}]"), ["exclude[0].access.op"]),
    ("exclude-bad-order", ("repeats: 1", "repeats: 1\nexclude: [{access: {order: 5}}]"), ["exclude[0].access.order"]),
    ("exclude-bad-random", ("repeats: 1", "repeats: 1\nexclude: [{access: {random: x}}]"), ["exclude[0].access.random"]),
    ("exclude-everything", ("repeats: 1", "repeats: 1\nexclude: [{chunks: [4, 6]}]"), ["every cell"]),
    ("matrix-not-mapping", ("matrix:\n", "matrix: 5\nx:\n"), ["matrix"]),
    ("unknown-top-key", ("repeats: 1", "repeat: 1"), ["repeat", "did you mean 'repeats'"]),
    # dataset
    ("dataset-missing", ("dataset:\n  generate: {shape: [8, 6], dtype: \"<f4\"}\n", ""), ["dataset"]),
    ("dataset-both", ('  generate: {shape: [8, 6], dtype: "<f4"}', '  generate: {shape: [8, 6], dtype: "<f4"}\n  file: x.h5'),
     ["exactly one"]),
    ("dataset-file-missing", ('  generate: {shape: [8, 6], dtype: "<f4"}', "  file: nothere.h5"), ["not found"]),
    ("dataset-file-nul", ('  generate: {shape: [8, 6], dtype: "<f4"}', '  file: "a\\0b.h5"'), ["dataset.file"]),
    ("dataset-file-number", ('  generate: {shape: [8, 6], dtype: "<f4"}', "  file: 5"), ["dataset.file"]),
    ("dataset-path-nul", ('  generate: {shape: [8, 6], dtype: "<f4"}', '  generate: {shape: [8, 6], dtype: "<f4"}\n  path: "/a\\0b"'),
     ["dataset.path"]),
    ("dataset-path-number", ('  generate: {shape: [8, 6], dtype: "<f4"}', '  generate: {shape: [8, 6], dtype: "<f4"}\n  path: 5'),
     ["dataset.path"]),
    ("generate-not-mapping", ('{shape: [8, 6], dtype: "<f4"}', "5"), ["dataset.generate"]),
    ("shape-missing", ("{shape: [8, 6], ", "{"), ["dataset.generate.shape", "missing"]),
    ("shape-empty", ("shape: [8, 6]", "shape: []"), ["dataset.generate.shape"]),
    ("shape-zero", ("shape: [8, 6]", "shape: [8, 0]"), ["dataset.generate.shape[1]"]),
    ("shape-negative", ("shape: [8, 6]", "shape: [8, -6]"), ["dataset.generate.shape[1]"]),
    ("shape-float", ("shape: [8, 6]", "shape: [8.5, 6]"), ["dataset.generate.shape[0]", "integer"]),
    ("shape-string-dim", ("shape: [8, 6]", "shape: [8, six]"), ["dataset.generate.shape[1]"]),
    ("shape-rank-33", ("shape: [8, 6]", "shape: [" + ", ".join(["1"] * 33) + "]"), ["rank 33", "32"]),
    ("shape-huge", ("shape: [8, 6]", "shape: [1000000000000000000000000000000, 6]"), ["dataset.generate.shape[0]"]),
    ("shape-too-many-bytes", ("shape: [8, 6]", "shape: [4000000000000000000, 6]"), ["dataset.generate.shape"]),
    ("dtype-null", ('dtype: "<f4"', "dtype: null"), ["dataset.generate.dtype"]),
    ("dtype-unknown", ('dtype: "<f4"', 'dtype: "float99"'), ["dataset.generate.dtype", "float99"]),
    ("dtype-string-kind", ('dtype: "<f4"', 'dtype: "S10"'), ["dataset.generate.dtype"]),
    ("dtype-number", ('dtype: "<f4"', "dtype: 4"), ["dataset.generate.dtype"]),
    ("data-unknown", ('dtype: "<f4"}', 'dtype: "<f4", data: gaussian}'), ["dataset.generate.data", "gaussian"]),
    ("data-list", ('dtype: "<f4"}', 'dtype: "<f4", data: [1]}'), ["dataset.generate.data"]),
    ("data-randint-huge", ('dtype: "<f4"}', 'dtype: "<f4", data: "randint:0:1000000000000000000000000000000"}'),
     ["dataset.generate.data", "64-bit"]),
    ("data-randint-beyond-dtype", ('dtype: "<f4"}', 'dtype: "u1", data: "randint:0:1000"}'), ["dataset.generate.data", "u1"]),
    ("data-randint-reversed", ('dtype: "<f4"}', 'dtype: "<f4", data: "randint:9:1"}'), ["LOW < HIGH"]),
    ("data-randint-words", ('dtype: "<f4"}', 'dtype: "<f4", data: "randint:a:b"}'), ["randint"]),
    ("data-constant-beyond-dtype", ('dtype: "<f4"}', 'dtype: "i1", data: "constant:1000"}'), ["dataset.generate.data"]),
    ("data-extra-arg", ('dtype: "<f4"}', 'dtype: "<f4", data: "normal:3"}'), ["normal takes no argument"]),
    ("seed-negative", ('dtype: "<f4"}', 'dtype: "<f4", seed: -1}'), ["dataset.generate.seed"]),
    ("seed-float", ('dtype: "<f4"}', 'dtype: "<f4", seed: 1.5}'), ["dataset.generate.seed"]),
    ("seed-huge", ('dtype: "<f4"}', 'dtype: "<f4", seed: 100000000000000000000000}'), ["dataset.generate.seed"]),
    ("fillvalue-beyond-dtype", ('dtype: "<f4"}', 'dtype: "u1", fillvalue: 300}'), ["dataset.generate.fillvalue", "u1"]),
    ("fillvalue-negative-unsigned", ('dtype: "<f4"}', 'dtype: "u2", fillvalue: -1}'), ["dataset.generate.fillvalue"]),
    ("fillvalue-fraction-int", ('dtype: "<f4"}', 'dtype: "i4", fillvalue: 0.5}'), ["dataset.generate.fillvalue"]),
    ("fillvalue-nan-int", ('dtype: "<f4"}', 'dtype: "i4", fillvalue: .nan}'), ["dataset.generate.fillvalue"]),
    ("fillvalue-beyond-f4", ('dtype: "<f4"}', 'dtype: "<f4", fillvalue: 1.0e+300}'), ["dataset.generate.fillvalue"]),
    ("fillvalue-string", ('dtype: "<f4"}', 'dtype: "<f4", fillvalue: zero}'), ["dataset.generate.fillvalue"]),
    ("maxshape-rank", ('dtype: "<f4"}', 'dtype: "<f4", maxshape: [8]}'), ["dataset.generate.maxshape"]),
    ("maxshape-smaller", ('dtype: "<f4"}', 'dtype: "<f4", maxshape: [4, 6]}'), ["dataset.generate.maxshape[0]"]),
    ("written-by-rank", ('dtype: "<f4"}', 'dtype: "<f4", written_by: [1]}'), ["dataset.generate.written_by"]),
    ("generate-chunks-too-big", ('dtype: "<f4"}', 'dtype: "<f4", chunks: [9, 6]}'), ["dataset.generate.chunks[0]"]),
    ("generate-chunks-source", ('dtype: "<f4"}', 'dtype: "<f4", chunks: source}'), ["dataset.generate.chunks"]),
    ("generate-filters-without-chunks", ('dtype: "<f4"}', 'dtype: "<f4", filters: "gzip:1"}'), ["dataset.generate.filters"]),
    ("generate-unknown-key", ('dtype: "<f4"}', 'dtype: "<f4", shap: [1]}'), ["dataset.generate.shap"]),
    # matrix.chunks
    ("chunks-empty-list", ("chunks: [[4, 6]]", "chunks: []"), ["matrix.chunks", "empty"]),
    ("chunks-rank", ("[[4, 6]]", "[[4, 6, 2]]"), ["matrix.chunks[0]", "rank 3"]),
    ("chunks-zero", ("[[4, 6]]", "[[0, 6]]"), ["matrix.chunks[0][0]"]),
    ("chunks-beyond-dim", ("[[4, 6]]", "[[4, 7]]"), ["matrix.chunks[0][1]", "exceeds"]),
    ("chunks-float", ("[[4, 6]]", "[[4.5, 6]]"), ["matrix.chunks[0][0]"]),
    ("chunks-word", ("[[4, 6]]", "[chunky]"), ["matrix.chunks[0]"]),
    ("chunks-source-without-file", ("[[4, 6]]", "[source]"), ["matrix.chunks[0]", "source"]),
    ("chunks-rank-33-string", ("[[4, 6]]", "['" + "x".join(["1"] * 33) + "']"), ["matrix.chunks[0]", "rank 33"]),
    # matrix.filters
    ("filters-unknown", ('"gzip:1"', '"gzp:1"'), ["unknown filter 'gzp'"]),
    ("filters-bad-level", ('"gzip:1"', '"gzip:12"'), ["gzip argument 12"]),
    ("filters-on-contiguous", ("[[4, 6]]", "[contiguous]"), ["contiguous", "exclude"]),
    # matrix.cache
    ("cache-unit", ('["1MiB"]', '["1MeB"]'), ["matrix.cache[0]", "1MeB"]),
    ("cache-negative", ('["1MiB"]', "[-5]"), ["matrix.cache[0]"]),
    ("cache-huge", ('["1MiB"]', "[1000000000000000000000000000000]"), ["matrix.cache[0]"]),
    ("cache-nan", ('["1MiB"]', "[.nan]"), ["matrix.cache[0]"]),
    ("cache-fraction", ('["1MiB"]', '["1.5B"]'), ["matrix.cache[0]"]),
    ("cache-nslots-zero", ('["1MiB"]', "[{nbytes: 1MiB, nslots: 0}]"), ["matrix.cache[0].nslots"]),
    ("cache-nslots-huge", ('["1MiB"]', "[{nbytes: 1MiB, nslots: 10000000000}]"), ["matrix.cache[0].nslots"]),
    ("cache-nslots-float", ('["1MiB"]', "[{nbytes: 1MiB, nslots: 5.5}]"), ["matrix.cache[0].nslots"]),
    ("cache-w0-above-1", ('["1MiB"]', "[{nbytes: 1MiB, w0: 1.5}]"), ["matrix.cache[0].w0"]),
    ("cache-w0-nan", ('["1MiB"]', "[{nbytes: 1MiB, w0: .nan}]"), ["matrix.cache[0].w0"]),
    ("cache-w0-string", ('["1MiB"]', "[{nbytes: 1MiB, w0: half}]"), ["matrix.cache[0].w0"]),
    ("cache-unknown-key", ('["1MiB"]', "[{bytes: 1MiB}]"), ["matrix.cache[0].bytes"]),
    # matrix.access
    ("access-not-mapping", ("[{op: read, block: [1, 6]}]", "[5]"), ["matrix.access[0]"]),
    ("access-op-unknown", ("op: read", "op: reed"), ["matrix.access[0].op", "did you mean 'read'"]),
    ("access-op-number", ("op: read", "op: 5"), ["matrix.access[0].op"]),
    ("access-op-list", ("op: read", "op: [read]"), ["matrix.access[0].op"]),
    ("access-block-missing", ("op: read, block: [1, 6]", "op: read"), ["matrix.access[0].block", "missing"]),
    ("access-block-rank", ("block: [1, 6]", "block: [1, 6, 1]"), ["matrix.access[0].block", "rank 3"]),
    ("access-block-too-big", ("block: [1, 6]", "block: [1, 7]"), ["matrix.access[0].block[1]", "exceeds"]),
    ("access-block-zero", ("block: [1, 6]", "block: [0, 6]"), ["matrix.access[0].block[0]"]),
    ("access-order-repeat", ("block: [1, 6]}", "block: [1, 6], order: [0, 0]}"), ["matrix.access[0].order"]),
    ("access-order-out-of-range", ("block: [1, 6]}", "block: [1, 6], order: [0, 5]}"), ["matrix.access[0].order"]),
    ("access-order-strings", ("block: [1, 6]}", "block: [1, 6], order: [a, b]}"), ["matrix.access[0].order"]),
    ("access-random-negative", ("block: [1, 6]}", "block: [1, 6], random: -1}"), ["matrix.access[0].random"]),
    ("access-random-huge", ("block: [1, 6]}", "block: [1, 6], random: 1000000000000}"), ["matrix.access[0].random"]),
    ("access-random-float", ("block: [1, 6]}", "block: [1, 6], random: 2.5}"), ["matrix.access[0].random"]),
    ("access-random-write", ("op: read, block: [1, 6]}", "op: write, block: [1, 6], random: 3}"), ["matrix.access[0].random"]),
    ("access-random-with-order", ("block: [1, 6]}", "block: [1, 6], random: 3, order: [1, 0]}"), ["matrix.access[0].order"]),
    ("access-seed-negative", ("block: [1, 6]}", "block: [1, 6], seed: -2}"), ["matrix.access[0].seed"]),
    ("access-too-many-requests", ("shape: [8, 6]", "shape: [100000000000, 6]"), ["matrix.access[0].block", "requests"]),
    ("access-unknown-key", ("block: [1, 6]}", "block: [1, 6], ordr: [0, 1]}"), ["ordr", "did you mean 'order'"]),
    # the S3 axes: what check accepts, run runs (issue 21): each has a range, named in the line
    ('s3-latency-1e9', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  latency: [1000000000]\n'), ['matrix.latency[0]', 'from 0ms to 1s']),
    ('s3-latency-inf', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  latency: [.inf]\n'), ['matrix.latency[0]', 'from 0ms to 1s']),
    ('s3-latency-nan', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  latency: [.nan]\n'), ['matrix.latency[0]']),
    ('s3-bandwidth-1B', ('  access: [{op: read, block: [1, 6]}]\n', "  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  bandwidth: ['1B/s']\n"), ['matrix.bandwidth[0]', 'from 100kB/s to 1TB/s']),
    ('s3-bandwidth-nan', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  bandwidth: [.nan]\n'), ['matrix.bandwidth[0]']),
    ('s3-page-buffer-huge', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  file_space: [page]\n  page_buffer: [1000000000000000000000000000000]\n'), ['matrix.page_buffer[0]', '1TiB']),
    ('s3-page-size-huge', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  file_space: [{strategy: page, page_size: 1000000000000000000000000000000}]\n'), ['matrix.file_space[0].page_size', '1GiB']),
    ('s3-page-size-2GiB', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  file_space: [{strategy: page, page_size: 2GiB}]\n'), ['matrix.file_space[0].page_size', '1GiB']),
    ('s3-block-size-huge', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  fsspec: [{block_size: 1000000000000000000000000000000}]\n'), ['matrix.fsspec[0].block_size', '1TiB']),
    ('s3-block-size-1', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  fsspec: [{block_size: 1}]\n'), ['matrix.fsspec[0].block_size', '4KiB']),
    ('s3-threshold-huge', ('  access: [{op: read, block: [1, 6]}]\n', '  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\n  file_space: [{strategy: none, threshold: 100000000000000000000000}]\n'), ['matrix.file_space[0].threshold']),
    ('s3-endpoint-port', ('  access: [{op: read, block: [1, 6]}]\n', "  access: [{op: read, block: [1, 6]}]\n  storage: [s3]\ns3: {endpoint: 'http://127.0.0.1:99999', bucket: b}\n"), ['s3.endpoint', '65535']),
    # YAML itself
    ("yaml-syntax", ("name: t", "name: [t"), ["YAML syntax error"]),
    ("yaml-duplicate-key", ("repeats: 1", "repeats: 1\nrepeats: 2"), ["duplicate key 'repeats'"]),
]


def one_line(result, expected):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("ccp: error:"), lines[0]
    for e in expected:
        assert e in lines[0], lines[0]


@pytest.mark.parametrize("old,new,expected", [c[1] + (c[2],) for c in SWEEP_CASES], ids=[c[0] for c in SWEEP_CASES])
def test_bad_sweep_key(tmp_path, old, new, expected, cli):
    assert old in GOOD
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(textwrap.dedent(GOOD).replace(old, new, 1))
    one_line(cli("check", str(sweep)), expected)
    out = tmp_path / "run"
    one_line(cli("run", str(sweep), "--out", str(out), "--work", str(tmp_path / "work")), expected)
    assert not out.exists()


WHOLE_FILE_CASES = [
    ("empty", b"", ["empty"]),
    ("only-a-comment", b"# nothing\n", ["empty"]),
    ("a-list", b"- a\n- b\n", ["mapping"]),
    ("a-scalar", b"42\n", ["mapping"]),
    ("binary", b"\xff\xfe\x00\x01", ["sweep.yaml"]),
    ("tabs", b"name: t\n\tdataset: x\n", ["sweep.yaml"]),
]


@pytest.mark.parametrize("data,expected", [c[1:] for c in WHOLE_FILE_CASES], ids=[c[0] for c in WHOLE_FILE_CASES])
def test_bad_sweep_file(tmp_path, data, expected, cli):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_bytes(data)
    one_line(cli("check", str(sweep)), expected)
    one_line(cli("run", str(sweep), "--out", str(tmp_path / "run")), expected)
    assert not (tmp_path / "run").exists()


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(textwrap.dedent(GOOD))
    h5 = tmp_path / "f.h5"
    with h5py.File(h5, "w") as f:
        f.create_dataset("d", data=np.zeros((8, 6), "f4"), chunks=(4, 6))
        f.create_dataset("null", shape=None, dtype="f4")
        f.create_dataset("scalar", data=1.0)
        f.create_dataset("text", data=np.array([b"ab"]))
        f.create_group("g")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "cells.csv").write_text("cell_id,x\n1,2\n")
    (tmp_path / "text.txt").write_text("hello")
    return {"SWEEP": str(good), "H5": str(h5), "FOREIGN": str(tmp_path / "notes"), "TEXT": str(tmp_path / "text.txt"),
            "OUT": str(tmp_path / "out"), "WORK": str(tmp_path / "work"), "TMP": str(tmp_path)}


# (id, argv with placeholders, substrings)
OPTION_CASES = [
    ("no-command", ["rnu"], ["No such command"]),
    ("unknown-option", ["run", "SWEEP", "--outt", "OUT"], ["run:", "--outt"]),
    ("run-missing-sweep", ["run"], ["run:", "Missing argument"]),
    ("run-sweep-not-found", ["run", "TMP/nothere.yaml"], ["sweep file not found"]),
    ("run-sweep-is-a-folder", ["run", "TMP"], ["run:"]),
    ("run-sweep-not-text", ["run", "H5"], ["not a text file"]),
    ("run-cell-timeout-word", ["run", "SWEEP", "--cell-timeout", "abc"], ["--cell-timeout"]),
    ("run-cell-timeout-negative", ["run", "SWEEP", "--cell-timeout", "-1", "--out", "OUT"], ["--cell-timeout"]),
    ("run-cell-timeout-zero", ["run", "SWEEP", "--cell-timeout", "0", "--out", "OUT"], ["--cell-timeout"]),
    ("run-cell-timeout-nan", ["run", "SWEEP", "--cell-timeout", "nan", "--out", "OUT"], ["--cell-timeout"]),
    ("run-cell-timeout-inf", ["run", "SWEEP", "--cell-timeout", "inf", "--out", "OUT"], ["--cell-timeout"]),
    ("run-out-empty", ["run", "SWEEP", "--out", ""], ["--out"]),
    ("run-out-blank", ["run", "SWEEP", "--out", "   "], ["--out"]),
    ("run-out-foreign", ["run", "SWEEP", "--out", "FOREIGN"], ["--out", "no run.json"]),
    ("run-out-a-file", ["run", "SWEEP", "--out", "TEXT"], ["--out", "is a file"]),
    ("run-work-empty", ["run", "SWEEP", "--work", ""], ["--work"]),
    ("run-work-a-file", ["run", "SWEEP", "--work", "TEXT", "--out", "OUT"], ["--work", "is a file"]),
    ("run-time-budget-word", ["run", "SWEEP", "--time-budget", "soon", "--out", "OUT"], ["--time-budget"]),
    ("run-time-budget-negative", ["run", "SWEEP", "--time-budget", "-5s", "--out", "OUT"], ["--time-budget"]),
    ("run-time-budget-zero", ["run", "SWEEP", "--time-budget", "0", "--out", "OUT"], ["--time-budget"]),
    ("run-time-budget-empty", ["run", "SWEEP", "--time-budget", "", "--out", "OUT"], ["--time-budget"]),
    ("run-time-budget-nan", ["run", "SWEEP", "--time-budget", "nan", "--out", "OUT"], ["--time-budget"]),
    ("run-scale-zero", ["run", "SWEEP", "--scale", "0", "--out", "OUT"], ["--scale"]),
    ("run-scale-above-1", ["run", "SWEEP", "--scale", "2", "--out", "OUT"], ["--scale"]),
    ("run-scale-negative", ["run", "SWEEP", "--scale", "-0.5", "--out", "OUT"], ["--scale"]),
    ("run-scale-nan", ["run", "SWEEP", "--scale", "nan", "--out", "OUT"], ["--scale"]),
    ("run-scale-word", ["run", "SWEEP", "--scale", "half"], ["--scale"]),
    ("run-executor-unknown", ["run", "SWEEP", "--executor", "slurm"], ["--executor"]),
    ("run-dask-without-scheduler", ["run", "SWEEP", "--executor", "dask", "--out", "OUT"], ["--scheduler"]),
    ("run-resources-bad", ["run", "SWEEP", "--executor", "dask", "--scheduler", "tcp://x:1", "--resources", "gpu=lots",
                           "--out", "OUT"], ["--resources"]),
    ("check-missing-sweep", ["check"], ["check:", "Missing argument"]),
    ("check-scale-zero", ["check", "SWEEP", "--scale", "0"], ["--scale"]),
    ("report-missing", ["report", "TMP/nothere"], ["report:"]),
    ("report-not-a-run", ["report", "TMP"], ["not a ccp run folder"]),
    ("compare-missing", ["compare", "TMP/a"], ["compare:"]),
    ("inspect-missing-file", ["inspect", "TMP/nothere.h5"], ["nothere.h5"]),
    ("inspect-not-hdf5", ["inspect", "TEXT"], ["text.txt"]),
    ("plan-missing-sweep", ["plan"], ["plan:", "Missing argument"]),
    ("plan-work-empty", ["plan", "SWEEP", "--work", ""], ["--work"]),
    ("clean-work-empty", ["clean", "--work", ""], ["--work"]),
    ("clean-unknown-option", ["clean", "--all"], ["clean:", "--all"]),
    ("advise-missing-access", ["advise", "H5", "/d"], ["advise:", "--access"]),
    ("advise-access-word", ["advise", "H5", "/d", "--access", "axb", "--no-measure"], ["--access"]),
    ("advise-access-zero", ["advise", "H5", "/d", "--access", "0x6", "--no-measure"], ["--access"]),
    ("advise-access-rank", ["advise", "H5", "/d", "--access", "1x1x6", "--no-measure"], ["--access", "rank 3"]),
    ("advise-cache-slots-word", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MiB/abc", "--no-measure"], ["--cache", "NSLOTS"]),
    ("advise-cache-w0-word", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MiB/521/x", "--no-measure"], ["--cache", "W0"]),
    ("advise-cache-too-many-parts", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1/2/0.5/4", "--no-measure"], ["--cache"]),
    ("advise-cache-empty-part", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MiB/", "--no-measure"], ["--cache"]),
    ("advise-cache-unit", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MeB", "--no-measure"], ["--cache"]),
    ("advise-cache-w0-range", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MiB/521/2", "--no-measure"], ["--cache"]),
    ("advise-cache-nslots-huge", ["advise", "H5", "/d", "--access", "1x6", "--cache", "1MiB/10000000000", "--no-measure"],
     ["--cache"]),
    ("advise-memory-bad", ["advise", "H5", "/d", "--access", "1x6", "--memory", "lots", "--no-measure"], ["--memory"]),
    ("advise-budget-bad", ["advise", "H5", "/d", "--access", "1x6", "--budget", "-1", "--no-measure"], ["--budget"]),
    ("advise-null-dataspace", ["advise", "H5", "/null", "--access", "1", "--no-measure"], ["/null"]),
    ("advise-scalar", ["advise", "H5", "/scalar", "--access", "1", "--no-measure"], ["/scalar"]),
    ("advise-strings", ["advise", "H5", "/text", "--access", "1", "--no-measure"], ["/text"]),
    ("advise-group", ["advise", "H5", "/g", "--access", "1", "--no-measure"], ["/g", "group"]),
    ("advise-no-such-dataset", ["advise", "H5", "/nothere", "--access", "1x6", "--no-measure"], ["/nothere"]),
    ("advise-not-hdf5", ["advise", "TEXT", "/d", "--access", "1x6", "--no-measure"], ["text.txt"]),
    ("from-darshan-missing-out", ["from-darshan", "TEXT"], ["from-darshan:", "-o"]),
    ("from-darshan-missing-log", ["from-darshan", "TMP/nothere.darshan", "-o", "OUT"], ["no such file"]),
    ("from-darshan-not-a-log", ["from-darshan", "TEXT", "-o", "OUT"], ["text.txt", "not a Darshan log"]),
    ("from-darshan-hdf5-file", ["from-darshan", "H5", "-o", "OUT"], ["f.h5", "not a Darshan log"]),
    ("from-darshan-log-is-a-folder", ["from-darshan", "TMP", "-o", "OUT"], ["from-darshan:"]),
    ("from-darshan-out-exists", ["from-darshan", "TEXT", "-o", "H5"], ["-o", "exists", "--force"]),
    ("from-darshan-out-is-the-log", ["from-darshan", "TEXT", "-o", "TEXT", "--force"], ["-o", "is the input"]),
    ("from-darshan-out-empty", ["from-darshan", "TEXT", "-o", ""], ["-o"]),
    ("from-darshan-out-a-folder", ["from-darshan", "TEXT", "-o", "TMP"], ["-o", "directory"]),
    ("from-darshan-file-empty", ["from-darshan", "TEXT", "-o", "OUT", "--file", ""], ["--file"]),
]


@pytest.mark.parametrize("argv,expected", [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES])
def test_bad_option(files, argv, expected, cli):
    def fill(a):
        for k, v in files.items():
            if a == k or a.startswith(k + "/"):
                return v + a[len(k):]
        return a

    one_line(cli(*[fill(a) for a in argv]), expected)
    assert not os.path.exists(files["OUT"])          # nothing written before the refusal


def test_readme_has_a_row_for_every_case():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    missing = [c[0] for c in SWEEP_CASES + WHOLE_FILE_CASES + OPTION_CASES if f"| {c[0]} |" not in readme]
    assert not missing, f"README.md's bad-input table lacks: {missing}"
