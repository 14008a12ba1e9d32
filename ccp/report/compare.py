"""Two runs side by side: the cells they share (same chunks, filters, cache, access), with ratios."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ccp.report import plots
from ccp.report.html import CSS, esc, img, table_html
from ccp.units import format_count, format_seconds

KEY = ["chunks", "filters", "cache_nbytes", "cache_nslots", "cache_w0", "op", "block", "order", "random"]


def _load(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "cells.csv", keep_default_na=False, na_values=[""])


def _env(run: Path) -> str:
    p = run / "env.json"
    if not p.exists():
        return str(run)
    e = json.loads(p.read_text())
    return f"{run} ({e.get('host', '?')}, HDF5 {e.get('hdf5', '?')}, {e.get('time', '?')})"


def compare(run_a: Path, run_b: Path, out_html: Path | None) -> str:
    a, b = _load(run_a), _load(run_b)
    ok = ["ok", "extrapolated"]
    j = a[a["status"].isin(ok)].merge(b[b["status"].isin(ok)], on=KEY, suffixes=("_a", "_b"))
    if j.empty:
        return f"no cells in common between {run_a} and {run_b}"
    j["label"] = plots.cell_labels(j.rename(columns={"flags_a": "flags", "status_a": "status"}))
    j["ratio"] = j["time_s_b"] / j["time_s_a"]
    j = j.sort_values("ratio")
    head = ["cell", "time A", "time B", "B/A", "raw reads A", "raw reads B"]
    rows = [[r.label, format_seconds(r.time_s_a), format_seconds(r.time_s_b), f"{r.ratio:.3g}",
             format_count(r.raw_reads_a), format_count(r.raw_reads_b)] for r in j.itertuples()]
    widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    lines = [f"A: {_env(run_a)}", f"B: {_env(run_b)}", f"{len(j)} cells in common ({len(a)} in A, {len(b)} in B)", ""]
    lines.append("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        lines.append("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    text = "\n".join(lines)
    if out_html is not None:
        out_html = Path(out_html)
        out_html.parent.mkdir(parents=True, exist_ok=True)
        name = plots.compare_plot(j, out_html.parent, out_html.stem + ".png")
        page = (f"<!doctype html><html><head><meta charset='utf-8'><title>ccp compare</title><style>{CSS}</style></head><body>"
                f"<h1>ccp compare</h1><p>A: {esc(_env(run_a))}<br>B: {esc(_env(run_b))}</p>"
                f"<p class='note'>{len(j)} cells in common; ratio is time B / time A.</p>"
                + table_html(head, rows) + img(name, "ratios") + "</body></html>")
        out_html.write_text(page)
    return text
