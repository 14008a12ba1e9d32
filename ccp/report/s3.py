"""The report's table for files in object storage: per access pattern and chunk cache, every storage setting
(local cells beside S3 cells) with its time, HTTP GETs and bytes, the model's GETs beside the measured ones.

Everything shown is a column the runner or the predictor wrote (``http_*``, ``predicted_http_*``,
``network``); nothing is re-derived here. The latency and bandwidth are emulated on the client, per GET,
and the table says so.
"""

from __future__ import annotations

import pandas as pd

from ccp.report.data import Labels, finite, is_ok
from ccp.report.headline import PLAIN, RunKind
from ccp.report.table_types import Cell, Table
from ccp.units import format_bytes, format_count, format_seconds


def _measured_and_model(c, col: str, model: str, fmt):

    if not finite(c.get(col)):
        return Cell("-")
    sub: tuple[str, ...] = ()
    if finite(c.get(model)):
        same = float(c[model]) == float(c[col])
        sub = (f"model: {fmt(c[model])}" + ("" if same else " (differs)"),)
    return Cell(fmt(c[col]), sub)


def _per_request(c, col: str, fmt) -> str:
    """A request's share of the pass's GETs or bytes (the open's left out)."""
    open_col = {"http_gets": "http_open_gets"}.get(col)
    if not finite(c.get(col)) or not finite(c.get("requests")) or not c["requests"]:
        return "-"
    total = float(c[col]) - (float(c[open_col]) if open_col and finite(c.get(open_col)) else 0.0)
    per = total / float(c["requests"])
    return f"{per:.3g}" if fmt is format_count else fmt(per)


def _seconds(c, col: str) -> str:
    return format_seconds(c[col]) if finite(c.get(col)) else "-"


def storage_tables(cells: pd.DataFrame, labels: Labels, run: RunKind = PLAIN) -> list:
    """One table per access pattern and cache of a run with S3 cells; none for a run without."""

    if "storage" not in cells or not (cells["storage"] == "s3").any():
        return []
    if "storage_label" not in cells or "access_label" not in cells:
        cells = labels.add(cells, label=False)
    ok = cells[is_ok(cells) & (cells["op"] == "read")]
    out = []
    layout_cols = [c for c in ("chunks", "filters") if ok[c].nunique() > 1]
    for (pattern, cache, *layout), g in ok.groupby(["access_label", "cache_label", *layout_cols], sort=False):
        if not (g["storage"] == "s3").any():
            continue
        rows = []
        for _, c in g.iterrows():
            rows.append([c["storage_label"],
                         Cell(format_seconds(c["time_s"])),
                         Cell(_seconds(c, "open_s"), (f"file {_seconds(c, 'file_open_s')}",) if finite(c.get("file_open_s")) else ()),
                         Cell(_seconds(c, "requests_s"),
                              (f"median one {_seconds(c, 'request_s_median')}",) if finite(c.get("request_s_median")) else ()),
                         _seconds(c, "close_s"),
                         _measured_and_model(c, "http_gets", "predicted_http_gets", format_count),
                         _measured_and_model(c, "http_open_gets", "predicted_http_open_gets", format_count),
                         _per_request(c, "http_gets", format_count),
                         _measured_and_model(c, "http_bytes", "predicted_http_bytes", format_bytes),
                         format_bytes(c["http_bytes_used"]) if finite(c.get("http_bytes_used")) else "-",
                         format_seconds(c["http_wait_s"]) if finite(c.get("http_wait_s")) else "-",
                         format_count(c["raw_reads"]) if finite(c.get("raw_reads")) else "-"])
        s3 = g[g["storage"] == "s3"]
        exact = s3["predicted_http_gets"].notna() & (s3["predicted_http_gets"] == s3["http_gets"])
        where = ", ".join([pattern, f"cache {cache}", *map(str, layout)])
        out.append(Table(
            f"Files in object storage ({where}): time, HTTP GETs and bytes" + (f" ({'; '.join(run.tags)})" if run.tags else ""),
            ["storage", "whole pass", "open", "requests", "close", "GETs", "GETs at open", "GETs per request (after the open)", "bytes fetched",
             "bytes HDF5 used", "waiting for GETs",
             "raw reads (local)"], rows,
            note="Latency and bandwidth are EMULATED on the client, per GET (slept after each loopback request). "
                 "GETs, bytes and times count the whole pass a user pays: the open (from the fsspec open through "
                 "HDF5's superblock and the chunk index; below it, the file open's share), the requests (below: the median "
                 "request), the close "
                 "(median over passes each, so they need not add up to the whole pass's median). Runs before schema 4 "
                 "timed an S3 cell from the dataset open: their open and whole pass leave out the file open's GETs; "
                 "local cells are timed from the dataset open (opening a local file makes no GET). "
                 "Below each count: the model's, from the file's "
                 f"chunk index and fsspec's cache rules; it equals the measured count on {int(exact.sum())} of "
                 f"{len(s3)} S3 cells here. Local cells count raw reads from the counted pass instead."))
    return out
