"""Disk checks: a real estimate with a margin that scales, on the work folder and on --out."""

import textwrap

import pandas as pd
import pytest

from ccp.errors import CcpError
from ccp.store.disk import check_free

SMALL = """
name: small
dataset:
  generate: {shape: [8, 6], dtype: "<f4"}
matrix:
  chunks: [[4, 6]]
  access: [{op: read, block: [1, 6]}]
repeats: 1
cold: false
"""


def sweep_file(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_a_small_need_passes_on_a_small_disk(tmpfs):
    fs = tmpfs(30)
    check_free(fs, 2400, "a 2.34 KiB sweep")        # issue 17: this was refused under 64 MiB free


def test_a_need_larger_than_free_names_both(tmpfs):
    fs = tmpfs(8)
    with pytest.raises(CcpError, match=r"needs about 20 MiB .* but only 8 MiB is free"):
        check_free(fs, 20 * 1024 * 1024, "x")


def test_sweep_too_big_for_the_work_disk_is_refused_before_writing(tmpfs, tmp_path, cli):
    work = tmpfs(8)
    big = SMALL.replace("shape: [8, 6]", "shape: [4000, 1000]").replace("[[4, 6]]", "[[40, 1000]]").replace(
        "block: [1, 6]", "block: [1, 1000]")
    r = cli("run", str(sweep_file(tmp_path, big)), "--out", str(tmp_path / "out"), "--work", str(work))
    assert r.exit_code == 2 and "disk:" in r.output and "(its work files and I/O logs)" in r.output, r.output
    assert not (tmp_path / "out").exists() and not list(work.iterdir())


def test_sweep_too_big_for_the_out_disk_is_refused_before_writing(tmpfs, tmp_path, cli):
    out = tmpfs(1, "outfs")
    many = SMALL.replace("shape: [8, 6]", "shape: [200000, 1]").replace("[[4, 6]]", "[[1000, 1]]").replace(
        "block: [1, 6]", "block: [1, 1]")
    r = cli("run", str(sweep_file(tmp_path, many)), "--out", str(out / "run"), "--work", str(tmp_path / "w"))
    assert r.exit_code == 2 and "(its results)" in r.output, r.output
    assert not (out / "run").exists()


def test_a_small_sweep_runs_with_30_mib_free(tmpfs, tmp_path, cli):
    work = tmpfs(30)
    r = cli("run", str(sweep_file(tmp_path, SMALL)), "--out", str(tmp_path / "out"),
            "--work", str(work), "--no-report")
    assert r.exit_code == 0, r.output
    assert (pd.read_csv(tmp_path / "out" / "cells.csv")["status"] == "ok").all()
