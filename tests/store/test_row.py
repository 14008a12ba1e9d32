"""The typed result row: every cells.csv column a field, a misspelt column an error, the CSV unchanged."""

from dataclasses import fields

import pytest

from ccp.store.results import RunStore, read_cells
from ccp.store.row import SCHEMA_HISTORY, CellRow
from ccp.store.schema import CELL_COLUMNS, SCHEMA_VERSION

IDENTITY = dict(schema_version=SCHEMA_VERSION, cell_id="abc", chunks="4x8", filters="gzip:1", cache_nbytes=1048576,
                cache_nslots=521, cache_w0=0.75, op="read", block="1x8", order="0x1", random=0, client="h5py-lowlevel",
                status="ok")
MEASURED = dict(requests=8, repeats=3, cold=True, time_s=0.5, time_s_min=0.4, time_s_max=0.6, open_s=0.01, close_s=0.01,
                spread=1.5, fraction_measured=1.0, host="h", started_at="2026-01-01T00:00:00+00:00")


def test_every_column_is_a_field_and_the_history_reaches_this_version():
    assert {f.name for f in fields(CellRow)} == set(CELL_COLUMNS)
    assert max(SCHEMA_HISTORY) == SCHEMA_VERSION


@pytest.mark.parametrize("build", [
    lambda: CellRow.from_dict({**IDENTITY, **MEASURED, "raw_raeds": 3}),
    lambda: CellRow.from_dict({**IDENTITY, **MEASURED}).with_columns(predicted_raw_raeds=3),
], ids=["from_dict", "with_columns"])
def test_a_misspelt_column_is_an_error_not_an_empty_column(build):
    with pytest.raises(TypeError, match="raeds"):
        build()


def test_a_row_without_its_identity_cannot_be_built():
    with pytest.raises(TypeError, match="status"):
        CellRow.from_dict({k: v for k, v in IDENTITY.items() if k != "status"})


@pytest.mark.parametrize("status", ["ok", "extrapolated"])
def test_a_finished_row_without_its_measurement_cannot_be_built(status):
    """A builder that forgets a measured column fails, instead of writing a finished cell with an empty number."""
    for name in MEASURED:
        with pytest.raises(TypeError, match=name):
            CellRow.from_dict({**IDENTITY, **{k: v for k, v in MEASURED.items() if k != name}, "status": status})
    CellRow.from_dict({**IDENTITY, "status": "failed: worker died"})      # a failed row has no measurement


def test_the_store_commits_rows_not_dicts(tmp_path):
    store = RunStore(tmp_path / "run")
    store.open({"name": "t"}, "ident")
    with pytest.raises(TypeError, match="CellRow"):
        store.commit_row(dict(IDENTITY))
    store.commit_row(CellRow.from_dict({**IDENTITY, **MEASURED, "raw_reads": 7}))
    assert (tmp_path / "run" / "cells.csv").read_text().splitlines()[0].split(",") == CELL_COLUMNS
    df = read_cells(tmp_path / "run")
    assert df.loc[0, "time_s"] == 0.5 and df.loc[0, "raw_reads"] == 7 and df.loc[0, "cold"]
    assert list(df.columns) == CELL_COLUMNS
