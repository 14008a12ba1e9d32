"""The store reads back every results schema it says it can (READABLE_SCHEMA_VERSIONS) from committed run folders,
two cells each, as numcodecs keeps its old formats readable: ``fixtures/schema6`` was written by ``ccp run``,
``schema5`` and ``schema4`` by ``ccp run --quick``;
the older ones hold what those versions wrote (their columns, ``ccp.store.schema.cell_columns_of``), derived from
runs of this ccp by dropping the columns each version lacked (see ``fixtures/README.md``)."""

from __future__ import annotations

import csv
from dataclasses import fields
from pathlib import Path

import pytest

from ccp.store.reader import TEXT_COLUMNS, read_env, read_run_cells, read_run_record, read_run_sweep
from ccp.store.results import check_run_folder
from ccp.store.row import CellRow
from ccp.store.schema import (
    CELL_COLUMNS,
    READ_BACK,
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_HISTORY,
    SCHEMA_VERSION,
    cell_columns_of,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VERSIONS = sorted(READABLE_SCHEMA_VERSIONS)


def test_every_readable_schema_has_a_committed_run_folder_and_a_history_line():
    assert sorted(int(p.name.removeprefix("schema")) for p in FIXTURES.glob("schema*")) == VERSIONS
    assert sorted(SCHEMA_HISTORY) == list(range(1, SCHEMA_VERSION + 1)) and SCHEMA_VERSION in VERSIONS


@pytest.mark.parametrize("version", VERSIONS, ids=[f"schema{v}" for v in VERSIONS])
def test_an_old_run_folder_reads_back_as_this_ccp_writes(version):
    run = FIXTURES / f"schema{version}"
    with open(run / "cells.csv", newline="") as f:
        assert next(csv.reader(f)) == cell_columns_of(version)        # the fixture is what that version wrote
    check_run_folder(run)                                              # `ccp report` / `ccp compare` accept it
    cells = read_run_cells(run)
    assert len(cells) == (4 if version == 4 else 2) and set(CELL_COLUMNS) <= set(cells.columns)
    assert (cells["schema_version"] == version).all() and (cells["status"] == "ok").all()
    for col in TEXT_COLUMNS:
        assert all(isinstance(v, str) for v in cells[col]), col
    for col in set(CELL_COLUMNS) - set(TEXT_COLUMNS) - {"cold"}:
        assert cells[col].dtype == float, col
    assert (cells["time_s"] > 0).all() and (cells["cache_nbytes"] > 0).all()
    # a column the version lacked reads as every cell then was, or empty
    for col in set(CELL_COLUMNS) - set(cell_columns_of(version)):
        expected = READ_BACK.get(col, "" if col in TEXT_COLUMNS else None)
        if expected is None:
            assert cells[col].isna().all(), col
        else:
            assert (cells[col] == expected).all(), col
    assert read_run_record(run)["schema_version"] == version
    assert read_env(run) and read_run_sweep(run)[1]["name"].startswith("tiny")


def test_text_columns_are_the_rows_str_fields():
    assert set(TEXT_COLUMNS) == {f.name for f in fields(CellRow) if "str" in str(f.type)}
    assert {"cell_id", "chunks", "client", "status", "storage", "network"} <= set(TEXT_COLUMNS)
    assert not {"time_s", "cache_nbytes", "random", "cold"} & set(TEXT_COLUMNS)


def test_the_store_and_the_axes_agree_on_what_older_runs_read_as():
    """READ_BACK (the store's schema history) and each axis's ``before`` (ccp.config.axes) state one fact twice:
    held equal here, since the store may not import the config room."""
    from ccp.config import axes as matrix_axes

    assert READ_BACK == {k: v for k, v in matrix_axes.read_back().items() if v != ""}


def test_a_missing_or_broken_file_reads_as_empty(tmp_path):
    (tmp_path / "env.json").write_text("{not json")
    (tmp_path / "sweep.yaml").write_text("a: [b")
    assert read_env(tmp_path) == {} and read_run_record(tmp_path) == {}
    assert read_run_sweep(tmp_path) == ("a: [b", {})
