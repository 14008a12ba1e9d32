"""The report page: one self-contained HTML file (inline CSS, no scripts, PNGs beside it), readable from disk."""

from __future__ import annotations

import base64
import html
import re
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.config.tables import parse_tables
from ccp.predict.explain import cause as explain_cause
from ccp.predict.explain import version_trap
from ccp.report import plots
from ccp.report.data import (
    SHORT_REQUEST_S,
    UNSTABLE_SPREAD,
    configured_caches,
    contended_cells,
    contention_line,
    finite,
    is_ok,
    load_cells,
    load_env,
    load_parts,
    prepare,
    read_run_sweep,
    requested_bytes,
    stability,
)
from ccp.report.headline import PLAIN, RunKind, cell_tags, headline_text, headlines
from ccp.report.s3 import storage_tables
from ccp.report.stats import RULE, THRESHOLD, ci95
from ccp.report.stats import samples as load_samples
from ccp.report.tables import (
    Cell,
    Table,
    fmt_times,
    one_change_tables,
    pivot_tables,
    render,
)
from ccp.store.schema import CONTENDED_CPU_RATIO
from ccp.units import format_bytes, format_count, format_seconds

CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#dde1e8;--head:#f3f5f8;--accent:#2c7fb8}
*{box-sizing:border-box}
body{font:15px/1.5 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);max-width:1240px;margin:0 auto;padding:1.5em 1.5em 4em}
h1{font-size:1.9em;margin:.2em 0 .1em} h2{font-size:1.35em;border-bottom:2px solid var(--line);padding-bottom:.25em;margin-top:2.2em}
h3{font-size:1.08em;margin:1.6em 0 .3em}
.sub{color:var(--muted);margin:0 0 1em}
nav{background:var(--head);border:1px solid var(--line);border-radius:6px;padding:.5em .9em;margin:1em 0;font-size:14px}
nav a{color:var(--accent);text-decoration:none;margin-right:1.1em;white-space:nowrap} nav a:hover{text-decoration:underline}
table{border-collapse:collapse;margin:.5em 0 .8em;font-size:13.5px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:4px 9px;text-align:right;vertical-align:top}
th{background:var(--head);font-weight:600} td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
td.best{background:#e3f4e1 !important;font-weight:600} td.changed{background:#fff3c4 !important;font-weight:600}
td.missing{color:#aaa} td:not(.l){white-space:nowrap} td small{display:block;color:var(--muted);font-size:11.5px;white-space:nowrap}
table.meta td{text-align:left} td.l:first-child{min-width:17em} table.cells{font-size:12.5px} table.meta td:first-child{color:var(--muted);white-space:nowrap}
.wide{overflow-x:auto}
.note{color:var(--muted);font-size:14px;margin:.3em 0 .6em;max-width:62em}
.box{border-radius:6px;padding:.7em 1.1em;margin:.8em 0}
.good{background:#eef7ee;border-left:5px solid #31a354} .warn{background:#fff6e8;border-left:5px solid #f0a030}
.fail{background:#fdecea;border-left:5px solid #c0392b} .box p{margin:.35em 0} .box ul{margin:.3em 0;padding-left:1.3em}
.kpi{display:flex;gap:.8em;flex-wrap:wrap;margin:1em 0} .kpi div{background:var(--head);border:1px solid var(--line);border-radius:6px;padding:.45em .9em}
.kpi b{display:block;font-size:1.25em}
img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;margin:.4em 0;display:block}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:.8em;overflow:auto;font-size:12.5px;max-height:26em}
code{background:#f1f3f5;padding:0 .25em;border-radius:3px;font-size:90%}
details summary{cursor:pointer;color:var(--accent);margin:.4em 0}
footer{margin-top:3em;color:var(--muted);font-size:13px}
"""

PNG_NAMES = ("time_per_cell.png", "time_by_axis.png", "heatmap_time_s.png", "heatmap_raw_reads.png", "heatmap_raw_writes.png",
             "heatmap_raw_io.png", "latency.png", "model_vs_measured.png", "io_trace.png", "storage.png", "storage_vs_time.png")


def esc(x) -> str:
    return html.escape("" if x is None else str(x))


def _td(c, left: bool) -> str:
    cls = "l" if left else ""
    if isinstance(c, Cell):
        cls = " ".join(x for x in (cls, c.cls) if x)
        inner = esc(c.text) + "".join(f"<small>{esc(s)}</small>" for s in c.sub)
    else:
        inner = esc(c)
    return f'<td class="{cls}">{inner}</td>' if cls else f"<td>{inner}</td>"


def table_html(header, rows, cls: str = "", label_columns: int = 1) -> str:
    out = [f'<div class="wide"><table class="{cls}">']
    if header:
        out.append("<tr>" + "".join(f'<th class="l">{esc(h)}</th>' if i < label_columns else f"<th>{esc(h)}</th>"
                                    for i, h in enumerate(header)) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(_td(c, i < label_columns) for i, c in enumerate(r)) + "</tr>")
    out.append("</table></div>")
    return "".join(out)


def img(name: str | None, alt: str) -> str:
    return f'<img src="{esc(name)}" alt="{esc(alt)}">' if name else ""


def note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def render_table(t: Table) -> str:
    out = f"<h3>{esc(t.title)}</h3>"
    if t.note:
        out += note(esc(t.note))
    out += table_html(t.header, t.rows, label_columns=t.label_columns)
    if t.footnote:
        out += note("Note: " + esc(t.footnote))
    if t.warnings:
        out += '<div class="box warn"><ul>' + "".join(f"<li>{esc(w)}</li>" for w in t.warnings) + "</ul></div>"
    return out


def _axis_names(labels) -> list[str]:
    """The axes that vary, the storage axis by the settings of it that vary: 'storage (storage, fsspec, latency)'."""
    return [f"storage ({', '.join(labels.storage_varying)})" if name == "storage" and labels.storage_varying else name
            for name in labels.names]


def _makes(who: str, sentence: str) -> str:
    """'the fastest makes 3 raw-data reads ...', or "the fastest's I/O counts were not measured" (no verb to add)."""
    if sentence.startswith("its "):
        return ("its " if who == "it" else f"{who}'s ") + sentence[len("its "):]
    return f"{who} makes {sentence}"


# ---------------------------------------------------------------------------------------------- the why

def _per(c, col) -> float:
    return c[col] / c["requests"] if finite(c.get(col)) and finite(c.get("requests")) and c["requests"] else float("nan")


def _io_sentence(c, run: RunKind = PLAIN) -> str:
    """What the cell's counted pass did, per request: the numbers that explain its time (an S3 cell: its GETs)."""
    op = c["op"]
    col = "raw_writes" if op == "write" else "raw_reads"
    if c.get("storage") == "s3" and finite(c.get("http_gets")):     # no counted pass over S3: the GETs are its counts
        opened = f", {format_count(c['http_open_gets'])} of them to open the file" if finite(c.get("http_open_gets")) else ""
        return (f"{format_count(c['http_gets'])} HTTP GETs{opened}, fetching {format_bytes(c['http_bytes'])} for "
                f"{format_count(c['requests'])} requests")
    if not finite(c.get(col)):
        return "its I/O counts were not measured" + (" (a quick run has no counted pass)" if run.quick else "")
    words = "raw-data writes" if op == "write" else "raw-data reads"
    s = f"{format_count(c[col])} {words} for {format_count(c['requests'])} requests ({_per(c, col):,.3g} per request)"
    moved = c["raw_write_bytes"] if op == "write" else c["raw_read_bytes"]
    want = requested_bytes(c)
    if finite(moved) and finite(want) and want:
        s += f", moving {format_bytes(moved)} for {format_bytes(want)} of data ({fmt_times(moved / want)})"
    if op == "write" and finite(c.get("raw_reads")) and c["raw_reads"] > 0:
        s += f", plus {format_count(c['raw_reads'])} reads of partly written chunks the cache had evicted"
    if finite(c.get("predicted_chunk_loads")) and c.get("filters") not in ("none", ""):
        s += f"; the model counts {format_count(c['predicted_chunk_loads'])} chunk decompressions"
    return s


def explain_fastest(cells: pd.DataFrame, samples: dict | None = None, run: RunKind = PLAIN,
                    threshold: float = THRESHOLD) -> str:
    """Per access pattern: the fastest stable configuration, its ties, the cheapest change, and why (headline.py)."""
    ok = cells[is_ok(cells) & cells["time_s"].notna()]
    if ok.empty:
        return '<div class="box fail"><p>No cell finished, so there is nothing to rank; the failures are listed under Stability.</p></div>'
    parts = []
    for h in headlines(cells, samples, threshold):
        lines = headline_text(h, run, threshold, samples)
        text = f'<p class="headline"><b>{esc(lines[0])}</b></p>' + "".join(f"<p>{esc(x)}</p>" for x in lines[1:])
        best, worst = h.winner, h.slowest
        if best is not None:
            cause = explain_cause(best, requested_bytes(best))
            text += (f"<p><b>Why:</b> {esc(_makes('the fastest' if h.n > 1 else 'it', _io_sentence(best, run)))}"
                     + (f"; {esc(cause)}" if cause else "") + ".</p>")
            if h.n > 1 and worst is not None and worst["cell_id"] != best["cell_id"]:
                cause = explain_cause(worst, requested_bytes(worst))
                text += f"<p>{esc(_makes('The slowest', _io_sentence(worst, run)))}" + (f"; {esc(cause)}" if cause else "") + ".</p>"
        parts.append(f'<div class="box {"good" if best is not None else "warn"}">{text}</div>')
    return "".join(parts)


# ---------------------------------------------------------------------------------------------- sections

def _busy_passes(s) -> str:
    """How many of a cell's timed passes ran with the 1-minute load above its CPUs (each pass's load, schema 4), the
    passes a verdict sets aside when enough quiet ones are left; "" where the passes' loads were not recorded."""
    busy = s.pass_busy if s is not None else ()
    if len(busy) == 0 or len(busy) != len(s.passes):
        return ""
    return f", {int(np.sum(busy))} of {len(busy)} timed passes with the load above the CPUs"


def stability_html(cells: pd.DataFrame, samples: dict | None = None) -> str:
    samples = samples or {}
    out = []
    failed = cells[~is_ok(cells)]
    if len(failed):
        out.append('<div class="box fail"><p><b>Failed cells</b>: not measured; a rerun with the same <code>--out</code> '
                   "retries them.</p>" + table_html(["cell", "reason"], [[c["label"], c["status"] or "(no status recorded)"]
                                                                      for _, c in failed.iterrows()], label_columns=2) + "</div>")
    st = stability(cells)
    checks = [
        ("unstable", (f"passes spread by more than {UNSTABLE_SPREAD}x (slowest / fastest): the median is less certain. Rerun on "
                     "a quiet machine or with more repeats."),
         lambda c, s: f"passes {format_seconds(c['time_s_min'])} to {format_seconds(c['time_s_max'])}, {s['spread']:.3f}x"),
        ("short", (f"median request under {format_seconds(SHORT_REQUEST_S)}: single requests are too short to time reliably "
                  "(timer and page-fault noise); trust the pass totals, not the per-request plot."),
         lambda c, s: f"median request {format_seconds(c['request_s_median'])}"),
        ("partial", "time budget: a prefix of the requests was measured and the rest extrapolated.",
         lambda c, s: f"{c['fraction_measured']:.0%} measured" if finite(c["fraction_measured"]) else ""),
        ("truncated", "the stored file operations are capped (the counts are exact; their plot shows the start).",
         lambda c, s: ""),
    ]
    for key, text, detail in checks:
        sel = cells[st[key]]
        if len(sel):
            items = "".join(f"<li>{esc(c['label'])}" + (f" ({esc(d)})" if (d := detail(c, st.loc[i])) else "") + "</li>"
                            for i, c in sel.iterrows())
            out.append(f'<div class="box warn"><p><b>{esc(key)}</b>: {esc(text)}</p><ul>{items}</ul></div>')
    busy = cells[contended_cells(cells)]
    if len(busy):      # schema 4: measured under contention (ccp.store.schema.contended)
        items = "".join(f"<li>{esc(c['label'])} (load up to {float(c['load_max']):.1f} on {int(c['cpus'])} CPUs, "
                        f"CPU/wall {float(c['cpu_ratio']):.2f}"
                        f"{_busy_passes(samples.get(str(c['cell_id'])))})</li>"
                        if finite(c.get("load_max")) and finite(c.get("cpus"))
                        and finite(c.get("cpu_ratio")) else f"<li>{esc(c['label'])}</li>" for _, c in busy.iterrows())
        out.append(f'<div class="box warn"><p><b>contended</b>: measured under contention (the 1-minute load above the '
                   f"CPUs ccp may use, or a warm local pass under {CONTENDED_CPU_RATIO:g} of its wall time on a CPU): "
                   "their times say more about the machine than the layout; their I/O counts are exact. Winners and "
                   "ties follow the I/O counts first.</p><ul>" + items + "</ul></div>")
    if not out:
        return note(f"Every cell finished and is stable: passes within {UNSTABLE_SPREAD}x of each other and requests of "
                    f"{format_seconds(SHORT_REQUEST_S)} or more.")
    return note(f"Thresholds: a cell is <i>unstable</i> when its slowest pass takes over {UNSTABLE_SPREAD}x its fastest, "
                f"<i>short</i> when its median request is under {esc(format_seconds(SHORT_REQUEST_S))}.") + "".join(out)


def traps_html(cells: pd.DataFrame) -> str:
    out = []
    items = [(c["label"], c["traps"]) for _, c in cells.iterrows() if c["traps"]]
    if items:
        out.append('<div class="box warn"><ul>' + "".join(f"<li><b>{esc(l)}</b>: {esc(t)}</li>" for l, t in items) + "</ul></div>")
    if trap := version_trap(cells["chunk_bytes"].astype(float)):
        out.append(note(trap))
    return "".join(out) or note("No known trap in these cells' layouts, caches and access patterns.")


ALL_COLUMNS = [  # header, column, formatter
    ("time", "time_s", format_seconds),
    # each pass's CPU time beside its wall time (issue 22: audit22 F5): the median timed pass's, as the rule reads it
    ("CPU/pass", "_cpu", lambda v: format_seconds(v) if finite(v) else "n/a"),
    ("95% interval", "_ci", lambda v: v if isinstance(v, str) else "-"),
    ("passes", "_passes", lambda v: v if isinstance(v, str) else "-"),
    ("requests", "requests", format_count), ("first request", "first_request_s", format_seconds),
    ("median request", "request_s_median", format_seconds), ("raw reads", "raw_reads", format_count),
    ("raw read", "raw_read_bytes", format_bytes), ("raw writes", "raw_writes", format_count),
    ("raw written", "raw_write_bytes", format_bytes), ("meta reads", "meta_reads", format_count),
    ("meta writes", "meta_writes", format_count), ("model raw reads", "predicted_raw_reads", format_count),
    ("model raw writes", "predicted_raw_writes", format_count), ("model chunk loads", "predicted_chunk_loads", format_count),
    ("model time", "predicted_time_s", format_seconds), ("repack", "repack_s", format_seconds),
]


def cells_table(cells: pd.DataFrame, samples: dict | None = None, run: RunKind = PLAIN) -> str:
    samples = samples or {}
    ci = [ci95(samples[str(i)]) if str(i) in samples else (np.nan, np.nan) for i in cells["cell_id"]]
    cells = cells.assign(_passes=[f"{format_seconds(a)} - {format_seconds(b)}" if finite(a) else np.nan
                                  for a, b in zip(cells["time_s_min"], cells["time_s_max"])],
                         _ci=[f"{format_seconds(a)} - {format_seconds(b)}" if finite(a) else np.nan for a, b in ci],
                         _cpu=[samples[str(i)].cpu_per_pass() if str(i) in samples else np.nan for i in cells["cell_id"]])
    cols = [(h, c, f) for h, c, f in ALL_COLUMNS
            if cells[c].notna().any() and (not pd.api.types.is_numeric_dtype(cells[c]) or (cells[c].fillna(0) != 0).any())]
    order = cells.assign(_t=cells["time_s"].fillna(float("inf"))).sort_values("_t")
    rows = []
    for _, c in order.iterrows():
        vals = [Cell(f(c[col]), tuple(cell_tags(c, run))) if col == "time_s" and finite(c[col]) else f(c[col]) for _, col, f in cols]
        rows.append([c["label"]] + vals + [c["flags"] or "", c["status"]])
    return table_html(["cell"] + [h for h, _, _ in cols] + ["flags", "status"], rows, "cells")


def _file_label(cell, sweep) -> str:
    ds = sweep.get("dataset") or {}
    base = Path(str(ds["file"])).name if isinstance(ds, dict) and ds.get("file") else "generated"
    return f"{base} ({cell['chunks']}, {cell['filters']})"


def _figure(fn, *args):
    """Draw one figure; a figure that fails is named on the page instead of failing the whole report."""
    try:
        return fn(*args), ""
    except Exception:  # the report is written even when one figure cannot be
        return None, f'<div class="box fail"><p>Could not draw this figure:</p><pre>{esc(traceback.format_exc(limit=4))}</pre></div>'


def meta_rows(cells, env, sweep, run_dir) -> list[list[str]]:
    caches = sorted({(int(n), int(s), float(w)) for n, s, w in zip(cells["cache_nbytes"], cells["cache_nslots"], cells["cache_w0"])
                     if finite(n) and finite(s) and finite(w)})
    default = (env.get("hdf5_default_chunk_cache") or {}).get("dapl") or {}
    passes = f"{sweep.get('repeats', '?')} timed ({'cold: page cache dropped before each' if sweep.get('cold') else 'warm'}) + 1 counted"
    if sweep.get("quick"):
        passes = "quick run: 1 warm pass, no counted pass (no I/O counts, no file operations)"
    ds = sweep.get("dataset") or {}
    gen = ds.get("generate") if isinstance(ds, dict) else None
    if isinstance(gen, dict):
        shape = "x".join(str(d) for d in gen.get("shape") or [])
        dataset = f"generated {shape} {gen.get('dtype', '')} ({gen.get('data', '')} data), path {ds.get('path', '')}"
    elif isinstance(ds, dict) and ds.get("file"):
        dataset = f"{ds['file']}, path {ds.get('path', '')}"
    else:
        dataset = "?"
    dirty = " (with uncommitted changes)" if env.get("git_dirty") else ""
    return [
        ["sweep", str(sweep.get("name", run_dir.parent.name))], ["run folder", str(run_dir)],
        ["when", str(env.get("time", "?"))], ["dataset", dataset],
        ["machine", (f"{env.get('host', '?')}: {env.get('cpu', '?')}, {env.get('cores', '?')} cores, "
                    f"{format_bytes(env.get('memory_bytes'))} RAM, {env.get('kernel', '?')}")],
        ["filesystem", str(env.get("filesystem", "?"))],
        ["versions", (f"HDF5 {env.get('hdf5', '?')}, h5py {env.get('h5py', '?')}, hdf5plugin {env.get('hdf5plugin', '?')}, "
                     f"numpy {env.get('numpy', '?')}, Python {env.get('python', '?')}")],
        ["ccp", f"{env.get('ccp', '?')}, commit {str(env.get('git_commit') or '?')[:12]}{dirty}"],
        ["chunk caches in effect (read back from HDF5)", "; ".join(f"{format_bytes(n)}, {s:,} hash slots, w0 {w:g}" for n, s, w in caches) or "-"],
        ["this HDF5's default (not used: ccp sets each cache)",
         f"{format_bytes(default.get('nbytes'))}, {default.get('nslots', '?')} slots, w0 {default.get('w0', '?')}" if default else "?"],
        ["passes per cell", passes],
    ]


def _embed(page: str, run_dir: Path) -> str:
    """Every <img src="NAME.png"> of the run folder as a data: URI, so the page is one file to attach or mail."""
    def data_uri(m):
        p = run_dir / html.unescape(m.group(1))
        if "/" in m.group(1) or not p.is_file():
            return m.group(0)
        return f'<img src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"'
    return re.sub(r'<img src="([^"]+\.png)"', data_uri, page)


def build(run_dir: Path, self_contained: bool = False) -> Path:
    run_dir = Path(run_dir)
    cells = load_cells(run_dir)
    # the sweep is expanded only when a contiguous cell's cache (HDF5's default, read back) could mislabel it
    cells, labels = prepare(cells, configured_caches(run_dir) if (cells["chunks"] == "contiguous").any() else None)
    env = load_env(run_dir)
    sweep_text, sweep = read_run_sweep(run_dir)
    run = RunKind.of(sweep)
    name = str(sweep.get("name") or run_dir.parent.name)
    for png in PNG_NAMES:                       # figures of an earlier report this run may no longer have
        (run_dir / png).unlink(missing_ok=True)

    ok = cells[is_ok(cells)]
    samples = load_samples(run_dir, cells)
    lat_ids = list(plots._ok(cells).sort_values("time_s", ascending=False).head(plots.MAX_LATENCY_CELLS)["cell_id"])
    requests = load_parts(run_dir / "requests.parquet", ["cell_id", "pass", "phase", "request", "time_s"], lat_ids,
                          [("pass", ">=", 0), ("phase", "==", "request")])
    io_ids = load_parts(run_dir / "io.parquet", ["cell_id"])
    picked = plots.file_operation_cells(cells, set(io_ids["cell_id"]) if io_ids is not None else set())
    io = load_parts(run_dir / "io.parquet", ["cell_id", "seq", "kind", "mem_type", "offset"], list(picked["cell_id"]))
    lay = plots.storage_table(cells)

    figs, errors = {}, {}
    for key, fn, args in (("time", plots.time_per_cell, (cells, run_dir, run)), ("axis", plots.time_by_axis, (cells, labels, run_dir)),
                          ("heat", plots.heatmaps, (cells, run_dir)), ("lat", plots.latency, (cells, requests, run_dir)),
                          ("model", plots.model_vs_measured, (cells, run_dir)), ("io", plots.file_operations, (picked, io, run_dir)),
                          ("pareto", plots.storage_vs_time, (cells, run_dir, run)), ("storage", plots.storage, (lay, run_dir))):
        figs[key], errors[key] = _figure(fn, *args)
    heat, heat_left_out = figs["heat"] or ([], 0)

    sweep_tables = []
    if sweep.get("tables"):
        try:
            for spec in parse_tables(sweep["tables"]):
                sweep_tables.append(render(spec, cells, labels, file_label=lambda c: _file_label(c, sweep), run=run))
        except Exception as exc:  # a sweep file edited after the run: say so, draw the rest
            sweep_tables = []
            errors["tables"] = f'<div class="box fail"><p>The sweep\'s <code>tables:</code> could not be read: {esc(exc)}</p></div>'
    one_change = one_change_tables(cells, labels, samples, run)
    pivots = pivot_tables(cells, labels, samples, run)

    st = stability(cells)
    nflag = int((st["unstable"] | st["short"] | st["partial"]).sum())
    nfail = int((~is_ok(cells)).sum())
    kpis = [("cells", f"{len(cells):,}"), ("finished", f"{len(ok):,}"), ("failed", f"{nfail:,}"), ("flagged", f"{nflag:,}")]
    busy_line = contention_line(cells)
    if busy_line:      # the run's own state up front, not only in the Stability section (audit22 A9)
        kpis.append(("contended", f"{int(contended_cells(cells).sum()):,}"))
    sections = [("summary", "Fastest and why"), ("tables", "Tables"), ("time", "Time"),
                ("heatmaps", "Chunks x cache"), ("tradeoff", "Storage vs time"), ("requests", "Requests"), ("model", "Model"),
                ("storage", "Storage"), ("traps", "Traps"), ("stability", "Stability"), ("cells", "All cells"),
                ("run", "How it was run"), ("io", "File operations")]
    if not heat and not errors["heat"]:
        sections.remove(("heatmaps", "Chunks x cache"))
    if not figs["model"] and not errors["model"]:
        sections.remove(("model", "Model"))
    if not figs["pareto"] and not errors["pareto"]:
        sections.remove(("tradeoff", "Storage vs time"))

    banner = ""
    if run.tags or (cells["status"] == "extrapolated").any():
        items = []
        if run.quick:
            items.append("This is a <b>quick run</b>: one warm pass per cell and no counted pass, so there are no I/O counts, "
                         "no spread between passes and more noise. Every time is marked <i>quick</i>.")
        if run.scale:
            items.append(f"This sweep was <b>scaled by {run.scale:g}</b> (<code>--scale</code>): every dimension, chunk and block "
                         "shrank, caches by the volume. Times are for the scaled data, not the full sweep; every time is marked "
                         "<i>scaled</i>.")
        if (cells["status"] == "extrapolated").any():
            items.append("Some cells ran over their time budget: a prefix of their requests was measured and the rest "
                         "<b>extrapolated</b>. Their times are marked wherever they appear.")
        banner = '<div class="box warn">' + "".join(f"<p>{x}</p>" for x in items) + "</div>"

    passes = meta_rows(cells, env, sweep, run_dir)[-1][1]
    body = [
        f"<h1>ccp report: {esc(name)}</h1>",
        (f'<p class="sub">{len(cells):,} cells; axes that vary: {esc(", ".join(_axis_names(labels)) or "none")}; {esc(passes)}. '
        f"Measured {esc(env.get('time', '?'))} on {esc(env.get('host', '?'))} with HDF5 {esc(env.get('hdf5', '?'))}. "
        f"Regenerate with <code>ccp report {esc(run_dir)}</code>.</p>"),
        "<nav>" + "".join(f'<a href="#{i}">{esc(t)}</a>' for i, t in sections) + "</nav>",
        '<div class="kpi">' + "".join(f"<div>{esc(k)}<b>{esc(v)}</b></div>" for k, v in kpis) + "</div>",
        banner,
        f'<div class="box warn"><p><b>contended</b>: {esc(busy_line)}</p></div>' if busy_line else "",
        '<h2 id="summary">Which configuration is fastest for each access pattern, and why</h2>',
        note(f"Only cells that do the same work (the same operation, block, order and requests) are ranked against each "
             f"other. Two cells are a <i>tie</i> unless their median passes differ by {THRESHOLD:g}x or more and the "
             f"difference is real by the rule: {esc(RULE)}. An unstable cell wins only when that rule shows it faster than the fastest stable one, and is "
             "named either way. The cheapest change is the least invasive one (a reader setting before a new file) "
             "within 2x of the fastest. The interval is a 95% confidence interval of the pass time from the "
             "per-request samples."),
        explain_fastest(cells, samples, run),
        '<h2 id="tables">Comparison tables</h2>',
        errors.get("tables", ""),
    ]
    body += [render_table(t) for t in sweep_tables]
    body += [render_table(t) for t in storage_tables(cells, labels, run)]    # S3 cells: GETs and bytes beside time
    if one_change:
        body.append(note("Configurations side by side, as in the HDF Group papers (seed 000, Table 8): one change at a time."))
        body += [render_table(t) for t in one_change]
    if pivots:
        body.append("<details><summary>Tables by axis: what each axis alone changes</summary>"
                    + "".join(render_table(t) for t in pivots) + "</details>")
    if not (sweep_tables or one_change or pivots or storage_tables(cells, labels, run)):
        body.append(note("Nothing to compare: fewer than two finished cells share an access pattern."))

    body += [
        '<h2 id="time">Time</h2>',
        note("Bars are the median pass, whiskers the fastest and slowest pass; look at the gap between the top and the bottom of "
             "each access pattern: that is what choosing the configuration is worth. The second chart groups the same cells by "
             "each axis: an axis whose groups sit apart matters, one whose groups overlap does not."),
        img(figs["time"], "time per cell"), errors["time"], img(figs["axis"], "time by axis"), errors["axis"],
    ]
    if heat or errors["heat"]:
        body += ['<h2 id="heatmaps">Chunk shape x chunk cache</h2>',
                 note("Each square is one cell, brighter is slower (or more raw I/O), on one colour scale across panels. Look for "
                      "a bright square whose row is dark elsewhere: a chunk too big for that cache. A time heatmap that tracks the "
                      "raw-reads heatmap means the time is the I/O."
                      + (f" {heat_left_out} more panels (compression x access) are not drawn." if heat_left_out else "")),
                 *[img(h, "heatmap") for h in heat], errors["heat"]]
    if figs["pareto"] or errors["pareto"]:
        body += ['<h2 id="tradeoff">Storage against time</h2>',
                 note("What a data producer chooses on: each point is a layout (chunks and filters) at its fastest cache, per access "
                      "pattern. The line joins the Pareto front: the layouts no other layout beats on both size and time; a "
                      "layout above and right of it is worse on both."),
                 img(figs["pareto"], "storage against time"), errors["pareto"]]
    lat_table = _latency_table(cells, requests)
    body += [
        '<h2 id="requests">Requests: the first against the rest</h2>',
        note("Seed 004's test: a first request that costs much more than the others is a chunk being read and decompressed "
             "once; when the others cost as much as the first, each is reading the chunk again (the cache is too small to keep "
             "it). The right panel is the spread of every timed request."),
        img(figs["lat"], "request latency") or note("No per-request times in this run."), errors["lat"],
        lat_table,
    ]
    if figs["model"] or errors["model"]:
        body += ['<h2 id="model">Measured against the chunk-cache model</h2>',
                 note("Each point is a cell: on the diagonal, the model predicted the measurement. Counts far off the diagonal "
                      "are a behaviour of HDF5 the model does not capture (see ccp/model/LIMITS.md)."),
                 img(figs["model"], "model vs measured"), errors["model"]]
    body += [
        '<h2 id="storage">Storage</h2>',
        note("Seed 002's Table 1. Metadata overhead: file bytes that are not the dataset's stored data (chunk index, headers), "
             "per million bytes of data. Raw-data overhead (unfiltered): allocated chunk bytes beyond the data, the partly "
             "filled edge chunks. For compressed layouts there is no honest stored figure for the padding (it is compressed "
             "with the data), so the table gives the padding before compression, an upper bound, and the compression ratio."),
        _storage_table(lay), img(figs["storage"], "storage"), errors["storage"],
        '<h2 id="traps">Traps</h2>', note("Known ways a layout, cache and access pattern are slow, found by ccp in each cell."),
        traps_html(cells),
        '<h2 id="stability">Stability and failures</h2>', stability_html(cells, samples),
        '<h2 id="cells">All cells</h2>', note("Every cell, fastest first; columns that are empty or zero for the whole run are left "
                                              "out. CPU/pass is the median timed pass's process CPU time, beside its "
                                              "wall time (n/a where the run did not record it). The 95% interval is "
                                              "from the per-request samples."),
        cells_table(cells, samples, run),
        '<h2 id="run">How it was run</h2>',
        table_html(None, meta_rows(cells, env, sweep, run_dir), "meta"),
        note("The sweep file after validation, every default spelled out: enough to rerun it with <code>ccp run</code>."),
        f"<details><summary>sweep.yaml</summary><pre>{esc(sweep_text) or '(no sweep.yaml in the run folder)'}</pre></details>",
        '<h2 id="io">File-level I/O of the counted pass</h2>',
        note("Every read and write HDF5 sent to the file, by file offset, in order (seed 002's figures): one panel per layout "
             "and access pattern, slowest first. A staircase is chunks read in file order; flat runs of points are the same "
             "chunk read again and again; metadata reads (red x) are the chunk index and object headers."),
        (f"<details><summary>File operations ({len(picked)} cells)</summary>{img(figs['io'], 'File operations')}</details>" if figs["io"]
         else note("No file operations in this run" + (" (a quick run has no counted pass)." if run.quick else
                                                  " (cells read over S3 have none: their GETs are counted instead)."
                                                  if (cells["storage"] == "s3").any() else "."))), errors["io"],
        (f"<footer>Written by ccp {esc(env.get('ccp', ''))} from {esc(run_dir)}. Schema version "
        f"{esc(int(cells['schema_version'].dropna().iloc[0]) if cells['schema_version'].notna().any() else '?')}.</footer>"),
    ]
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>ccp report: {esc(name)}</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>")
    out = run_dir / "report.html"
    if self_contained:   # the PNGs stay beside it too, for people who want them alone
        page = _embed(page, run_dir)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out


def _latency_table(cells: pd.DataFrame, requests) -> str:
    stats = plots.latency_stats(cells, requests)
    if stats.empty:
        return ""
    m = cells.merge(stats, on="cell_id").sort_values("time_s", ascending=False)
    rows = [[c["label"], format_count(c["n"]), format_seconds(c["first"]), format_seconds(c["rest_mean"]),
             format_seconds(c["rest_median"]),
             fmt_times(c["first"] / c["rest_mean"]) if finite(c["rest_mean"]) and c["rest_mean"] > 0 else "-"]
            for _, c in m.iterrows()]
    return table_html(["cell", "requests", "first request", "average of the others", "median of the others", "first / average"], rows)


def _storage_table(lay: pd.DataFrame) -> str:
    if lay.empty:
        return note("No storage figures in this run.")
    rows = []
    for _, r in lay.iterrows():
        raw = f"{r['raw_ppm']:,.2f}" if r["unfiltered"] and finite(r["raw_ppm"]) else \
            (Cell(f"({r['padding_ppm']:,.2f})", ("padding before compression",)) if finite(r["padding_ppm"]) else "-")
        rows.append([r["chunks"], r["filters"], format_bytes(r["logical_bytes"]), format_bytes(r["allocated_bytes"]),
                     format_bytes(r["storage_bytes"]), format_bytes(r["file_bytes"]),
                     f"{r['meta_ppm']:,.2f}" if finite(r["meta_ppm"]) else "-", raw,
                     f"{r['compression_ratio']:.4g}" if finite(r["compression_ratio"]) else "-"])
    return table_html(["chunks", "filters", "data", "allocated (uncompressed)", "stored", "file", "metadata overhead (ppm)",
                       "raw-data overhead (ppm)", "compression ratio"], rows, label_columns=2)


