"""A run folder with a damaged or stale file: `ccp report` and `ccp compare` read the commit record (cells.csv) where
the parquet copy is cut short or disagrees with it, and name a damaged per-request part in one line, exit 2."""

import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import write_run

from ccp.cli import main
from ccp.store.reader import read_run_cells


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("good") / "a", tables=False)


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def _cut(path, keep=300):
    path.write_bytes(path.read_bytes()[:keep])


@pytest.mark.parametrize("damage", [
    lambda d: _cut(d / "cells.parquet"),
    lambda d: pd.read_parquet(d / "cells.parquet").iloc[0:0].to_parquet(d / "cells.parquet"),
    lambda d: pd.read_parquet(d / "cells.parquet").iloc[:3].to_parquet(d / "cells.parquet"),
], ids=["cut-short", "no-rows", "fewer-rows-than-the-record"])
def test_a_parquet_copy_that_disagrees_with_cells_csv_gives_way_to_it(good, tmp_path, damage):
    d = _copy(good, tmp_path / "d")
    damage(d)
    assert len(read_run_cells(d)) == len(read_run_cells(good)) == len(pd.read_csv(good / "cells.csv"))
    r = CliRunner().invoke(main, ["compare", str(good), str(d)])
    assert r.exit_code == 0, r.output
    assert "cells in common" in r.output


def test_a_damaged_request_part_is_named_in_one_line(good, tmp_path):
    d = _copy(good, tmp_path / "d")
    part = sorted((d / "requests.parquet").glob("*.parquet"))[0]
    _cut(part)
    r = CliRunner().invoke(main, ["report", str(d)])
    assert r.exit_code == 2, r.output
    assert f"{part.name} is damaged" in r.output and "Traceback" not in r.output and "internal error" not in r.output


def test_runs_with_no_cells_compare_to_nothing_in_common(good, tmp_path):
    d = _copy(good, tmp_path / "d")
    header = (d / "cells.csv").read_text().splitlines()[0]
    (d / "cells.csv").write_text(header + "\n")
    pd.read_parquet(d / "cells.parquet").iloc[0:0].to_parquet(d / "cells.parquet")
    r = CliRunner().invoke(main, ["compare", str(good), str(d)])
    assert r.exit_code == 0, r.output
    assert "no cells in common" in r.output


def test_a_run_before_the_pass_columns_is_read_not_called_damaged(make_run, undrawn_figures):
    """breaker8 F4: a schema-3 run's requests.parquet has no per-pass CPU, wall, load or GET-wait columns; it is intact:
    `ccp report` and `ccp compare` read it (the passes without their CPU times), never "requests.parquet is damaged"."""
    a = make_run("a")
    b = make_run("b")
    for part in (b / "requests.parquet").glob("*.parquet"):
        df = pd.read_parquet(part)
        df.drop(columns=[c for c in ("pass_cpu_s", "pass_wall_s", "pass_load", "http_wait_s") if c in df]).to_parquet(
            part, index=False)
    r = CliRunner().invoke(main, ["compare", str(a), str(b)])
    assert r.exit_code == 0 and "damaged" not in r.output, r.output
    r = CliRunner().invoke(main, ["report", str(b)])
    assert r.exit_code == 0 and "damaged" not in r.output, r.output


def _edited_csv(good, d, edit):
    """A copy of ``good`` whose cells.csv is edited by hand and whose cells.parquet is gone (the CSV is read)."""
    _copy(good, d)
    (d / "cells.parquet").unlink()
    cells = pd.read_csv(d / "cells.csv", keep_default_na=False, na_values=[""])
    edit(cells).to_csv(d / "cells.csv", index=False)
    return d


@pytest.mark.parametrize("drop, named", [
    (["cell_id"], "missing column cell_id"),
    (["load_max", "cpus"], "missing columns"),
], ids=["cell-id", "load-and-cpus"])
def test_compare_names_the_run_argument_and_the_missing_column(good, tmp_path, drop, named):
    """breaker10 B6: `ccp run`'s resume check said "--out ...: use a new --out", an option compare does not have."""
    d = _edited_csv(good, tmp_path / "b", lambda c: c.drop(columns=drop))
    r = CliRunner().invoke(main, ["compare", str(good), str(d)])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert line.startswith(f"ccp: error: RUN_B {d}: cells.csv is not one ccp wrote ("), line
    assert named in line and all(c in line for c in drop)
    assert "--out" not in line and len(line.splitlines()) == 1


@pytest.mark.parametrize("status", ["OK", "finished", "failed"], ids=["upper-case-ok", "unknown-word", "failed-no-reason"])
def test_a_status_ccp_never_writes_is_bad_input_not_a_regression(good, tmp_path, status):
    """breaker10 B10: a hand-edited status `OK` read as a cell that did not finish failed the gate (exit 1)."""
    d = _edited_csv(good, tmp_path / "b", lambda c: c.assign(status=status))
    r = CliRunner().invoke(main, ["compare", str(good), str(d), "--fail-above", "1.5"])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert line == (f"ccp: error: {d / 'cells.csv'}: row 1, column status: {status!r} is not a status ccp writes "
                    "('ok', 'extrapolated' or 'failed: REASON')"), line
