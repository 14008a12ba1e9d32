"""The report page of a synthetic run folder (schema.py exactly): every section, figure and judgement."""

import html
import re

import numpy as np
import pandas as pd
import pytest

from ccp.report import plots, write_report
from ccp.report.data import (
    SHORT_REQUEST_S,
    UNSTABLE_SPREAD,
    load_cells,
    prepare,
    storage_overhead,
)


def text_of(page: str) -> str:
    """The page as a reader sees it: tags dropped, entities decoded, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_page_is_self_contained_and_every_image_exists(synthetic_report):
    run, page = synthetic_report
    images = re.findall(r'<img src="([^"]+)"', page)
    assert {"time_per_cell.png", "time_by_axis.png", "heatmap_time_s.png", "heatmap_raw_io.png", "latency.png",
            "model_vs_measured.png", "io_trace.png", "storage.png"} <= set(images)
    for name in images:
        assert "/" not in name and (run / name).stat().st_size > 5000, name   # relative, beside the page, really drawn
    assert not re.search(r"(src|href)=[\"']?(https?:|//)", page)           # no CDN, no network
    assert "<style>" in page and "<link" not in page and "<script" not in page
    assert "Could not draw" not in page


@pytest.mark.parametrize("expected", [
    "ccp report: synthetic", "HDF5 2.0.0, h5py 3.16.0", "Test CPU, 2 cores, 8 GiB RAM",
    "256 KiB, 521 hash slots, w0 0.75; 1 MiB, 521 hash slots, w0 0.75",    # the caches in effect
    "8 MiB, 8191 slots",                                                    # and the library default, not used
    "generated 8x30x9x100 >f4", "3 timed (cold: page cache dropped before each) + 1 counted",
], ids=["name", "versions", "machine", "caches", "default-cache", "dataset", "passes"])
def test_header(synthetic_report, expected):
    assert expected in text_of(synthetic_report[1])


def test_sweep_yaml_is_shown_folded_at_the_end(synthetic_report):
    page = synthetic_report[1]
    assert '<h2 id="run">' in page and "name: synthetic" in page and "tables:" in page
    assert "<details><summary>sweep.yaml</summary>" in page                  # folded, not open
    # the page reads: headline, the Table-8 tables, plots; the sweep and the many file operations at the end
    order = [page.index(x) for x in ('id="summary"', 'id="tables"', 'id="time"', 'id="storage"', 'id="run"',
                                     "<summary>sweep.yaml", 'id="io"', "<summary>File operations")]
    assert order == sorted(order)


def test_sweep_table_with_published_values_and_model(synthetic_report):
    run, page = synthetic_report
    text = text_of(page)
    assert "Table 5 in miniature" in text and "small cache" in text and "large cache" in text
    cells = load_cells(run)
    slow = cells[(cells["chunks"] == "4x30x9x100") & (cells["filters"] == "gzip:6") & (cells["cache_nbytes"] == 256 * 1024)
                 & (cells["block"] == "1x1x1x100")].iloc[0]
    assert f"published: 345 s, x{slow['time_s'] / 345:.3g}" in text          # ratio measured / published
    assert "published: 370 ms, x" in text                                  # "0.37s" read as a duration
    assert "model: " in text                                               # predicted beside measured
    assert "Read time" in text                                             # every column reads: "Read time"
    assert "Note: The paper's times are approximate." in text
    assert "matches 2 cells" in text and "Add filters to pick one" in text
    assert "no cell of this run matches" in text


def test_fastest_and_why(synthetic_report):
    """One headline per access pattern; each names the fastest stable cell of that pattern only."""
    run, page = synthetic_report
    cells, _ = prepare(load_cells(run))
    boxes = [text_of(b).strip() for b in re.findall(r'<div class="box (?:good|warn)"><p class="headline">(.*?)</div>', page, re.DOTALL)]
    assert len(boxes) == cells.loc[cells["status"].isin(["ok", "extrapolated"]), "access_label"].nunique() == 3
    rows = next(b for b in boxes if b.startswith("Read 1x1x1x100"))
    ok = cells[cells["status"].isin(["ok", "extrapolated"]) & (cells["access_label"] == "read 1x1x1x100")]
    ok = ok[~ok["flags"].str.contains("unstable")].sort_values("time_s")
    best, worst = ok.iloc[0], ok.iloc[-1]
    assert f"fastest is {best['chunks']} | {best['filters']} | cache {best['cache_label']}" in rows
    assert f"The slowest, {worst['chunks']} | {worst['filters']} | cache {worst['cache_label']}" in rows
    per = best["raw_reads"] / best["requests"]
    assert f"raw-data reads for {int(best['requests']):,} requests ({per:,.3g} per request)" in rows
    assert "chunk larger than the cache" in rows            # the slowest's cause, from ccp's trap check
    assert "Cheapest change from the slowest" in rows
    assert any(b.startswith("Write 1x30x9x100") and "the only configuration measured is 4x30x9x100 | none | cache 1 MiB" in b
               for b in boxes)
    # the 95% interval from the per-request samples surrounds the median pass
    m = re.search(r"fastest is [^,]+, ([\d.]+) ms a pass \(95% CI ([\d.]+) ms to ([\d.]+) ms\)", rows)
    assert m and float(m.group(2)) <= float(m.group(1)) <= float(m.group(3)), rows


def test_stability_and_failures_listed(synthetic_report):
    text = text_of(synthetic_report[1])
    start = text.index("Stability and failures")
    section = text[start:text.index("All cells", start)]
    assert "failed: MemoryError in H5Dread (cell worker exited with status -9)" in section
    assert "4x30x9x100 | gzip:6 | 64 KiB | read 1x1x1x100" in section                     # failed cell by its full label
    assert "unstable" in section and "2.400x" in section
    assert "short" in section and "median request 400 ns" in section
    assert "partial" in section and "25% measured" in section
    assert f"over {UNSTABLE_SPREAD}x" in section and "under 2 us" in section


def test_automatic_tables_and_every_section(synthetic_report):
    page = synthetic_report[1]
    for anchor in ("summary", "run", "tables", "time", "heatmaps", "tradeoff", "requests", "model", "io", "storage", "traps",
                   "stability", "cells"):
        assert f'id="{anchor}"' in page and f'href="#{anchor}"' in page, anchor
    text = text_of(page)
    assert "Read 1x1x1x100: one change at a time from the slowest configuration" in text
    assert "Tables by axis: what each axis alone changes" in text
    assert "By cache: time and raw-data reads + writes" in text
    assert "By access" not in text                                        # patterns do different work: never a column
    assert "first / average" in text                                      # seed 004's table


def test_notes_for_every_figure(synthetic_report):
    page = synthetic_report[1]
    # each figure follows a sentence telling the reader what to look at
    for m in re.finditer(r"<h2 id=\"(\w+)\">", page):
        if m.group(1) in ("time", "heatmaps", "requests", "model", "io", "storage"):
            assert page[m.end():].split("<h2", 1)[0].count('class="note"') >= 1, m.group(1)


@pytest.mark.slow   # a full report of a real run: make test-slow (CI); the page's parts have fast tests beside it
def test_no_tables_key_gives_automatic_pivots(make_run):
    run = make_run(tables=False)
    text = text_of(write_report(run).read_text())
    assert "By chunks: time" in text and "By filters: time" in text
    assert "slowest / fastest" in text


@pytest.mark.slow   # a full report of a real run: make test-slow (CI); the page's parts have fast tests beside it
def test_quick_run_without_counted_pass(make_run):
    run = make_run(quick=True, tables=False)
    page = write_report(run).read_text()
    text = text_of(page)
    assert "io_trace.png" not in page and "heatmap_raw" not in page
    assert "No file operations in this run" in text
    assert "the fastest's I/O counts were not measured" in text and "makes the fastest's" not in text
    assert "quick run: 1 warm pass" in text
    assert "This is a quick run" in text and "(quick: 1 warm pass)" in text   # every time says how it was measured
    assert "Could not draw" not in page


def test_every_cell_failed(make_run):
    from report_synthetic import build_cells

    cells = build_cells()
    cells["status"] = "failed: cell timed out after 600 s"
    run = make_run(tables=False, cells=cells)
    page = write_report(run).read_text()
    text = text_of(page)
    assert "No cell finished" in text and text.count("failed: cell timed out after 600 s") >= len(cells)
    assert "Could not draw" not in page and "<img" not in page


@pytest.mark.slow    # writes two full reports (~34 CPU s); run by make test-slow in CI
def test_report_twice_drops_stale_figures(make_run):
    run = make_run(tables=False)
    write_report(run)
    (run / "io_trace.png").write_bytes(b"stale")
    for part in (run / "io.parquet").glob("*.parquet"):
        part.unlink()
    page = write_report(run).read_text()
    assert not (run / "io_trace.png").exists() and "io_trace.png" not in page


@pytest.mark.slow   # a full report of a real run: make test-slow (CI); the page's parts have fast tests beside it
def test_old_run_without_newer_columns(make_run):
    """A run written before the traps and predicted_* columns existed still renders."""
    run = make_run(tables=False)
    cells = pd.read_parquet(run / "cells.parquet").drop(columns=["traps", "predicted_raw_reads", "predicted_chunk_loads",
                                                                 "predicted_time_s"])
    cells.to_parquet(run / "cells.parquet", index=False)
    page = write_report(run).read_text()
    assert "Could not draw" not in page
    assert "No known trap" in text_of(page)


@pytest.mark.parametrize("filters, storage, nchunks, chunk_bytes, raw, padding", [
    ("none", 120_516_484, 121, 996_004, 205_164.84, 205_164.84),       # seed 002 Table 1: 499x499 of a 5000x5000 int32
    ("none", 100_000_000, 100, 1_000_000, 0.0, 0.0),                   # 500x500: no edge chunks
    ("gzip:6", 40_000_000, 121, 996_004, np.nan, 205_164.84),          # filtered: only the padding before compression
], ids=["unfiltered-edge-chunks", "unfiltered-exact", "filtered"])
def test_storage_overhead(filters, storage, nchunks, chunk_bytes, raw, padding):
    cells = pd.DataFrame({"filters": [filters], "logical_bytes": [100_000_000.0], "storage_bytes": [float(storage)],
                          "file_bytes": [storage + 8584.0], "nchunks": [float(nchunks)], "chunk_bytes": [float(chunk_bytes)]})
    o = storage_overhead(cells).iloc[0]
    assert o["meta_ppm"] == pytest.approx(85.84)
    assert (np.isnan(raw) and np.isnan(o["raw_ppm"])) or o["raw_ppm"] == pytest.approx(raw)
    assert o["padding_ppm"] == pytest.approx(padding)


def test_file_operations_plot_subsamples_a_long_pass(synthetic_report):
    run, _ = synthetic_report
    io = pd.read_parquet(run / "io.parquet")
    sizes = io.groupby("cell_id").size()
    assert sizes.max() > plots.MAX_OPERATION_POINTS      # the fixture has one 60,000-op cell
    sub = plots._subsample(io[io["cell_id"] == sizes.idxmax()].sort_values("seq"), plots.MAX_OPERATION_POINTS)
    assert len(sub) == plots.MAX_OPERATION_POINTS and sub["seq"].is_monotonic_increasing


def test_thresholds_are_the_ones_the_runner_flags_with():
    """One definition (ccp.store.schema): the runner flags with it, the report names it and reads the flags."""
    from ccp.store import schema

    assert schema.UNSTABLE_SPREAD == UNSTABLE_SPREAD and schema.SHORT_REQUEST_S == SHORT_REQUEST_S
    assert schema.stability_flags(3, UNSTABLE_SPREAD * 1.01, SHORT_REQUEST_S / 2) == ["unstable", "short"]
    assert schema.stability_flags(1, UNSTABLE_SPREAD * 2, SHORT_REQUEST_S) == []


# each writes a full report (~20 CPU s): both in make test-slow (CI)
@pytest.mark.parametrize("sweep_name, scale", [pytest.param("synthetic-x0.5", "0.5", marks=pytest.mark.slow),
                                               pytest.param("synthetic-x0.25", "0.25", marks=pytest.mark.slow)],
                         ids=["half", "quarter"])
def test_scaled_run_says_so_beside_every_time(tmp_path, sweep_name, scale):
    """`ccp run --scale F` names the sweep NAME-xF: the page says the times are for scaled data, wherever they appear."""
    from report_synthetic import write_run

    text = text_of(write_report(write_run(tmp_path / "run", tables=False, name=sweep_name)).read_text())
    assert f"This sweep was scaled by {scale}" in text
    assert f"(scaled x{scale})" in text                                  # in the headline and tables
    assert f"one change at a time from the slowest configuration (scaled x{scale})" in text


def test_all_cells_shows_each_cells_cpu_time_per_pass_beside_its_wall_time(synthetic_report):
    """audit22 F5 (issue 22: the report shows each pass's wall time and the process's CPU time): a CPU/pass column
    right after the time, the median timed pass's CPU time; "n/a" where the run did not record it."""
    from ccp.units import format_seconds

    run, page = synthetic_report
    table = page.split('id="cells"')[1].split("</table>")[0]
    assert "<th>time</th><th>CPU/pass</th>" in table
    cells = pd.read_parquet(run / "cells.parquet")
    cell = cells[(cells["status"] == "ok") & (cells["op"] == "write")].iloc[0]
    req = pd.read_parquet(run / "requests.parquet" / f"{cell['cell_id']}.parquet")
    cpu = req.loc[(req["phase"] == "open") & (req["pass"] >= 0), "pass_cpu_s"].median()
    row = next(r for r in table.split("<tr>") if "write 1x30x9x100" in r)
    assert f"<td>{format_seconds(cpu)}</td>" in row, row
    extrapolated = next(r for r in table.split("<tr>") if "extrapolated" in r and "write" not in r)
    assert "<td>n/a</td>" in extrapolated, extrapolated
