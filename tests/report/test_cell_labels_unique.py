"""Two different cells never get the same label (breaker8 F9): a contiguous dataset has no chunk cache, so HDF5 reads
back its default whatever the sweep set, and three contiguous cells of three caches all read "cache 8 MiB" -- the
winner "tied with" and "undecided against" itself. Labels name the cache the sweep set (the cell id is its hash), or
say it is not known."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from report_synthetic import write_run

from ccp.config.sweep import parse_sweep, sweep_as_dict
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.report.data import configured_caches, load_cells, normalise, prepare
from ccp.report.headline import headline_text, headlines

CONTIGUOUS_SWEEP = {
    "name": "contiguous-caches",
    "dataset": {"path": "/data", "generate": {"shape": [32, 128, 128], "dtype": "<f4", "data": "normal", "seed": 0}},
    "matrix": {"chunks": ["contiguous", [8, 64, 64]], "filters": ["none"],
               "cache": ["1MiB", "8MiB", {"nbytes": "1MiB", "w0": 0.0}],
               "access": [{"op": "read", "block": [1, 128, 128]}]},
    "repeats": 3,
}
READ_BACK_DEFAULT = {"cache_nbytes": 8 << 20, "cache_nslots": 8191, "cache_w0": 0.75}   # what HDF5 2.0 reports


def contiguous_run(folder: Path, with_sweep: bool = True) -> Path:
    """A run of CONTIGUOUS_SWEEP as the engine writes its cells: ids from the sweep, each contiguous cell's cache as
    HDF5 read it back (the library default), each chunked cell's as set."""
    sweep = parse_sweep(CONTIGUOUS_SWEEP)
    rows = []
    for i, c in enumerate(expand(sweep, describe_source(sweep.dataset))):
        cache = READ_BACK_DEFAULT if c.chunks is None else {"cache_nbytes": c.cache.nbytes, "cache_nslots": c.cache.nslots,
                                                            "cache_w0": c.cache.w0}
        t = 0.003 * (i + 1)
        rows.append({**c.columns(), **cache, "cell_id": c.cell_id, "requests": 32, "repeats": 3, "time_s": t,
                     "time_s_min": t * 0.98, "time_s_max": t * 1.02, "spread": 1.04, "status": "ok", "flags": "",
                     "raw_reads": 32 if c.chunks is None else 16, "raw_read_bytes": 2 << 20})
    folder.mkdir(parents=True)
    normalise(pd.DataFrame(rows)).to_parquet(folder / "cells.parquet", index=False)
    if with_sweep:
        (folder / "sweep.yaml").write_text(yaml.safe_dump(sweep_as_dict(sweep), sort_keys=False))
    return folder


def assert_one_label_per_cell(cells: pd.DataFrame) -> None:
    ok = cells[cells["cell_id"] != ""]
    for col in ("label", "config_label"):
        by = ok.groupby(["access_label", col])["cell_id"].nunique()
        assert by.max() == 1, by[by > 1]


@pytest.mark.parametrize("options", [{}, {"quick": True}, {"tables": False}], ids=["synthetic", "quick", "no-tables"])
def test_synthetic_runs_label_every_cell_apart(tmp_path, options):
    run = write_run(tmp_path / "run", **options)
    cells, _ = prepare(load_cells(run), configured_caches(run))
    assert_one_label_per_cell(cells)


def test_contiguous_cells_are_labelled_by_the_cache_their_sweep_set(tmp_path):
    run = contiguous_run(tmp_path / "run")
    cells, _ = prepare(load_cells(run), configured_caches(run))
    assert_one_label_per_cell(cells)
    contiguous = cells[cells["chunks"] == "contiguous"]
    assert sorted(contiguous["cache_label"]) == ["1 MiB, w0 0", "1 MiB, w0 0.75", "8 MiB, w0 0.75"]
    (h,) = headlines(cells)
    text = " ".join(headline_text(h))
    assert text.count("contiguous | cache 1 MiB, w0 0.75") == 1     # the winner, named once: never tied with itself


def test_contiguous_cells_whose_sweep_is_gone_are_still_told_apart(tmp_path):
    run = contiguous_run(tmp_path / "run", with_sweep=False)
    assert configured_caches(run) == {}
    cells, _ = prepare(load_cells(run), configured_caches(run))
    assert_one_label_per_cell(cells)
    contiguous = cells[cells["chunks"] == "contiguous"]
    assert all(lab.startswith("not known (contiguous: no chunk cache; cell ") for lab in contiguous["cache_label"])
    assert "8 MiB" not in " ".join(contiguous["label"])     # never a cache the sweep did not set
