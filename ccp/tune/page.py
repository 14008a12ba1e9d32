"""tune.html: predicted beside measured for every layout tried, the front, and how to apply the pick."""

from __future__ import annotations

import html
from pathlib import Path

from ccp.tune.answer import extrapolated_lines, measured_lines
from ccp.units import format_bytes, format_seconds, shape_str


def _t(x) -> str:
    return format_seconds(x) if x is not None else "-"


def write_page(out: Path, result: dict) -> Path:
    e = html.escape
    rec = result["recommended"]
    rows = "".join(
        f"<tr><td>{e(r['label'])}</td><td>{e(r['kind'])}</td><td>{e(shape_str(r['chunks']))}</td><td>{e(r['filters'])}</td>"
        f"<td>{e(format_bytes(r['cache_nbytes']))}/{r['cache_nslots']}/{r['cache_w0']:g}</td><td>{_t(r['predicted_s'])}</td>"
        f"<td>{_t(r['measured_s'])}{' (runoff; first round ' + _t(r.get('first_measured_s')) + ')' if r.get('runoff') else ''}</td><td>{(format(r['speedup_of_pick'], '.2f') + 'x (' + e(r.get('speedup_round') or '') + ')') if r.get('speedup_of_pick') else '-'}</td>"
        f"<td>{e(', '.join(r['statuses'] or []))}{'; ' + e(r['lost_why']) if r.get('lost_why') else ''}</td></tr>" for r in result["contenders"])
    front = "".join(
        f"<tr><td>{e(shape_str(c['chunks']))}</td><td>{e(c['filters'])}</td><td>{e(format_bytes(c['cache_nbytes']))}/{c['cache_nslots']}</td>"
        f"<td>{_t(c['predicted_read_s'])}</td><td>{_t(c['predicted_write_s'])}</td><td>{e(format_bytes(c['storage_bytes']))}</td></tr>"
        for c in result["front"])
    cmds = "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>" for k, v in result["commands"].items())
    s = result["search"]
    # the figure the choice used, its round said, as on the console (breaker9 G20); each "~" time beside its run
    # folder's figure and where it is (G12)
    measured = ("; ".join(e(line.strip()) for line in measured_lines(rec)) if rec.get("measured_in_choice_s") is not None
                else f"measured {_t(rec['measured_s'])}, predicted {_t(rec['predicted_s'])} for the weighted workload")
    ex = extrapolated_lines(result["contenders"])
    extrapolated = ("<ul>" + "".join(f"<li>{e(line.strip().lstrip('~ '))}</li>" for line in ex) + "</ul>") if ex else ""
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>ccp tune {e(result['workload'])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}</style>
</head><body><h1>ccp tune: {e(result['workload'])}</h1>
<p>Dataset {e(str(result['dataset']['shape']))} {e(result['dataset']['dtype'])}, stored as {e(shape_str(result['dataset']['current_chunks']))}
({e(result['dataset']['current_filters'])}).</p>
<h2>Recommended</h2><p>chunks <b>{e(shape_str(rec['chunks']))}</b>, filters <b>{e(rec['filters'])}</b>, chunk cache
<b>{e(format_bytes(rec['cache_nbytes']))}</b> / {rec['cache_nslots']} slots / w0 {rec['cache_w0']:g}:
{measured}: {e(rec.get('why', ''))}.</p>{extrapolated}
<table>{cmds}</table>
<p>Ties: {e(result.get('tie_rule', ''))}.</p>
<p>Cache: {e(result.get('cache_rule', ''))}.</p>
<h2>Predicted and measured</h2>
<p>Weighted workload time (sum of weight x time of each pattern). Measured with the sweep engine: each layout's run folder is
under <code>runs/</code> (open one with <code>ccp report</code>). "pick is" = this layout's measured time / the recommendation's in the same round (the runoff's when both ran in it, else the first round's).</p>
<table><tr><th>layout</th><th>kind</th><th>chunks</th><th>filters</th><th>cache</th><th>predicted</th><th>measured</th><th>pick is</th><th>status</th></tr>{rows}</table>
<h2>Pareto front (model)</h2><p>{result['candidates']} candidates costed ({s['layouts']} layouts, {s['pruned']} pruned as dominated,
{s['rejected']} over the storage limit) in {_t(s['search_s'])}. Filter ratios on a sample: {e(str(s['filter_ratios']))}.</p>
<table><tr><th>chunks</th><th>filters</th><th>cache</th><th>read</th><th>write</th><th>storage</th></tr>{front}</table>
</body></html>"""
    path = Path(out) / "tune.html"
    path.write_text(page)
    return path
