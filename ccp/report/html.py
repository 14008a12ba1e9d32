"""The report page: one self-contained HTML file (inline CSS, PNGs beside it), readable from disk."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd
import yaml

from ccp.report import plots
from ccp.report.tables import auto_tables, parse_tables, render, varying_axes, with_labels
from ccp.units import format_bytes, format_count, format_seconds

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:14px} th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3} td:first-child,th:first-child{text-align:left}
.meta td{text-align:left} .note{color:#555;font-size:14px} .warn{background:#fff4e5;border-left:4px solid #f0a030;padding:.5em 1em}
.fail{background:#fdecea;border-left:4px solid #c0392b;padding:.5em 1em} .good{background:#eef7ee;border-left:4px solid #2e8b57;padding:.6em 1em}
img{max-width:100%;border:1px solid #eee;margin:.5em 0} pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:13px}
details summary{cursor:pointer;color:#2c7fb8}
"""


def esc(x) -> str:
    return html.escape("" if x is None else str(x))


def table_html(header, rows, cls="") -> str:
    out = [f'<table class="{cls}">']
    if header:
        out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def img(name: str | None, alt: str) -> str:
    return f'<img src="{esc(name)}" alt="{esc(alt)}">' if name else ""


def _num(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return v


def explain_fastest(cells: pd.DataFrame) -> str:
    """The fastest and slowest cell doing the same work, and the raw reads per request that explain them."""
    ok = with_labels(cells[cells["status"].isin(["ok", "extrapolated"])])
    if ok.empty:
        return "<p>No cell finished.</p>"
    parts = []
    for op, g in ok.groupby("op", sort=False):
        g = g.sort_values("time_s")
        best, worst = g.iloc[0], g.iloc[-1]
        label = plots.cell_labels(g)

        def why(c):
            n = max(_num(c["requests"]), 1)
            io = "raw_reads" if op == "read" else "raw_writes"
            per = _num(c.get(io)) / n
            loads = _num(c.get("predicted_chunk_loads"))
            s = (f"{format_count(c.get(io))} raw-data {'reads' if op == 'read' else 'writes'} for {format_count(c['requests'])} requests "
                 f"({per:.3g} per request)")
            if loads == loads and c["filters"] != "none":
                s += f", {format_count(loads)} chunk decompressions of {format_bytes(c['chunk_bytes'])} chunks (model)"
            if op == "write" and _num(c.get("raw_reads")) > 0:
                s += f", and {format_count(c['raw_reads'])} reads of chunks evicted half-written"
            return s

        text = (f"<p><b>{esc(op)}:</b> fastest is <b>{esc(label.loc[best.name])}</b> at {format_seconds(best['time_s'])} a pass: "
                f"{esc(why(best))}.")
        if len(g) > 1:
            ratio = worst["time_s"] / best["time_s"] if best["time_s"] else float("nan")
            text += (f" Slowest is <b>{esc(label.loc[worst.name])}</b> at {format_seconds(worst['time_s'])} "
                     f"({ratio:,.0f}x slower): {esc(why(worst))}.")
        parts.append(text + "</p>")
    return '<div class="good">' + "".join(parts) + "</div>"


def stability(cells: pd.DataFrame) -> str:
    out = []
    failed = cells[~cells["status"].isin(["ok", "extrapolated"])]
    if len(failed):
        out.append('<div class="fail"><b>Failed cells</b> (a rerun with the same --out retries them):<ul>' +
                   "".join(f"<li>{esc(l)}: {esc(s)}</li>" for l, s in zip(plots.cell_labels(failed), failed["status"])) + "</ul></div>")
    flags = cells["flags"].astype(object).fillna("").astype(str)   # all-empty flags read back as float NaN
    for flag, text in (("unstable", "passes spread by more than 1.5x (max/min): rerun on a quiet machine or add repeats"),
                       ("short", "median request under 2 us: single requests are too short to time reliably; trust the pass totals"),
                       ("partial", "time budget: a prefix of the requests was measured and the rest extrapolated"),
                       ("io-trace-truncated", "the stored I/O trace is capped (counts are exact)")):
        sel = cells[flags.str.contains(flag)]
        if len(sel):
            items = "".join(f"<li>{esc(l)} (spread {_num(sp):.2f}x)</li>" if flag == "unstable" else f"<li>{esc(l)}</li>"
                            for l, sp in zip(plots.cell_labels(sel), sel["spread"]))
            out.append(f'<div class="warn"><b>{esc(flag)}</b>: {esc(text)}<ul>{items}</ul></div>')
    return "".join(out) or "<p>Every cell is stable: passes within 1.5x of each other, requests long enough to time.</p>"


def traps_section(cells: pd.DataFrame) -> str:
    """The traps ccp found in the cells' layouts, caches and patterns, and HDF5's version trap."""
    out = []
    if "traps" in cells:
        lab = plots.cell_labels(cells)
        items = [(lab.loc[i], t) for i, t in cells["traps"].items() if isinstance(t, str) and t]
        if items:
            out.append('<div class="warn"><ul>' + "".join(f"<li><b>{esc(l)}</b>: {esc(t)}</li>" for l, t in items) + "</ul></div>")
    big = cells["chunk_bytes"].astype(float)
    if ((big > 1024 * 1024) & (big <= 8 * 1024 * 1024)).any():
        out.append('<p class="note">Version trap: some chunks are larger than HDF5 1.x\'s default chunk cache (1 MiB) but fit '
                   "HDF5 2.0's (8 MiB): a reader that keeps the library default is fast with one version and slow with the other. "
                   "ccp sets every cache explicitly, so the cells above do not depend on it.</p>")
    return "".join(out) or "<p>No traps found in these cells.</p>"


def cells_table(cells: pd.DataFrame) -> str:
    lab = plots.cell_labels(cells)
    cols = ["time", "min-max", "requests", "raw reads", "raw read", "raw writes", "raw written", "meta ops",
            "model raw reads", "chunk loads (model)", "status"]
    rows = []
    for i, c in cells.iterrows():
        rows.append([lab.loc[i], format_seconds(c.get("time_s")),
                     f"{format_seconds(c.get('time_s_min'))}-{format_seconds(c.get('time_s_max'))}",
                     format_count(c.get("requests")), format_count(c.get("raw_reads")), format_bytes(c.get("raw_read_bytes")),
                     format_count(c.get("raw_writes")), format_bytes(c.get("raw_write_bytes")),
                     format_count(_num(c.get("meta_reads")) + _num(c.get("meta_writes"))),
                     format_count(c.get("predicted_raw_reads")), format_count(c.get("predicted_chunk_loads")), c.get("status")])
    return table_html(["cell"] + cols, rows)


def build(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    cells = pd.read_csv(run_dir / "cells.csv", keep_default_na=False, na_values=[""])
    env = json.loads((run_dir / "env.json").read_text()) if (run_dir / "env.json").exists() else {}
    sweep_text = (run_dir / "sweep.yaml").read_text() if (run_dir / "sweep.yaml").exists() else ""
    sweep = yaml.safe_load(sweep_text) or {}
    requests = _read_parts(run_dir / "requests.parquet", ["cell_id", "pass", "phase", "request", "time_s"])
    io = _read_parts(run_dir / "io.parquet", ["cell_id", "seq", "kind", "mem_type", "offset"])

    figs = {
        "time": plots.time_per_cell(cells, run_dir), "axis": plots.time_by_axis(cells, run_dir),
        "heat": plots.heatmaps(cells, run_dir), "lat": plots.latency(cells, requests, run_dir),
        "io": plots.io_trace(cells, io, run_dir), "storage": plots.storage(cells, run_dir),
    }
    tables = []
    if sweep.get("tables"):
        for spec in parse_tables(sweep["tables"]):
            t = render(spec, cells, file_label=lambda c: _file_label(c, sweep))
            t["header"] = [""] + t["header"]
            tables.append(t)
    tables += auto_tables(cells) if not sweep.get("tables") else []

    caches = sorted({(int(n), int(s), float(w)) for n, s, w in zip(cells["cache_nbytes"], cells["cache_nslots"], cells["cache_w0"])
                     if n == n and s == s})
    default = env.get("hdf5_default_chunk_cache", {}).get("dapl", {})
    meta_rows = [
        ["sweep", sweep.get("name", run_dir.parent.name)], ["run", str(run_dir)], ["when", env.get("time", "?")],
        ["machine", f"{env.get('cpu', '?')}, {env.get('cores', '?')} cores, {format_bytes(env.get('memory_bytes'))} RAM, {env.get('kernel', '?')}"],
        ["work folder filesystem", env.get("filesystem", "?")],
        ["versions", f"HDF5 {env.get('hdf5', '?')}, h5py {env.get('h5py', '?')}, numpy {env.get('numpy', '?')}, "
                     f"hdf5plugin {env.get('hdf5plugin', '?')}, Python {env.get('python', '?')}"],
        ["ccp", f"{env.get('ccp', '?')} at {str(env.get('git_commit') or '?')[:12]}{' (uncommitted changes)' if env.get('git_dirty') else ''}"],
        ["chunk caches used (read back from HDF5)", "; ".join(f"{format_bytes(n)}, {s} slots, w0 {w:g}" for n, s, w in caches)],
        ["this HDF5's own default (not used)", f"{format_bytes(default.get('nbytes'))}, {default.get('nslots', '?')} slots, w0 {default.get('w0', '?')}"],
        ["passes", f"{sweep.get('repeats', '?')} timed ({'cold: page cache dropped before each' if sweep.get('cold') else 'warm'}) + 1 traced"
                   + (" (quick run: 1 warm pass, no trace)" if sweep.get("quick") else "")],
    ]
    axes = [n for n, _ in varying_axes(cells)] or ["none"]
    storage_rows = [[r.chunks, r.filters, format_bytes(r.logical_bytes), format_bytes(r.storage_bytes), format_bytes(r.file_bytes),
                     f"{r.meta_ppm:,.2f}", "-" if r.raw_ppm != r.raw_ppm else f"{r.raw_ppm:,.2f}",
                     "-" if r.compression_ratio != r.compression_ratio else f"{r.compression_ratio:.4g}"]
                    for r in plots.storage_table(cells).itertuples()]
    body = [
        f"<h1>ccp report: {esc(sweep.get('name', ''))}</h1>",
        f'<p class="note">{len(cells)} cells; axes that vary: {esc(", ".join(axes))}. Regenerate with '
        f"<code>ccp report {esc(run_dir)}</code>.</p>",
        table_html(None, meta_rows, "meta"),
        "<h2>Which configuration is fastest, and why</h2>", explain_fastest(cells),
        "<h2>Comparison tables</h2>",
        '<p class="note">Configurations side by side, as in the HDF Group papers. Where the sweep gives a published value, '
        "it is printed beside ours with the ratio (ours / paper).</p>",
    ]
    for t in tables:
        body.append(f"<h3>{esc(t['title'])}</h3>" + table_html(t["header"], t["rows"]))
        if t.get("note"):
            body.append(f'<p class="note">{esc(t["note"])}</p>')
        if t["missing"]:
            body.append(f'<p class="warn">No cell matches: {esc("; ".join(t["missing"]))}</p>')
    body += [
        "<h2>Time</h2>", '<p class="note">Bars are the median pass; whiskers span the fastest and slowest pass. Red bars are '
        "extrapolated from a measured prefix (time budget).</p>", img(figs["time"], "time per cell"), img(figs["axis"], "time by axis"),
        *([f"<h2>Chunk shape x cache</h2><p class=\"note\">Each square is a cell; the brighter, the slower (or the more raw reads), on one scale for all panels. "
           "A cache smaller than a compressed chunk shows as one raw read per request.</p>"] if figs["heat"] else []),
        *[img(h, "heatmap") for h in figs["heat"]],
        "<h2>Requests: first against the rest</h2>", '<p class="note">A first request that costs much more than the rest is a '
        "chunk being read and decompressed; when every request costs that much, the cache is too small to keep the chunk (seed 004).</p>",
        img(figs["lat"], "latency"),
        "<h2>File-level I/O of the traced pass</h2>", '<p class="note">Every read and write HDF5 issued to the file, '
        "by offset: raw data apart from metadata. Staircases are chunks read in order; repeated rows are the same chunk read again.</p>",
        img(figs["io"], "I/O trace"),
        "<h2>Storage</h2>", '<p class="note">Metadata overhead: file size minus dataset storage, per million bytes of data. '
        "Raw-data overhead (unfiltered layouts): allocated chunk bytes beyond the data, from partial edge chunks (seed 002, Table 1).</p>",
        table_html(["chunks", "filters", "data", "stored", "file", "metadata ppm", "raw-data ppm", "ratio"], storage_rows),
        img(figs["storage"], "storage"),
        "<h2>Traps</h2>", traps_section(cells),
        "<h2>Stability</h2>", stability(cells),
        "<h2>All cells</h2>", cells_table(cells),
        f"<details><summary>The sweep as run</summary><pre>{esc(sweep_text)}</pre></details>",
    ]
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>ccp report: {esc(sweep.get('name', ''))}</title>" \
           f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    out = run_dir / "report.html"
    tmp = out.with_name(".report.html.tmp")
    tmp.write_text(page)
    tmp.replace(out)
    return out


def _file_label(cell, sweep) -> str:
    ds = sweep.get("dataset", {})
    base = Path(ds["file"]).name if ds.get("file") else "generated"
    return f"{base} ({cell['chunks']}, {cell['filters']})"


def _read_parts(folder: Path, columns) -> pd.DataFrame | None:
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return None
    return pd.read_parquet(folder, columns=columns)


_ = math
