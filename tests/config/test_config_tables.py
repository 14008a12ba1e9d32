"""The `tables:` vocabulary is config's (ccp.config.tables), how each row is shown is the report's: they agree."""

from __future__ import annotations

import pytest

from ccp.config.tables import ALIASES, TABLE_ROWS, parse_tables, row_name
from ccp.errors import ConfigError
from ccp.report.tables import ROWS


def test_every_row_name_has_one_way_to_be_shown():
    assert ROWS.keys() == TABLE_ROWS.keys()


@pytest.mark.parametrize("name", [n for n, r in TABLE_ROWS.items() if r.column], ids=str)
def test_a_row_naming_a_column_shows_that_column(name):
    column = TABLE_ROWS[name].column
    assert ROWS[name].value({column: 7}) == 7
    assert row_name(column) == name


def test_aliases_name_real_rows():
    assert all(target in TABLE_ROWS for target in ALIASES.values())


@pytest.mark.parametrize("raw, key", [
    ([{"rows": ["time"], "columns": [{"cache": "1MiB"}], "reference": [{"chunks": 3}]}], r"tables\[0\]\.reference\[0\]\.chunks"),
    ([{"rows": ["tiem"], "columns": [{"cache": "1MiB"}]}], r"tables\[0\]\.rows\[0\].*did you mean 'time'"),
    ([{"columns": [{"chunks": "source"}]}], r"tables\[0\]\.columns\[0\]\.chunks.*not `source`"),
], ids=["text-row-reference", "row-typo", "source-column"])
def test_errors_name_the_key(raw, key):
    with pytest.raises(ConfigError, match=key):
        parse_tables(raw)


def test_a_time_reference_accepts_a_duration_and_a_size_reference_a_size():
    [spec] = parse_tables([{"rows": ["time", "raw_read_bytes"], "columns": [{"cache": "1MiB"}],
                            "reference": [{"time": "2min", "raw_read_bytes": "1KiB"}]}])
    assert dict(spec.reference[0]) == {"time": 120.0, "raw_read_bytes": 1024.0}
