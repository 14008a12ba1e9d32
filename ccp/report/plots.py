"""The report's figures (matplotlib, Agg): each function writes one PNG and returns its name, or None."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ccp.report.tables import varying_axes, with_labels  # noqa: E402
from ccp.units import format_bytes, format_seconds  # noqa: E402

MAX_TRACE_POINTS = 20_000     # per cell in the I/O trace plot
MAX_LATENCY_CELLS = 16


def _save(fig, out: Path, name: str) -> str:
    fig.savefig(out / name, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def _short(label: str, n: int = 42) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def cell_labels(cells: pd.DataFrame) -> pd.Series:
    cells = with_labels(cells)
    axes = [col for _, col in varying_axes(cells)] or ["access_label"]
    return cells[axes].astype(str).agg(" | ".join, axis=1)


def time_per_cell(cells: pd.DataFrame, out: Path) -> str | None:
    ok = cells[cells["status"].isin(["ok", "extrapolated"])].copy()
    if ok.empty:
        return None
    ok["label"] = cell_labels(ok)
    ok = ok.sort_values("time_s")
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(ok) + 1.2))
    y = np.arange(len(ok))
    err = [ok["time_s"] - ok["time_s_min"], ok["time_s_max"] - ok["time_s"]]
    colors = ["#c0392b" if s == "extrapolated" else "#2c7fb8" for s in ok["status"]]
    ax.barh(y, ok["time_s"], xerr=err, color=colors, ecolor="#555", capsize=2)
    ax.set_yticks(y, [_short(s, 70) for s in ok["label"]], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("time per pass, dataset open to close (s, log scale; bars: median, whiskers: min-max)")
    ax.set_title("Time per cell, fastest first")
    return _save(fig, out, "time_per_cell.png")


def time_by_axis(cells: pd.DataFrame, out: Path) -> str | None:
    ok = with_labels(cells[cells["status"].isin(["ok", "extrapolated"])])
    axes = varying_axes(ok)
    if not axes:
        return None
    fig, axs = plt.subplots(1, len(axes), figsize=(4.2 * len(axes), 3.6), squeeze=False)
    for ax, (name, col) in zip(axs[0], axes):
        values = list(dict.fromkeys(ok[col].astype(str)))
        for i, v in enumerate(values):
            t = ok.loc[ok[col].astype(str) == v, "time_s"]
            ax.scatter(np.full(len(t), i) + np.linspace(-0.12, 0.12, len(t)), t, s=18, color="#2c7fb8")
        ax.set_xticks(range(len(values)), [_short(v, 18) for v in values], rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"by {name}")
        ax.set_ylabel("time per pass (s)")
    fig.suptitle("Time of every cell, grouped by each axis that varies")
    return _save(fig, out, "time_by_axis.png")


def heatmaps(cells: pd.DataFrame, out: Path) -> list[str]:
    ok = with_labels(cells[cells["status"].isin(["ok", "extrapolated"])])
    if ok["chunks"].nunique() < 2 and ok["cache_label"].nunique() < 2:
        return []
    names = []
    groups = list(ok.groupby(["filters", "access_label"], sort=False))[:4]
    for what, col, fmt in (("time", "time_s", format_seconds), ("raw-data reads", "raw_reads", lambda v: f"{int(v):,}")):
        if ok[col].isna().all():          # e.g. raw reads of a --quick run: no traced pass
            continue
        fig, axs = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.4), squeeze=False)
        everything = ok[col].to_numpy(dtype=float)
        positive = everything[everything > 0]
        # one colour scale for every panel (log), so equal colours mean equal values across panels
        lo, hi = (np.log10(positive.min()), np.log10(positive.max())) if len(positive) else (0.0, 1.0)
        for k, (ax, ((filt, acc), g)) in enumerate(zip(axs[0], groups)):
            piv = g.pivot_table(index="chunks", columns="cache_label", values=col, aggfunc="first")
            data = piv.to_numpy(dtype=float)
            if data.size == 0 or np.isnan(data).all():
                ax.axis("off")
                continue
            shown = np.log10(np.where(data > 0, data, np.nan))
            ax.imshow(shown, cmap="viridis", aspect="auto", vmin=lo, vmax=max(hi, lo + 1e-9))
            for (i, j), v in np.ndenumerate(data):
                if v == v:
                    ax.text(j, i, fmt(v), ha="center", va="center", fontsize=8, color="white",
                            bbox=dict(facecolor="black", alpha=0.35, lw=0, pad=1))
            ax.set_xticks(range(len(piv.columns)), piv.columns, fontsize=8, rotation=20)
            ax.set_yticks(range(len(piv.index)), piv.index, fontsize=8)
            ax.set_xlabel("chunk cache (nbytes/nslots/w0)")
            if k == 0:
                ax.set_ylabel("chunk shape")
            ax.set_title(_short(f"{filt} | {acc}", 40), fontsize=9)
        fig.suptitle(f"{what.capitalize()}: chunk shape x cache size (one log colour scale: brighter is more; blank: not run)")
        fig.tight_layout()
        names.append(_save(fig, out, f"heatmap_{col}.png"))
    return names


def latency(cells: pd.DataFrame, requests: pd.DataFrame | None, out: Path) -> str | None:
    if requests is None or requests.empty:
        return None
    ok = cells[cells["status"].isin(["ok", "extrapolated"])].copy()
    ok["label"] = cell_labels(ok)
    ok = ok.sort_values("time_s", ascending=False).head(MAX_LATENCY_CELLS)
    timed = requests[(requests["pass"] >= 0) & (requests["phase"] == "request")]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 0.42 * len(ok) + 1.6), sharey=True)
    y = np.arange(len(ok))
    data = []
    for k, cid in enumerate(ok["cell_id"]):
        t = timed.loc[timed["cell_id"] == cid, ["pass", "request", "time_s"]]
        if t.empty:
            data.append(np.array([np.nan]))
            continue
        first = t.loc[t["request"] == 0, "time_s"].median()
        rest = t.loc[t["request"] > 0, "time_s"]
        a1.scatter([first], [k], color="#c0392b", marker="o", label="first request" if k == 0 else None)
        if len(rest):
            a1.scatter([rest.mean()], [k], color="#2c7fb8", marker="s", label="average of the rest" if k == 0 else None)
        vals = t["time_s"].to_numpy()
        if len(vals) > 5000:
            vals = np.random.default_rng(0).choice(vals, 5000, replace=False)
        data.append(vals)
    a1.set_xscale("log")
    a1.set_yticks(y, [_short(s, 60) for s in ok["label"]], fontsize=8)
    a1.set_xlabel("seconds per request (log)")
    a1.set_title("First request vs the rest (seed 004)")
    a1.legend(fontsize=8, loc="lower right")
    a2.boxplot([d[np.isfinite(d) & (d > 0)] if np.isfinite(d).any() else [np.nan] for d in data], orientation="horizontal",
               positions=y, widths=0.6, showfliers=False)
    a1.set_yticks(y, [_short(s, 60) for s in ok["label"]], fontsize=8)   # after boxplot, which resets shared ticks
    a2.tick_params(labelleft=False)
    a2.set_xscale("log")
    a2.set_xlabel("seconds per request (log; box: quartiles, whiskers: 1.5 IQR)")
    a2.set_title("Distribution of request times")
    fig.tight_layout()
    return _save(fig, out, "latency.png")


def io_trace(cells: pd.DataFrame, io: pd.DataFrame | None, out: Path, limit: int = 6) -> str | None:
    if io is None or io.empty:
        return None
    ok = cells[cells["status"].isin(["ok", "extrapolated"]) & cells["cell_id"].isin(set(io["cell_id"]))].copy()
    if ok.empty:
        return None
    ok["label"] = cell_labels(ok)
    # one cell per distinct layout and access, slowest first: the traces that differ
    ok = ok.sort_values("time_s", ascending=False).drop_duplicates(["chunks", "filters", "op", "block"]).head(limit)
    n = len(ok)
    fig, axs = plt.subplots(n, 1, figsize=(10, 2.4 * n), squeeze=False)
    styles = {("read", True): ("#2c7fb8", "raw read"), ("write", True): ("#d95f02", "raw write"),
              ("read", False): ("#7570b3", "metadata read"), ("write", False): ("#1b9e77", "metadata write")}
    for ax, (_, cell) in zip(axs[:, 0], ok.iterrows()):
        ops = io[io["cell_id"] == cell["cell_id"]]
        total = len(ops)
        if total > MAX_TRACE_POINTS:
            ops = ops.iloc[np.linspace(0, total - 1, MAX_TRACE_POINTS).astype(int)]
        for (kind, raw), (color, label) in styles.items():
            sel = ops[(ops["kind"] == kind) & ((ops["mem_type"] == "draw") == raw)]
            if len(sel):
                ax.scatter(sel["seq"], sel["offset"] / 2**20, s=4, color=color, label=label)
        if len(ops) < 2000:
            ax.plot(ops["seq"], ops["offset"] / 2**20, color="#999", lw=0.4, zorder=0)
        ax.set_ylabel("file offset (MiB)")
        ax.set_title(_short(f"{cell['label']}: {total:,} file operations" + (" (subsampled)" if total > MAX_TRACE_POINTS else ""), 110), fontsize=9)
        ax.legend(fontsize=7, loc="upper left", markerscale=2)
    axs[-1, 0].set_xlabel("file operation number (traced pass)")
    fig.suptitle("Every file-level operation of the traced pass: offset against order (seed 002)")
    fig.tight_layout()
    return _save(fig, out, "io_trace.png")


def storage_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per layout: metadata and raw-data overhead in ppm of the logical size, and the ratio."""
    ok = cells[cells["status"].isin(["ok", "extrapolated"])]
    lay = ok.drop_duplicates(["chunks", "filters"]).copy()
    lay["meta_ppm"] = (lay["file_bytes"] - lay["storage_bytes"]) / lay["logical_bytes"] * 1e6
    unfiltered = lay["filters"] == "none"
    lay["raw_ppm"] = np.where(unfiltered, (lay["storage_bytes"] - lay["logical_bytes"]) / lay["logical_bytes"] * 1e6, np.nan)
    return lay[["chunks", "filters", "logical_bytes", "storage_bytes", "file_bytes", "meta_ppm", "raw_ppm", "compression_ratio"]]


