"""Comparison tables in the seed papers' style: configurations as columns, quantities as rows.

A sweep may declare ``tables:``; each picks cells by their axis values and lists rows from a fixed
vocabulary, optionally with a published ``reference`` value per column printed beside ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ccp.errors import ConfigError, suggest
from ccp.units import format_bytes, format_count, format_seconds, shape_str


def _fmt_ratio(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.4g}"


def _fmt_text(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


# row name -> (label, cells column, formatter)
ROWS = {
    "file": ("File", None, _fmt_text),
    "chunks": ("Chunk size", "chunks", _fmt_text),
    "filters": ("Filters", "filters", _fmt_text),
    "cache": ("Cache size", "cache_nbytes", format_bytes),
    "nslots": ("Cache slots", "cache_nslots", format_count),
    "w0": ("Cache w0", "cache_w0", _fmt_ratio),
    "op": ("Operation", "op", _fmt_text),
    "block": ("Access pattern (hyperslab)", "block", _fmt_text),
    "requests": ("Requests", "requests", format_count),
    "time": ("Time", "time_s", format_seconds),
    "time_min": ("Time (fastest pass)", "time_s_min", format_seconds),
    "time_max": ("Time (slowest pass)", "time_s_max", format_seconds),
    "first_request": ("First request", "first_request_s", format_seconds),
    "request_median": ("Median request", "request_s_median", format_seconds),
    "raw_reads": ("Raw-data reads", "raw_reads", format_count),
    "raw_read_bytes": ("Raw data read", "raw_read_bytes", format_bytes),
    "raw_writes": ("Raw-data writes", "raw_writes", format_count),
    "raw_write_bytes": ("Raw data written", "raw_write_bytes", format_bytes),
    "meta_reads": ("Metadata reads", "meta_reads", format_count),
    "meta_writes": ("Metadata writes", "meta_writes", format_count),
    "io_ops": ("File I/O operations", "io_ops", format_count),
    "chunk_loads": ("Chunk loads (model)", "predicted_chunk_loads", format_count),
    "predicted_raw_reads": ("Raw-data reads (model)", "predicted_raw_reads", format_count),
    "file_bytes": ("File size", "file_bytes", format_bytes),
    "storage_bytes": ("Dataset storage", "storage_bytes", format_bytes),
    "compression_ratio": ("Compression ratio", "compression_ratio", _fmt_ratio),
    "repack": ("Repack time", "repack_s", format_seconds),
    "status": ("Status", "status", _fmt_text),
}
SELECTOR_KEYS = ("chunks", "filters", "cache", "nslots", "w0", "op", "block", "order", "random")
TABLE_KEYS = ("title", "rows", "columns", "labels", "reference", "note")


@dataclass(frozen=True)
class TableSpec:
    title: str
    rows: tuple[str, ...]
    columns: tuple[tuple[tuple[str, object], ...], ...]   # each: ((key, normalised value), ...)
    labels: tuple[str, ...] = ()
    reference: tuple[tuple[tuple[str, float], ...], ...] = ()
    note: str = ""


def _norm_selector(key: str, value, where: str):
    from ccp.config.filters import parse_filters
    from ccp.config.sweep import parse_chunks, parse_shape
    from ccp.units import parse_size

    if key == "chunks":
        c = parse_chunks(value, where)
        return shape_str(c) if not isinstance(c, str) else c
    if key == "filters":
        return parse_filters(value, where).spec
    if key == "cache":
        return parse_size(value, where)
    if key in ("block", "order"):
        return shape_str(parse_shape(value, where))
    if key in ("nslots", "random"):
        return int(value)
    if key == "w0":
        return float(value)
    return str(value)


def parse_tables(raw) -> tuple[TableSpec, ...]:
    """Validate a sweep's ``tables:``; errors name the key."""
    if not isinstance(raw, list):
        raise ConfigError("tables", "expected a list of tables, each {title, rows, columns}")
    out = []
    for i, t in enumerate(raw):
        where = f"tables[{i}]"
        if not isinstance(t, dict):
            raise ConfigError(where, "expected a mapping with title, rows and columns")
        for k in t:
            if k not in TABLE_KEYS:
                raise ConfigError(f"{where}.{k}", f"unknown key{suggest(k, TABLE_KEYS)}; allowed: {', '.join(TABLE_KEYS)}")
        rows = t.get("rows") or ["chunks", "filters", "cache", "block", "time", "raw_reads"]
        for j, r in enumerate(rows):
            if r not in ROWS:
                raise ConfigError(f"{where}.rows[{j}]", f"unknown row {r!r}{suggest(r, ROWS)}; rows: {', '.join(ROWS)}")
        cols = t.get("columns")
        if not isinstance(cols, list) or not cols:
            raise ConfigError(f"{where}.columns", "expected a list of cell selectors like {cache: 1MiB, block: 1x1x1x717}")
        columns = []
        for j, sel in enumerate(cols):
            if not isinstance(sel, dict):
                raise ConfigError(f"{where}.columns[{j}]", "expected a mapping of axis values")
            for k in sel:
                if k not in SELECTOR_KEYS:
                    raise ConfigError(f"{where}.columns[{j}].{k}", f"unknown axis{suggest(k, SELECTOR_KEYS)}; axes: {', '.join(SELECTOR_KEYS)}")
            columns.append(tuple((k, _norm_selector(k, v, f"{where}.columns[{j}].{k}")) for k, v in sel.items()))
        labels = t.get("labels") or []
        if labels and len(labels) != len(columns):
            raise ConfigError(f"{where}.labels", f"has {len(labels)} labels for {len(columns)} columns")
        refs = t.get("reference") or []
        if refs and len(refs) != len(columns):
            raise ConfigError(f"{where}.reference", f"has {len(refs)} entries for {len(columns)} columns (use {{}} for none)")
        reference = []
        for j, ref in enumerate(refs):
            ref = ref or {}
            for k, v in ref.items():
                if k not in ROWS:
                    raise ConfigError(f"{where}.reference[{j}].{k}", f"unknown row{suggest(k, ROWS)}")
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ConfigError(f"{where}.reference[{j}].{k}", f"expected a number, got {v!r}")
            reference.append(tuple((k, float(v)) for k, v in ref.items()))
        out.append(TableSpec(str(t.get("title") or f"Table {i + 1}"), tuple(rows), tuple(columns),
                             tuple(str(x) for x in labels), tuple(reference), str(t.get("note") or "")))
    return tuple(out)


