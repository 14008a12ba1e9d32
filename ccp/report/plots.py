"""The report's figures (matplotlib, Agg): each function writes one PNG into the run folder and returns its
file name, or None when the run has nothing to draw (a quick run has no file operations, one cell has no heatmap).

Every function takes cells prepared by ``ccp.report.data.prepare`` (columns label, cache_label, access_label).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter

from ccp.report.data import Labels, finite, is_ok, stability, storage_overhead
from ccp.report.headline import PLAIN, RunKind, cell_tags
from ccp.units import format_bytes, format_count, format_seconds

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

MAX_OPERATION_POINTS = 20_000   # per cell and kind in the file-operations plot; more are subsampled evenly
MAX_OPERATION_CELLS = 6
MAX_LATENCY_CELLS = 16
MAX_LATENCY_SAMPLES = 5_000   # request times per cell in the distribution
MAX_BARS = 60                 # cells in the time-per-cell chart (the fastest and the slowest half each)
MAX_HEATMAP_PANELS = 8

BLUE, ORANGE, GREEN, RED, PURPLE, GREY = "#2c7fb8", "#e6550d", "#31a354", "#d62728", "#756bb1", "#969696"
STYLE: dict[RcKeyType, Any] = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "legend.fontsize": 8, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.color": "#e6e6e6", "grid.linewidth": 0.6, "axes.axisbelow": True, "figure.dpi": 100,
}
DPI = 110


def _save(fig, out: Path, name: str) -> str:
    fig.savefig(Path(out) / name, dpi=DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return name


def _short(label: str, n: int = 60) -> str:
    label = str(label)
    return label if len(label) <= n else label[: n - 1] + "…"


def _log_ticks(a, formatter) -> None:
    """Labels at 1, 2 and 5 of each decade (at each decade when the axis spans more than two), none on minor ticks:
    no "6x10^-2" next to "100 ms", no labels on top of each other."""
    lo, hi = sorted(a.get_view_interval())
    span = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if span <= 2 else (1.0,), numticks=9))
    a.set_minor_locator(LogLocator(base=10, subs=[float(s) for s in range(2, 10)], numticks=12))
    a.set_major_formatter(formatter)
    a.set_minor_formatter(NullFormatter())


def _seconds_axis(ax, axis: str = "x") -> None:
    """Engineering units on a log time axis: 100 µs, 2 ms, 1 s."""
    _log_ticks(ax.xaxis if axis == "x" else ax.yaxis, EngFormatter(unit="s", sep=" "))


def _times_axis(ax, axis: str = "x") -> None:
    """A log ratio axis read as factors: 0.5x, 1x, 2x."""
    _log_ticks(ax.xaxis if axis == "x" else ax.yaxis, FuncFormatter(lambda v, _: f"{v:g}x" if v > 0 else ""))


def _tagged(label: str, c, run: RunKind, n: int = 90) -> str:
    tags = [t.split(" from ")[0] for t in cell_tags(c, PLAIN)]   # run-wide tags go in the title, not every row
    return _short(label, n - 16 if tags else n) + (f" [{', '.join(tags)}]" if tags else "")


def _ok(cells: pd.DataFrame, col: str = "time_s") -> pd.DataFrame:
    ok = cells[is_ok(cells)]
    return ok[ok[col].notna() & (ok[col] > 0)] if col else ok


def count_column(cells: pd.DataFrame) -> tuple[str, str]:
    """The raw-data count that explains a cell's time: reads for reads, writes for writes, both when mixed."""
    ops = set(cells["op"])
    if ops == {"read"}:
        return "raw_reads", "raw-data reads"
    if ops == {"write"}:
        return "raw_writes", "raw-data writes"
    return "raw_io", "raw-data reads + writes"


def with_raw_io(cells: pd.DataFrame) -> pd.DataFrame:
    return cells.assign(raw_io=cells[["raw_reads", "raw_writes"]].sum(axis=1, min_count=1))


# ---------------------------------------------------------------------------------------------- time