def storage(cells: pd.DataFrame, out: Path) -> str | None:
    lay = storage_table(cells)
    if lay.empty:
        return None
    labels = [f"{c} | {f}" for c, f in zip(lay["chunks"], lay["filters"])]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.4 * len(lay) + 1.5), sharey=True)
    y = np.arange(len(lay))
    a1.barh(y - 0.2, lay["meta_ppm"], height=0.4, label="metadata", color="#7570b3")
    a1.barh(y + 0.2, lay["raw_ppm"].fillna(0), height=0.4, label="raw data (unfiltered layouts)", color="#d95f02")
    a1.set_yticks(y, [_short(s, 40) for s in labels], fontsize=8)
    a1.set_xlabel("overhead, parts per million of the data")
    a1.set_title("Storage overhead (seed 002, Table 1)")
    a1.legend(fontsize=8)
    a2.barh(y, lay["compression_ratio"], color="#1b9e77")
    a2.axvline(1, color="#333", lw=0.6)
    a2.set_xlabel("compression ratio (logical / stored)")
    a2.set_title("Compression ratio")
    fig.tight_layout()
    return _save(fig, out, "storage.png")


def compare_plot(joined: pd.DataFrame, out: Path, name: str) -> str | None:
    if joined.empty:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(joined) + 1.2))
    y = np.arange(len(joined))
    ax.barh(y, joined["ratio"], color=["#c0392b" if r > 1 else "#2c7fb8" for r in joined["ratio"]])
    ax.axvline(1, color="#333", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y, [_short(s, 70) for s in joined["label"]], fontsize=8)
    ax.set_xlabel("time B / time A (log; right of 1: B slower)")
    return _save(fig, out, name)


_ = format_bytes
