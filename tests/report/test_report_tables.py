"""parse_tables: the sweep's ``tables:`` validated with errors naming the key; render against cells."""

import pytest

from ccp.config.tables import TableSpec, parse_tables
from ccp.errors import ConfigError
from ccp.report.data import load_cells, prepare
from ccp.report.tables import ROWS, render

GOOD = {"title": "T", "rows": ["cache", "time"], "columns": [{"cache": "1MiB", "block": [1, 1, 1, 100]}]}


def table(**changes):
    t = dict(GOOD)
    t.update(changes)
    return [t]


@pytest.mark.parametrize("raw, where, message", [
    ({"title": "T"}, "tables", "expected a list of tables"),
    (["not a mapping"], "tables[0]", "expected a mapping"),
    (table(lables=["a"]), "tables[0].lables", "did you mean 'labels'"),
    (table(rows=["time", "raw_read"]), "tables[0].rows[1]", "did you mean 'raw_reads'"),
    (table(rows="time"), "tables[0].rows", "expected a list of row names"),
    (table(columns=[]), "tables[0].columns", "expected a list of cell selectors"),
    (table(columns=[{"cahce": "1MiB"}]), "tables[0].columns[0].cahce", "did you mean 'cache'"),
    (table(columns=[{"cache": "lots"}]), "tables[0].columns[0].cache", "expected a size"),
    (table(columns=[{"chunks": "4xAx9"}]), "tables[0].columns[0].chunks", ""),
    (table(columns=[{"op": "raed"}]), "tables[0].columns[0].op", "did you mean 'read'"),
    (table(columns=[{"w0": 2}]), "tables[0].columns[0].w0", "from 0 to 1"),
    (table(columns=[{"filters": "zstd-ish"}]), "tables[0].columns[0].filters", ""),
    (table(labels=["a", "b"]), "tables[0].labels", "2 labels for 1 columns"),
    (table(reference=[{"time": 1}, {}]), "tables[0].reference", "2 entries for 1 columns"),
    (table(reference=[{"tiem": 345}]), "tables[0].reference[0].tiem", "did you mean 'time'"),
    (table(reference=[{"time": "fast"}]), "tables[0].reference[0].time", "duration"),
    (table(reference=[{"chunks": 4}]), "tables[0].reference[0].chunks", "is text"),
    (table(reference=[{"time": True}]), "tables[0].reference[0].time", "expected a number"),
    (table(note=3), "tables[0].note", "expected text"),
], ids=["not-a-list", "not-a-mapping", "unknown-key", "unknown-row", "rows-not-a-list", "no-columns", "unknown-axis",
        "bad-size", "bad-chunks", "bad-op", "bad-w0", "bad-filter", "labels-count", "reference-count", "reference-row",
        "reference-not-a-duration", "reference-on-text-row", "reference-bool", "note-not-text"])
def test_errors_name_the_key(raw, where, message):
    with pytest.raises(ConfigError) as e:
        parse_tables(raw)
    assert e.value.where == where
    assert message in str(e.value)


def test_aliases_and_units_are_normalised():
    [spec] = parse_tables([{"title": "Table 8", "rows": ["file", "cache_size", "chunks", "access_pattern", "time_s", "raw_reads",
                                                         "repack_s", "first_request_s", "request_s_median", "predicted_chunk_loads"],
                            "columns": [{"chunks": [4, 30, 9, 717], "cache": "3MiB", "block": "1x1x1x717", "w0": 1,
                                         "filters": "gzip:6", "random": 0, "op": "read"}, {"chunks": "contiguous"}],
                            "reference": [{"time_s": "345s", "repack_time": 12, "raw_read_bytes": "1MiB"}, {}]}])
    assert spec.rows == ("file", "cache", "chunks", "access", "time", "raw_reads", "repack", "first_request",
                         "request_median", "chunk_loads")
    assert dict(spec.columns[0]) == {"chunks": "4x30x9x717", "cache": 3 * 1024**2, "block": "1x1x1x717", "w0": 1.0,
                                     "filters": "gzip:6", "random": 0, "op": "read"}
    assert dict(spec.columns[1]) == {"chunks": "contiguous"}
    assert dict(spec.reference[0]) == {"time": 345.0, "repack": 12.0, "raw_read_bytes": 1024**2}
    assert spec.title == "Table 8" and spec.labels == ()


def test_defaults():
    [spec] = parse_tables([{"columns": [{"cache": "1MiB"}]}])
    assert spec.title == "Table 1" and spec.rows[:2] == ("file", "chunks") and "time" in spec.rows


def test_every_row_renders_for_every_cell(make_run):
    """Each row of the vocabulary formats the values of real-shaped cells (and a failed one) without error."""
    cells, labels = prepare(load_cells(make_run(tables=False)))
    spec = TableSpec("all rows", tuple(ROWS), tuple((("chunks", c), ("filters", f), ("cache", int(n)), ("block", b), ("op", o))
                                                     for c, f, n, b, o in cells[["chunks", "filters", "cache_nbytes", "block", "op"]]
                                                     .itertuples(index=False)))
    t = render(spec, cells, labels)
    assert len(t.rows) == len(ROWS) and all(len(r) == len(spec.columns) + 1 for r in t.rows)
    assert any("failed" in w for w in t.warnings)          # the failed cell's column says so
    text = {r[0]: [str(c) for c in r[1:]] for r in t.rows}
    assert text["Raw-data reads per request"][0] != "-" and text["Metadata overhead (ppm)"][0] != "-"


def test_sweep_validation_calls_parse_tables(write_sweep):
    from ccp.config.sweep import parse_sweep_file

    path = write_sweep("""
        name: t
        dataset: {generate: {shape: [8, 10], dtype: "<f4"}}
        matrix: {chunks: [[4, 10]], access: [{op: read, block: [1, 10]}]}
        tables:
          - title: x
            rows: [time]
            colums: [{cache: 1MiB}]
        """)
    with pytest.raises(ConfigError, match=r"tables\[0\]\.colums.*did you mean 'columns'"):
        parse_sweep_file(path)