def time_per_cell(cells: pd.DataFrame, out: Path, run: RunKind = PLAIN) -> str | None:
    """Every cell's pass time, grouped by access pattern (only cells of one pattern do the same work), fastest first."""
    ok = _ok(cells)
    if ok.empty:
        return None
    order = {a: i for i, a in enumerate(ok.groupby("access_label", sort=False)["time_s"].min().sort_values().index)}
    ok = ok.assign(_g=ok["access_label"].map(order)).sort_values(["_g", "time_s"])
    skipped = 0
    if len(ok) > MAX_BARS:
        skipped = len(ok) - MAX_BARS
        ok = pd.concat([ok.head(MAX_BARS // 2), ok.tail(MAX_BARS // 2)])
    unstable = stability(ok)["unstable"]
    several = ok["access_label"].nunique() > 1
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, 0.3 * len(ok) + 1.3))
        y = np.arange(len(ok))[::-1]          # fastest at the top
        lo = (ok["time_s"] - ok["time_s_min"]).clip(lower=0).fillna(0)
        hi = (ok["time_s_max"] - ok["time_s"]).clip(lower=0).fillna(0)
        colors = []
        seen = set()
        for (_, c), u in zip(ok.iterrows(), unstable):
            if c["status"] == "extrapolated":
                colors.append(ORANGE)
            elif not u and c["_g"] not in seen:
                colors.append(GREEN)
                seen.add(c["_g"])
            else:
                colors.append(GREY if u else BLUE)
        ax.barh(y, ok["time_s"], xerr=[lo, hi], color=colors, ecolor="#444", capsize=2, height=0.7)
        for yi, (t, tmax) in zip(y, zip(ok["time_s"], ok["time_s_max"].fillna(ok["time_s"]))):
            ax.text(max(t, tmax) * 1.15, yi, format_seconds(t), va="center", fontsize=8)
        labels = [_tagged(lab if not several else f"{a}: {lab}", c, run) for (_, c), lab, a in
                  zip(ok.iterrows(), ok["config_label"] if "config_label" in ok else ok["label"], ok["access_label"])]
        ax.set_yticks(y, labels)
        for k in range(1, len(ok)):
            if ok["_g"].iloc[k] != ok["_g"].iloc[k - 1]:
                ax.axhline(y[k] + 0.5, color="#888", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlim(ok["time_s_min"].fillna(ok["time_s"]).min() / 2, ok["time_s_max"].fillna(ok["time_s"]).max() * 8)
        _seconds_axis(ax)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("time per pass, dataset open to close; S3: file open to close (log scale; bar: median pass, whiskers: fastest-slowest pass)")
        title = "Time per cell" + (", one group per access pattern (dashed lines)" if several else "") + \
            ", fastest first (green: fastest stable cell of its pattern; grey: unstable"
        title += "; orange: extrapolated from a measured prefix)" if (ok["status"] == "extrapolated").any() else ")"
        if run.tags:
            title += f" [{', '.join(run.tags)}]"
        if skipped:
            title += f"; {skipped} cells in the middle not shown"
        ax.set_title(title, loc="left")
        return _save(fig, out, "time_per_cell.png")


def time_by_axis(cells: pd.DataFrame, labels: Labels, out: Path) -> str | None:
    """Each layout or cache axis that varies, every cell by its value; one colour per access pattern (patterns do
    different work, so the access pattern is a colour, never an axis)."""
    ok = _ok(cells)
    axes = [(n, c) for n, c in labels.axes if c != "access_label" and ok[c].nunique() > 1]
    if ok.empty or not axes:
        return None
    patterns = list(dict.fromkeys(ok["access_label"]))
    palette = [BLUE, ORANGE, GREEN, PURPLE, RED, "#8c564b", "#e377c2", "#17becf"]
    color = {p: palette[i % len(palette)] for i, p in enumerate(patterns)}
    labelled: set = set()
    with plt.rc_context(STYLE):
        fig, axs = plt.subplots(1, len(axes), figsize=(max(3.4 * len(axes), 6), 3.9), squeeze=False, sharey=True,
                                layout="constrained")
        for k, (ax, (name, col)) in enumerate(zip(axs[0], axes)):
            values = list(dict.fromkeys(ok[col]))
            for i, v in enumerate(values):
                for j, p in enumerate(patterns):
                    g = ok[(ok[col] == v) & (ok["access_label"] == p)]
                    if g.empty:
                        continue
                    off = (j - (len(patterns) - 1) / 2) * 0.5 / max(len(patterns), 1)
                    x = i + off + (np.linspace(-0.04, 0.04, len(g)) if len(g) > 1 else np.zeros(1))
                    first = k == 0 and p not in labelled
                    labelled.add(p)
                    ax.scatter(x, g["time_s"], s=22, color=color[p], zorder=3, label=_short(p, 40) if first else None)
                    med = g["time_s"].median()
                    ax.plot([i + off - 0.08, i + off + 0.08], [med, med], color="#333", lw=1.2, zorder=2)
            tilt = len(values) > 2 or max(len(v) for v in values) * len(values) > 30
            ax.set_xticks(range(len(values)), [_short(v, 26) for v in values], rotation=25 if tilt else 0,
                          ha="right" if tilt else "center")
            ax.set_xlim(-0.6, len(values) - 0.4)
            ax.set_yscale("log")
            _seconds_axis(ax, "y")
            ax.set_title(f"by {name}")
            if k == 0:
                ax.set_ylabel("time per pass (log)")
        if len(patterns) > 1:
            fig.legend(loc="outside lower center", ncols=min(4, len(patterns)), frameon=False, title="access pattern")
        fig.suptitle("Every cell's time, grouped by each axis that varies (one colour per access pattern; line: median)",
                     fontsize=10)
        return _save(fig, out, "time_by_axis.png")


# ---------------------------------------------------------------------------------------------- heatmaps

def heatmaps(cells: pd.DataFrame, out: Path) -> tuple[list[str], int]:
    """Chunk shape x cache size panels, one per (filters, access); returns the PNG names and the panels left out."""
    ok = with_raw_io(_ok(cells))
    if ok.empty or ok["chunks"].nunique() < 2 or ok["cache_label"].nunique() < 2:
        return [], 0      # one row or one column: the time chart already says it all
    groups = list(ok.groupby(["filters", "access_label"], sort=False))
    left_out = max(0, len(groups) - MAX_HEATMAP_PANELS)
    groups = groups[:MAX_HEATMAP_PANELS]
    chunk_order = list(dict.fromkeys(ok["chunks"]))
    cache_order = [c for _, c in sorted({(n, c) for n, c in zip(ok["cache_nbytes"], ok["cache_label"])}, key=lambda t: (t[0], t[1]))]
    count_col, count_name = count_column(ok)
    names = []
    for what, col, fmt in (("time per pass", "time_s", format_seconds), (count_name, count_col, format_count)):
        values = ok[col].to_numpy(dtype=float)
        positive = values[np.isfinite(values) & (values > 0)]
        if not len(positive):            # e.g. counts of a quick run: no counted pass
            continue
        lo, hi = positive.min(), positive.max()
        if hi <= lo:
            lo, hi = lo / 2, hi * 2
        norm = LogNorm(vmin=lo, vmax=hi)
        ncols = min(4, len(groups))
        nrows = math.ceil(len(groups) / ncols)
        with plt.rc_context({**STYLE, "axes.grid": False}):
            fig, axs = plt.subplots(nrows, ncols, figsize=(3.1 * ncols + 1.2, 0.42 * len(chunk_order) * nrows + 1.5 * nrows + 0.6),
                                    squeeze=False, layout="constrained")
            im = None
            for k, ax in enumerate(axs.flat):
                if k >= len(groups):
                    ax.axis("off")
                    continue
                (filt, acc), g = groups[k]
                rows = [c for c in chunk_order if (g["chunks"] == c).any()]
                cols = [c for c in cache_order if (g["cache_label"] == c).any()]
                data = np.full((len(rows), len(cols)), np.nan)
                extrapolated = set()
                for _, c in g.iterrows():
                    data[rows.index(c["chunks"]), cols.index(c["cache_label"])] = c[col]
                    if c["status"] == "extrapolated" and col == "time_s":
                        extrapolated.add((rows.index(c["chunks"]), cols.index(c["cache_label"])))
                shown = np.ma.masked_where(~np.isfinite(data) | (data <= 0), data)
                im = ax.imshow(shown, cmap="viridis", norm=norm, aspect="auto")
                for (i, j), v in np.ndenumerate(data):
                    if np.isfinite(v):
                        bright = v > 0 and norm(v) > 0.6
                        ax.text(j, i, fmt(v) + ("\nextrapolated" if (i, j) in extrapolated else ""), ha="center", va="center",
                                fontsize=8, color="black" if bright else "white")
                    else:
                        ax.text(j, i, "not run", ha="center", va="center", fontsize=7, color=GREY)
                ax.set_xticks(range(len(cols)), [c.replace(", ", "\n") for c in cols], fontsize=7 if len(cols) > 3 else 8)
                ax.set_yticks(range(len(rows)), rows)
                ax.set_xlabel("chunk cache")
                if k % ncols == 0:
                    ax.set_ylabel("chunk shape")
                ax.set_title(_short(f"{filt} | {acc}", 44), fontsize=9)
            if im is not None:
                cb = fig.colorbar(im, ax=axs, shrink=0.9, pad=0.02)
                cb.set_label(f"{what} (log)")
                cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _, fmt=fmt: fmt(v) if v > 0 else "0"))
            fig.suptitle(f"{what.capitalize()}: chunk shape x chunk cache, one panel per compression and access pattern "
                         "(one colour scale: brighter is more)", fontsize=10)
            names.append(_save(fig, out, f"heatmap_{col}.png"))
    return names, left_out


