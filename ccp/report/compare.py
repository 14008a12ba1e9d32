"""Two runs side by side: the cells they share (same chunks, filters, cache, access), with ratios B / A."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.report import plots
from ccp.report.data import Labels, finite, is_ok, load_cells, load_env
from ccp.report.html import CSS, esc, img, note, table_html
from ccp.units import format_count, format_seconds

KEY = ["chunks", "filters", "cache_nbytes", "cache_nslots", "cache_w0", "op", "block", "order", "random"]
NOISE = 1.1   # a ratio within 10% of 1 is called "about the same"


def _env_line(run: Path) -> str:
    e = load_env(run)
    if not e:
        return str(run)
    return f"{run} ({e.get('host', '?')}, HDF5 {e.get('hdf5', '?')}, h5py {e.get('h5py', '?')}, {e.get('time', '?')})"


def _keyed(cells: pd.DataFrame) -> pd.DataFrame:
    """Match keys made comparable across runs: text as text, numbers rounded (a float read back may differ in the last bit)."""
    k = cells.copy()
    for col in ("cache_nbytes", "cache_nslots", "random"):
        k[f"_k_{col}"] = k[col].fillna(-1).round().astype("int64")
    k["_k_cache_w0"] = k["cache_w0"].fillna(-1).round(6)
    for col in ("chunks", "filters", "op", "block", "order"):
        k[f"_k_{col}"] = k[col].astype(str)
    return k


def _ratio(b, a) -> float:
    return float(b) / float(a) if finite(a) and finite(b) and float(a) > 0 else float("nan")


def _fmt_ratio(r) -> str:
    return f"{r:.3g}" if finite(r) else "-"


def join(run_a: Path, run_b: Path):
    a, b = load_cells(Path(run_a)), load_cells(Path(run_b))
    labels = Labels.of(a, b)
    a, b = labels.add(_keyed(a)), labels.add(_keyed(b))
    keys = [f"_k_{c}" for c in KEY]
    fa, fb = a[is_ok(a)], b[is_ok(b)]
    cols = keys + ["label", "time_s", "time_s_min", "time_s_max", "raw_reads", "raw_writes", "first_request_s", "status"]
    j = fa[cols].merge(fb[cols].drop(columns=["label"]), on=keys, suffixes=("_a", "_b"))
    j["ratio"] = [_ratio(tb, ta) for ta, tb in zip(j["time_s_a"], j["time_s_b"])]
    j = j.sort_values("ratio", na_position="last").reset_index(drop=True)
    return a, b, j


def compare(run_a: Path, run_b: Path, out_html: Path | None) -> str:
    run_a, run_b = Path(run_a), Path(run_b)
    a, b, j = join(run_a, run_b)
    head = ["cell", "time A", "time B", "B / A", "raw reads A", "raw reads B", "raw writes A", "raw writes B"]
    show_writes = (j[["raw_writes_a", "raw_writes_b"]].fillna(0) != 0).any().any()
    show_reads = (j[["raw_reads_a", "raw_reads_b"]].fillna(0) != 0).any().any() or not show_writes
    keep = [True, True, True, True, show_reads, show_reads, show_writes, show_writes]
    head = [h for h, k in zip(head, keep) if k]
    rows = []
    for r in j.itertuples():
        row = [r.label, format_seconds(r.time_s_a), format_seconds(r.time_s_b), _fmt_ratio(r.ratio),
               format_count(r.raw_reads_a), format_count(r.raw_reads_b), format_count(r.raw_writes_a), format_count(r.raw_writes_b)]
        rows.append([c for c, k in zip(row, keep) if k])

    ratios = j["ratio"][j["ratio"].map(finite) & (j["ratio"] > 0)]
    lines = [f"A: {_env_line(run_a)}", f"B: {_env_line(run_b)}",
             f"{len(j)} cells in common ({len(a)} in A, {len(b)} in B; only finished cells are compared)"]
    summary = ""
    if len(ratios):
        gm = math.exp(float(np.log(ratios).mean()))
        slower, faster = int((ratios > NOISE).sum()), int((ratios < 1 / NOISE).sum())
        summary = (f"B / A time: geometric mean {gm:.3g}; B slower by more than {NOISE - 1:.0%} in {slower} cells, "
                   f"faster in {faster}, about the same in {len(ratios) - slower - faster}")
        lines.append(summary)
        counts_differ = j[(j["raw_reads_a"] != j["raw_reads_b"]) & j["raw_reads_a"].notna() & j["raw_reads_b"].notna()]
        if len(counts_differ):
            lines.append(f"raw-data reads differ in {len(counts_differ)} cells: the two runs' HDF5 did different I/O there")
    lines.append("")
    if rows:
        widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
        fmt_line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
        lines.append(fmt_line(head))
        lines.append("  ".join("-" * w for w in widths))
        lines += [fmt_line(r) for r in rows]
    else:
        lines.append(f"no cells in common between {run_a} and {run_b}")
    text = "\n".join(lines)

    if out_html is not None:
        out_html = Path(out_html)
        out_html.parent.mkdir(parents=True, exist_ok=True)
        name = plots.compare_plot(j, out_html.parent, out_html.stem + ".png") if len(j) else None
        body = [
            "<h1>ccp compare</h1>",
            table_html(None, [["A", _env_line(run_a)], ["B", _env_line(run_b)],
                              ["cells", f"{len(j)} in common ({len(a)} in A, {len(b)} in B)"]], "meta"),
            note(esc(summary) + ("." if summary else "") + " Ratios are time B / time A: above 1, B is slower. Cells match on "
                 "chunks, filters, cache (bytes, slots, w0) and access (op, block, order, random)."),
            img(name, "time ratios B / A"),
            table_html(head, rows) if rows else note("No cells in common."),
        ]
        page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>ccp compare</title><style>{CSS}</style>"
                f"</head><body>{''.join(body)}</body></html>")
        out_html.write_text(page, encoding="utf-8")
    return text
