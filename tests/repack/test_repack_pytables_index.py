"""A PyTables Table with an index: its index is built for the table's chunks (breaker4's F1).

Rechunking the table (or an index array) makes PyTables' read_where and pandas' where= return wrong
rows, so a layout change is refused in one line naming the table and its indexed columns; a filter-only
copy keeps the chunks and its queries answer as the input's.
"""

import warnings

import numpy as np
import pytest
from click.testing import CliRunner

tables = pytest.importorskip("tables")
pd = pytest.importorskip("pandas")


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


def make_pandas(path):
    df = pd.DataFrame({"x": np.arange(20), "y": np.linspace(0, 1, 20)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # pandas/PyTables performance notes are not what is tested
        df.to_hdf(path, key="table", format="table", data_columns=["x"])


def make_pytables(path):
    with tables.open_file(path, "w") as h:
        t = h.create_table("/grp", "tab", {"a": tables.Int32Col(), "b": tables.Float64Col()}, createparents=True,
                           chunkshape=(16,))
        t.append([(i, i * 0.5) for i in range(100)])
        t.flush()
        t.cols.a.create_index()


def pandas_rows(path, where):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pd.read_hdf(path, "table", where=where).sort_index()


def pytables_rows(path, where):
    with tables.open_file(path, "r") as h:
        return h.get_node("/grp/tab").read_where(where)


REFUSED = {
    "pandas-table": (make_pandas, ["-l", "/table/table:CHUNK=7"], "/table/table is indexed by PyTables (columns index, x)"),
    "pandas-plan": (make_pandas, ["--plan", "-l", "/table/table:CHUNK=7"], "/table/table is indexed by PyTables"),
    "pandas-index-array": (make_pandas, ["-l", "/table/_i_table/x/sorted:CHUNK=1x512"],
                           "part of PyTables' index of column x of /table/table"),
    "pytables-table": (make_pytables, ["-l", "/grp/tab:CHUNK=10"], "/grp/tab is indexed by PyTables (column a)"),
}


@pytest.mark.parametrize("kind", REFUSED)
def test_rechunking_an_indexed_table_is_refused_in_one_line(tmp_path, kind):
    make, args, expected = REFUSED[kind]
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    make(src)
    r = cli(*args, src, out)
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and expected in lines[0] and "ptrepack --chunkshape" in lines[0], r.output
    assert not out.exists()


KEPT = {
    "pandas-filter-named": (make_pandas, ["-f", "/table/table:GZIP=6"], ["x > 5", "(x > 2) & (x < 9)"]),
    "pandas-filter-all": (make_pandas, ["-f", "shuffle+gzip:1"], ["x > 5", "x == 3"]),
    "pandas-all-layout-kept": (make_pandas, ["-l", "CHUNK=7", "-f", "GZIP=1"], ["x > 5"]),
    "pytables-filter": (make_pytables, ["-f", "/grp/tab:GZIP=4"], ["a > 50", "(a > 10) & (a < 20)"]),
    "pytables-all-layout-kept": (make_pytables, ["-l", "CHUNK=10"], ["a > 50"]),
}


@pytest.mark.parametrize("kind", KEPT)
def test_filter_only_copy_answers_queries_as_the_input(tmp_path, kind):
    make, args, queries = KEPT[kind]
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    make(src)
    r = cli(*args, src, out)
    assert r.exit_code == 0, r.output
    if "-l" in args:    # an all-dataset layout keeps the indexed table's chunks, and says so
        assert "layout kept" in r.output and "indexed by PyTables" in r.output
    for where in queries:
        if make is make_pandas:
            got, want = pandas_rows(out, where), pandas_rows(src, where)
            assert len(want) > 0 and got.equals(want), where
        else:
            got, want = pytables_rows(out, where), pytables_rows(src, where)
            assert len(want) > 0 and np.array_equal(got, want), where