# ---------------------------------------------------------------------------------------------- requests

def latency_stats(cells: pd.DataFrame, requests: pd.DataFrame | None) -> pd.DataFrame:
    """Per cell: first request (median over timed passes), mean and median of the other requests (seed 004)."""
    rows = []
    if requests is None or requests.empty:
        return pd.DataFrame(columns=["cell_id", "first", "rest_mean", "rest_median", "n"])
    timed = requests[(requests["pass"] >= 0) & (requests["phase"] == "request")]
    for cid, t in timed.groupby("cell_id", sort=False):
        first = t.loc[t["request"] == 0, "time_s"].median()
        rest = t.loc[t["request"] > 0, "time_s"]
        rows.append({"cell_id": cid, "first": first, "rest_mean": rest.mean() if len(rest) else np.nan,
                     "rest_median": rest.median() if len(rest) else np.nan, "n": int(t["request"].max()) + 1})
    return pd.DataFrame(rows)


def latency(cells: pd.DataFrame, requests: pd.DataFrame | None, out: Path) -> str | None:
    if requests is None or requests.empty:
        return None
    timed = requests[(requests["pass"] >= 0) & (requests["phase"] == "request") & (requests["time_s"] > 0)]
    ok = _ok(cells)
    ok = ok[ok["cell_id"].isin(set(timed["cell_id"]))].sort_values("time_s", ascending=False).head(MAX_LATENCY_CELLS)
    if ok.empty:
        return None
    stats = latency_stats(ok, timed).set_index("cell_id")
    rng = np.random.default_rng(0)
    with plt.rc_context(STYLE):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.4 * len(ok) + 1.7), sharey=True, layout="constrained")
        y = np.arange(len(ok))[::-1]
        data = []
        for k, cid in zip(y, ok["cell_id"]):
            s = stats.loc[cid]
            a1.plot([s["first"], s["rest_mean"]], [k, k], color="#bbb", lw=1, zorder=1)
            a1.scatter([s["first"]], [k], color=RED, marker="o", s=30, zorder=3, label="first request" if k == y[0] else None)
            if finite(s["rest_mean"]):
                a1.scatter([s["rest_mean"]], [k], color=BLUE, marker="s", s=26, zorder=3,
                           label="average of the others" if k == y[0] else None)
            vals = timed.loc[timed["cell_id"] == cid, "time_s"].to_numpy()
            if len(vals) > MAX_LATENCY_SAMPLES:
                vals = rng.choice(vals, MAX_LATENCY_SAMPLES, replace=False)
            data.append(vals)
        a1.set_xscale("log")
        _seconds_axis(a1)
        a1.set_yticks(y, [_short(s, 80) for s in ok["label"]])
        a1.set_xlabel("time per request (log)")
        a1.set_title("First request vs the average of the others (seed 004)", loc="left")
        fig.legend(loc="outside lower center", ncols=2, frameon=False)
        a2.boxplot(data, orientation="horizontal", positions=y, widths=0.6, showfliers=False,
                   medianprops={"color": RED}, boxprops={"color": "#444"})
        a2.set_xscale("log")
        _seconds_axis(a2)
        a1.set_yticks(y, [_short(s, 80) for s in ok["label"]])   # boxplot resets the shared ticks
        a2.tick_params(labelleft=False)
        a2.set_xlabel("time per request (log; box: quartiles, whiskers: 1.5 IQR, red: median)")
        a2.set_title("Distribution of request times, all timed passes", loc="left")
        return _save(fig, out, "latency.png")