_SELECT_COL = {"chunks": "chunks", "filters": "filters", "cache": "cache_nbytes", "nslots": "cache_nslots",
               "w0": "cache_w0", "op": "op", "block": "block", "order": "order", "random": "random"}


def select(cells: pd.DataFrame, selector) -> pd.DataFrame:
    m = pd.Series(True, index=cells.index)
    for k, v in selector:
        col = cells[_SELECT_COL[k]]
        m &= (col.astype(float) == float(v)) if k in ("cache", "nslots", "w0", "random") else (col.astype(str) == str(v))
    return cells[m]


def render(spec: TableSpec, cells: pd.DataFrame, file_label=None) -> dict:
    """{'title', 'header': [...], 'rows': [[label, cell text...]], 'missing': [...]} for one table."""
    cells = cells.assign(io_ops=cells[["raw_reads", "raw_writes", "meta_reads", "meta_writes"]].sum(axis=1, min_count=1))
    picked, missing = [], []
    for j, sel in enumerate(spec.columns):
        m = select(cells, sel)
        if len(m) == 0:
            missing.append(", ".join(f"{k}={v}" for k, v in sel))
            picked.append(None)
        else:
            picked.append(m.iloc[0])
    header = list(spec.labels) if spec.labels else [_column_label(sel) for sel in spec.columns]
    rows = []
    refs = dict(enumerate(spec.reference))
    for r in spec.rows:
        label, col, fmt = ROWS[r]
        line = [label]
        for j, cell in enumerate(picked):
            if cell is None:
                line.append("(no such cell)")
                continue
            value = (file_label(cell) if file_label else cell.get("dataset_file", "")) if r == "file" else cell.get(col)
            text = fmt(value)
            ref = dict(refs.get(j, ()))
            if r in ref:
                published = ref[r]
                ratio = float(value) / published if value is not None and published else float("nan")
                text += f" (paper: {fmt(published)}; x{ratio:.3g})"
            line.append(text)
        rows.append(line)
    return {"title": spec.title, "header": header, "rows": rows, "missing": missing, "note": spec.note}


def _column_label(selector) -> str:
    return ", ".join(f"{k} {format_bytes(v) if k == 'cache' else v}" for k, v in selector)


AXES = [("chunks", "chunks"), ("filters", "filters"), ("cache", "cache_label"), ("access", "access_label")]


def with_labels(cells: pd.DataFrame) -> pd.DataFrame:
    return cells.assign(
        cache_label=[f"{format_bytes(n)}/{int(s)}/{w:g}" if n == n else "-" for n, s, w in
                     zip(cells["cache_nbytes"], cells["cache_nslots"].fillna(0), cells["cache_w0"].fillna(0))],
        access_label=[f"{op} {b}" + (f" order {o}" if o and o != "x".join(map(str, range(len(str(b).split("x"))))) else "")
                      + (f" random {int(r)}" if r == r and r else "")
                      for op, b, o, r in zip(cells["op"], cells["block"], cells["order"].astype(object).fillna(""), cells["random"].fillna(0))])


def varying_axes(cells: pd.DataFrame) -> list[tuple[str, str]]:
    cells = with_labels(cells)
    return [(name, col) for name, col in AXES if cells[col].nunique() > 1]


def auto_tables(cells: pd.DataFrame) -> list[dict]:
    """With no ``tables:``: one pivot per varying axis, for time and for raw reads."""
    cells = with_labels(cells[cells["status"].isin(["ok", "extrapolated"])])
    axes = varying_axes(cells)
    out = []
    for name, col in axes:
        others = [c for n, c in axes if c != col]
        key = cells[others].astype(str).agg(" | ".join, axis=1) if others else pd.Series("all cells", index=cells.index)
        for what, value_col, fmt in (("time", "time_s", format_seconds), ("raw-data reads", "raw_reads", format_count)):
            if what == "raw-data reads" and cells["op"].eq("write").all():
                value_col, what = "raw_writes", "raw-data writes"
            piv = cells.assign(_row=key).pivot_table(index="_row", columns=col, values=value_col, aggfunc="first")
            header = [" | ".join(others) if others else ""] + [str(c) for c in piv.columns]
            rows = [[str(idx)] + [fmt(v) for v in piv.loc[idx]] for idx in piv.index]
            out.append({"title": f"{what.capitalize()} by {name}", "header": header, "rows": rows, "missing": [], "note": ""})
    return out
