"""A time budget that cuts each pass after its first request, on a pattern whose first request loads the chunk the
rest find in the cache (breaker10 B14): the extrapolated counts are the whole pass's, `ccp compare` never blames HDF5
for an estimate, and `--remeasure` measures the cell whole instead of refusing it as "measured by other code"."""

import shutil

import pandas as pd
import pytest
import yaml

SWEEP = {"name": "firstreq", "dataset": {"path": "/d", "generate": {"shape": [8, 32, 32, 64], "dtype": "<f4",
                                                                  "data": "normal", "seed": 0}},
         "matrix": {"chunks": [[4, 32, 32, 64]], "filters": ["gzip:1"], "cache": ["2MiB"],   # two 1 MiB chunks, cached
                    "access": [{"op": "read", "block": [1, 1, 32, 64]}]},                      # 256 rows, 2 loads
         "repeats": 2, "cold": False}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from click.testing import CliRunner

    from ccp.cli import main

    d = tmp_path_factory.mktemp("budget")
    sweep = d / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    out = {}
    # 1 us a pass: every pass stops after its first request (the budget is checked after each request)
    for name, extra in (("a", ["--time-budget", "1us"]), ("b", ["--time-budget", "1us"]), ("whole", [])):
        r = CliRunner().invoke(main, ["run", str(sweep), "--out", str(d / name), "--work", str(d / "work"),
                                      "--no-isolate", "--no-report", *extra])
        assert r.exit_code == 0, r.output
        out[name] = d / name
    return out


def _cell(run):
    return pd.read_parquet(run / "cells.parquet").iloc[0]


def test_counts_extrapolated_from_the_first_request_are_the_whole_passes(runs):
    a, whole = _cell(runs["a"]), _cell(runs["whole"])
    assert a["status"] == "extrapolated" and a["fraction_measured"] == 1 / 256
    assert "first-request-only" in a["flags"].split(",")
    # the model's prediction and the whole pass measured agree; the estimate is them, not 256 chunk reads
    assert a["raw_reads"] == whole["raw_reads"] == a["predicted_raw_reads"] == 2
    assert a["raw_read_bytes"] == whole["raw_read_bytes"] == a["predicted_raw_read_bytes"]
    assert a["raw_read_bytes"] <= a["storage_bytes"]          # a read-once pattern reads no byte twice here
    # flags is empty (NaN) on a quiet machine: no "contended" either
    assert whole["status"] == "ok" and "first-request-only" not in str(whole["flags"]).split(",")


def _compare(*args):
    from click.testing import CliRunner

    from ccp.cli import main

    return CliRunner().invoke(main, ["compare", *map(str, args)])


def test_compare_of_two_budgeted_runs_never_blames_hdf5(runs, tmp_path):
    r = _compare(runs["a"], runs["b"])
    assert r.exit_code == 0, r.output
    assert "did different I/O" not in r.output
    # an estimate that differs (a count the model could not give) is said to be one
    b = shutil.copytree(runs["b"], tmp_path / "b")
    cells = pd.read_parquet(b / "cells.parquet")
    cells["raw_reads"] = cells["raw_reads"] * 128
    cells.to_parquet(b / "cells.parquet", index=False)
    r = _compare(runs["a"], b)
    assert "did different I/O" not in r.output
    assert "raw-data reads differ in 1 extrapolated cells: estimates" in r.output


def test_remeasure_measures_an_extrapolated_cell_whole(runs, tmp_path):
    b = shutil.copytree(runs["b"], tmp_path / "b")
    cells = pd.read_parquet(b / "cells.parquet")            # B recorded 5x slower: a cell --remeasure picks
    for k in ("time_s", "time_s_min", "time_s_max"):
        cells[k] = cells[k] * 5
    cells["raw_reads"] = 3.0          # an estimate no pass makes: never compared with the I/O counted here
    cells.to_parquet(b / "cells.parquet", index=False)
    r = _compare(runs["a"], b, "--remeasure", "2")
    assert r.exit_code == 0, r.output
    assert "other code" not in r.output and "not remeasured" not in r.output
    assert "remeasured, 2 alternating passes" in r.output