# ---------------------------------------------------------------------------------------------- model

def model_vs_measured(cells: pd.DataFrame, out: Path) -> str | None:
    """The chunk-cache model's predictions against the measurements, when the run has them."""
    ok = with_raw_io(_ok(cells))
    ok = ok.assign(predicted_raw_io=ok[["predicted_raw_reads", "predicted_raw_writes"]].sum(axis=1, min_count=1))
    count_col, count_name = count_column(ok)
    pairs = [(f"{count_name}", count_col, "predicted_" + count_col, format_count),
             ("time per pass", "time_s", "predicted_time_s", format_seconds)]
    pairs = [p for p in pairs if p[2] in ok and (ok[p[1]].notna() & ok[p[2]].notna()).any()]
    if not pairs:
        return None
    with plt.rc_context(STYLE):
        fig, axs = plt.subplots(1, len(pairs), figsize=(5 * len(pairs), 4.2), squeeze=False, layout="constrained")
        for ax, (what, meas, pred, _fmt) in zip(axs[0], pairs):
            d = ok[ok[meas].notna() & ok[pred].notna()]
            x, yv = d[pred].clip(lower=0.5 if meas != "time_s" else 1e-9), d[meas].clip(lower=0.5 if meas != "time_s" else 1e-9)
            lo, hi = min(x.min(), yv.min()) / 2, max(x.max(), yv.max()) * 2
            ax.plot([lo, hi], [lo, hi], color=GREY, lw=1, label="measured = model")
            ax.scatter(x, yv, s=28, color=BLUE, zorder=3)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            if meas == "time_s":
                _seconds_axis(ax)
                _seconds_axis(ax, "y")
            else:
                for a in (ax.xaxis, ax.yaxis):
                    _log_ticks(a, FuncFormatter(lambda v, _: format_count(v)))
            ax.set_xlabel(f"model: {what}")
            ax.set_ylabel(f"measured: {what}")
            ax.set_title(f"{what.capitalize()}: measured against the model", loc="left")
            ax.legend(loc="upper left")
        return _save(fig, out, "model_vs_measured.png")


