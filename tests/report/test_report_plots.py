"""The figures read well: engineering units on time axes, ratios as factors, no chart with nothing to show, and the
storage-vs-time Pareto front; and tables that do not shade noise green."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from report_synthetic import KIB, build_cells

from ccp.report import plots
from ccp.report.data import normalise, prepare
from ccp.report.tables import pivot_tables


def _labels(ax, axis="x"):
    ax.figure.canvas.draw()
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks if t.get_text()]


@pytest.mark.parametrize("lo, hi", [(3e-6, 2e-3), (0.06, 0.3), (0.01, 400.0)], ids=["us-ms", "narrow", "wide"])
def test_time_axes_in_engineering_units(lo, hi):
    fig, ax = plt.subplots()
    ax.plot([lo, hi], [1, 2])
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    plots._seconds_axis(ax)
    labels = _labels(ax)
    plt.close(fig)
    assert labels and all(lab.endswith("s") and "10^" not in lab and "times" not in lab for lab in labels), labels
    assert len(labels) <= 12


def test_ratio_axis_reads_as_factors():
    fig, ax = plt.subplots()
    ax.plot([0.6, 3.0], [1, 2])
    ax.set_xscale("log")
    ax.set_xlim(0.6, 3.0)
    plots._times_axis(ax)
    labels = _labels(ax)
    plt.close(fig)
    assert labels and all(lab.endswith("x") for lab in labels) and "1x" in labels and "2x" in labels, labels


def _cells(**where):
    cells, _ = prepare(normalise(build_cells()))
    for k, v in where.items():
        cells = cells[cells[k] == v]
    return prepare(normalise(cells.drop(columns=["label", "config_label", "cache_label", "access_label"])))[0]


def test_no_one_column_heatmap(tmp_path):
    one_cache = _cells(cache_nbytes=1024 * KIB)
    assert plots.heatmaps(one_cache, tmp_path) == ([], 0)


def test_no_compression_panel_without_filters(tmp_path):
    unfiltered = _cells(filters="none")
    name = plots.storage(plots.storage_table(unfiltered), tmp_path)
    from PIL import Image

    with Image.open(tmp_path / name) as im:
        assert im.size[0] < 1000      # one panel (8 in wide), not two (11 in)


def test_storage_vs_time_marks_the_pareto_front(tmp_path):
    cells, _ = prepare(normalise(build_cells()))
    assert plots.storage_vs_time(cells, tmp_path) == "storage_vs_time.png"
    same = cells.assign(storage_bytes=1000.0)
    assert plots.storage_vs_time(same, tmp_path) is None          # the layouts store the same bytes: nothing to trade


@pytest.mark.parametrize("points, front", [
    ([(1, 5), (2, 3), (3, 4), (4, 1)], [0, 1, 3]),
    ([(1, 1), (2, 2)], [0]),
    ([(2, 1), (1, 3), (1, 2)], [2, 0]),
], ids=["staircase", "one-dominates", "ties-on-size"])
def test_pareto_front(points, front):
    assert plots.pareto_front(points) == front


def test_noise_is_not_shaded_best():
    """Issue 16: a 256 KiB cache shaded green against 1 MiB at 1.1x. Within the threshold: a tie, no green."""
    cells, labels = prepare(normalise(build_cells()))
    cells = cells[cells["status"] == "ok"].copy()
    one = (cells["cache_nbytes"] == 256 * KIB)
    # make each 1 MiB cell 1.1x its 256 KiB twin
    key = ["chunks", "filters", "op", "block"]
    twin = cells[one].set_index(key)["time_s"]
    for i, c in cells[~one].iterrows():
        k = tuple(c[key])
        if k in twin.index:
            t = float(twin.loc[k]) * 1.1
            cells.loc[i, ["time_s", "time_s_min", "time_s_max"]] = [t, t * 0.99, t * 1.01]
    cells["flags"] = ""
    by_cache = next(t for t in pivot_tables(cells, labels) if t.title.startswith("By cache"))
    shaded = [c for row in by_cache.rows for c in row if getattr(c, "cls", "") == "best"]
    assert not shaded, [str(c) for c in shaded]
    assert any("tie with the fastest" in str(c) for row in by_cache.rows for c in row)


def test_a_real_difference_is_shaded_best():
    cells, labels = prepare(normalise(build_cells()))
    by_chunks = next(t for t in pivot_tables(cells, labels) if t.title.startswith("By chunks"))
    assert any(getattr(c, "cls", "") == "best" for row in by_chunks.rows for c in row)


def test_time_per_cell_marks_extrapolated(tmp_path):
    cells, _ = prepare(normalise(build_cells()))
    assert plots.time_per_cell(cells, tmp_path) == "time_per_cell.png"
    labels = [plots._tagged(lab, c, plots.PLAIN) for lab, (_, c) in zip(cells["label"], cells.iterrows())]
    assert any(lab.endswith("[extrapolated]") for lab in labels)
    assert np.isfinite(pd.to_numeric(cells["time_s"], errors="coerce")).any()