# -------------------------------------------------------------------------------------- file operations

def file_operation_cells(cells: pd.DataFrame, with_io: set) -> pd.DataFrame:
    """The cells whose file operations are drawn: one per layout and access pattern, slowest and fastest first."""
    ok = _ok(cells)
    ok = ok[ok["cell_id"].isin(with_io)].sort_values("time_s", ascending=False)
    ok = ok.drop_duplicates(["chunks", "filters", "op", "block", "order", "random"])
    if len(ok) <= MAX_OPERATION_CELLS:
        return ok
    return pd.concat([ok.head(MAX_OPERATION_CELLS - 1), ok.tail(1)])


def _subsample(ops: pd.DataFrame, n: int) -> pd.DataFrame:
    return ops if len(ops) <= n else ops.iloc[np.linspace(0, len(ops) - 1, n).astype(int)]


def file_operations(picked: pd.DataFrame, io: pd.DataFrame | None, out: Path) -> str | None:
    if io is None or io.empty or picked.empty:
        return None
    picked = picked[picked["cell_id"].isin(set(io["cell_id"]))]
    if picked.empty:
        return None
    styles = [("read", True, BLUE, "o", 5, "raw-data read"), ("write", True, ORANGE, "o", 5, "raw-data write"),
              ("read", False, RED, "x", 18, "metadata read"), ("write", False, GREEN, "+", 24, "metadata write")]
    n = len(picked)
    with plt.rc_context(STYLE):
        fig, axs = plt.subplots(n, 1, figsize=(10.5, 2.5 * n + 0.6), squeeze=False, layout="constrained")
        for ax, (_, cell) in zip(axs[:, 0], picked.iterrows()):
            ops = io[io["cell_id"] == cell["cell_id"]].sort_values("seq")
            total = len(ops)
            raw = ops["mem_type"] == "draw"
            sub = False
            for kind, is_raw, color, marker, size, label in styles:
                sel = ops[(ops["kind"] == kind) & (raw == is_raw)]
                if len(sel):
                    shown = _subsample(sel, MAX_OPERATION_POINTS)
                    sub |= len(shown) < len(sel)
                    ax.scatter(shown["seq"], shown["offset"] / 2**20, s=size, color=color, marker=marker, linewidths=1,
                               label=f"{label} ({len(sel):,})", rasterized=len(shown) > 2000, zorder=3 if not is_raw else 2)
            if total <= 400:
                ax.plot(ops["seq"], ops["offset"] / 2**20, color="#ccc", lw=0.6, zorder=1)
            ax.set_ylabel("file offset (MiB)")
            ax.set_title(_short(f"{cell['label']}: {total:,} file operations, {format_seconds(cell['time_s'])} a pass"
                                + (" (points subsampled evenly)" if sub else ""), 130), fontsize=9, loc="left")
            ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), markerscale=1.5, frameon=False)
            ax.margins(x=0.01)
        axs[-1, 0].set_xlabel("file operation number in the counted pass")
        fig.suptitle("Every file-level operation of the counted pass: where in the file, in which order (seed 002)", fontsize=10)
        return _save(fig, out, "io_trace.png")     # the name run folders and notebooks already use


# ---------------------------------------------------------------------------------------------- storage

def storage_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per layout (chunks, filters): sizes, overheads in ppm and compression ratio."""
    ok = cells[is_ok(cells) & cells["logical_bytes"].notna() & cells["storage_bytes"].notna()]
    ok = ok.sort_values("op", key=lambda s: s.map({"read": 0, "copy": 1, "write": 2}).fillna(3))   # prefer the read cells' file
    lay = ok.drop_duplicates(["chunks", "filters"]).sort_index()
    return pd.concat([lay[["chunks", "filters", "logical_bytes", "storage_bytes", "file_bytes", "compression_ratio",
                           "chunk_bytes", "nchunks"]], storage_overhead(lay)], axis=1)


def storage(lay: pd.DataFrame, out: Path) -> str | None:
    if lay.empty:
        return None
    labels = [f"{c} | {f}" for c, f in zip(lay["chunks"], lay["filters"])]
    filtered = not lay["unfiltered"].all()      # a compression-ratio panel of 1.0s says nothing
    with plt.rc_context(STYLE):
        if filtered:
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.45 * len(lay) + 1.8), sharey=True, width_ratios=[3, 2],
                                         layout="constrained")
        else:
            fig, a1 = plt.subplots(figsize=(8, 0.45 * len(lay) + 1.8), layout="constrained")
            a2 = None
        y = np.arange(len(lay))[::-1]
        raw = lay["raw_ppm"].where(lay["unfiltered"])
        pad = lay["padding_ppm"].where(~lay["unfiltered"])
        a1.barh(y + 0.2, lay["meta_ppm"].fillna(0), height=0.4, label="metadata", color=PURPLE)
        a1.barh(y - 0.2, raw.fillna(0), height=0.4, label="raw data (unfiltered: allocated beyond the data)", color=ORANGE)
        if pad.notna().any():
            a1.barh(y - 0.2, pad.fillna(0), height=0.4, label="edge-chunk padding before compression (filtered: upper bound)",
                    color="white", edgecolor=ORANGE, hatch="///")
        top = np.nanmax(np.r_[lay["meta_ppm"].to_numpy(float), raw.to_numpy(float), pad.to_numpy(float), 1.0])
        for yi, m, r, p in zip(y, lay["meta_ppm"], raw, pad):
            a1.text(max(m, 0) * 1.05 + 0.3, yi + 0.2, f"{m:,.1f}" if finite(m) else "-", va="center", fontsize=7)
            v = r if finite(r) else p
            a1.text(max(v, 0) * 1.05 + 0.3 if finite(v) else 0.3, yi - 0.2, f"{v:,.1f}" if finite(v) else "-", va="center", fontsize=7)
        a1.set_xscale("symlog", linthresh=1)
        a1.set_xlim(0, top * 8)
        a1.set_yticks(y, [_short(s, 40) for s in labels])
        a1.set_xlabel("overhead, parts per million of the data (symlog)")
        a1.set_title("Storage overhead (seed 002, Table 1)", loc="left")
        a1.legend(loc="upper left", bbox_to_anchor=(0, -0.5 / (0.45 * len(lay) + 1.8) - 0.12), fontsize=8, frameon=False, ncols=1)
        if a2 is None:
            return _save(fig, out, "storage.png")
        a2.barh(y, lay["compression_ratio"].fillna(0), color=GREEN, height=0.6)
        for yi, r in zip(y, lay["compression_ratio"]):
            a2.text(r * 1.01 if finite(r) else 0, yi, f" {r:.3g}" if finite(r) else " -", va="center", fontsize=8)
        a2.axvline(1, color="#333", lw=0.8)
        a2.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        a2.set_xlabel("compression ratio (data / stored)")
        a2.set_title("Compression ratio", loc="left")
        a2.set_xlim(0, max(1.0, float(np.nanmax(np.r_[lay["compression_ratio"].to_numpy(float), 1.0]))) * 1.2)
        return _save(fig, out, "storage.png")


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (smaller is better), by the first coordinate."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def storage_vs_time(cells: pd.DataFrame, out: Path, run: RunKind = PLAIN) -> str | None:
    """Stored bytes against time, one point per layout (chunks, filters) at its fastest stable cache, one panel per
    access pattern, the Pareto front joined: the trade-off a data producer chooses a filter and chunk shape on."""
    ok = _ok(cells)
    ok = ok[ok["storage_bytes"].notna() & (ok["storage_bytes"] > 0)]
    if ok.empty or ok.groupby(["chunks", "filters"]).ngroups < 2:
        return None
    sizes = ok.drop_duplicates(["chunks", "filters"])["storage_bytes"].astype(float)
    if sizes.max() < 1.05 * sizes.min():
        return None                     # the layouts store the same bytes: no trade-off to draw
    ok = ok.assign(_unstable=stability(ok)["unstable"].to_numpy())
    best = ok.sort_values("time_s").drop_duplicates(["access_label", "chunks", "filters"])
    several = best.groupby("access_label")["chunks"].transform("size") > 1     # one layout: no trade-off to show
    best = best[several]
    if best.empty:
        return None
    patterns = list(dict.fromkeys(best.sort_values("time_s")["access_label"]))[:MAX_HEATMAP_PANELS]
    ncols = min(3, len(patterns))
    nrows = math.ceil(len(patterns) / ncols)
    log_x = sizes.max() > 10 * sizes.min()
    with plt.rc_context(STYLE):
        fig, axs = plt.subplots(nrows, ncols, figsize=(4.2 * ncols + 0.6, 3.6 * nrows + 0.5), squeeze=False, layout="constrained")
        for ax in axs.flat[len(patterns):]:
            ax.axis("off")
        for ax, p in zip(axs.flat, patterns):
            g = best[best["access_label"] == p].reset_index(drop=True)
            pts = list(zip(g["storage_bytes"].astype(float), g["time_s"].astype(float)))
            front = pareto_front(pts)
            on = set(front)
            spots: dict = {}      # layouts drawn on the same spot share one label instead of overprinting
            for i, (sb, t) in enumerate(pts):
                c = g.iloc[i]
                color = GREEN if i in on else GREY
                ax.scatter([sb], [t], s=36 if i in on else 22, zorder=3, marker="s" if c["status"] == "extrapolated" else "o",
                           facecolors="white" if c["_unstable"] else color, edgecolors="#222" if i in on else color)
                key = (round(math.log10(sb), 2), round(math.log10(t), 1))
                spots.setdefault(key, [sb, t, [], False])
                spots[key][2].append(_short(f"{c['chunks']} | {c['filters']}", 28))
                spots[key][3] |= i in on
            for sb, t, names, front_spot in spots.values():
                ax.annotate("\n".join(names), (sb, t), xytext=(4, 3), textcoords="offset points", fontsize=7,
                            color="#222" if front_spot else "#777")
            fx = [pts[i] for i in front]
            if len(fx) > 1:
                ax.plot([x for x, _ in fx], [t for _, t in fx], color=GREEN, lw=1.2, zorder=2, label="Pareto front")
                ax.legend(loc="upper right", frameon=False)
            ax.set_yscale("log")
            ax.margins(0.25)
            _seconds_axis(ax, "y")
            if log_x:
                ax.set_xscale("log")
                _log_ticks(ax.xaxis, FuncFormatter(lambda v, _: format_bytes(v)))
            else:
                ax.xaxis.set_major_locator(plt.MaxNLocator(4))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v) if v > 0 else ""))
            ax.set_xlabel("stored bytes of the dataset" + (" (log)" if log_x else ""))
            ax.set_ylabel("time per pass (log)")
            ax.set_title(_short(p, 50), loc="left")
        title = "Storage against time: each layout at its fastest cache; green: the Pareto front; hollow: unstable"
        if (best["status"] == "extrapolated").any():
            title += " (squares: extrapolated)"
        if run.tags:
            title += f" [{', '.join(run.tags)}]"
        fig.suptitle(title, fontsize=10)
        return _save(fig, out, "storage_vs_time.png")


# ---------------------------------------------------------------------------------------------- compare

def compare_plot(joined: pd.DataFrame, out: Path, name: str) -> str | None:
    j = joined[joined["ratio"].notna() & (joined["ratio"] > 0)]
    if j.empty:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, 0.3 * len(j) + 1.3))
        y = np.arange(len(j))[::-1]
        ax.barh(y, j["ratio"] - 1, left=1, color=[RED if r > 1 else BLUE for r in j["ratio"]], height=0.7)
        ax.axvline(1, color="#333", lw=0.8)
        ax.set_xscale("log")
        lo, hi = j["ratio"].min(), j["ratio"].max()
        ax.set_xlim(min(lo, 1) / 1.5, max(hi, 1) * 1.5)
        _times_axis(ax)
        ax.set_yticks(y, [_short(s, 70) for s in j["label"]])
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("time B / time A (log; right of 1, red: B is slower; left, blue: B is faster)")
        ax.set_title("Cells both runs measured: how B's time compares with A's", loc="left")
        return _save(fig, out, name)


